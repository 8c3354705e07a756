"""The web console in a real browser (headless Chromium driven by Playwright) while real clients
(confluent-kafka) run a transaction that commits, one that aborts and one left open, and a
consumer group holds committed offsets behind the high watermark.

Chromium is Debian's package (/usr/bin/chromium, installed by scripts/install-test-deps.sh);
Playwright never downloads a browser here. A screenshot of every page is written to
artifacts/console/ (gitignored; CI keeps it as an artifact), or under $KL_ARTIFACTS_DIR/console/.
"""

from __future__ import annotations

import gc
import json
import os
import re
import time
import uuid
from pathlib import Path

import pytest

import kafkalite
from kafkalite.admin import AdminConnection

from confluent_kafka import Consumer, Producer, TopicPartition

pytestmark = [pytest.mark.browser, pytest.mark.transactions, pytest.mark.librdkafka]

CHROMIUM = os.environ.get("KAFKALITE_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(os.environ.get("KL_ARTIFACTS_DIR") or Path(__file__).resolve().parents[2] / "artifacts") / "console"
# what each batch kind is drawn with (broker/console/web/src/style.css)
COLOURS = {"committed": "rgb(46, 158, 91)", "aborted": "rgb(214, 69, 69)", "open": "rgb(240, 162, 2)"}


@pytest.fixture(scope="module")
def broker():
    with kafkalite.running(console=0) as b:
        assert b.console_url, "the ready line names no console"
        yield b


def _txn_producer(bootstrap: str, tid: str) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5,
                  "transaction.timeout.ms": 60000})
    p.init_transactions(15)
    return p


@pytest.fixture(scope="module")
def scene(broker):
    """One partition holding plain records, a committed, an aborted and an open transaction,
    and a group whose committed offset lags."""
    topic = f"console-{uuid.uuid4().hex[:8]}"
    with AdminConnection(broker.bootstrap) as admin:
        admin.create_topic(topic, 1)
        admin.wait_for_topic(topic, 1)
    ids = {k: f"{k}-{uuid.uuid4().hex[:6]}" for k in ("committed", "aborted", "open")}

    plain = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": False})
    plain.produce(topic, key=b"k0", value=b"plain record")
    plain.flush(10)

    p = _txn_producer(broker.bootstrap, ids["committed"])
    p.begin_transaction()
    for i in range(3):
        p.produce(topic, key=f"order-{i}".encode(), value=json.dumps({"order": i, "state": "paid"}).encode(),
                  headers=[("source", b"console-test")])
    p.commit_transaction(15)

    p = _txn_producer(broker.bootstrap, ids["aborted"])
    p.begin_transaction()
    for i in range(2):
        p.produce(topic, value=f"never seen {i}".encode())
    p.flush(10)
    p.abort_transaction(15)

    still_open = _txn_producer(broker.bootstrap, ids["open"])
    still_open.begin_transaction()
    still_open.produce(topic, value=b"pending 0")
    still_open.produce(topic, value=b"pending 1")
    still_open.flush(10)

    group = f"console-group-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": group, "enable.auto.commit": False,
                         "auto.offset.reset": "earliest", "isolation.level": "read_uncommitted"})
    consumer.subscribe([topic])
    deadline = time.monotonic() + 20
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.2)
    assert consumer.assignment(), "the consumer got no assignment"
    consumer.commit(offsets=[TopicPartition(topic, 0, 2)], asynchronous=False)
    # read_uncommitted: the high watermark (read_committed would report the LSO); lag is counted
    # from the high watermark, as kafka-consumer-groups.sh does
    _low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    found = {"topic": topic, "ids": ids, "open_producer": still_open, "group": group, "lag": high - 2, "high": high}
    yield found
    consumer.close()
    try:
        still_open.abort_transaction(10)
    except Exception:
        pass  # the test may have committed it
    # destroy the producers while the broker still runs (else they log refused reconnects)
    found.clear()
    del plain, p, still_open
    gc.collect()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    assert Path(CHROMIUM).exists(), f"Chromium is not installed at {CHROMIUM} (scripts/install-test-deps.sh installs it)"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox"])
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    pg = context.new_page()
    pg.set_default_timeout(10_000)
    yield pg
    context.close()


def _shot(page, name: str) -> None:
    # the body only: as tall as what the page shows
    page.locator("body").screenshot(path=str(ARTIFACTS / f"{name}.png"))


def test_partition_timeline_draws_each_kind_and_names_the_open_transaction(broker, scene, page):
    topic, ids = scene["topic"], scene["ids"]
    page.goto(f"{broker.console_url}#/partition/{topic}/0")
    timeline = page.get_by_test_id("timeline")
    timeline.locator("[data-kind=open]").first.wait_for()
    kinds = [b.get_attribute("data-kind") for b in timeline.locator("[data-testid=batch]").all()]
    # offset order: the plain record, the committed transaction and its marker, the aborted one
    # and its marker, then the open one (no marker yet)
    collapsed = [k for i, k in enumerate(kinds) if i == 0 or k != kinds[i - 1]]
    assert collapsed == ["plain", "committed", "commit", "aborted", "abort", "open"], kinds
    for kind, colour in COLOURS.items():
        shown = timeline.locator(f"[data-kind={kind}]").first.evaluate("e => getComputedStyle(e).backgroundColor")
        assert shown == colour, (kind, shown)

    # the LSO stops at the open transaction's first batch, which the page names
    first_open = int(timeline.locator("[data-kind=open]").first.get_attribute("data-offset"))
    assert page.get_by_test_id("lso").inner_text() == str(first_open)
    assert page.get_by_test_id("hw").inner_text() == str(scene["high"])
    marker = page.get_by_test_id("lso-marker")
    assert marker.inner_text() == f"LSO {first_open}"
    # drawn right before the first open batch
    assert marker.evaluate("e => e.nextElementSibling.dataset.kind") == "open"
    assert page.get_by_test_id("hw-marker").inner_text() == f"HW {scene['high']}"
    assert page.get_by_test_id("lso-holder-id").inner_text() == ids["open"]
    _shot(page, "partition")

    # the records of a committed batch, decoded on demand
    timeline.locator("[data-kind=committed]").first.click()
    records = page.get_by_test_id("records")
    records.get_by_test_id("record").first.wait_for()
    text = records.inner_text()
    assert '"state": "paid"' in text and "order-0" in text and "source" in text and "console-test" in text
    _shot(page, "partition-records")
    records.get_by_label("hex").check()
    assert "6f 72 64 65 72 2d 30" in records.inner_text()  # "order-0"


def test_transactions_page_shows_state_age_and_history(broker, scene, page):
    ids = scene["ids"]
    page.goto(f"{broker.console_url}#/transactions")
    rows = {k: page.locator(f"[data-testid=transaction][data-id='{tid}']") for k, tid in ids.items()}
    rows["open"].wait_for()
    assert rows["committed"].get_attribute("data-state") == "CompleteCommit"
    assert rows["aborted"].get_attribute("data-state") == "CompleteAbort"
    assert rows["open"].get_attribute("data-state") == "Ongoing"
    assert f"{scene['topic']}-0" in rows["open"].inner_text()
    # age against the timeout, for the open one only
    assert re.search(r"\d+(\.\d+)? (ms|s) / 60\.0 s", rows["open"].inner_text()), rows["open"].inner_text()
    # history: the committed id's one transaction committed, the aborted id's aborted
    assert rows["committed"].locator(".outcome-commit").count() == 1
    assert rows["aborted"].locator(".outcome-abort").count() == 1
    _shot(page, "transactions")


def test_groups_page_shows_members_and_lag(broker, scene, page):
    page.goto(f"{broker.console_url}#/groups")
    group = page.locator(f"[data-testid=group][data-id='{scene['group']}']")
    group.wait_for()
    assert group.get_by_test_id("group-state").inner_text() == "Stable"
    assert f"{scene['topic']}-0" in group.locator("table").first.inner_text()  # the member's assignment
    row = group.locator(f"[data-testid=group-offset][data-tp='{scene['topic']}-0']")
    assert row.get_by_test_id("lag").inner_text() == str(scene["lag"])
    _shot(page, "groups")


def test_topics_page_and_live_update_when_the_open_transaction_commits(broker, scene, page):
    topic = scene["topic"]
    page.goto(f"{broker.console_url}#/topics")
    card = page.locator(f"[data-testid=topic][data-topic='{topic}']")
    card.wait_for()
    assert re.search(rf"{topic}-0\s+0\s+\d+\s+{scene['high']}", card.inner_text()), card.inner_text()
    _shot(page, "topics")

    page.goto(f"{broker.console_url}#/partition/{topic}/0")
    page.get_by_test_id("lso-holder").wait_for()
    scene["open_producer"].commit_transaction(15)
    # the page follows without a reload: the open batches turn committed, the LSO reaches the HW
    page.get_by_test_id("lso-holder").wait_for(state="detached", timeout=5000)
    assert page.locator("[data-testid=timeline] [data-kind=open]").count() == 0
    marker = page.get_by_test_id("lso-marker")
    assert re.fullmatch(r"LSO = HW \d+", marker.inner_text())
    assert page.locator("[data-testid=timeline] [data-kind=commit]").count() == 2
