"""Fixtures of the container tests: kafkalite's image built from this checkout (once per content
hash, on the local Debian base) and podman's Docker API for testcontainers."""

from __future__ import annotations

import os

import pytest

from container_tests.podman import DockerApi, build_image


def pytest_collection_modifyitems(items):
    for item in items:
        if "container_tests" in item.nodeid.split("/"):
            item.add_marker(pytest.mark.container)


@pytest.fixture(scope="session")
def kafkalite_image() -> str:
    return build_image()


@pytest.fixture(scope="session")
def docker_api():
    api = DockerApi().start()
    yield api
    api.stop()


@pytest.fixture
def docker_env(docker_api, monkeypatch) -> dict[str, str]:
    """The environment testcontainers (Python or Java) needs to use podman's Docker API. Ryuk, the
    reaper container, is off: its image lives on Docker Hub, which this setup does not reach; each
    test removes its own containers."""
    env = {"DOCKER_HOST": docker_api.docker_host, "TESTCONTAINERS_RYUK_DISABLED": "true"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    return env
