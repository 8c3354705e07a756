"""Reset: the broker back to the state of a fresh start, with its clients still connected.

    reset           delete every topic (user topics, and with them the internal topics that hold
                    groups, offsets, transactions and share-group state), forget every
                    coordinator's state, producer state, ACLs, SCRAM users added at run time,
                    group configs and fetch sessions, and the cluster administration state (client
                    quotas and armed throttles, dynamic broker configs, finalized features,
                    reassignments, delegation tokens, client-metrics subscriptions and what
                    clients pushed); disarm every fault; the clock back to the
                    mode the broker started in at the wall clock's time; the request log emptied;
                    then the seed the broker started with (--seed), if any, applied again.
                    Returns what it removed and how long it took in the broker (`took_ms`).

What a fresh start keeps stays: the configuration (and the SCRAM users of `scram.users`), the
listeners and their ports, the producer id blocks (an id handed out before is never handed out
again, so the producer state of an old and a new incarnation cannot mix).

Clients see what they see after a topic deletion on Kafka: UNKNOWN_TOPIC_OR_PARTITION (or the
topic auto-created again on the next Metadata where auto-creation is on); the partitions of a
topic created again start empty, with no producer state, so an idempotent producer of the old
incarnation goes on writing (an unknown producer id is accepted at any sequence, as on Kafka).
Group members find their groups gone: a classic member waiting in JoinGroup or SyncGroup is
answered NOT_COORDINATOR and rejoins; a heartbeat answers UNKNOWN_MEMBER_ID. An open transaction
is aborted in effect: its records and pending offsets go with the topics, and its transactional
id is unknown afterwards (the producer's next transactional request fails and it must call
initTransactions again).

Cost: nothing is fsynced except topics.json, written once when topics were deleted (and
acls.json / the SCRAM file when they changed); nothing is scanned. An empty broker's reset is a
handful of dictionary operations.

`reset_state` is the whole operation; the restore control (broker.controls.snapshot) starts with it.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import threading
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any


from ..clock import CLOCK
from ..credentials import ScramCredential, parse_scram_users
from . import control
from .faults import armed

if TYPE_CHECKING:
    from ..state import Broker

log = logging.getLogger("kafkalite.reset")

GROUP_CONFIGS_FILE = "group_configs.json"
# deleted partition directories are moved here and removed by a thread: removing a directory
# costs milliseconds on some file systems, a rename a fraction of that
TRASH_DIR = ".kafkalite-trash"
TRASH_DELAY_S = 1.0


def _empty_trash(trash: Path) -> None:
    # at the lowest priority, and after a moment: a test runs right after a reset
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    time.sleep(TRASH_DELAY_S)
    shutil.rmtree(trash, ignore_errors=True)


def _empty_trash_later(trash: Path) -> None:
    threading.Thread(target=_empty_trash, args=(trash,), name="kafkalite-trash", daemon=True).start()


def _answer_waiting_members(broker: "Broker") -> int:
    """Classic members waiting in JoinGroup or SyncGroup are answered NOT_COORDINATOR (the group
    is gone with its coordinator, ClassicGroup.unload): their clients look the coordinator up
    again and rejoin."""
    groups = broker.services.existing("groups")
    if groups is None:
        return 0
    from ..groups.classic import ClassicGroup

    count = 0
    for group in groups.groups.values():
        if isinstance(group, ClassicGroup):
            group.unload(groups.clock())
            count += 1
    return count


# `scram.users` text -> its credentials, salted once: the reset puts these objects back, so a
# reset costs no PBKDF2 rounds
_CONFIGURED_SCRAM: dict[str, dict[str, dict[str, ScramCredential]]] = {}


def _configured_scram(broker: "Broker") -> dict[str, dict[str, ScramCredential]]:
    text = broker.config["scram.users"]
    creds = _CONFIGURED_SCRAM.get(text)
    if creds is None:
        creds = {}
        for mechanism, user, password, iterations in parse_scram_users(text):
            creds.setdefault(user, {})[mechanism] = ScramCredential.from_password(mechanism, password, iterations)
        _CONFIGURED_SCRAM[text] = creds
    return creds


def _reset_scram(broker: "Broker") -> int:
    """Remove the SCRAM credentials added at run time; the users of `scram.users` stay (with the
    configured password, should it have been altered)."""
    store = broker.scram
    configured = _configured_scram(broker)
    added = [(user, m) for user, mechs in store.users.items() for m in mechs
             if m not in configured.get(user, {})]
    altered = [(user, m) for user, mechs in store.users.items() for m, cred in mechs.items()
               if m in configured.get(user, {}) and cred != configured[user][m]]
    if not added and not altered and sum(map(len, store.users.values())) == sum(map(len, configured.values())):
        return 0
    store.replace({user: dict(mechs) for user, mechs in configured.items()})
    return len(added)


def _reset_acls(broker: "Broker") -> int:
    authorizer = broker.authorizer
    if authorizer is None:
        return 0
    from ..authorizer import AclFilter, AclOperation, AclPermissionType, PatternType, ResourceType

    everything = AclFilter(ResourceType.ANY, None, PatternType.ANY, None, None, AclOperation.ANY,
                           AclPermissionType.ANY)
    return len(authorizer.delete([everything])[0])


def _reset_cluster_admin(broker: "Broker") -> int:
    """The cluster administration state back to a fresh start's: the settings that dynamic configs
    and features changed take their static values again, the stores' files go and the stores are
    opened anew. Returns how many files were removed; with none and nothing held in memory
    (armed throttles, reassignments, pushed telemetry) nothing is done."""
    stores = (broker.quotas, broker.dynamic_configs, broker.features, broker.delegation_tokens, broker.telemetry)
    files = [store.path for store in stores if store.path.exists()]
    reassignments = broker.reassignments
    if not files and not broker.quotas.forced and not reassignments.ongoing and not reassignments.held \
            and not broker.telemetry.instances:
        return 0
    for path in files:
        path.unlink()
    broker.config.values.update(broker.dynamic_configs.static_values)
    broker.open_cluster_admin()
    return len(files)


def reset_state(broker: "Broker", *, fsync: bool = True, reseed: bool = True) -> dict[str, Any]:
    """The reset, in one step of the trio loop (no await: no request sees half of it). Without
    `fsync` the emptied topics.json is not fsynced (restore writes another at once); with
    `reseed`, the seed the broker started with (--seed) is applied again."""
    t0 = time.perf_counter()
    cluster = broker.cluster
    topics = list(cluster.topics.values())
    user_topics = sorted(t.name for t in topics if not t.internal)
    groups = broker.services.existing("groups")
    group_count = len(groups.groups) if groups is not None else 0
    txns = broker.services.existing("transactions")
    txn_count = len(txns.core.txns) if txns is not None else 0
    _answer_waiting_members(broker)
    broker.services.discard()
    if topics:
        trash = Path(broker.config.data_dir) / TRASH_DIR / uuid.uuid4().hex
        trash.mkdir(parents=True)
        cluster.delete_topics(topics, trash=trash, fsync=fsync)
        _empty_trash_later(trash)
    group_configs = cluster.meta_dir / GROUP_CONFIGS_FILE
    if group_configs.exists():
        group_configs.unlink()
    broker.fetch_sessions.sessions.clear()
    acls = _reset_acls(broker)
    cluster_admin = _reset_cluster_admin(broker)
    users = _reset_scram(broker)
    armed_faults = armed(broker)
    for fault in armed_faults:
        broker.hooks.remove(fault.api_key, fault)
    faults = len(armed_faults)
    if CLOCK.mode != CLOCK.start_mode or CLOCK.offset_ms or CLOCK.frozen_ms is not None:
        CLOCK.reset(CLOCK.start_mode)
    if broker.request_log is not None:
        broker.request_log.clear()
    seeded = None
    if reseed:
        from ..seed import apply_seed, seed_at_start

        start_seed = seed_at_start(broker)
        if start_seed is not None:  # a fresh start of this broker has its seed
            seeded = apply_seed(broker, start_seed)
    took_ms = (time.perf_counter() - t0) * 1000
    log.info("reset: %d topic(s), %d group(s), %d transactional id(s), %d ACL(s), %d SCRAM user(s), "
             "%d fault(s) removed in %.2f ms", len(user_topics), group_count, txn_count, acls, users, faults,
             took_ms)
    return {"topics": user_topics, "groups": group_count, "transactional_ids": txn_count, "acls": acls,
            "scram_users": users, "faults": faults, "cluster_admin": cluster_admin, "seeded": seeded, "took_ms": round(took_ms, 3)}


@control("reset")
async def reset(broker):
    """Return the broker to the state of a fresh start, clients staying connected: every topic,
    group, offset, transactional id and producer state, ACL, run-time SCRAM user and fault gone,
    the clock back to real time. Returns what was removed and `took_ms`."""
    return reset_state(broker)
