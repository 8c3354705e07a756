"""What a classic group's requests carry and are answered: the members, the JoinGroup and
SyncGroup results, and the waiters through which a request is answered later.

Rules: plain values, no behaviour of their own beyond reading a member's protocols. A
member's `protocols` keep the order the member sent them in: it is the member's preference,
and the group's protocol is voted from each member's first supported choice (classic.py's
select_protocol). A JoinGroup or SyncGroup the group cannot answer at once is answered later,
exactly once, through the waiter it left on its member (`join_waiter`, `sync_waiter`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from kio.schema.errors import ErrorCode


@dataclass
class JoinResult:
    error: ErrorCode = ErrorCode.none
    generation_id: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    member_id: str = ""
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)
    skip_assignment: bool = False


@dataclass
class SyncResult:
    error: ErrorCode = ErrorCode.none
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


Waiter = Callable[[object], None]
# what a JoinGroup says of its member: client id, client host, session and rebalance timeouts,
# protocol type, protocols (name, metadata)
JoinArgs = tuple[str, str, int, int, str, list[tuple[str, bytes]]]


@dataclass
class ClassicMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join_waiter: Waiter | None = None
    sync_waiter: Waiter | None = None
    heartbeat_deadline: int = 0
    is_new: bool = False

    def metadata(self, protocol: str | None) -> bytes:
        for name, meta in self.protocols:
            if name == protocol:
                return meta
        return b""

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]
