"""Delegation tokens (broker.delegation_tokens): lifetimes, who may renew and expire, what describe
shows, persistence, and the SCRAM credential a token authenticates with. A real Java client
uses them on kafkalite and Kafka in compat_tests/test_delegation_tokens.py; the refusals on a
PLAINTEXT connection are in compat_tests/differ ("delegation tokens without SASL")."""

from __future__ import annotations

import base64

import pytest

from kafkalite.broker.credentials import HASHES
from kafkalite.broker.delegation_tokens import DelegationTokens, TokenError

HOUR, DAY = 3_600_000, 86_400_000


@pytest.fixture
def tokens(tmp_path):
    return DelegationTokens(tmp_path, "secret", max_lifetime_ms=7 * DAY, expiry_time_ms=DAY)


def test_lifetimes(tokens):
    t = tokens.create("User:alice", "User:alice", ["User:bob"], -1, now=1000)
    assert (t.issue_ms, t.expiry_ms, t.max_ms) == (1000, 1000 + DAY, 1000 + 7 * DAY)
    short = tokens.create("User:alice", "User:alice", [], HOUR, now=1000)
    assert (short.expiry_ms, short.max_ms) == (1000 + HOUR, 1000 + HOUR)  # expiry never past the max
    assert tokens.renew(t.hmac, "User:bob", 2 * DAY, now=2000) == 2000 + 2 * DAY
    assert tokens.renew(t.hmac, "User:alice", 30 * DAY, now=3000) == t.max_ms


def test_refusals(tokens):
    t = tokens.create("User:alice", "User:alice", ["User:bob"], -1, now=0)
    for call in (lambda: tokens.renew(t.hmac, "User:carol", 1, now=1),
                 lambda: tokens.expire(t.hmac, "User:carol", -1, now=1)):
        with pytest.raises(TokenError) as exc:
            call()
        assert exc.value.name == "delegation_token_owner_mismatch"
    with pytest.raises(TokenError) as exc:
        tokens.renew(b"not a token", "User:alice", 1, now=1)
    assert exc.value.name == "delegation_token_not_found"
    with pytest.raises(TokenError) as exc:
        tokens.renew(t.hmac, "User:alice", 1, now=DAY + 1)
    assert exc.value.name == "delegation_token_expired"


def test_describe_expire_persist_and_scram(tokens, tmp_path):
    t = tokens.create("User:alice", "User:alice", ["User:bob"], -1, now=0)
    def denied(token):
        return False

    assert [x.token_id for x in tokens.visible("User:bob", None, now=1, granted=denied)] == [t.token_id]
    assert tokens.visible("User:carol", None, now=1, granted=denied) == []
    # carol may describe it when the authorizer grants it (or there is none)
    assert [x.token_id for x in tokens.visible("User:carol", None, now=1, granted=lambda x: True)] == [t.token_id]
    # an owners filter matches the owner, the requester or a renewer
    assert [x.token_id for x in tokens.visible("User:alice", ["User:bob"], now=1, granted=denied)] == [t.token_id]
    assert tokens.visible("User:alice", ["User:carol"], now=1, granted=denied) == []
    again = DelegationTokens(tmp_path, "secret", 7 * DAY, DAY)
    cred, owner = again.scram_credential(t.token_id, "SCRAM-SHA-256", now=1)
    assert owner == "User:alice" and set(t.scram) == set(HASHES)
    assert base64.b64decode(base64.b64encode(t.hmac)) == again.tokens[t.token_id].hmac
    assert again.scram_credential(t.token_id, "SCRAM-SHA-256", now=DAY + 1) is None  # expired
    assert tokens.expire(t.hmac, "User:alice", -1, now=5) == 5
    assert tokens.visible("User:alice", None, now=6, granted=denied) == [] and tokens.scram_credential(t.token_id, "SCRAM-SHA-256", 6) is None
