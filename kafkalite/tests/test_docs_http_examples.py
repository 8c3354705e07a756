"""Every curl command README.md and docs/ print against the controls works as printed: run by
bash against a live broker (the printed address http://127.0.0.1:8081/ replaced by the
broker's), each is answered 200. The commands that send $KAFKALITE_CONTROLS_TOKEN run against a
broker with that token, the others against one without."""

from __future__ import annotations

import os
import re
import secrets
import subprocess
from pathlib import Path

import pytest

import kafkalite

ROOT = Path(__file__).resolve().parents[2]
PRINTED_URL = "http://127.0.0.1:8081/"


def curl_commands() -> list[tuple[str, str]]:
    """(page, command) for every line of a page that starts a curl command (with its continuation lines)."""
    found = []
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        lines = page.read_text().splitlines()
        i = 0
        while i < len(lines):
            if lines[i].startswith("curl "):
                command = lines[i]
                while command.endswith("\\") and i + 1 < len(lines):
                    i += 1
                    command = command[:-1] + " " + lines[i].strip()
                found.append((page.name, re.sub(r"\s+#.*$", "", command)))
            i += 1
    return found


def test_the_pages_print_curl_commands():
    pages = {page for page, _ in curl_commands()}
    assert {"README.md", "ci-usage.md", "reachable.md"} <= pages, pages


TOKEN = secrets.token_urlsafe(16)


@pytest.fixture(scope="module")
def brokers():
    """"plain" and "token" (started on first use), one of each for the module."""
    started: dict[str, kafkalite.Broker] = {}

    def get(kind: str) -> kafkalite.Broker:
        if kind not in started:
            started[kind] = kafkalite.start(controls=0, controls_token=TOKEN if kind == "token" else None)
        return started[kind]

    yield get
    for broker in started.values():
        broker.close()


@pytest.mark.parametrize("page,command", curl_commands())
def test_curl_example_works_as_printed(page, command, brokers):
    with_token = "KAFKALITE_CONTROLS_TOKEN" in command
    broker = brokers("token" if with_token else "plain")
    assert broker.controls_url is not None
    env = {**os.environ, "KAFKALITE_CONTROLS_URL": broker.controls_url}
    env.pop("KAFKALITE_CONTROLS_TOKEN", None)
    if with_token:
        env["KAFKALITE_CONTROLS_TOKEN"] = TOKEN
    run = command.replace(PRINTED_URL, broker.controls_url) + " -w '\\n%{http_code}'"
    done = subprocess.run(["bash", "-c", run], env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, (page, command, done.stderr)
    status = done.stdout.rpartition("\n")[2]
    assert status == "200", (page, command, done.stdout)
