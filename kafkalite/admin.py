"""A few admin requests (ApiVersions, CreateTopics, Metadata, DeleteTopics) for the pytest plugin,
which creates fresh topics with them without any Kafka client library.

The framing is kafkalite.protocol.client's WireClient (one wire client in the project); this module
negotiates versions from the broker's ApiVersions answer, so it works against kafkalite and Apache
Kafka alike, and builds each request at the version both sides know.
"""

from __future__ import annotations

import dataclasses
import datetime
import sys
import time
from typing import TYPE_CHECKING, Any

from kafkalite.protocol.api_keys import ApiKey

if TYPE_CHECKING:
    from kafkalite.protocol.client import WireClient

# versions of each API this module can build (kio provides them)
_KNOWN: dict[int, range] = {ApiKey.METADATA: range(4, 14), ApiKey.CREATE_TOPICS: range(2, 8), ApiKey.DELETE_TOPICS: range(1, 7)}
TOPIC_ALREADY_EXISTS = 36
UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE = 3, 5


def _import_kio() -> None:
    """Import kio without hypothesis, as the broker does (broker.fast_start.hide_hypothesis: kio
    registers hypothesis strategies when hypothesis is importable, up to a second inside pytest);
    the user's own later `import hypothesis` is unaffected."""
    from kafkalite.broker.fast_start import hide_hypothesis

    hidden = hide_hypothesis()
    try:
        import kio.index  # noqa: F401
        import kio.serial  # noqa: F401
    finally:
        if hidden:
            sys.modules.pop("hypothesis", None)


class KafkaError(RuntimeError):
    def __init__(self, message: str, error_code: int | None = None):
        super().__init__(message)
        self.error_code = error_code


def _build(cls: type, **values: Any) -> Any:
    """An instance of kio entity `cls` from those of `values` that this version has."""
    names = {f.name for f in dataclasses.fields(cls)}
    return cls(**{k: v for k, v in values.items() if k in names})


def _nested(cls: type, name: str) -> type:
    return getattr(sys.modules[cls.__module__], name)


def _code(err: Any) -> int:
    return int(getattr(err, "value", err))


def _err_name(err: Any) -> str:
    return getattr(err, "name", str(err))


class AdminConnection:
    """One connection to one broker of `bootstrap` (the first that answers)."""

    def __init__(self, bootstrap: str, timeout: float = 10.0, client_id: str = "kafkalite-pytest"):
        _import_kio()
        from kafkalite.protocol.client import WireClient

        last: Exception | None = None
        client: WireClient | None = None
        for address in [a.strip() for a in bootstrap.split(",") if a.strip()]:
            try:
                client = WireClient(address, timeout=timeout, client_id=client_id)
                break
            except OSError as exc:
                last = exc
        if client is None:
            raise ConnectionError(f"cannot connect to {bootstrap}: {last}")
        self.client: WireClient = client
        self._reconnect = lambda: WireClient(address, timeout=timeout, client_id=client_id)
        self.versions = self._api_versions()

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> "AdminConnection":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def request(self, req: Any) -> Any:
        """`req`'s response; a connection the broker closed is opened again and the request sent
        once more, as Kafka's clients do (a broker under chaos closes connections; every request
        here is one that may be sent twice: Metadata, or CreateTopics/DeleteTopics whose repeat
        answers that the topic exists, or is gone)."""
        try:
            return self.client.request(req)
        except (ConnectionError, TimeoutError):
            self.client.close()
            self.client = self._reconnect()
            return self.client.request(req)

    def _api_versions(self) -> dict[int, tuple[int, int]]:
        from kio.schema.api_versions.v0.request import ApiVersionsRequest

        resp = self.request(ApiVersionsRequest())
        if _code(resp.error_code) != 0:
            raise KafkaError(f"ApiVersions failed: {_err_name(resp.error_code)}", _code(resp.error_code))
        return {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in resp.api_keys}

    def version(self, api_key: int) -> int | None:
        """The highest version of `api_key` both sides know, or None."""
        rng = self.versions.get(api_key)
        if rng is None:
            return None
        common = [v for v in _KNOWN[api_key] if rng[0] <= v <= rng[1]]
        return max(common) if common else None

    # --- admin -------------------------------------------------------------------------------
    def metadata(self, topics: list[str] | None, allow_auto_create: bool = False) -> Any:
        from kio.index import load_request_schema

        v = self.version(ApiKey.METADATA)
        if v is None:
            raise KafkaError("the broker serves no Metadata version this client knows")
        cls = load_request_schema(ApiKey.METADATA, v)
        topic_cls = _nested(cls, "MetadataRequestTopic")
        req = _build(cls, topics=None if topics is None else tuple(_build(topic_cls, name=t, topic_id=None) for t in topics),
                     allow_auto_topic_creation=allow_auto_create, include_cluster_authorized_operations=False,
                     include_topic_authorized_operations=False)
        return self.request(req)

    def create_topic(self, name: str, partitions: int = 1, configs: dict[str, str] | None = None,
                     timeout: float = 10.0) -> None:
        """CreateTopics; when the broker does not serve it, Metadata auto-creation (which must
        then give the asked partition count)."""
        from kio.index import load_request_schema

        v = self.version(ApiKey.CREATE_TOPICS)
        if v is None:
            if configs:
                raise KafkaError(f"cannot create {name!r} with configs: the broker does not serve CreateTopics")
            # the Metadata that creates the topic answers it UNKNOWN_TOPIC_OR_PARTITION (as Kafka
            # does while creating it): ask again until it is answered
            deadline = time.monotonic() + timeout
            while True:
                topic = self.metadata([name], allow_auto_create=True).topics[0]
                if _code(topic.error_code) not in (UNKNOWN_TOPIC_OR_PARTITION, LEADER_NOT_AVAILABLE) \
                        or time.monotonic() > deadline:
                    break
                time.sleep(0.02)
            if _code(topic.error_code) != 0:
                raise KafkaError(f"cannot create {name!r} (no CreateTopics; Metadata auto-creation answered "
                                 f"{_err_name(topic.error_code)})", _code(topic.error_code))
            if len(topic.partitions) != partitions:
                raise KafkaError(f"the broker does not serve CreateTopics and auto-created {name!r} with "
                                 f"{len(topic.partitions)} partition(s), not {partitions}")
            return
        cls = load_request_schema(ApiKey.CREATE_TOPICS, v)
        topic_cls = _nested(cls, "CreatableTopic")
        config_cls = _nested(cls, "CreatableTopicConfig")
        topic = _build(topic_cls, name=name, num_partitions=partitions,
                       # -1: the broker's default.replication.factor (v4+)
                       replication_factor=-1 if v >= 4 else 1, assignments=(),
                       configs=tuple(_build(config_cls, name=k, value=str(val)) for k, val in (configs or {}).items()))
        req = _build(cls, topics=(topic,), timeout=datetime.timedelta(seconds=timeout), validate_only=False)
        resp = self.request(req)
        result = resp.topics[0]
        code = _code(result.error_code)
        if code not in (0, TOPIC_ALREADY_EXISTS):
            msg = getattr(result, "error_message", None) or ""
            raise KafkaError(f"CreateTopics {name!r} failed: {_err_name(result.error_code)} {msg}".strip(), code)

    def wait_for_topic(self, name: str, partitions: int, timeout: float = 10.0) -> None:
        """Until Metadata names `partitions` partitions of `name`, each with a leader."""
        deadline = time.monotonic() + timeout
        while True:
            resp = self.metadata([name])
            topic = resp.topics[0]
            if (_code(topic.error_code) == 0 and len(topic.partitions) == partitions
                    and all(p.leader_id >= 0 and _code(p.error_code) == 0 for p in topic.partitions)):
                return
            if time.monotonic() > deadline:
                raise KafkaError(f"topic {name!r} not ready after {timeout} s: {_err_name(topic.error_code)}, "
                                 f"{len(topic.partitions)} partition(s)")
            time.sleep(0.02)

    def delete_topic(self, name: str, timeout: float = 10.0) -> bool:
        """DeleteTopics; False when the broker does not serve it or refuses."""
        from kio.index import load_request_schema

        v = self.version(ApiKey.DELETE_TOPICS)
        if v is None:
            return False
        cls = load_request_schema(ApiKey.DELETE_TOPICS, v)
        kw: dict[str, Any] = {"timeout": datetime.timedelta(seconds=timeout), "topic_names": (name,)}
        if "topics" in {f.name for f in dataclasses.fields(cls)}:
            kw["topics"] = (_build(_nested(cls, "DeleteTopicState"), name=name, topic_id=None),)
        resp = self.request(_build(cls, **kw))
        results: Any = getattr(resp, "responses", ())
        return bool(results) and _code(results[0].error_code) == 0
