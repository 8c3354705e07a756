"""The pytest plugin's schema_registry_url fixture: the session broker's registry, reachable and
empty of this test's subject, beside kafka_bootstrap."""

from __future__ import annotations

import uuid

from .conftest import Registry


def test_schema_registry_url_fixture(schema_registry_url, kafka_bootstrap, kafkalite_broker):
    assert schema_registry_url == kafkalite_broker.schema_registry_url
    r = Registry(schema_registry_url)
    subject = f"fixture-{uuid.uuid4().hex[:8]}"
    status, body = r.register(subject, '"string"')
    assert status == 200 and body["id"] >= 1
    assert r.get(f"/subjects/{subject}/versions") == (200, [1])
