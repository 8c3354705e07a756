"""The HTTP face of the registry: Confluent Schema Registry's REST API as its clients call it
(confluent-kafka, franz-go's sr, kafkajs's confluent-schema-registry), a Starlette app.

    GET  /                                   {}
    GET  /schemas/types                      ["JSON","PROTOBUF","AVRO"]
    GET  /contexts                           ["."]: the default context is the only one
    GET  /schemas?subjectPrefix&deleted&latestOnly   every version as a schema object
    GET  /schemas/ids/{id}?format=serialized {"schema"[, "schemaType", "references"]}; Protobuf as a
                                             base64 FileDescriptorProto with format=serialized
    GET  /schemas/ids/{id}/schema            the schema text alone
    GET  /schemas/ids/{id}/versions?deleted  [{"subject","version"}]
    GET  /schemas/ids/{id}/subjects?deleted  [subject]
    GET  /subjects?subjectPrefix&deleted&deletedOnly
    POST /subjects/{s}?deleted               lookup: the version holding the schema
    DELETE /subjects/{s}?permanent           [versions]
    GET  /subjects/{s}/versions?deleted&deletedOnly
    POST /subjects/{s}/versions?normalize    register: {"id"}
    GET  /subjects/{s}/versions/{v}?deleted&format  {"subject","version","id","schema"[, "schemaType",
                                             "references"]} (format=serialized as for ids)
    GET  /subjects/{s}/versions/{v}/schema   the schema text alone
    GET  /subjects/{s}/versions/{v}/referencedby   [ids]
    DELETE /subjects/{s}/versions/{v}?permanent    version
    GET|PUT|DELETE /config[/{s}]             GET {"compatibilityLevel"} (defaultToGlobal for a subject);
                                             PUT {"compatibility"} answers {"compatibility"}
    GET|PUT /mode, GET|PUT|DELETE /mode/{s}  {"mode"}; PUT /mode?force=true for IMPORT over subjects
    POST /compatibility/subjects/{s}/versions[/{v}]?verbose  {"is_compatible"[, "messages"]}

Answers are `application/vnd.schemaregistry.v1+json`; request bodies may be that,
`application/vnd.schemaregistry+json`, `application/json` or untyped (other types: 415). Errors
are `{"error_code", "message"}` with Confluent's codes (errors.py); when a listener requires SASL,
requests need HTTP basic auth with a SASL user's name and password (broker.http_basic_auth, else 401); a body that is not JSON is 400,
an unknown path 404, a wrong method 405; anything unforeseen is logged and answered 500 50001.
`normalize` is accepted and changes nothing: stored texts are already compact (Avro, JSON) or
printed from the descriptor (Protobuf sent as a descriptor)."""

from __future__ import annotations

import json
import logging
from typing import Any

from . import errors
from .records import SCHEMA_TYPES, SchemaValue, references_from_json
from ..http_basic_auth import BasicAuth
from .registry import Registry

log = logging.getLogger("kafkalite.schema_registry")

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
ACCEPTED_TYPES = ("application/vnd.schemaregistry.v1+json", "application/vnd.schemaregistry+json",
                  "application/json", "application/octet-stream", "")


def _flag(query: Any, name: str) -> bool:
    """A boolean query parameter; Python clients send True/False, and deleted_only for deletedOnly."""
    value = query.get(name, query.get("deleted_only") if name == "deletedOnly" else None)
    return str(value).strip().lower() == "true"


def _schema_text(registry: Registry, schema_id: int, text: str, schema_type: str, query: Any) -> str:
    """The schema as asked: with `format=serialized`, Protobuf as a base64 FileDescriptorProto."""
    if query.get("format") == "serialized" and schema_type == "PROTOBUF":
        from .protobuf_descriptors import encode_serialized

        return encode_serialized(registry.parsed(schema_id).model)
    return text


def _version_json(v: SchemaValue, registry: Registry, query: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"subject": v.subject, "version": v.version, "id": v.id,
                           "schema": _schema_text(registry, v.id, v.schema, v.schema_type, query)}
    if v.schema_type != "AVRO":
        out["schemaType"] = v.schema_type
    if v.references:
        out["references"] = [r.to_json() for r in v.references]
    return out


def make_app(registry: Registry, auth: BasicAuth | None = None):
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    def answer(body: Any, status: int = 200) -> Response:
        return Response(json.dumps(body), status_code=status, media_type=CONTENT_TYPE)

    def fail(exc: errors.RegistryError) -> Response:
        return answer({"error_code": exc.error_code, "message": exc.message}, exc.http_status)

    async def body_of(request: Request) -> dict[str, Any]:
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if ctype not in ACCEPTED_TYPES:
            raise errors.RegistryError(415, 415, "HTTP 415 Unsupported Media Type")
        raw = await request.body()
        try:
            body = json.loads(raw) if raw.strip() else {}
        except (ValueError, UnicodeDecodeError, RecursionError) as exc:
            raise errors.bad_request(f"the body is not JSON: {type(exc).__name__}: {exc}") from None
        if not isinstance(body, dict):
            raise errors.bad_request("the body must be a JSON object")
        return body

    async def candidate(request: Request, subject: str):
        body = await body_of(request)
        text = body.get("schema")
        if not isinstance(text, str) or not text.strip():
            raise errors.invalid_schema("Empty schema")
        schema_type = body.get("schemaType") or "AVRO"
        if schema_type not in SCHEMA_TYPES:
            raise errors.RegistryError(422, 42201, f"Invalid schema type {schema_type}")
        try:
            references = references_from_json(body.get("references"))
        except ValueError as exc:
            raise errors.invalid_schema(str(exc)) from None
        return body, registry.parse_request(schema_type, text, references, subject)

    def schema_id(request: Request) -> int:
        try:
            return int(request.path_params["id"])
        except ValueError:
            raise errors.RegistryError(404, 404, "HTTP 404 Not Found") from None

    def endpoint(fn):
        async def handle(request: Request) -> Response:
            if auth is not None and not auth.allows(request.headers.get("authorization")):
                response = answer({"error_code": 401, "message": "Unauthorized"}, 401)
                response.headers["WWW-Authenticate"] = 'Basic realm="kafkalite"'
                return response
            try:
                return await fn(request, request.path_params, request.query_params)
            except errors.RegistryError as exc:
                return fail(exc)
            except Exception:  # noqa: BLE001 - an answer, never a dropped connection
                log.exception("schema registry: %s %s failed", request.method, request.url.path)
                return fail(errors.store_error("internal error (see the broker's log)"))
        return handle

    async def root(_r, _p, _q):
        return answer({})

    async def contexts(_r, _p, _q):
        return answer(["."])  # the default context only: subjects named ":.ctx:..." are plain names here

    async def types(_r, _p, _q):
        return answer(["JSON", "PROTOBUF", "AVRO"])

    async def all_schemas(_r, _p, q):
        out = []
        for name in registry.subjects(q.get("subjectPrefix", ""), _flag(q, "deleted")):
            versions = registry.store.versions(name, _flag(q, "deleted"))
            out += [_version_json(v, registry, q) for v in (versions[-1:] if _flag(q, "latestOnly") else versions)]
        return answer(out)

    async def by_id(r, _p, q):
        stored = registry.schema(schema_id(r))
        out: dict[str, Any] = {"schema": _schema_text(registry, stored.id, stored.schema, stored.schema_type, q)}
        if stored.schema_type != "AVRO":
            out["schemaType"] = stored.schema_type
        if stored.references:
            out["references"] = [ref.to_json() for ref in stored.references]
        return answer(out)

    async def by_id_text(r, _p, _q):
        return PlainTextResponse(registry.schema(schema_id(r)).schema, media_type=CONTENT_TYPE)

    async def id_versions(r, _p, q):
        sid = schema_id(r)
        registry.schema(sid)
        return answer([{"subject": v.subject, "version": v.version}
                       for v in registry.usages(sid, _flag(q, "deleted"))])

    async def id_subjects(r, _p, q):
        sid = schema_id(r)
        registry.schema(sid)
        return answer(sorted({v.subject for v in registry.usages(sid, _flag(q, "deleted"))}))

    async def subjects(_r, _p, q):
        return answer(registry.subjects(q.get("subjectPrefix", ""), _flag(q, "deleted"), _flag(q, "deletedOnly")))

    async def lookup(r, p, q):
        _body, parsed = await candidate(r, p["subject"])
        return answer(_version_json(registry.lookup(p["subject"], parsed, _flag(q, "deleted")), registry, q))

    async def delete_subject(_r, p, q):
        return answer(registry.delete_subject(p["subject"], _flag(q, "permanent")))

    async def versions(_r, p, q):
        return answer(registry.versions(p["subject"], _flag(q, "deleted"), _flag(q, "deletedOnly")))

    async def register(r, p, _q):
        body, parsed = await candidate(r, p["subject"])
        wanted_id, wanted_version = body.get("id"), body.get("version")
        for value in (wanted_id, wanted_version):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise errors.bad_request("id and version must be positive integers")
        return answer({"id": registry.register(p["subject"], parsed, wanted_id, wanted_version)})

    async def version(_r, p, q):
        return answer(_version_json(registry.version(p["subject"], p["version"], _flag(q, "deleted")), registry, q))

    async def version_text(_r, p, q):
        found = registry.version(p["subject"], p["version"], _flag(q, "deleted"))
        return PlainTextResponse(found.schema, media_type=CONTENT_TYPE)

    async def referenced_by(_r, p, _q):
        return answer(registry.referenced_by(p["subject"], p["version"]))

    async def delete_version(_r, p, q):
        return answer(registry.delete_version(p["subject"], p["version"], _flag(q, "permanent")))

    async def config(r, p, q):
        subject = p.get("subject")
        if r.method == "GET":
            level = registry.level(None) if subject is None else \
                registry.subject_level(subject, _flag(q, "defaultToGlobal"))
            return answer({"compatibilityLevel": level})
        if r.method == "DELETE":
            return answer({"compatibilityLevel": registry.delete_level(subject)})
        body = await body_of(r)
        wanted = body.get("compatibility", body.get("compatibilityLevel"))
        return answer({"compatibility": registry.set_level(subject, wanted)})

    async def mode(r, p, q):
        subject = p.get("subject")
        if r.method == "GET":
            return answer({"mode": registry.mode(subject, _flag(q, "defaultToGlobal") or subject is None)})
        if r.method == "DELETE":
            return answer({"mode": registry.delete_mode(subject)})
        body = await body_of(r)
        return answer({"mode": registry.set_mode(subject, body.get("mode"), _flag(q, "force"))})

    async def compatibility(r, p, q):
        _body, parsed = await candidate(r, p["subject"])
        problems = registry.check(p["subject"], parsed, p.get("version"))
        out: dict[str, Any] = {"is_compatible": not problems}
        if _flag(q, "verbose"):
            out["messages"] = problems
        return answer(out)

    async def not_found(_request: Request, _exc: Exception) -> Response:
        return answer({"error_code": 404, "message": "HTTP 404 Not Found"}, 404)

    async def wrong_method(_request: Request, _exc: Exception) -> Response:
        return answer({"error_code": 405, "message": "HTTP 405 Method Not Allowed"}, 405)

    def route(path: str, fn, methods: list[str]) -> Route:
        return Route(path, endpoint(fn), methods=methods)

    routes = [
        route("/", root, ["GET"]),
        route("/contexts", contexts, ["GET"]),
        route("/schemas", all_schemas, ["GET"]),
        route("/schemas/types", types, ["GET"]),
        route("/schemas/ids/{id}", by_id, ["GET"]),
        route("/schemas/ids/{id}/schema", by_id_text, ["GET"]),
        route("/schemas/ids/{id}/versions", id_versions, ["GET"]),
        route("/schemas/ids/{id}/subjects", id_subjects, ["GET"]),
        route("/subjects", subjects, ["GET"]),
        route("/subjects/{subject}", lookup, ["POST"]),
        route("/subjects/{subject}", delete_subject, ["DELETE"]),
        route("/subjects/{subject}/versions", versions, ["GET"]),
        route("/subjects/{subject}/versions", register, ["POST"]),
        route("/subjects/{subject}/versions/{version}", version, ["GET"]),
        route("/subjects/{subject}/versions/{version}", delete_version, ["DELETE"]),
        route("/subjects/{subject}/versions/{version}/schema", version_text, ["GET"]),
        route("/subjects/{subject}/versions/{version}/referencedby", referenced_by, ["GET"]),
        route("/config", config, ["GET", "PUT", "DELETE"]),
        route("/config/{subject}", config, ["GET", "PUT", "DELETE"]),
        route("/mode", mode, ["GET", "PUT"]),
        route("/mode/{subject}", mode, ["GET", "PUT", "DELETE"]),
        route("/compatibility/subjects/{subject}/versions", compatibility, ["POST"]),
        route("/compatibility/subjects/{subject}/versions/{version}", compatibility, ["POST"]),
    ]
    return Starlette(routes=routes, exception_handlers={404: not_found, 405: wrong_method})
