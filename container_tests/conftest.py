"""Fixtures of the container tests: kafkalite's image built from this checkout (once per content
hash, on the local Debian base) and podman's Docker API for testcontainers."""

from __future__ import annotations

import pytest

from container_tests.podman import DockerApi, build_client_image, build_image, podman


def pytest_collection_modifyitems(items):
    for item in items:
        if "container_tests" in item.nodeid.split("/"):
            item.add_marker(pytest.mark.container)


@pytest.fixture(scope="session")
def kafkalite_image() -> str:
    return build_image()


@pytest.fixture(scope="session")
def client_image() -> str:
    return build_client_image()


@pytest.fixture(scope="session")
def docker_api():
    api = DockerApi().start()
    yield api
    api.stop()
    # testcontainers removes its containers but not their anonymous volumes (the image's VOLUME)
    podman("volume", "prune", "--force", check=False)


@pytest.fixture
def docker_env(docker_api, monkeypatch) -> dict[str, str]:
    """The environment testcontainers (Python or Java) needs to use podman's Docker API:
    * DOCKER_HOST: podman's socket;
    * TESTCONTAINERS_RYUK_DISABLED: Ryuk, the reaper container, is off: its image lives on Docker
      Hub, which this setup does not reach; each test removes its own containers;
    * TESTCONTAINERS_HOST_OVERRIDE and TESTCONTAINERS_CONNECTION_MODE: where published ports are.
      When the tests themselves run in a container (a /.dockerenv file), testcontainers takes the
      engine for Docker-in-Docker and looks for the ports at the default gateway; podman runs on
      this machine and publishes them on its loopback.
    testcontainers-python reads the last two when imported, so its config object is set too."""
    from testcontainers.core.config import ConnectionMode, testcontainers_config

    env = {"DOCKER_HOST": docker_api.docker_host, "TESTCONTAINERS_RYUK_DISABLED": "true",
           "TESTCONTAINERS_HOST_OVERRIDE": "127.0.0.1", "TESTCONTAINERS_CONNECTION_MODE": "docker_host"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(testcontainers_config, "tc_host_override", "127.0.0.1")
    monkeypatch.setattr(testcontainers_config, "connection_mode_override", ConnectionMode.docker_host)
    return env
