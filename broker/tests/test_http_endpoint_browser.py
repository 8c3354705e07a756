"""A page of another origin, open in a real browser (headless Chromium driven by Playwright), tries
every way a page can send a request without asking: fetch with `no-cors` and text/plain, a form
posted into a frame, and a JSON fetch that needs the browser's preflight. The controls and the
console refuse each one (the broker's log shows the requests arrived) and the broker's clock has
not moved; the console's own page, on its own origin, still runs a control.

Chromium is Debian's package (/usr/bin/chromium, installed by scripts/install-test-deps.sh).
"""

from __future__ import annotations

import http.server
import os
import threading
from pathlib import Path
from typing import Any, Iterator

import pytest

from kafkalite.tests import suite_brokers

pytestmark = [pytest.mark.browser]

CHROMIUM = os.environ.get("KAFKALITE_CHROMIUM", "/usr/bin/chromium")

ATTACK = """<!doctype html><title>loading</title>
<iframe name="sink"></iframe>
<form id="console-form" method="POST" enctype="text/plain" target="sink" action="{console}api/controls/advance-clock">
  <input name='{{"ms": 3600000, "x": "' value='"}}'>
</form>
<script>
(async () => {{
  const tried = [];
  const attempt = async (what, url, init) => {{
    try {{ const r = await fetch(url, init); tried.push(what + ":" + r.type + ":" + r.status); }}
    catch (e) {{ tried.push(what + ":refused"); }}
  }};
  const body = JSON.stringify({{ms: 3600000}});
  await attempt("controls-text", "{controls}controls/advance-clock",
                {{method: "POST", mode: "no-cors", headers: {{"Content-Type": "text/plain"}}, body}});
  await attempt("console-text", "{console}api/controls/advance-clock",
                {{method: "POST", mode: "no-cors", headers: {{"Content-Type": "text/plain"}}, body}});
  await attempt("controls-json", "{controls}controls/advance-clock",
                {{method: "POST", headers: {{"Content-Type": "application/json"}}, body}});
  await attempt("controls-blob", "{controls}controls/advance-clock",
                {{method: "POST", mode: "no-cors", body: new Blob([body])}});
  const sink = document.querySelector("iframe");
  await new Promise((done) => {{ sink.onload = done; document.getElementById("console-form").submit(); }});
  window.tried = tried;
  document.title = "done";
}})();
</script>"""


@pytest.fixture(scope="module")
def broker() -> Iterator[Any]:
    with suite_brokers.running(controls=0, console=0) as b:
        yield b


@pytest.fixture(scope="module")
def attacker(broker: Any) -> Iterator[str]:
    """A page of another origin (another port of 127.0.0.1 is another origin) aimed at the broker."""
    page = ATTACK.format(controls=broker.controls_url, console=broker.console_url).encode()

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(page)))
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *_args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), f"Chromium is not installed at {CHROMIUM} (scripts/install-test-deps.sh installs it)"
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


def test_a_page_of_another_origin_cannot_drive_the_controls(broker, attacker, browser):
    before = broker.controls.call("clock")["offset_ms"]
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.goto(attacker)
        page.wait_for_function("document.title === 'done'")
        tried = page.evaluate("window.tried")
    finally:
        context.close()
    # what a no-cors fetch shows its page is opaque (status 0); the JSON fetch fails its preflight
    assert "controls-json:refused" in tried, tried
    assert broker.controls.call("clock")["offset_ms"] == before
    log = broker.log_text()
    origin = attacker.rstrip("/")
    # the browser did send them (with its Origin): the broker refused them
    assert f"refused POST /controls/advance-clock from 127.0.0.1: Origin '{origin}'" in log, log[-3000:]
    assert f"refused POST /api/controls/advance-clock from 127.0.0.1: Origin '{origin}'" in log, log[-3000:]


def test_the_consoles_own_page_still_runs_controls(broker, browser):
    before = broker.controls.call("clock")["offset_ms"]
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(20_000)
        page.goto(broker.console_url)
        status = page.evaluate("""async () => (await fetch("/api/controls/advance-clock", {method: "POST",
            headers: {"Content-Type": "application/json"}, body: JSON.stringify({ms: 7})})).status""")
    finally:
        context.close()
    assert status == 200
    assert broker.controls.call("clock")["offset_ms"] == before + 7
