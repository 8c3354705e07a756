"""PartitionStorage (storage.interface) and its engine PartitionLog agree, member by member."""

from __future__ import annotations

import inspect

from kafkalite.storage import LogConfig, PartitionLog, PartitionStorage


def _members(cls: type) -> dict[str, object]:
    return {name: value for name, value in vars(cls).items() if not name.startswith("_")}


def test_every_operation_of_the_interface_is_documented():
    for name, value in _members(PartitionStorage).items():
        doc = (value.fget if isinstance(value, property) else value).__doc__
        assert doc and doc.strip(), f"PartitionStorage.{name} has no documentation"


def test_partition_log_implements_every_operation_with_the_same_parameters():
    for name, value in _members(PartitionStorage).items():
        impl = getattr(PartitionLog, name, None)
        assert impl is not None, f"PartitionLog lacks {name}"
        if isinstance(value, property):
            assert isinstance(impl, property), f"PartitionLog.{name} is not a property"
            continue
        want = [(p.name, p.kind, p.default) for p in inspect.signature(value).parameters.values()]
        have = [(p.name, p.kind, p.default) for p in inspect.signature(impl).parameters.values()]
        assert have == want, f"PartitionLog.{name}{inspect.signature(impl)} differs from the interface"


def test_the_interface_names_the_attributes_the_broker_reads(tmp_path):
    plog = PartitionLog.open(tmp_path / "t-0", LogConfig(), now_ms=0)
    try:
        for name in PartitionStorage.__annotations__:
            assert hasattr(plog, name), f"PartitionLog has no {name}"
    finally:
        plog.close()
