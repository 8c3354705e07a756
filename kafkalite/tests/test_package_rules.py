"""The dependency rules of docs/DESIGN.md's Layout, protocol/ and storage/ sections, read from every
import of every product module (module level, TYPE_CHECKING and inside functions; the graph of
test_import_graph)."""

from __future__ import annotations

import ast

from .test_import_graph import import_graph, product_modules


def third_party_imports(module: str) -> set[str]:
    """The top-level names of what `module` imports from outside the product (stdlib included)."""
    tree = ast.parse(product_modules()[module].read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names.add(node.module.split(".")[0])
    return names - {"kafkalite"}


def in_package(package: str) -> list[str]:
    return [m for m in import_graph() if m == package or m.startswith(package + ".")]


def test_protocol_imports_neither_storage_nor_broker_nor_trio() -> None:
    for module in in_package("kafkalite.protocol"):
        outside = {t for t in import_graph()[module] if not t.startswith("kafkalite.protocol")}
        assert not outside, f"{module} imports {sorted(outside)}"
        assert "trio" not in third_party_imports(module), module


def test_protocol_opens_sockets_only_in_its_blocking_client() -> None:
    with_sockets = {m for m in in_package("kafkalite.protocol") if third_party_imports(m) & {"socket", "ssl"}}
    assert with_sockets == {"kafkalite.protocol.client"}


# what storage may use of protocol: the record-batch modules, file regions and the codecs
STORAGE_MAY_IMPORT = {"kafkalite.protocol", "kafkalite.protocol.batch", "kafkalite.protocol.batch_patches",
                      "kafkalite.protocol.records", "kafkalite.protocol.regions", "kafkalite.protocol.codecs"}


def test_storage_imports_no_broker_no_trio_no_sockets_and_only_the_batch_modules_of_protocol() -> None:
    for module in in_package("kafkalite.storage"):
        outside = {t for t in import_graph()[module] if not t.startswith("kafkalite.storage")}
        assert outside <= STORAGE_MAY_IMPORT, f"{module} imports {sorted(outside - STORAGE_MAY_IMPORT)}"
        assert not third_party_imports(module) & {"trio", "socket", "ssl"}, module


def test_outside_storage_nothing_imports_the_log_module() -> None:
    # the broker holds a partition's log as a PartitionStorage and asks storage's functions (the
    # snapshot control: storage.copies) for anything that knows the log's file names
    importers = {m for m, targets in import_graph().items()
                 if "kafkalite.storage.log" in targets and not m.startswith("kafkalite.storage")}
    assert not importers, sorted(importers)
