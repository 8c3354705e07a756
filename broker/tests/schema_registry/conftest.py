"""A broker with its schema registry for the tests of this folder, and a small HTTP client that
returns (status, decoded JSON body, content type) for any answer, errors included."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from kafkalite.tests import suite_brokers

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class Registry:
    def __init__(self, url: str):
        self.url = url.rstrip("/")

    def call(self, method: str, path: str, body: Any = None, raw: bytes | None = None,
             content_type: str = CONTENT_TYPE) -> tuple[int, Any, str]:
        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        headers = {"Content-Type": content_type} if data is not None else {}
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=20) as r:
                payload, status, ctype = r.read(), r.status, r.headers.get("Content-Type", "")
        except urllib.error.HTTPError as exc:
            payload, status, ctype = exc.read(), exc.code, exc.headers.get("Content-Type", "")
        try:
            decoded = json.loads(payload)
        except ValueError:
            decoded = payload.decode()
        return status, decoded, ctype

    def get(self, path: str) -> tuple[int, Any]:
        status, body, _ = self.call("GET", path)
        return status, body

    def post(self, path: str, body: Any) -> tuple[int, Any]:
        status, out, _ = self.call("POST", path, body)
        return status, out

    def put(self, path: str, body: Any) -> tuple[int, Any]:
        status, out, _ = self.call("PUT", path, body)
        return status, out

    def delete(self, path: str) -> tuple[int, Any]:
        status, body, _ = self.call("DELETE", path)
        return status, body

    def register(self, subject: str, schema: Any, schema_type: str = "AVRO", references: list | None = None) -> \
            tuple[int, Any]:
        body: dict[str, Any] = {"schema": schema if isinstance(schema, str) else json.dumps(schema)}
        if schema_type != "AVRO":
            body["schemaType"] = schema_type
        if references:
            body["references"] = references
        return self.post(f"/subjects/{subject}/versions", body)


@pytest.fixture(scope="module")
def registry_broker():
    with suite_brokers.running(schema_registry=0) as broker:
        yield broker


@pytest.fixture
def registry(registry_broker) -> Registry:
    return Registry(registry_broker.schema_registry_url)
