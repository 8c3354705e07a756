"""Group members as processes that speak one line protocol, whatever the client.

Each member prints JSON events ({"event": "assigned" | "record" | "committed" | "closed" |
"error", ...}) and takes "commit" / "close" on stdin: py_member.py (confluent-kafka,
kafka-python, aiokafka), kafkajs_member.js (kafkajs), GroupMember.java (kafka-clients),
compat_tests/go/member.go (franz-go, sarama).
`kill()` is SIGKILL: a member that dies without leaving the group.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]

PY_CLIENTS = ("confluent", "kafka-python", "aiokafka")


class MemberError(AssertionError):
    pass


class Member:
    def __init__(self, client: str, bootstrap: str, group: str, topic: str, *, protocol: str = "classic",
                 instance_id: str | None = None, session_timeout_ms: int = 6000, heartbeat_interval_ms: int = 500,
                 assignor: str | None = None, client_id: str | None = None, request_timeout_ms: int | None = None,
                 report_commit_failures: bool = False, isolation: str | None = None):
        """Java only: `request_timeout_ms` is request.timeout.ms; with `report_commit_failures` a
        failed commit is an event ("commit_failed") and the member goes on; `isolation` is
        isolation.level (the client's default, read_uncommitted, when None)."""
        self.client = client
        self.cfg = {"client": client, "bootstrap": bootstrap, "group": group, "topic": topic, "protocol": protocol,
                    "instance_id": instance_id, "session_timeout_ms": session_timeout_ms,
                    "heartbeat_interval_ms": heartbeat_interval_ms, "assignor": assignor,
                    "client_id": client_id or f"{client}-member", "request_timeout_ms": request_timeout_ms,
                    "report_commit_failures": True if report_commit_failures else None, "isolation": isolation}
        self.events: list[dict] = []
        self.assignment: set[int] = set()
        self.assignments_seen = 0
        self.cond = threading.Condition()
        self.stderr_lines: list[str] = []
        self.proc = subprocess.Popen(self._command(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=self._env())
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _env(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH", "")) if p)
        return env

    def _command(self) -> list[str]:
        if self.client in PY_CLIENTS:
            return [sys.executable, str(HERE / "py_member.py"), json.dumps(self.cfg)]
        if self.client == "kafkajs":
            return ["node", str(HERE / "kafkajs_member.js"), json.dumps(self.cfg)]
        if self.client in ("franz", "sarama"):
            from compat_tests.clients import golang
            return golang.member_command(self.client, self.cfg)
        if self.client == "java":
            from compat_tests.clients import java
            b = java.build()
            cmd = ["java", *java.JVM_FLAGS]
            if b.archive is not None:
                cmd.append(f"-XX:SharedArchiveFile={b.archive}")
            args = [f"{k}={v}" for k, v in self.cfg.items() if v is not None]
            return [*cmd, "-cp", b.classpath, "GroupMember", *args]
        raise ValueError(self.client)

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").strip()
            if not line.startswith("{"):
                continue
            try:
                ev = json.loads(line)
            except ValueError:
                continue
            with self.cond:
                self.events.append(ev)
                if ev.get("event") == "assigned":
                    self.assignment = set(ev["partitions"])
                    self.assignments_seen += 1
                self.cond.notify_all()
        with self.cond:
            self.events.append({"event": "exit"})
            self.cond.notify_all()

    def _read_err(self) -> None:
        assert self.proc.stderr is not None
        for raw in self.proc.stderr:
            self.stderr_lines.append(raw.decode(errors="replace").rstrip())
            del self.stderr_lines[:-(20000 if os.environ.get("KL_MEMBER_DEBUG") else 200)]

    # --- waiting -------------------------------------------------------------------------------
    def wait_for(self, pred: Callable[["Member"], bool], timeout: float, what: str) -> None:
        deadline = time.monotonic() + timeout
        with self.cond:
            while not pred(self):
                errors = [e for e in self.events if e.get("event") == "error"]
                if errors:
                    raise MemberError(f"{self.client} member error while waiting for {what}: {errors[-1]}\n"
                                      + self.tail())
                left = deadline - time.monotonic()
                if left <= 0:
                    raise MemberError(f"{self.client} member: no {what} within {timeout}s; assignment "
                                      f"{sorted(self.assignment)}; last events {self.events[-5:]}\n" + self.tail())
                self.cond.wait(min(left, 0.2))

    def state(self) -> str:
        """One line: the member's client id, process, assignment and last events."""
        code = self.proc.poll()
        return (f"{self.cfg['client_id']} ({self.client}, pid {self.proc.pid}, "
                f"{'running' if code is None else f'exited {code}'}): assignment {sorted(self.assignment)}, "
                f"{self.assignments_seen} assignments, {len(self.events)} events, last {self.events[-3:]}, "
                f"{len(self.stderr_lines)} log lines")

    def tail(self) -> str:
        return "\n".join(self.stderr_lines[-40:])

    def records(self) -> list[dict]:
        with self.cond:
            return [e for e in self.events if e.get("event") == "record"]

    def wait_records(self, n: int, timeout: float = 30) -> list[dict]:
        self.wait_for(lambda m: len(m.records()) >= n, timeout, f"{n} records")
        return self.records()

    def wait_assignment(self, pred: Callable[[set[int]], bool], timeout: float = 30, what: str = "assignment"):
        self.wait_for(lambda m: pred(m.assignment), timeout, what)
        return set(self.assignment)

    # --- commands ------------------------------------------------------------------------------
    def _send(self, cmd: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write((cmd + "\n").encode())
        self.proc.stdin.flush()

    def commit(self, timeout: float = 30) -> None:
        with self.cond:
            n = sum(1 for e in self.events if e.get("event") == "committed")
        self._send("commit")
        self.wait_for(lambda m: sum(1 for e in m.events if e.get("event") == "committed") > n, timeout, "commit")

    def close(self, timeout: float = 30) -> None:
        if self.proc.poll() is None:
            try:
                self._send("close")
                self.wait_for(lambda m: any(e.get("event") in ("closed", "exit") for e in m.events), timeout, "close")
            except (BrokenPipeError, OSError):
                pass
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


def wait_split(members: list[Member], partitions: int, timeout: float = 30) -> list[set[int]]:
    """Wait until the members' assignments are disjoint, non-empty and cover every partition."""
    deadline = time.monotonic() + timeout
    while True:
        sets = [set(m.assignment) for m in members]
        union = set().union(*sets)
        if all(sets) and len(union) == partitions and sum(len(s) for s in sets) == partitions:
            return sets
        for m in members:
            errs = [e for e in m.events if e.get("event") == "error"]
            if errs:
                raise MemberError(f"{m.client} member error: {errs[-1]}\n{m.tail()}")
        if time.monotonic() > deadline:
            # what each member and the broker say first: the tails after them are long and a
            # report may keep only the start of the message
            raise MemberError(f"no split of {partitions} partitions within {timeout}s: {sets}\n"
                              + "".join(f"{m.state()}\n" for m in members)
                              + f"the broker: {group_view(members[0].cfg['bootstrap'], members[0].cfg['group'])}\n"
                              + "\n---\n".join(m.tail() for m in members))
        time.sleep(0.05)


def group_view(bootstrap: str, group: str) -> str:
    """The group as DescribeGroups v5 shows it: state, protocol and each member's client id."""
    from compat_tests.differ.core import request
    from kafkalite.protocol.client import WireClient

    try:
        with WireClient(bootstrap) as c:
            g = c.request(request(15, 5, groups=[group], include_authorized_operations=False)).groups[0]
    except Exception as exc:  # a description of a failure; never the failure itself
        return f"DescribeGroups failed: {exc!r}"
    return (f"error {g.error_code}, state {g.group_state}, protocol {g.protocol_data}, members "
            + str(sorted((m.client_id, m.member_id) for m in g.members)))


def settle(members: list[Member], quiet: float = 1.5, timeout: float = 30) -> None:
    """Wait until no member's assignment has changed for `quiet` seconds."""
    deadline = time.monotonic() + timeout
    last = [m.assignments_seen for m in members]
    since = time.monotonic()
    while time.monotonic() - since < quiet:
        if time.monotonic() > deadline:
            raise MemberError(f"the group did not settle within {timeout}s")
        time.sleep(0.1)
        now = [m.assignments_seen for m in members]
        if now != last:
            last, since = now, time.monotonic()
