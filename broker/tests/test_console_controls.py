"""The console with the controls endpoint on: the controls as buttons in a real browser
(headless Chromium), and the two routes behind them, which exist only with --controls."""

from __future__ import annotations

import json
import urllib.request

import pytest

from kafkalite.tests import suite_brokers

from .test_console_browser import _shot, browser, page  # noqa: F401 - fixtures
from .test_controls_http import http

pytestmark = [pytest.mark.browser]


@pytest.fixture(scope="module")
def broker():
    with suite_brokers.running(console=0, controls=0) as b:
        yield b


def post(url: str, body: dict) -> tuple[int, dict]:
    return http(url, "POST", json.dumps(body).encode())


def test_console_routes_run_controls_only_with_the_endpoint(broker):
    with urllib.request.urlopen(broker.console_url + "api/controls", timeout=10) as r:
        listing = json.load(r)
    assert listing["enabled"] and listing["url"] == broker.controls_url
    assert "advance-clock" in [c["name"] for c in listing["controls"]]
    status, body = post(broker.console_url + "api/controls/advance-clock", {"ms": 5})
    assert status == 200 and body["result"]["offset_ms"] == 5
    status, body = post(broker.console_url + "api/controls/advance-clock", {"ms": "soon"})
    assert status == 400 and "ms must be a non-negative integer" in body["error"]
    with suite_brokers.running(console=0) as plain:
        with urllib.request.urlopen(plain.console_url + "api/controls", timeout=10) as r:
            assert json.load(r) == {"enabled": False, "controls": []}
        status, body = post(plain.console_url + "api/controls/advance-clock", {"ms": 5})
        assert status == 404 and "without --controls" in body["error"]


def test_controls_page_runs_a_control_and_shows_a_refusal(broker, page):  # noqa: F811
    page.goto(broker.console_url + "#/controls")
    advance = page.locator('[data-testid="control"][data-name="advance-clock"]')
    before = broker.controls.clock()["offset_ms"]
    advance.locator('input[name="ms"]').fill("60000")
    advance.locator("button").click()
    outcome = advance.locator('[data-testid="control-outcome"]')
    outcome.wait_for()
    assert json.loads(outcome.inner_text())["offset_ms"] == before + 60000
    assert broker.controls.clock()["offset_ms"] == before + 60000
    fail = page.locator('[data-testid="control"][data-name="fail-requests"]')
    fail.locator('input[name="api"]').fill("NoSuchApi")
    fail.locator('input[name="error"]').fill("NOT_COORDINATOR")
    fail.locator("button").click()
    refused = fail.locator('[data-testid="control-outcome"]')
    refused.wait_for()
    assert refused.inner_text() == "error: no Kafka API named 'NoSuchApi'"
    assert broker.controls.list_faults() == []
    _shot(page, "controls")
