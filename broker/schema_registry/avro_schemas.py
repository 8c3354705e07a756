"""Avro schemas: parsing (with references to other subjects' schemas) and Confluent's
compatibility rule for Avro, which is Avro's own schema resolution: the reader's schema must be
able to read what the writer's schema wrote (fields added by the reader need defaults, promotions
int->long->float->double and string<->bytes, enum symbols the reader lacks, unions, aliases,
names). The check is the Apache Avro library's `ReaderWriterCompatibilityChecker` (what Karapace
uses); nothing of it is written here.

References: each referenced schema is parsed first into one `Names` table (depth first, as
Confluent's `AvroSchema` does), so the main schema may use their full names as types."""

from __future__ import annotations

import json

import avro.errors
import avro.name
import avro.schema
from avro.compatibility import ReaderWriterCompatibilityChecker, SchemaCompatibilityType



def compact(text: str) -> str:
    """The text as stored and answered: compact JSON (Confluent answers the schema's toString)."""
    return json.dumps(json.loads(text), separators=(",", ":"))


def parse(text: str, referenced: list[str]) -> avro.schema.Schema:
    """The parsed schema; `referenced` holds the texts of every referenced schema, dependencies
    first. ValueError with the reason when it is not a valid Avro schema."""
    names = avro.name.Names()
    try:
        for ref_text in referenced:
            avro.schema.make_avsc_object(json.loads(ref_text), names)
        data = json.loads(text)
        return avro.schema.make_avsc_object(data, names)
    except (avro.errors.AvroException, ValueError, TypeError, KeyError, AttributeError, RecursionError) as exc:
        raise ValueError(str(exc) or type(exc).__name__) from None


def incompatibilities(reader: avro.schema.Schema, writer: avro.schema.Schema) -> list[str]:
    """Why `reader` cannot read data written with `writer` (empty: it can)."""
    result = ReaderWriterCompatibilityChecker().get_compatibility(reader, writer)
    if result.compatibility is SchemaCompatibilityType.compatible:
        return []
    out = []
    kinds = list(result.incompatibilities)
    locations = list(result.locations)
    messages = list(result.messages)
    for i, kind in enumerate(kinds):
        where = locations[i] if i < len(locations) else ""
        what = messages[i] if i < len(messages) else ""
        out.append(f"{{errorType:'{str(getattr(kind, 'value', kind)).upper()}', description:'{what}', "
                   f"location:'{where}'}}")
    return out or ["incompatible"]


