"""The REST API against a running broker: every endpoint's status, body and error code as
Confluent documents them; bad input gets Confluent's error, never a 500."""

from __future__ import annotations

import json
import uuid

import pytest

from .conftest import CONTENT_TYPE

RECORD = {"type": "record", "name": "User", "namespace": "t", "fields": [{"name": "name", "type": "string"}]}
RECORD_V2 = {**RECORD, "fields": RECORD["fields"] + [{"name": "age", "type": "int", "default": 0}]}
RECORD_BAD = {**RECORD, "fields": RECORD["fields"] + [{"name": "age", "type": "int"}]}


def subject() -> str:
    return f"s-{uuid.uuid4().hex[:8]}"


def test_types_root_and_content_type(registry):
    status, body, ctype = registry.call("GET", "/schemas/types")
    assert (status, sorted(body)) == (200, ["AVRO", "JSON", "PROTOBUF"])
    assert ctype.startswith(CONTENT_TYPE)
    assert registry.get("/") == (200, {})
    assert registry.get("/contexts") == (200, ["."])


@pytest.mark.parametrize("ctype", ["application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json",
                                   "application/json"])
def test_the_three_content_types_are_accepted(registry, ctype):
    s = subject()
    status, body, _ = registry.call("POST", f"/subjects/{s}/versions", {"schema": json.dumps(RECORD)},
                                    content_type=ctype)
    assert status == 200 and isinstance(body["id"], int)
    status, body, _ = registry.call("POST", f"/subjects/{s}/versions", {"schema": "\"int\""}, content_type="text/csv")
    assert status == 415


def test_register_fetch_and_same_schema_same_id_across_subjects(registry):
    a, b = subject(), subject()
    namespace = "n" + a[2:]  # a schema no other test registers
    RECORD = {**globals()["RECORD"], "namespace": namespace}
    RECORD_V2 = {**globals()["RECORD_V2"], "namespace": namespace}
    status, first = registry.register(a, RECORD)
    assert status == 200
    assert registry.register(a, RECORD) == (200, first)  # re-registering: the existing id
    assert registry.register(b, RECORD) == (200, first)  # same schema, another subject: same id
    status, v2 = registry.register(a, RECORD_V2)
    assert status == 200 and v2["id"] != first["id"]
    assert registry.get(f"/subjects/{a}/versions") == (200, [1, 2])
    status, latest = registry.get(f"/subjects/{a}/versions/latest")
    assert status == 200
    assert latest["subject"] == a and latest["version"] == 2 and latest["id"] == v2["id"]
    assert json.loads(latest["schema"]) == RECORD_V2 and "schemaType" not in latest
    assert registry.get(f"/subjects/{a}/versions/-1")[1] == latest
    status, by_id = registry.get(f"/schemas/ids/{first['id']}")
    assert status == 200 and json.loads(by_id["schema"]) == RECORD
    status, text, _ = registry.call("GET", f"/schemas/ids/{first['id']}/schema")
    assert status == 200 and text == RECORD
    status, text, _ = registry.call("GET", f"/subjects/{a}/versions/1/schema")
    assert status == 200 and text == RECORD
    assert registry.get(f"/schemas/ids/{first['id']}/versions") == \
        (200, sorted([{"subject": a, "version": 1}, {"subject": b, "version": 1}], key=lambda d: d["subject"]))
    assert registry.get(f"/schemas/ids/{first['id']}/subjects") == (200, sorted([a, b]))
    status, found = registry.post(f"/subjects/{b}", {"schema": json.dumps(RECORD)})
    assert status == 200 and (found["subject"], found["version"], found["id"]) == (b, 1, first["id"])
    status, subjects = registry.get(f"/subjects?subjectPrefix={a}")
    assert (status, subjects) == (200, [a])


def test_incompatible_is_409_and_compatibility_endpoint(registry):
    s = subject()
    registry.register(s, RECORD)
    status, body = registry.register(s, RECORD_BAD)
    assert status == 409 and body["error_code"] == 409 and "READER_FIELD_MISSING_DEFAULT_VALUE" in body["message"]
    status, body = registry.post(f"/compatibility/subjects/{s}/versions/latest?verbose=true",
                                 {"schema": json.dumps(RECORD_BAD)})
    assert status == 200 and body["is_compatible"] is False and body["messages"]
    status, body = registry.post(f"/compatibility/subjects/{s}/versions/1", {"schema": json.dumps(RECORD_V2)})
    assert (status, body) == (200, {"is_compatible": True})
    status, body = registry.post(f"/compatibility/subjects/{s}/versions", {"schema": json.dumps(RECORD_V2)})
    assert (status, body) == (200, {"is_compatible": True})
    status, body = registry.post(f"/compatibility/subjects/{s}/versions/7", {"schema": json.dumps(RECORD_V2)})
    assert status == 404 and body["error_code"] == 40402


def test_compatibility_against_a_subject_without_versions(registry):
    """Confluent's CompatibilityResource: "latest" of a subject with no live version (unknown, or
    all soft-deleted) checks against nothing and is compatible; a numbered version is 40402; the
    schema is still parsed (42201)."""
    nope = subject()
    for path in (f"/compatibility/subjects/{nope}/versions/latest", f"/compatibility/subjects/{nope}/versions/-1",
                 f"/compatibility/subjects/{nope}/versions"):
        assert registry.post(path, {"schema": '"int"'}) == (200, {"is_compatible": True})
    assert registry.post(f"/compatibility/subjects/{nope}/versions/latest?verbose=true", {"schema": '"int"'}) == \
        (200, {"is_compatible": True, "messages": []})
    status, body = registry.post(f"/compatibility/subjects/{nope}/versions/1", {"schema": '"int"'})
    assert status == 404 and body["error_code"] == 40402
    status, body = registry.post(f"/compatibility/subjects/{nope}/versions/latest", {"schema": '{"type": "nope"}'})
    assert status == 422 and body["error_code"] == 42201
    assert nope not in registry.get("/subjects?deleted=true")[1]  # a check registers nothing
    s = subject()
    registry.register(s, RECORD)
    registry.delete(f"/subjects/{s}")
    status, body = registry.post(f"/compatibility/subjects/{s}/versions/latest", {"schema": json.dumps(RECORD_BAD)})
    assert (status, body) == (200, {"is_compatible": True})
    status, body = registry.post(f"/compatibility/subjects/{s}/versions/1", {"schema": json.dumps(RECORD_BAD)})
    assert status == 404 and body["error_code"] == 40402


def test_ids_after_a_permanent_delete(registry):
    """Confluent gives the schema a new id: its permanent delete writes a tombstone per version
    (KafkaSchemaRegistry.deleteSubject), the tombstone drops the id's subject-versions
    (InMemoryCache.schemaTombstoned), so schemaIdAndSubjects no longer finds the schema on register
    and IncrementalIdGenerator.id gives the highest id seen + 1; the old id answers 40403.
    (Karapace 4.2.0 gives the old id back.)"""
    s = subject()
    schema = {"type": "record", "name": f"Gone{uuid.uuid4().hex[:8]}", "fields": [{"name": "a", "type": "int"}]}
    status, first = registry.register(s, schema)
    assert status == 200
    assert registry.put(f"/config/{s}", {"compatibility": "FULL"})[0] == 200
    assert registry.put(f"/mode/{s}", {"mode": "READWRITE"})[0] == 200
    assert registry.delete(f"/subjects/{s}") == (200, [1])
    assert registry.get(f"/schemas/ids/{first['id']}")[0] == 200  # a soft-deleted version's id is still served
    assert registry.delete(f"/subjects/{s}?permanent=true") == (200, [1])
    status, body = registry.get(f"/schemas/ids/{first['id']}")
    assert status == 404 and body["error_code"] == 40403
    assert registry.get(f"/config/{s}")[1]["error_code"] == 40408  # the subject's level and mode went with it
    assert registry.get(f"/mode/{s}?defaultToGlobal=false")[1]["error_code"] == 40409
    highest = registry.register(subject(), {"type": "fixed", "name": f"F{uuid.uuid4().hex[:8]}", "size": 1})[1]["id"]
    status, again = registry.register(s, schema)
    assert status == 200 and again["id"] == highest + 1
    assert registry.get(f"/subjects/{s}/versions") == (200, [1])


def test_errors_carry_confluent_codes(registry):
    s = subject()
    assert registry.get(f"/subjects/{s}/versions")[1]["error_code"] == 40401
    assert registry.get(f"/subjects/{s}/versions/1")[1]["error_code"] == 40401
    registry.register(s, RECORD)
    assert registry.get(f"/subjects/{s}/versions/2") == (404, {"error_code": 40402, "message": "Version 2 not found."})
    for bad in ("0", "x", "2147483648", "-2"):
        status, body = registry.get(f"/subjects/{s}/versions/{bad}")
        assert status == 422 and body["error_code"] == 42202
    assert registry.get("/schemas/ids/999999") == (404, {"error_code": 40403, "message": "Schema 999999 not found"})
    assert registry.get("/schemas/ids/abc")[0] == 404
    status, body = registry.post(f"/subjects/{s}", {"schema": '"long"'})
    assert status == 404 and body["error_code"] == 40403
    status, body = registry.post(f"/subjects/{subject()}", {"schema": '"long"'})
    assert status == 404 and body["error_code"] == 40401
    status, body = registry.register(s, {"type": "record", "name": "x"})
    assert status == 422 and body["error_code"] == 42201
    status, body = registry.put("/config", {"compatibility": "SIDEWAYS"})
    assert status == 422 and body["error_code"] == 42203
    assert registry.call("PATCH", "/config")[0] == 405
    assert registry.get("/nowhere")[0] == 404


@pytest.mark.parametrize("raw", [b"", b"{", b"[]", b"null", b"12", b'{"schema": 5}', b'{"schema": ""}',
                                 b'{"schema": "\\"int\\"", "schemaType": "XML"}',
                                 b'{"schema": "\\"int\\"", "references": 3}',
                                 b'{"schema": "\\"int\\"", "references": [{"name": 1}]}',
                                 b'{"schema": "\\"int\\"", "id": "x"}', b'{"schema": "{\\"type\\": ['
                                 b'\\"int\\", \\"int\\"]}"}', b"\xff\xfe",
                                 b'{"schema": "syntax = \\"proto3\\"; message {", "schemaType": "PROTOBUF"}',
                                 b'{"schema": "{\\"type\\": 5}", "schemaType": "JSON"}',
                                 b'{"schema": "\\"int\\"", "references": [{"name": "a", "subject": "nope", '
                                 b'"version": 1}]}'])
def test_bad_input_is_never_a_500(registry, raw):
    status, body, _ = registry.call("POST", f"/subjects/{subject()}/versions", raw=raw)
    assert 400 <= status < 500, (status, body)
    assert isinstance(body["error_code"], int) and isinstance(body["message"], str)
    for method, path in (("POST", f"/compatibility/subjects/{subject()}/versions"), ("PUT", "/config/x"),
                         ("POST", f"/subjects/{subject()}"), ("PUT", "/mode/x")):
        status, body, _ = registry.call(method, path, raw=raw)
        assert status < 500, (method, path, status, body)


def test_deeply_nested_input_is_refused_not_a_500(registry):
    deep_body = b'{"schema": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    status, body, _ = registry.call("POST", f"/subjects/{subject()}/versions", raw=deep_body)
    assert status == 400 and body["error_code"] == 400
    depth = 3000  # deeper than Python's recursion limit
    nested = '{"type": "array", "items": ' * depth + '{"type": "string"}' + "}" * depth
    for schema_type in ("JSON", "AVRO"):
        s = subject()
        status, body = registry.register(s, nested, schema_type)
        assert status < 500, body
        if status == 200:
            status, body = registry.post(f"/compatibility/subjects/{s}/versions/latest",
                                         {"schema": nested, "schemaType": schema_type})
            assert status < 500, body


def test_soft_and_permanent_deletes(registry):
    s = subject()
    registry.register(s, RECORD)
    registry.register(s, RECORD_V2)
    assert registry.delete(f"/subjects/{s}/versions/1?permanent=true")[1]["error_code"] == 40407
    assert registry.delete(f"/subjects/{s}/versions/1") == (200, 1)
    assert registry.delete(f"/subjects/{s}/versions/1")[1]["error_code"] == 40406
    assert registry.get(f"/subjects/{s}/versions") == (200, [2])
    assert registry.get(f"/subjects/{s}/versions?deleted=true") == (200, [1, 2])
    assert registry.get(f"/subjects/{s}/versions/1")[1]["error_code"] == 40402
    assert registry.get(f"/subjects/{s}/versions/1?deleted=true")[1]["version"] == 1
    assert registry.delete(f"/subjects/{s}/versions/1?permanent=true") == (200, 1)
    assert registry.get(f"/subjects/{s}/versions?deleted=true") == (200, [2])
    assert registry.delete(f"/subjects/{s}?permanent=true")[1]["error_code"] == 40405
    assert registry.delete(f"/subjects/{s}") == (200, [2])
    assert registry.delete(f"/subjects/{s}")[1]["error_code"] == 40404
    assert s not in registry.get("/subjects")[1]
    assert s in registry.get("/subjects?deleted=true")[1]
    assert s in registry.get("/subjects?deletedOnly=true")[1]
    assert registry.get(f"/subjects/{s}/versions")[1]["error_code"] == 40401
    assert registry.delete(f"/subjects/{s}?permanent=true") == (200, [2])
    assert s not in registry.get("/subjects?deleted=true")[1]
    assert registry.delete(f"/subjects/{s}")[1]["error_code"] == 40401
    # after a soft delete of the subject a new registration starts after the old versions
    t = subject()
    registry.register(t, RECORD)
    registry.delete(f"/subjects/{t}")
    registry.register(t, RECORD_BAD)  # no live version: nothing to be compatible with
    assert registry.get(f"/subjects/{t}/versions") == (200, [2])


def test_config_levels_and_default_to_global(registry):
    s = subject()
    assert registry.get(f"/config/{s}") == (404, {"error_code": 40408, "message": f"Subject '{s}' does not have "
                                                  "subject-level compatibility configured"})
    assert registry.get(f"/config/{s}?defaultToGlobal=true") == (200, {"compatibilityLevel": "BACKWARD"})
    assert registry.put(f"/config/{s}", {"compatibility": "none"}) == (200, {"compatibility": "NONE"})
    assert registry.get(f"/config/{s}") == (200, {"compatibilityLevel": "NONE"})
    registry.register(s, RECORD)
    assert registry.register(s, RECORD_BAD)[0] == 200  # NONE: no check
    assert registry.delete(f"/config/{s}") == (200, {"compatibilityLevel": "NONE"})
    assert registry.get(f"/config/{s}")[1]["error_code"] == 40408
    assert registry.get("/config") == (200, {"compatibilityLevel": "BACKWARD"})


def test_modes_and_import_with_explicit_ids(registry):
    s = subject()
    assert registry.get("/mode") == (200, {"mode": "READWRITE"})
    assert registry.get(f"/mode/{s}")[1]["error_code"] == 40409
    assert registry.put(f"/mode/{s}", {"mode": "READONLY"}) == (200, {"mode": "READONLY"})
    status, body = registry.register(s, RECORD)
    assert status == 422 and body["error_code"] == 42205
    assert registry.put(f"/mode/{s}", {"mode": "IMPORT"}) == (200, {"mode": "IMPORT"})
    status, body = registry.post(f"/subjects/{s}/versions", {"schema": json.dumps(RECORD_BAD), "id": 50_000,
                                                             "version": 3})
    assert (status, body) == (200, {"id": 50_000})
    assert registry.get(f"/subjects/{s}/versions/3")[1]["id"] == 50_000
    status, body = registry.post(f"/subjects/{s}/versions", {"schema": json.dumps(RECORD), "id": 50_000})
    assert status == 422 and body["error_code"] == 42205  # the id holds another schema
    assert registry.delete(f"/mode/{s}") == (200, {"mode": "IMPORT"})
    status, body = registry.post(f"/subjects/{s}/versions", {"schema": json.dumps(RECORD_V2), "id": 60_000})
    assert status == 422 and body["error_code"] == 42205  # explicit ids only in IMPORT mode
    assert registry.put("/mode", {"mode": "SOMETIMES"})[1]["error_code"] == 42204
    # ids go on from the highest, imported ones included
    status, body = registry.register(subject(), {"type": "fixed", "name": "F", "size": 3})
    assert status == 200 and body["id"] == 50_001


def test_references_and_referencedby(registry):
    base, user = subject(), subject()
    address = {"type": "record", "name": "Address", "namespace": "t", "fields": [{"name": "city", "type": "string"}]}
    status, ref = registry.register(base, address)
    assert status == 200
    refs = [{"name": "t.Address", "subject": base, "version": 1}]
    with_ref = {"type": "record", "name": "Person", "namespace": "t", "fields": [{"name": "home", "type": "t.Address"}]}
    status, body = registry.register(user, with_ref, references=refs)
    assert status == 200
    status, fetched = registry.get(f"/schemas/ids/{body['id']}")
    assert fetched["references"] == refs
    assert registry.get(f"/subjects/{base}/versions/1/referencedby") == (200, [body["id"]])
    status, err = registry.delete(f"/subjects/{base}/versions/1")
    assert status == 422 and err["error_code"] == 42206
    status, err = registry.register(subject(), with_ref)  # without the reference: t.Address is unknown
    assert status == 422 and err["error_code"] == 42201


def test_json_schema_and_protobuf_round_trip(registry):
    s = subject()
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    status, body = registry.register(s, schema, "JSON")
    assert status == 200
    status, fetched = registry.get(f"/subjects/{s}/versions/1")
    assert fetched["schemaType"] == "JSON" and json.loads(fetched["schema"]) == schema
    p = subject()
    proto = 'syntax = "proto3";\npackage t;\nmessage M {\n  int32 id = 1;\n  map<string, int64> counts = 2;\n}\n'
    status, body = registry.register(p, proto, "PROTOBUF")
    assert status == 200
    status, fetched = registry.get(f"/schemas/ids/{body['id']}")
    assert (fetched["schema"], fetched["schemaType"]) == (proto, "PROTOBUF")
    status, serialized = registry.get(f"/schemas/ids/{body['id']}?format=serialized")
    import base64

    from google.protobuf import descriptor_pb2, descriptor_pool

    fdp = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(serialized["schema"]))
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    message = pool.FindMessageTypeByName("t.M")
    assert [f.name for f in message.fields] == ["id", "counts"]
    assert message.fields_by_name["counts"].message_type.GetOptions().map_entry
    # the same schema sent as a descriptor gets the same id under another subject
    status, again = registry.register(subject(), serialized["schema"], "PROTOBUF")
    assert status == 200
    status, fetched_again = registry.get(f"/schemas/ids/{again['id']}?format=serialized")
    assert descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(fetched_again["schema"])).message_type \
        == fdp.message_type
