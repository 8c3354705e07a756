"""Differences the differ accepts, each with its reason; every one is listed in docs/DESIGN.md,
"Where kafkalite departs from Kafka on purpose". Keyed by conversation name ("*": every
conversation); each entry matches the path of a difference by `fnmatch` pattern. Everything
not listed fails the conversation's test."""

from __future__ import annotations

from fnmatch import fnmatchcase

NEWER_TOPIC_CONFIGS = ("kafkalite serves Kafka 4.2's topic configs; the reference is Kafka 4.4, which added "
                       "errors.deadletterqueue.group.enable, max.decompressed.message.bytes and remote.copy.lag.*")
FLUSH_MS = ("kafkalite's default --fsync interval flushes every log.flush.interval.ms=1000, a static broker "
            "setting that topics inherit as flush.ms; Kafka leaves flushing to the OS (Long.MAX_VALUE)")
MIN_ISR_SOURCE = ("Kafka 4.x (KIP-966) stores min.insync.replicas as a cluster-wide dynamic default at format "
                  "time; kafkalite has one replica and reports the setting's default")
HEARTBEAT_INTERVAL = "KIP-848 groups: while a group is changing, kafkalite asks for heartbeats every 250 ms"
GROUP_EPOCH = ("a new KIP-848 group whose subscribed topics already exist starts at epoch 2 on Kafka 4.4 (1 "
               "when they do not exist yet) and at 1 on kafkalite; clients only echo epochs back")

SHARE_ASSIGNMENT = ("a share group member gets its assignment in the answer to its joining heartbeat on "
                    "kafkalite; Kafka 4.4 assigns in the background and sends it with a later heartbeat")
SHARE_START_OFFSET = ("DescribeShareGroupOffsets: kafkalite reports the live share-partition start offset; Kafka "
                      "4.4 may report the last persisted one, behind it (the lag agrees)")

_CONFIGS = [
    ("*.configs.name=errors.deadletterqueue.group.enable", NEWER_TOPIC_CONFIGS),
    ("*.configs.name=max.decompressed.message.bytes", NEWER_TOPIC_CONFIGS),
    ("*.configs.name=remote.copy.lag.ms", NEWER_TOPIC_CONFIGS),
    ("*.configs.name=remote.copy.lag.bytes", NEWER_TOPIC_CONFIGS),
    ("*.configs.name=flush.ms.*", FLUSH_MS),
    ("*.configs.name=min.insync.replicas.config_source", MIN_ISR_SOURCE),
]

RETENTION_MS = ("log.retention.ms is a kafkalite setting of its own with a value, where Kafka derives it from "
                "log.retention.hours and reports null")
STATIC_SOURCE = ("kafkalite reports a broker setting as STATIC_BROKER_CONFIG when its value differs from Kafka's "
                 "default; Kafka also when its properties file repeats the default (the reference's sets "
                 "num.partitions=1 and auto.create.topics.enable=true)")

KNOWN: dict[str, list[tuple[str, str]]] = {
    "*": _CONFIGS,
    "describe broker configs": [
        ("*.configs.name=log.retention.ms.value", RETENTION_MS),
        ("*.configs.name=num.partitions.*", STATIC_SOURCE),
        ("*.configs.name=auto.create.topics.enable.*", STATIC_SOURCE),
    ],
    "consumer group errors": [
        ("*join a classic group.heartbeat_interval", HEARTBEAT_INTERVAL),
        ("*join a classic group.member_epoch", GROUP_EPOCH),
    ],
    "consumer group heartbeat": [
        ("*.heartbeat_interval", HEARTBEAT_INTERVAL),
        ("*join.member_epoch", GROUP_EPOCH),
        ("*heartbeat.member_epoch", GROUP_EPOCH),
        ("*describe.groups[[]0].group_epoch", GROUP_EPOCH),
        ("*describe.groups[[]0].assignment_epoch", GROUP_EPOCH),
        ("*describe.groups[[]0].members*.member_epoch", GROUP_EPOCH),
    ],
    "share group": [
        ("*join.assignment.topic_partitions (length)", SHARE_ASSIGNMENT),
        ("*describe.groups[[]0].members.member_id=*.assignment.topic_partitions (length)", SHARE_ASSIGNMENT),
        ("*offsets.groups[[]0].topics[[]0].partitions.partition_index=0.start_offset", SHARE_START_OFFSET),
    ],
}


def accepted(conversation: str, path: str) -> str | None:
    for pattern, reason in KNOWN.get(conversation, []) + KNOWN.get("*", []):
        if fnmatchcase(path, pattern):
            return reason
    return None
