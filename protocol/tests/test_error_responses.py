"""Error responses built from the request, for every API and version we serve."""

from __future__ import annotations

import datetime
import importlib
import uuid

import pytest
from kio.schema.errors import ErrorCode

from kafkalite.broker.handlers import load_all
from kafkalite.protocol.apis import API_TABLE
from kafkalite.protocol.error_responses import error_response
from kafkalite.protocol.messages import encode_response

load_all()


@pytest.mark.parametrize("api_key", sorted(API_TABLE))
def test_every_served_version_builds_and_encodes(api_key):
    rng = API_TABLE[api_key]
    for version in range(rng.min_version, rng.max_version + 1):
        body = error_response(api_key, version, None, ErrorCode.not_coordinator)
        assert encode_response(api_key, version, 7, body)[4:8] == b"\0\0\0\7"


def test_fetch_mirrors_topics_and_partitions_under_their_other_names():
    m = importlib.import_module("kio.schema.fetch.v12.request")
    req = m.FetchRequest(max_wait=0, min_bytes=1, topics=(m.FetchTopic(topic="t", partitions=(
        m.FetchPartition(partition=3, fetch_offset=5, partition_max_bytes=100),)),), forgotten_topics_data=())
    resp = error_response(1, 12, req, ErrorCode.not_leader_or_follower)
    (topic,) = resp.responses
    (part,) = topic.partitions
    assert (topic.topic, part.partition_index, part.error_code, part.high_watermark, part.records) == (
        "t", 3, ErrorCode.not_leader_or_follower, -1, None)
    assert resp.error_code == ErrorCode.not_leader_or_follower


def test_offset_fetch_and_init_producer_id():
    m = importlib.import_module("kio.schema.offset_fetch.v8.request")
    req = m.OffsetFetchRequest(groups=(m.OffsetFetchRequestGroup(group_id="g", topics=(
        m.OffsetFetchRequestTopics(name="t", partition_indexes=(0, 1)),)),), require_stable=True)
    (group,) = error_response(9, 8, req, ErrorCode.not_coordinator).groups
    assert group.group_id == "g" and group.error_code == ErrorCode.not_coordinator
    assert [(p.partition_index, p.committed_offset, p.error_code) for p in group.topics[0].partitions] == [
        (0, -1, ErrorCode.not_coordinator), (1, -1, ErrorCode.not_coordinator)]
    m = importlib.import_module("kio.schema.init_producer_id.v5.request")
    resp = error_response(22, 5, m.InitProducerIdRequest(transactional_id="x", transaction_timeout=60000,
                                                         producer_id=5, producer_epoch=3), ErrorCode.not_coordinator)
    # an error response's producer id and epoch are "none", not the request's
    assert (resp.error_code, resp.producer_id, resp.producer_epoch) == (ErrorCode.not_coordinator, -1, -1)


def test_describe_groups_puts_each_group_id_in_its_key_field():
    m = importlib.import_module("kio.schema.describe_groups.v5.request")
    resp = error_response(15, 5, m.DescribeGroupsRequest(groups=("a", "b"), include_authorized_operations=False),
                          ErrorCode.coordinator_load_in_progress)
    assert [(g.group_id, g.error_code) for g in resp.groups] == [
        ("a", ErrorCode.coordinator_load_in_progress), ("b", ErrorCode.coordinator_load_in_progress)]


def test_entries_that_are_only_an_error_mirror_the_request_by_count():
    # Kafka's CreateAclsRequest.getErrorResponse: one result per creation
    import kio.schema.create_acls.v3.request as ca

    creation = ca.AclCreation(resource_type=2, resource_name="t", resource_pattern_type=3, principal="User:a",
                              host="*", operation=3, permission_type=3)
    resp = error_response(30, 3, ca.CreateAclsRequest(creations=(creation, creation)), ErrorCode.unknown_server_error)
    assert [r.error_code for r in resp.results] == [ErrorCode.unknown_server_error] * 2


def test_scram_users_come_from_deletions_and_upsertions_once_each_sorted():
    # Kafka's AlterUserScramCredentialsRequest.getErrorResponse: the set of users, sorted
    import kio.schema.alter_user_scram_credentials.v0.request as sc

    req = sc.AlterUserScramCredentialsRequest(
        deletions=(sc.ScramCredentialDeletion(name="bob", mechanism=1),),
        upsertions=(sc.ScramCredentialUpsertion(name="alice", mechanism=1, iterations=4096, salt=b"s",
                                                salted_password=b"p"),
                    sc.ScramCredentialUpsertion(name="bob", mechanism=2, iterations=4096, salt=b"s",
                                                salted_password=b"p")))
    resp = error_response(51, 0, req, ErrorCode.unknown_server_error)
    assert [(r.user, r.error_code) for r in resp.results] == [("alice", ErrorCode.unknown_server_error),
                                                              ("bob", ErrorCode.unknown_server_error)]


def test_fetch_from_v13_answers_the_top_level_error_alone_with_the_session_id():
    m = importlib.import_module("kio.schema.fetch.v13.request")
    req = m.FetchRequest(replica_id=-1, max_wait=datetime.timedelta(milliseconds=5), min_bytes=1, max_bytes=100,
                         isolation_level=0, session_id=42, session_epoch=3, topics=(m.FetchTopic(
                             topic_id=uuid.UUID(int=1), partitions=(m.FetchPartition(
                                 partition=0, current_leader_epoch=-1, fetch_offset=0, last_fetched_epoch=-1,
                                 log_start_offset=-1, partition_max_bytes=100),)),),
                         forgotten_topics_data=(), rack_id="")
    resp = error_response(1, 13, req, ErrorCode.unknown_server_error)
    assert (resp.error_code, resp.session_id, resp.responses) == (ErrorCode.unknown_server_error, 42, ())
