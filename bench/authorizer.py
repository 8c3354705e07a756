"""What an authorisation check costs a request: ``broker.authorizer.allowed`` (the call every
handler makes) with no authorizer configured, and with StandardAuthorizer's rule over a set of
ACLs (literal, prefixed and wildcard ones, for other principals and resources than the one asked
about, plus the one that decides). kafkalite only, in-process: no broker, no peer.

    python -m bench.authorizer [--acls N] [--runs R] [--calls C]

Prints the median and per-run nanoseconds per call.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

from kafkalite.broker.authorizer import Acl, AclOperation, AclPermissionType, Authorizer, PatternType, ResourceType, allowed


def _acls(n: int) -> list[Acl]:
    out = []
    for i in range(n):
        kind = i % 3
        if kind == 0:
            out.append(Acl(ResourceType.TOPIC, f"topic-{i}", PatternType.LITERAL, f"User:u{i}", "*",
                           AclOperation.READ, AclPermissionType.ALLOW))
        elif kind == 1:
            out.append(Acl(ResourceType.TOPIC, f"team-{i}-", PatternType.PREFIXED, f"User:u{i}", "*",
                           AclOperation.WRITE, AclPermissionType.ALLOW))
        else:
            out.append(Acl(ResourceType.GROUP, f"group-{i}", PatternType.LITERAL, "User:*", "*",
                           AclOperation.READ, AclPermissionType.ALLOW))
    out.append(Acl(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice", "*", AclOperation.WRITE,
                   AclPermissionType.ALLOW))
    return out


def _ns_per_call(ctx, calls: int) -> float:
    op, rtype = AclOperation.WRITE, ResourceType.TOPIC
    t0 = time.perf_counter_ns()
    for _ in range(calls):
        allowed(ctx, op, rtype, "orders")
    return (time.perf_counter_ns() - t0) / calls


def run(acls: int, runs: int, calls: int) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as d:
        auth = Authorizer(Path(d) / "acls.json", [], allow_if_no_acl=False)
        auth.create(_acls(acls))
        cases = {
            "no authorizer": SimpleNamespace(broker=SimpleNamespace(authorizer=None), principal="User:alice",
                                             peer="127.0.0.1:50000"),
            f"StandardAuthorizer, {acls + 1} ACLs": SimpleNamespace(
                broker=SimpleNamespace(authorizer=auth), principal="User:alice", peer="127.0.0.1:50000"),
        }
        assert all(allowed(ctx, AclOperation.WRITE, ResourceType.TOPIC, "orders") for ctx in cases.values())
        results: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(runs):  # alternating, so that a busy moment hits both
            for name, ctx in cases.items():
                results[name].append(_ns_per_call(ctx, calls))
        return results


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--acls", type=int, default=1000, help="ACLs besides the deciding one (default 1000)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--calls", type=int, default=200_000, help="checks per run (default 200000)")
    a = parser.parse_args(argv)
    results = run(a.acls, a.runs, a.calls)
    print("== authorizer: ns per allowed() call (a WRITE check on one topic) ==")
    print(f"load average now: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    for name, values in results.items():
        print(f"{name:40s} median {statistics.median(values):8.1f} ns   per run: "
              + " ".join(f"{v:.1f}" for v in values))


if __name__ == "__main__":
    main()
