"""Share consumers (KIP-932) as processes: compat_tests/java/ShareMember.java (KafkaShareConsumer,
client "java") and py_share_member.py (confluent-kafka's ShareConsumer on librdkafka, client
"confluent") and compat_tests/go/share_member.go (franz-go's kgo.ShareGroup, client "franz"), driven through the line protocol of compat_tests/groups/members.py (JSON events
out, commands in).

Commands: `ack(offset, "ACCEPT" | "RELEASE" | "REJECT")` (explicit mode), `commit()`, `close()`;
`kill()` is SIGKILL, a consumer that dies holding its acquired records.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from compat_tests.groups.members import Member

HERE = Path(__file__).resolve().parent


class ShareConsumer(Member):
    def __init__(self, bootstrap: str, group: str, topic: str, *, client: str = "java", ack_mode: str = "explicit",
                 client_id: str | None = None, config: dict[str, str] | None = None):
        self.ack_mode = ack_mode
        self.config = dict(config or {})
        super().__init__(client, bootstrap, group, topic, client_id=client_id or f"{client}-share-member")

    def _command(self) -> list[str]:
        from compat_tests.clients import java

        if self.client == "confluent":
            args = {k: self.cfg[k] for k in ("bootstrap", "group", "topic", "client_id")}
            return [sys.executable, str(HERE / "py_share_member.py"),
                    json.dumps({**args, "ack_mode": self.ack_mode, "config": self.config})]
        if self.client == "franz":
            from compat_tests.clients import golang

            args = {k: self.cfg[k] for k in ("bootstrap", "group", "topic", "client_id")}
            return [str(golang.build()), "franz", "share-member", json.dumps({**args, "ack_mode": self.ack_mode})]
        if self.client != "java":
            raise ValueError(f"no share consumer for client {self.client}")

        b = java.build()
        cmd = ["java", *java.JVM_FLAGS]
        if b.archive is not None:
            cmd.append(f"-XX:SharedArchiveFile={b.archive}")
        args = {k: self.cfg[k] for k in ("bootstrap", "group", "topic", "client_id")} | {"ack_mode": self.ack_mode}
        args |= {f"config.{k}": v for k, v in self.config.items()}
        return [*cmd, "-cp", b.classpath, "ShareMember", *(f"{k}={v}" for k, v in args.items())]

    def ack(self, offset: int, kind: str) -> None:
        self._send(f"ack {offset} {kind}")

    def values(self) -> list[str]:
        return [r["value"] for r in self.records()]
