"""Metadata v0 (no rack, no controller id) is answered, not failed (input found by fault_tests' fuzzer)."""

from __future__ import annotations

import kio.schema.metadata.v0.request as md0


def test_metadata_v0_lists_the_broker(wire):
    resp = wire.request(md0.MetadataRequest(topics=()))
    assert len(resp.brokers) == 1
    assert resp.brokers[0].port > 0
