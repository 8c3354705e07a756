"""The authorisation conversations (acl_conversations.py), each at the lowest and the highest
version both brokers serve: on a pair of brokers running StandardAuthorizer configured alike
(compat_tests/authorizer.py), and the `PLAIN` ones on the differ's brokers without one."""

from __future__ import annotations

import os

import pytest

from compat_tests.authorizer import secured_config
from kafkalite.tests import suite_brokers

from .acl_conversations import ACL_CONVERSATIONS, PLAIN
from .conftest import SHARED_CONFIG
from .core import assert_alike, common_versions

pytestmark = [pytest.mark.security]

CASES = [pytest.param(name, end, id=f"{name.replace(' ', '-')}-{end}")
         for name in ACL_CONVERSATIONS for end in ("lowest", "highest")]


@pytest.fixture(scope="module")
def secured_reference_bootstrap():
    from compat_tests.reference import ReferenceBroker

    with ReferenceBroker(config={**SHARED_CONFIG, **secured_config(on_kafka=True)}) as kafka:
        yield kafka.start(timeout=120)


@pytest.fixture(scope="module")
def secured_subject_bootstrap():
    if os.environ.get("KAFKA_BOOTSTRAP"):
        pytest.skip("the authorisation conversations need a kafkalite with an authorizer of their own")
    with suite_brokers.running(config={**SHARED_CONFIG, **secured_config(on_kafka=False)}) as b:
        yield b.bootstrap


@pytest.mark.parametrize("name,end", CASES)
def test_acl_conversation(name, end, request):
    if name in PLAIN:
        reference = request.getfixturevalue("reference_bootstrap")
        subject = request.getfixturevalue("subject_bootstrap")
    else:
        reference = request.getfixturevalue("secured_reference_bootstrap")
        subject = request.getfixturevalue("secured_subject_bootstrap")
    assert_alike(name, ACL_CONVERSATIONS[name], reference, subject, end, common_versions(reference, subject))
