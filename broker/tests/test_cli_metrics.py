"""--metrics-port: the Prometheus endpoint, and the counters behind it."""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request
from types import SimpleNamespace

import pytest
from kio.schema.api_versions.v3.request import ApiVersionsRequest
from kio.schema.metadata.v12.request import MetadataRequest, MetadataRequestTopic

from kafkalite.broker.metrics import Metrics, render
from kafkalite.protocol.client import WireClient
from kafkalite.tests import suite_brokers


def scrape(url: str) -> dict[str, float]:
    with urllib.request.urlopen(url, timeout=30) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = r.read().decode()
    samples = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, value = line.rsplit(" ", 1)
        samples[name] = float(value)
    return samples


def test_metrics_endpoint_counts_requests_bytes_and_connections():
    with suite_brokers.running(metrics_port=0, config={"num.partitions": 3}) as b:
        assert b.metrics_url and b.metrics_url.endswith("/metrics")
        with WireClient(b.bootstrap) as c:
            c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"))
            for _ in range(3):
                c.request(MetadataRequest(topics=None, allow_auto_topic_creation=False,
                                          include_topic_authorized_operations=False))
            m = scrape(b.metrics_url)
        assert m['kafkalite_requests_total{api="metadata",api_key="3"}'] == 3
        assert m['kafkalite_requests_total{api="api_versions",api_key="18"}'] == 1
        assert m['kafkalite_request_duration_seconds_count{api="metadata",api_key="3"}'] == 3
        assert 0 < m['kafkalite_request_duration_seconds_sum{api="metadata",api_key="3"}'] < 5
        assert m["kafkalite_received_bytes_total"] > 0 and m["kafkalite_sent_bytes_total"] > 0
        assert m["kafkalite_connections"] == 1
        assert m["kafkalite_open_transactions"] == 0
        # the event loop's tasks: at least the listener, the open connection's and the scrape's own
        assert m["kafkalite_tasks"] >= 3
        # a topic auto-created by Metadata shows in the gauges with its partitions (num.partitions=3)
        with WireClient(b.bootstrap) as c:
            c.request(MetadataRequest(topics=(MetadataRequestTopic(topic_id=None, name="metrics-gauge"),),
                                      allow_auto_topic_creation=True, include_topic_authorized_operations=False))
        after = scrape(b.metrics_url)
        assert after["kafkalite_topics"] == m["kafkalite_topics"] + 1
        assert after["kafkalite_partitions"] == m["kafkalite_partitions"] + 3
        # the connections closed: the gauge goes back down
        deadline = time.monotonic() + 5
        while scrape(b.metrics_url)["kafkalite_connections"] != 0:
            assert time.monotonic() < deadline
            time.sleep(0.02)
        # five more connections: their tasks show in the gauge, and go when they close. A task of
        # the broker's own (housekeeping, a connection still closing) may come and go meanwhile,
        # so what is asserted is that closing the five takes at least five tasks away, waited for
        idle = scrape(b.metrics_url)["kafkalite_tasks"]
        clients = [WireClient(b.bootstrap) for _ in range(5)]
        for c in clients:
            c.request(ApiVersionsRequest(client_software_name="t", client_software_version="1"))
        busy = scrape(b.metrics_url)
        assert busy["kafkalite_connections"] == 5 and busy["kafkalite_tasks"] > idle, (idle, busy)
        for c in clients:
            c.close()
        deadline = time.monotonic() + 5
        while (after := scrape(b.metrics_url))["kafkalite_connections"] != 0 or \
                after["kafkalite_tasks"] > busy["kafkalite_tasks"] - 5:
            assert time.monotonic() < deadline, (busy, after)
            time.sleep(0.02)


def test_metrics_endpoint_other_paths():
    with suite_brokers.running(metrics_port=0) as b:
        base = b.metrics_url.rsplit("/", 1)[0]
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(base + "/nope", timeout=30)
        assert e.value.code == 404
        req = urllib.request.Request(b.metrics_url, method="POST", data=b"")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=30)
        assert e.value.code == 405


def test_no_metrics_port_by_default():
    with suite_brokers.running() as b:
        assert b.metrics_url is None
        assert "metrics on" not in b.log_text()


def test_render_reads_gauges_from_the_broker():
    m = Metrics()
    m.record(0, time.monotonic() - 0.5, 100, 20)
    m.record_error(0, time.monotonic(), 50)
    m.connections_opened = 3
    m.connections_closed = 1

    class Txns:
        def open_transaction_count(self):
            return 2

    topic = SimpleNamespace(partitions=[1, 2, 3])
    broker = SimpleNamespace(metrics=m, services=SimpleNamespace(existing={"transactions": Txns()}.get),
                             cluster=SimpleNamespace(topics={"a": topic, "b": SimpleNamespace(partitions=[1])}))
    text = render(broker)
    assert 'kafkalite_requests_total{api="produce",api_key="0"} 2' in text
    assert 'kafkalite_request_errors_total{api="produce",api_key="0"} 1' in text
    assert re.search(r'kafkalite_request_duration_seconds_sum\{api="produce",api_key="0"\} 0\.5\d*', text)
    assert "kafkalite_received_bytes_total 150" in text
    assert "kafkalite_sent_bytes_total 20" in text
    assert "kafkalite_connections 2" in text
    assert "kafkalite_partitions 4" in text
    assert "kafkalite_topics 2" in text
    assert "kafkalite_open_transactions 2" in text
    # every sample has HELP and TYPE lines, as Prometheus expects
    names = {l.split("{")[0].split(" ")[0] for l in text.splitlines() if not l.startswith("#")}
    for name in names:
        base = re.sub(r"_(sum|count)$", "", name)
        assert f"# TYPE {base} " in text


def test_open_transactions_gauge_never_fails_a_scrape():
    def count():
        raise RuntimeError("broken")

    txns = SimpleNamespace(open_transaction_count=lambda: 5)
    broker = SimpleNamespace(metrics=Metrics(), services=SimpleNamespace(existing={"transactions": txns}.get),
                             cluster=SimpleNamespace(topics={}))
    assert "kafkalite_open_transactions 5" in render(broker)
    txns.open_transaction_count = count
    assert "kafkalite_open_transactions 0" in render(broker)
    # a broker whose transaction coordinator was never used has none open
    broker.services = SimpleNamespace(existing={}.get)
    assert "kafkalite_open_transactions 0" in render(broker)


def test_record_is_cheap():
    m = Metrics()
    n = 200_000
    t = time.perf_counter()
    for _ in range(n):
        m.record(0, 0.0, 10, 10)
    per_call = (time.perf_counter() - t) / n
    assert per_call < 5e-6, per_call  # well under a microsecond on a normal machine
