"""The generated evolutions (evolution.py) against the registry's checker: for every case and
every level, the checker's verdict is the one the committed table (evolution_verdicts.txt) gives
from Confluent's rules; the table itself is what the generator and those rules give now, so a rule
change is a reviewed diff of it."""

from __future__ import annotations

import json

import pytest

from kafkalite.broker.schema_registry import schemas

from . import evolution


def _committed() -> dict[tuple[str, int], str]:
    out = {}
    for line in evolution.TABLE.read_text().splitlines():
        if line.startswith("#"):
            continue
        schema_type, number, marks = line.split(" ", 3)[:3]
        out[(schema_type, int(number))] = marks
    return out


def _parsed(schema_type: str, model, as_received: bool = False) -> schemas.Parsed:
    """The model as the checker compares it. JSON Schema and Protobuf are built from the model
    (validating JSON Schema against its metaschema, and parsing .proto text, would take most of the
    suite's few seconds); `as_received` goes through the registry's own parsing of the text."""
    if schema_type == "AVRO":
        return schemas.parse("AVRO", evolution.avro_render(model), (), _no_references)
    if schema_type == "JSON":
        text = evolution.json_render(model)
        if as_received:
            return schemas.parse("JSON", text, (), _no_references)
        return schemas.Parsed("JSON", text, json.loads(text), (), {})
    text = evolution.proto_text(model)
    if as_received:
        return schemas.parse("PROTOBUF", text, (), _no_references, name="m.proto")
    return schemas.Parsed("PROTOBUF", text, evolution.proto_descriptor(model))


def _no_references(subject: str, version: int):
    raise AssertionError("the generated schemas have no references")


def _checker_marks(schema_type: str, versions: list, as_received: bool = False) -> str:
    """The registry's verdict at each level for the third version: against the second, and under
    a _TRANSITIVE level against the first too (the versions registry.check gives it)."""
    parsed = [_parsed(schema_type, model, as_received) for model in versions]
    marks = ""
    for level in evolution.LEVELS:
        olds = parsed[:2] if level.endswith("_TRANSITIVE") else parsed[1:2]
        refused = any(schemas.incompatibilities(parsed[2], old, level) for old in olds)
        marks += "n" if refused else "y"
    return marks


def test_the_table_is_what_confluents_rules_give():
    assert evolution.table() == evolution.TABLE.read_text(), \
        "rules or generator changed: review `python -m kafkalite.broker.tests.schema_registry.evolution` and its diff"


@pytest.mark.parametrize("schema_type", list(evolution.KINDS))
def test_the_checker_gives_the_tables_verdicts(schema_type):
    committed = _committed()
    generated = evolution.cases(schema_type)
    assert len(generated) >= 150
    disagreements = []
    for case in generated:
        expected = committed[(schema_type, case.number)]
        got = _checker_marks(schema_type, case.versions)
        if got != expected:
            disagreements.append(f"{case.number:03d} expected {expected} got {got}: {' ; '.join(case.edits)} "
                                 f"{evolution.verdicts(case)[1]}")
    assert not disagreements, "\n".join(disagreements)
    # the cases are not one-sided: every level both accepts and refuses some
    for i, level in enumerate(evolution.LEVELS):
        marks = {committed[(schema_type, case.number)][i] for case in generated}
        assert marks == {"y", "n"}, level


@pytest.mark.parametrize("schema_type", ["JSON", "PROTOBUF"])
def test_texts_as_received_give_the_same_verdicts(schema_type):
    """Every tenth case once more through the registry's parsing of the texts clients send (JSON
    Schema validated against its metaschema, .proto text parsed into a descriptor)."""
    for case in evolution.cases(schema_type)[::10]:
        assert _checker_marks(schema_type, case.versions, as_received=True) == \
            _checker_marks(schema_type, case.versions), (case.number, case.edits)
