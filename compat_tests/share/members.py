"""Share consumers (KIP-932) as processes: compat_tests/java/ShareMember.java (KafkaShareConsumer),
driven through the line protocol of compat_tests/groups/members.py (JSON events out, commands in).

Commands: `ack(offset, "ACCEPT" | "RELEASE" | "REJECT")` (explicit mode), `commit()`, `close()`;
`kill()` is SIGKILL, a consumer that dies holding its acquired records.
"""

from __future__ import annotations

from compat_tests.groups.members import Member


class ShareConsumer(Member):
    def __init__(self, bootstrap: str, group: str, topic: str, *, ack_mode: str = "explicit",
                 client_id: str | None = None, config: dict[str, str] | None = None):
        self.share_args = {"ack_mode": ack_mode, **{f"config.{k}": v for k, v in (config or {}).items()}}
        super().__init__("java", bootstrap, group, topic, client_id=client_id or "java-share-member")

    def _command(self) -> list[str]:
        from compat_tests.clients import java

        b = java.build()
        cmd = ["java", *java.JVM_FLAGS]
        if b.archive is not None:
            cmd.append(f"-XX:SharedArchiveFile={b.archive}")
        args = {k: self.cfg[k] for k in ("bootstrap", "group", "topic", "client_id")} | self.share_args
        return [*cmd, "-cp", b.classpath, "ShareMember", *(f"{k}={v}" for k, v in args.items())]

    def ack(self, offset: int, kind: str) -> None:
        self._send(f"ack {offset} {kind}")

    def values(self) -> list[str]:
        return [r["value"] for r in self.records()]
