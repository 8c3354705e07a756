"""HTTP basic auth: a broker with a SASL listener serves its registry only to that listener's
users (PLAIN's JAAS users and the SCRAM store's), with Confluent's 401 otherwise; confluent-kafka's
client logs in with `basic.auth.user.info`."""

from __future__ import annotations

import base64
import json

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.error import SchemaRegistryError

from kafkalite.tests import suite_brokers

from .conftest import Registry

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-pw";'


@pytest.fixture(scope="module")
def secured():
    config = {"listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
              "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
              "scram.users": "SCRAM-SHA-256=[name=bob,password=bob-pw]"}
    with suite_brokers.running(listeners=["PLAINTEXT://127.0.0.1:0", "SASL_PLAINTEXT://127.0.0.1:0"], config=config,
                               schema_registry=0) as broker:
        yield broker


class AuthRegistry(Registry):
    def __init__(self, url: str, user: str | None, password: str | None):
        super().__init__(url)
        self.header = None if user is None else "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

    def call(self, method, path, body=None, raw=None, content_type="application/vnd.schemaregistry.v1+json"):
        import urllib.error
        import urllib.request

        data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
        headers = {"Content-Type": content_type}
        if self.header:
            headers["Authorization"] = self.header
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=20) as r:
                return r.status, json.loads(r.read()), r.headers.get("WWW-Authenticate")
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read()), exc.headers.get("WWW-Authenticate")


@pytest.mark.parametrize("user,password,allowed", [("alice", "alice-pw", True), ("bob", "bob-pw", True),
                                                   ("alice", "wrong", False), ("bob", "alice-pw", False),
                                                   ("carol", "x", False), (None, None, False)])
def test_basic_auth_against_sasl_users(secured, user, password, allowed):
    r = AuthRegistry(secured.schema_registry_url, user, password)
    status, body, challenge = r.call("GET", "/subjects")
    if allowed:
        assert (status, body) == (200, [])
    else:
        assert (status, body) == (401, {"error_code": 401, "message": "Unauthorized"})
        assert challenge == 'Basic realm="kafkalite"'


def test_confluent_kafka_client_with_basic_auth(secured):
    client = SchemaRegistryClient({"url": secured.schema_registry_url, "basic.auth.user.info": "bob:bob-pw"})
    schema_id = client.register_schema("auth-value", Schema('"string"', "AVRO"))
    assert client.get_schema(schema_id).schema_str == '"string"'
    anonymous = SchemaRegistryClient({"url": secured.schema_registry_url})
    with pytest.raises(SchemaRegistryError) as err:
        anonymous.get_subjects()
    assert err.value.http_status_code == 401


def test_without_sasl_listeners_the_registry_is_open(registry):
    assert registry.get("/subjects")[0] == 200
