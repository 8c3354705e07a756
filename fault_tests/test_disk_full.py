"""A data directory on a small filesystem that fills up (an 8 MiB tmpfs, mounted for the test).

Produce gets KAFKA_STORAGE_ERROR once the disk is full, every batch acknowledged before reads
back unchanged (also after a crash and restart), and writes succeed again when space returns.
Mounting needs root (CI runs as root); where it is refused the test fails with the reason.
"""

from __future__ import annotations

import hashlib
import subprocess
import uuid

import pytest
from kio.schema.errors import ErrorCode

from kafkalite.broker.tests.test_wire import fetch, metadata, produce
from kafkalite.protocol.client import WireClient
from kafkalite.protocol.batch import iter_batches
from kafkalite.protocol.records import Record, build_batch, decode_records
from kafkalite.tests import suite_brokers

pytestmark = [pytest.mark.faults, pytest.mark.timeout(180)]

DISK_MB = 8
RESERVE_MB = 2          # freed later: "space returns"
BATCH_BYTES = 64 * 1024


@pytest.fixture
def small_disk(tmp_path):
    mnt = tmp_path / "disk"
    mnt.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "tmpfs", str(mnt)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.fail(f"cannot mount a {DISK_MB} MiB tmpfs at {mnt} (needs root and mount rights): "
                    f"{proc.stderr.strip() or proc.returncode}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def _fill(path) -> None:
    """Write to `path` until the filesystem is full."""
    with open(path, "wb", buffering=0) as f:
        for chunk in (1 << 16, 1 << 12, 1):
            try:
                while True:
                    f.write(b"\0" * chunk)
            except OSError:
                pass


def _batch(i: int) -> bytes:
    value = hashlib.sha256(str(i).encode()).digest() * (BATCH_BYTES // 32)
    return bytes(build_batch([Record(f"k{i}".encode(), value, (), 1_700_000_000_000 + i)]))


def _read_values(client, topic, upto: int) -> dict[int, bytes]:
    got: dict[int, bytes] = {}
    offset = 0
    while offset < upto:
        p = fetch(client, topic, offset)
        assert p.error_code == ErrorCode.none, p.error_code
        data = bytes(p.records)
        assert data, f"nothing at offset {offset} below {upto}"
        for pos, _h in iter_batches(data, check_crc=True):
            for r in decode_records(data, pos):
                got[r.offset] = r.value
        offset = max(got) + 1
    return got


def test_full_disk_gives_storage_errors_keeps_acknowledged_data_and_recovers(small_disk, tmp_path):
    reserve = small_disk / "reserve"
    reserve.write_bytes(b"\0" * (RESERVE_MB << 20))
    data_dir = small_disk / "data"
    topic = f"full-{uuid.uuid4().hex[:6]}"
    config = {"log.segment.bytes": 1 << 20, "fsync": "always"}
    acked: dict[int, bytes] = {}
    with suite_brokers.running(data_dir=data_dir, config=config, log_path=tmp_path / "broker.log") as broker:
        with WireClient(broker.bootstrap) as c:
            metadata(c, topic)
            errors = []
            for i in range(DISK_MB * (1 << 20) // BATCH_BYTES + 20):
                batch = _batch(i)
                r = produce(c, topic, batch)
                if r.error_code == ErrorCode.none:
                    acked[r.base_offset] = decode_records(batch)[0].value
                else:
                    errors.append(r.error_code)
                    if len(errors) >= 5:
                        break
            assert acked, "nothing could be written at all"
            assert errors and set(errors) == {ErrorCode.kafka_storage_error}, errors
            # the same connection still works and nothing acknowledged is lost
            got = _read_values(c, topic, max(acked) + 1)
            assert {o: got.get(o) for o in acked} == acked
            # space returns: writes succeed again
            reserve.unlink()
            r = produce(c, topic, _batch(10_000))
            assert r.error_code == ErrorCode.none, r.error_code
            acked[r.base_offset] = decode_records(_batch(10_000))[0].value
        assert "Traceback" not in broker.log_text()
        broker.kill()       # a crash right after: recovery must still find every acked batch
    with suite_brokers.running(data_dir=data_dir, config=config, log_path=tmp_path / "broker2.log") as broker:
        with WireClient(broker.bootstrap) as c:
            got = _read_values(c, topic, max(acked) + 1)
            assert {o: got.get(o) for o in acked} == acked
        assert "Traceback" not in broker.log_text()


def test_full_disk_answers_offset_commits_with_not_coordinator_and_keeps_committed_offsets(small_disk, tmp_path):
    """The group coordinator on the full disk: OffsetCommit gets NOT_COORDINATOR (Kafka's answer
    to a KAFKA_STORAGE_ERROR append), the offset committed before stays, also after a restart,
    and commits work again once space returns."""
    from kafkalite.broker.tests.test_groups_wire import _commit, _fetch, topic as make_topic

    data_dir = small_disk / "data"
    group = f"g-{uuid.uuid4().hex[:6]}"
    config = {"log.segment.bytes": 1 << 20, "fsync": "always", "offsets.topic.num.partitions": 1}

    def committed(c, name, tid):
        return _fetch(c, group, name, tid, [0]).groups[0].topics[0].partitions[0].committed_offset

    with suite_brokers.running(data_dir=data_dir, config=config, log_path=tmp_path / "broker.log") as broker:
        with WireClient(broker.bootstrap) as c:
            name, tid = make_topic(c)
            assert _commit(c, group, name, tid, {0: (1, -1, "")}).topics[0].partitions[0].error_code == ErrorCode.none
            _fill(small_disk / "filler")
            # a commit may still fit in the offsets segment's last page; big ones soon do not
            last_ok, answers = 1, []
            for i in range(2, 12):
                e = _commit(c, group, name, tid, {0: (i, -1, "m" * 4000)}).topics[0].partitions[0].error_code
                answers.append(e)
                if e == ErrorCode.none:
                    last_ok = i
            assert ErrorCode.not_coordinator in answers, answers
            assert set(answers) <= {ErrorCode.none, ErrorCode.not_coordinator}, answers
            assert committed(c, name, tid) == last_ok
            (small_disk / "filler").unlink()
            assert _commit(c, group, name, tid, {0: (9, -1, "")}).topics[0].partitions[0].error_code == ErrorCode.none
            assert committed(c, name, tid) == 9
        assert "Traceback" not in broker.log_text()
        broker.kill()
    with suite_brokers.running(data_dir=data_dir, config=config, log_path=tmp_path / "broker2.log") as broker:
        with WireClient(broker.bootstrap) as c:
            assert committed(c, name, tid) == 9
        assert "Traceback" not in broker.log_text()


def _admin_state(admin) -> dict:
    """What the admin changes below would alter, as confluent-kafka's AdminClient describes it."""
    from confluent_kafka.admin import AclBindingFilter, AclOperation, AclPermissionType, ConfigResource, \
        ResourcePatternType, ResourceType

    topics = admin.list_topics(timeout=10).topics
    configs = admin.describe_configs([ConfigResource(ResourceType.TOPIC, "kept")], request_timeout=10)
    (described,) = configs.values()
    everything = AclBindingFilter(ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY,
                                  AclPermissionType.ANY)
    acls = admin.describe_acls(everything, request_timeout=10).result()
    users = admin.describe_user_scram_credentials(None, request_timeout=10).result()
    return {"topics": sorted((name, len(t.partitions)) for name, t in topics.items() if not name.startswith("__")),
            "retention.ms": described.result()["retention.ms"].value,
            "acls": sorted(str(a) for a in acls),
            "scram users": sorted(users)}


def test_admin_changes_on_a_full_disk_change_nothing_also_after_a_restart(small_disk, tmp_path):
    """confluent-kafka's AdminClient on a full disk: CreateTopics, DeleteTopics, CreatePartitions,
    IncrementalAlterConfigs, CreateAcls, DeleteAcls and AlterUserScramCredentials each answer
    KAFKA_STORAGE_ERROR, what Describe shows is unchanged, and a restart (after a kill) reads the
    same state from the disk (every admin API, in-process: broker/tests/handlers/
    test_admin_all_or_nothing.py)."""
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AclBinding, AclBindingFilter, AclOperation, AclPermissionType, \
        AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewPartitions, NewTopic, ResourcePatternType, \
        ResourceType, ScramCredentialInfo, ScramMechanism, UserScramCredentialDeletion, UserScramCredentialUpsertion

    from kafkalite.broker.authorizer import STANDARD_AUTHORIZER

    data_dir = small_disk / "data"
    config = {"authorizer.class.name": STANDARD_AUTHORIZER, "super.users": "User:ANONYMOUS"}
    sha256 = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 4096)

    def acl(name: str) -> AclBinding:
        return AclBinding(ResourceType.TOPIC, name, ResourcePatternType.LITERAL, "User:alice", "*",
                          AclOperation.READ, AclPermissionType.ALLOW)

    def refused(futures) -> list[int]:
        codes = []
        for f in (futures.values() if isinstance(futures, dict) else [futures]):
            with pytest.raises(KafkaException) as exc:
                f.result()
            codes.append(exc.value.args[0].code())
        return codes

    with suite_brokers.running(data_dir=data_dir, config=config, log_path=tmp_path / "broker.log") as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        admin.create_topics([NewTopic("kept", 1, 1)], request_timeout=10)["kept"].result()
        admin.create_acls([acl("kept")], request_timeout=10)[acl("kept")].result()
        admin.alter_user_scram_credentials([UserScramCredentialUpsertion("old", sha256, b"old-secret")],
                                           request_timeout=10)["old"].result()
        before = _admin_state(admin)
        assert before["topics"] == [("kept", 1)] and before["scram users"] == ["old"] and len(before["acls"]) == 1
        _fill(small_disk / "filler")
        codes = refused(admin.create_topics([NewTopic("new", 2, 1)], request_timeout=10))
        codes += refused(admin.delete_topics(["kept"], request_timeout=10))
        codes += refused(admin.create_partitions([NewPartitions("kept", 3)], request_timeout=10))
        codes += refused(admin.incremental_alter_configs([ConfigResource(
            ResourceType.TOPIC, "kept", incremental_configs=[
                ConfigEntry("retention.ms", "1000", incremental_operation=AlterConfigOpType.SET)])],
            request_timeout=10))
        codes += refused(admin.create_acls([acl("new")], request_timeout=10))
        (deleted,) = admin.delete_acls([AclBindingFilter(
            ResourceType.TOPIC, "kept", ResourcePatternType.LITERAL, None, None, AclOperation.ANY,
            AclPermissionType.ANY)], request_timeout=10).values()
        codes += refused(deleted)
        codes += refused(admin.alter_user_scram_credentials(
            [UserScramCredentialDeletion("old", ScramMechanism.SCRAM_SHA_256),
             UserScramCredentialUpsertion("new", sha256, b"new-secret")], request_timeout=10))
        assert codes == [KafkaError.KAFKA_STORAGE_ERROR] * 8, codes  # the SCRAM change: one per user
        assert _admin_state(admin) == before
        assert "Traceback" not in broker.log_text()
        broker.kill()
    (small_disk / "filler").unlink()
    with suite_brokers.running(data_dir=data_dir, config=config, log_path=tmp_path / "broker2.log") as broker:
        admin = AdminClient({"bootstrap.servers": broker.bootstrap})
        assert _admin_state(admin) == before
        assert "Traceback" not in broker.log_text()
