"""franz-go (kgo, kadm) v1.22.2 adapter: compat_tests/go/ (godriver franz), see golang.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .admin import Admin, BrokerError, ConfigValue
from .golang import GoClient, GoClientError, run_driver


@dataclass
class FranzClient(GoClient):
    name: str = field(default="franz", init=False)


Adapter = FranzClient


class FranzAdmin(Admin):
    """compat_tests.clients.admin.Admin through franz-go (kadm, and kmsg requests for what kadm
    lacks: by-id operations, ListOffsets with an isolation level); see go/franz_admin.go."""

    name = "franz"

    def __init__(self, bootstrap: str):
        self.bootstrap = bootstrap

    def _op(self, op: str, **args: Any) -> Any:
        try:
            return run_driver("franz", {"cmd": "admin", "bootstrap": self.bootstrap, "op": op, "args": args}, 30.0)
        except GoClientError as e:
            if e.code:
                raise BrokerError(e.code, str(e)) from None
            raise

    def create_topic(self, name, partitions=1, configs=None, validate_only=False, replication_factor=None):
        return self._op("create_topic", name=name, partitions=partitions, configs=configs or {},
                        validate_only=validate_only, replication_factor=replication_factor)

    def delete_topics(self, names):
        self._op("delete_topics", names=list(names))

    def delete_topics_by_id(self, topic_ids):
        self._op("delete_topics_by_id", ids=list(topic_ids))

    def list_topics(self):
        return set(self._op("list_topics"))

    def describe_topics(self, names):
        return self._op("describe_topics", names=list(names))

    def describe_topics_by_id(self, topic_ids):
        return self._op("describe_topics_by_id", ids=list(topic_ids))

    def describe_cluster(self):
        return self._op("describe_cluster")

    def describe_configs(self, kind, name):
        return {k: ConfigValue(v["value"], v["source"], v["is_default"], v["read_only"])
                for k, v in self._op("describe_configs", kind=kind, name=name).items()}

    def alter_configs(self, kind, name, configs):
        self._op("alter_configs", kind=kind, name=name, configs=dict(configs))

    def incremental_alter_configs(self, kind, name, ops, validate_only=False):
        self._op("incremental_alter_configs", kind=kind, name=name, ops=[[op.upper(), n, v] for op, n, v in ops],
                 validate_only=validate_only)

    def create_partitions(self, topic, total, validate_only=False):
        self._op("create_partitions", name=topic, total=total, validate_only=validate_only)

    def list_offsets(self, topic, partitions, spec, isolation="read_uncommitted"):
        res = self._op("list_offsets", name=topic, parts=list(partitions), spec=spec, isolation=isolation)
        return {int(p): (o, ts) for p, (o, ts) in res.items()}

    def delete_records(self, topic, before):
        res = self._op("delete_records", name=topic, before={str(p): o for p, o in before.items()})
        return {int(p): low for p, low in res.items()}
