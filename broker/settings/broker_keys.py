"""Broker settings by Kafka's own key names: one `BrokerKey` per setting in BROKER_KEYS.

Rules:
- A setting is defined once: how its value parses, kafkalite's default (test-friendly), a line
  of documentation (the parser, `--list-configs`, DescribeConfigs), and how Kafka describes it
  (config type, Kafka's default, Kafka's synonyms).
- Unknown keys are an error, never silently ignored; a key from a real Kafka config that
  kafkalite does without gets a hint (KAFKA_KEY_HINTS), a mistyped one a suggestion.
- Topic-level defaults come from the broker keys Kafka derives them from (`log.retention.ms`
  -> `retention.ms`, ...): a topic config's first synonym (settings.topic_keys).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from .listeners import LISTENER_KEYS, SecurityConfigError, split_listener_key
from .topic_keys import TOPIC_CONFIG_DEFS, Synonym
from .values import LONG_MAX, ConfigType, parse_bool

def _fsync(v: Any) -> str:
    s = str(v).strip().lower()
    if s not in ("always", "interval", "never"):
        raise ValueError(f"fsync must be always, interval or never, not {v!r}")
    return s


def _request_log_size(v: Any) -> int:
    n = int(v)
    if n < 0:
        raise ValueError("request.log.size must be 0 (no request log) or more")
    return n


def _chaos(v: Any) -> int | None:
    text = str(v).strip()
    if text in ("", "off", "none"):
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"chaos must be an integer seed, not {v!r}") from None


def _chaos_profile(v: Any) -> str:
    s = str(v).strip().lower()
    if s not in ("gentle", "default", "harsh"):  # broker.chaos.PROFILES
        raise ValueError(f"chaos.profile must be gentle, default or harsh, not {v!r}")
    return s


def _nodes(v: Any) -> int:
    n = int(v)
    if not 1 <= n <= 64:
        raise ValueError("nodes must be between 1 and 64")
    return n


@dataclass(frozen=True)
class BrokerKey:
    """One broker setting, defined once: how a value parses, kafkalite's default and a line of
    documentation (the parser, `--list-configs`, DescribeConfigs), and how Kafka describes the
    setting: its config type, Kafka's own default (None for settings Kafka does not have) and
    Kafka's synonyms for it. Whether it supplies a topic config's default is read from that
    topic config's synonyms (settings.topic_keys), where Kafka defines it."""

    parse: Callable[[Any], Any]
    default: Any
    doc: str
    type: ConfigType
    kafka_default: str | None
    synonyms: tuple[Synonym, ...] = ()
    # Kafka has no default for the key itself; `kafka_default` is what it falls back to
    # through its synonyms (log.retention.ms -> log.retention.hours)
    default_via_synonym: bool = False


K = BrokerKey
T = ConfigType
_s = Synonym
WEEK_MS = 7 * 24 * 3600 * 1000

BROKER_KEYS: dict[str, BrokerKey] = {
    "node.id": K(int, 1, "this broker's node id",
             T.INT, None),
    "cluster.id": K(str, "kafkalite-cluster-000001", "cluster id reported in Metadata/DescribeCluster",
             T.STRING, None),
    "nodes": K(_nodes, 1, "node ids this process serves (node.id, node.id+1, ...), each on its own ports",
             T.INT, None),
    "num.partitions": K(int, 1, "partitions of an auto-created topic",
             T.INT, "1"),
    "default.replication.factor": K(int, 1, "accepted for compatibility; there is one replica",
             T.INT, "1"),
    "auto.create.topics.enable": K(parse_bool, True, "create unknown topics on Metadata",
             T.BOOLEAN, "true"),
    "auto.create.topics.instant": K(parse_bool, False, "answer a topic in the Metadata that auto-creates it "
             "(false: UNKNOWN_TOPIC_OR_PARTITION first, as Kafka answers while it creates the topic)",
             T.BOOLEAN, None),
    "delete.topic.enable": K(parse_bool, True, "allow DeleteTopics",
             T.BOOLEAN, "true"),
    "message.max.bytes": K(int, 1048588, "largest record batch (topic max.message.bytes default)",
             T.INT, "1048588"),
    "max.incremental.fetch.session.cache.slots": K(int, 1000, "incremental fetch sessions (KIP-227) kept at most",
             T.INT, "1000"),
    "min.incremental.fetch.session.eviction.ms": K(int, 120_000, "a fetch session unused this long may be evicted",
             T.INT, "120000"),
    "socket.request.max.bytes": K(int, 104857600, "largest request frame; larger closes the connection",
             T.INT, "104857600"),
    "sasl.server.max.receive.size": K(int, 524288, "largest frame a SASL listener reads before the connection "
             "is authenticated; larger closes it (CVE-2022-34917)", T.INT, "524288"),
    "queued.max.request.bytes": K(int, -1, "request bytes all connections may hold at once; past it no more is "
             "read from any socket until some is freed (-1: no bound)", T.LONG, "-1"),
    "log.segment.bytes": K(int, 1 << 30, "segment.bytes default",
             T.INT, str(1 << 30)),
    "log.roll.ms": K(int, 7 * 24 * 3600 * 1000, "segment.ms default",
             T.LONG, str(WEEK_MS), (_s("log.roll.hours", "168"),), True),
    "log.retention.ms": K(int, 7 * 24 * 3600 * 1000, "retention.ms default (-1 keeps forever)",
             T.LONG, str(WEEK_MS), (_s("log.retention.minutes", None), _s("log.retention.hours", "168")), True),
    "log.retention.bytes": K(int, -1, "retention.bytes default",
             T.LONG, "-1"),
    "log.index.interval.bytes": K(int, 4096, "index.interval.bytes default",
             T.INT, "4096"),
    "log.cleanup.policy": K(str, "delete", "cleanup.policy default",
             T.LIST, "delete"),
    "log.message.timestamp.type": K(str, "CreateTime", "message.timestamp.type default",
             T.STRING, "CreateTime"),
    "log.retention.check.interval.ms": K(int, 60_000, "how often retention runs",
             T.LONG, "300000"),
    "log.cleaner.enable": K(parse_bool, True, "compact the topics whose cleanup.policy includes compact",
             T.BOOLEAN, "true"),
    "log.cleaner.backoff.ms": K(int, 15_000, "the log cleaner's pause between passes over the compacted "
             "partitions (by the broker's clock)", T.LONG, "15000"),
    "log.cleaner.min.compaction.lag.ms": K(int, 0, "min.compaction.lag.ms default: records younger than this "
             "(by their timestamps) are not compacted", T.LONG, "0"),
    "log.cleaner.max.compaction.lag.ms": K(int, LONG_MAX, "max.compaction.lag.ms default: a dirty segment older "
             "than this is compacted whatever the dirty ratio", T.LONG, str(LONG_MAX)),
    "log.flush.interval.ms": K(int, 1000, "fsync period with fsync=interval",
             T.LONG, None, (_s("log.flush.scheduler.interval.ms", str(LONG_MAX)),)),
    "fsync": K(_fsync, "interval", "always: fsync before acknowledging; interval; never",
             T.STRING, None),
    "log.segment.open.files.max": K(int, -1, "segment files kept open at once by all partitions together, "
             "least recently used closed first (-1: half the soft RLIMIT_NOFILE)", T.INT, None),
    "seed.max.bytes": K(int, 256 * 1024 * 1024, "largest seed file or records file a seed reads "
             "(--seed, the seed control); a larger one is refused", T.LONG, None),
    "http.request.max.bytes": K(int, 32 * 1024 * 1024, "largest request body the HTTP endpoints (controls, "
             "console, schema registry) read; a larger one is answered 413", T.INT, None),
    "reassignment.catch.up.ms": K(int, 500, "how long the new replicas of a partition reassignment take to catch "
             "up, by the broker's clock (ListPartitionReassignments lists it meanwhile); 0 completes it at once",
             T.LONG, None),
    "chaos": K(_chaos, None, "seed of the chaos faults (broker.chaos) injected from the start; empty: none",
             T.STRING, None),
    "chaos.profile": K(_chaos_profile, "default", "how often chaos faults hit: gentle, default or harsh",
             T.STRING, None),
    "request.log.size": K(_request_log_size, 10_000, "requests the request log keeps, the newest (the requests "
             "control, a failing test's report); 0: no request log", T.INT, None),
    "offsets.topic.num.partitions": K(int, 1, "partitions of __consumer_offsets",
             T.INT, "50"),
    "offsets.retention.minutes": K(int, 7 * 24 * 60, "committed offsets of empty groups expire after this",
             T.INT, "10080"),
    "group.initial.rebalance.delay.ms": K(int, 0, "delay before the first rebalance of a new group",
             T.INT, "3000"),
    "group.min.session.timeout.ms": K(int, 6000, "smallest session timeout a member may ask for",
             T.INT, "6000"),
    "group.max.session.timeout.ms": K(int, 1_800_000, "largest session timeout a member may ask for",
             T.INT, "1800000"),
    "group.consumer.heartbeat.interval.ms": K(int, 5000, "KIP-848 heartbeat interval",
             T.INT, "5000"),
    "group.consumer.session.timeout.ms": K(int, 45000, "KIP-848 session timeout",
             T.INT, "45000"),
    # Kafka's lower bounds of the two above; accepted so that one config starts both brokers
    # (kafkalite does not refuse a smaller session timeout or interval)
    "group.consumer.min.session.timeout.ms": K(int, 45000, "smallest KIP-848 session timeout (Kafka checks it)",
             T.INT, "45000"),
    "group.consumer.min.heartbeat.interval.ms": K(int, 5000, "smallest KIP-848 heartbeat interval (Kafka checks it)",
             T.INT, "5000"),
    # KIP-1071 streams groups; the bounds and the delay are accepted so that one config starts
    # both brokers (kafkalite assigns at once and does not refuse smaller values)
    "group.streams.heartbeat.interval.ms": K(int, 5000, "streams group heartbeat interval",
             T.INT, "5000"),
    "group.streams.session.timeout.ms": K(int, 45000, "streams group session timeout",
             T.INT, "45000"),
    "group.streams.num.standby.replicas": K(int, 0, "standby replicas of each stateful task in streams groups",
             T.INT, "0"),
    "group.streams.min.session.timeout.ms": K(int, 45000, "smallest streams session timeout (Kafka checks it)",
             T.INT, "45000"),
    "group.streams.min.heartbeat.interval.ms": K(int, 5000, "smallest streams heartbeat interval (Kafka checks it)",
             T.INT, "5000"),
    "group.streams.initial.rebalance.delay.ms": K(int, 0, "accepted; streams groups assign at once",
             T.INT, "3000"),
    # share groups (KIP-932; broker/share)
    "group.share.record.lock.duration.ms": K(int, 30000, "how long a share consumer holds acquired records",
             T.INT, "30000"),
    "group.share.delivery.count.limit": K(int, 5, "deliveries of a record before it is archived",
             T.INT, "5"),
    "group.share.partition.max.record.locks": K(int, 2000, "acquired records per share-partition at most",
             T.INT, "2000"),
    "group.share.heartbeat.interval.ms": K(int, 5000, "share group heartbeat interval",
             T.INT, "5000"),
    "group.share.session.timeout.ms": K(int, 45000, "share group session timeout",
             T.INT, "45000"),
    "share.coordinator.state.topic.num.partitions": K(int, 1, "partitions of __share_group_state",
             T.INT, "50"),
    "transaction.state.log.num.partitions": K(int, 1, "partitions of __transaction_state",
             T.INT, "50"),
    "transaction.max.timeout.ms": K(int, 900_000, "largest transaction.timeout.ms a producer may ask for",
             T.INT, "900000"),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": K(int, 10_000, "timeout scan period",
             T.INT, "10000"),
    "transactional.id.expiration.ms": K(int, 604_800_000, "idle transactional ids expire after this",
             T.INT, "604800000"),
    "producer.id.expiration.ms": K(int, 86_400_000, "idle producer state expires after this",
             T.INT, "86400000"),
    "transaction.version": K(int, 2, "finalized transaction.version feature level (KIP-890): 0, 1 or 2",
             T.SHORT, None),
    # delegation tokens (broker/delegation_tokens.py): off until a secret key is set, as in Kafka
    "delegation.token.secret.key": K(str, "", "the key delegation tokens are signed with (empty: no tokens)",
             T.PASSWORD, None),
    "delegation.token.max.lifetime.ms": K(int, WEEK_MS, "a delegation token's longest life, renewals included",
             T.LONG, "604800000"),
    "delegation.token.expiry.time.ms": K(int, 86_400_000, "a delegation token's life until it is renewed",
             T.LONG, "86400000"),
    # client telemetry (KIP-714, broker/telemetry.py): Kafka advertises it only with a receiver plugin
    "client.telemetry.enable": K(parse_bool, False, "advertise GetTelemetrySubscriptions and PushTelemetry "
             "(clients push their metrics, read by the client-telemetry control)", T.BOOLEAN, None),
    # authorisation (broker/authorizer.py); Kafka's StandardAuthorizer reads the last two
    "authorizer.class.name": K(str, "", "org.apache.kafka.metadata.authorizer.StandardAuthorizer turns ACLs on",
             T.STRING, ""),
    "super.users": K(str, "", "principals (User:name, ;-separated) allowed everything",
             T.STRING, None),
    "allow.everyone.if.no.acl.found": K(parse_bool, False, "allow what no ACL applies to (StandardAuthorizer)",
             T.BOOLEAN, None),
    # listener security (broker.security); `listener.name.<listener>.<key>` overrides per listener
    "listener.security.protocol.map": K(str, "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
             "listener name -> PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
             T.STRING, "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL"),
    "sasl.enabled.mechanisms": K(str, "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
             "SASL mechanisms of SASL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER",
             T.LIST, "GSSAPI"),
    "sasl.mechanism.inter.broker.protocol": K(str, "GSSAPI", "accepted for compatibility; there is one broker",
             T.STRING, "GSSAPI"),
    "connections.max.reauth.ms": K(int, 0, "SASL session lifetime (KIP-368); 0: sessions never expire",
             T.LONG, "0"),
    "scram.users": K(str, "", "SCRAM users made at start, kafka-storage --add-scram syntax: "
                     "SCRAM-SHA-256=[name=alice,password=secret],... (stored salted in the data dir)",
             T.PASSWORD, None),
    "ssl.keystore.type": K(str, "PEM", "PEM only (Kafka's default is JKS)", T.STRING, "JKS"),
    "ssl.keystore.location": K(str, "", "PEM file with the private key and certificate chain",
             T.STRING, None),
    "ssl.keystore.password": K(str, "", "password of an encrypted keystore key", T.PASSWORD, None),
    "ssl.key.password": K(str, "", "password of an encrypted private key", T.PASSWORD, None),
    "ssl.keystore.certificate.chain": K(str, "", "the certificate chain as PEM text", T.PASSWORD, None),
    "ssl.keystore.key": K(str, "", "the private key as PEM text", T.PASSWORD, None),
    "ssl.truststore.type": K(str, "PEM", "PEM only (Kafka's default is JKS)", T.STRING, "JKS"),
    "ssl.truststore.location": K(str, "", "PEM file of CA certificates trusted for client certificates",
             T.STRING, None),
    "ssl.truststore.password": K(str, "", "accepted for compatibility; PEM truststores have none",
             T.PASSWORD, None),
    "ssl.truststore.certificates": K(str, "", "trusted CA certificates as PEM text", T.PASSWORD, None),
    "ssl.client.auth": K(str, "none", "none, requested or required: ask TLS clients for a certificate",
             T.STRING, "none"),
    "ssl.principal.mapping.rules": K(str, "DEFAULT", "client certificate subject -> principal (RULE:.../.../ and DEFAULT)",
             T.STRING, "DEFAULT"),
    "ssl.endpoint.identification.algorithm": K(str, "https", "accepted for compatibility (a client-side check)",
             T.STRING, "https"),
    "ssl.enabled.protocols": K(str, "TLSv1.2,TLSv1.3", "accepted for compatibility; TLS 1.2 and 1.3 are served",
             T.LIST, "TLSv1.2,TLSv1.3"),
    "ssl.protocol": K(str, "TLSv1.3", "accepted for compatibility", T.STRING, "TLSv1.3"),
    "ssl.cipher.suites": K(str, "", "accepted for compatibility; Python's defaults are used", T.LIST, ""),
    "ssl.handshake.timeout.ms": K(int, 10_000, "a TLS handshake not finished in this time closes the connection",
             T.LONG, None),
    # Kafka settings that mean nothing on one node; accepted so that Kafka's own test configs work.
    "offsets.topic.replication.factor": K(int, 1, "accepted for compatibility; there is one replica",
             T.SHORT, "3"),
    "transaction.state.log.replication.factor": K(int, 1, "accepted for compatibility; there is one replica",
             T.SHORT, "3"),
    "transaction.state.log.min.isr": K(int, 1, "accepted for compatibility; there is one replica",
             T.INT, "2"),
    "min.insync.replicas": K(int, 1, "accepted for compatibility; there is one replica",
             T.INT, "1"),
}

# topic config -> the broker key that supplies its default: the topic config's first synonym
TOPIC_DEFAULTS_FROM: dict[str, str] = {
    d.name: d.synonyms[0].name for d in TOPIC_CONFIG_DEFS if d.synonyms and d.synonyms[0].name in BROKER_KEYS
}


class UnknownConfig(ValueError):
    pass


# Kafka keys that a user may bring from a real Kafka config and what to do instead.
KAFKA_KEY_HINTS = {
    "log.dirs": "use --data-dir (or KAFKALITE_DATA_DIR)",
    "log.dir": "use --data-dir (or KAFKALITE_DATA_DIR)",
    "broker.id": "use node.id",
    "zookeeper.connect": "kafkalite needs no ZooKeeper; remove it",
    "process.roles": "kafkalite is one combined node; remove it",
    "controller.quorum.voters": "kafkalite is one combined node; remove it",
    "controller.quorum.bootstrap.servers": "kafkalite is one combined node; remove it",
    "controller.listener.names": "kafkalite has no controller listener; remove it",
    "inter.broker.listener.name": "kafkalite is one node; remove it",
}


def unknown_key_message(key: str, where: str = "") -> str:
    msg = f"unknown broker config {key!r}{where}"
    if key in KAFKA_KEY_HINTS:
        return f"{msg}: {KAFKA_KEY_HINTS[key]}"
    import difflib  # only for a mistyped key: not part of every start

    close = difflib.get_close_matches(key, list(BROKER_KEYS) + list(LISTENER_KEYS), n=1, cutoff=0.8)
    if close:
        return f"{msg}; did you mean {close[0]!r}? (kafkalite --list-configs lists every key)"
    return f"{msg} (kafkalite --list-configs lists every key)"


def check_key(key: str, where: str = "") -> None:
    if key not in BROKER_KEYS and key not in LISTENER_KEYS:
        try:
            if split_listener_key(key) is not None:
                return
        except SecurityConfigError as exc:
            raise UnknownConfig(f"{exc}{where}") from None
        raise UnknownConfig(unknown_key_message(key, where))



def parse_value(key: str, value: Any) -> Any:
    if key not in BROKER_KEYS:
        raise UnknownConfig(unknown_key_message(key))
    parser = BROKER_KEYS[key].parse
    try:
        return parser(value)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"bad value for {key}: {value!r} ({exc})") from None
