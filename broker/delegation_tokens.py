"""Delegation tokens (KIP-48): created, renewed, expired and described as Kafka's
DelegationTokenManager does, and usable to authenticate with SCRAM.

- Tokens exist only with `delegation.token.secret.key` set; without it every token request is
  DELEGATION_TOKEN_AUTH_DISABLED. A token is created only over a SASL connection that did not
  itself authenticate with a token (DELEGATION_TOKEN_REQUEST_NOT_ALLOWED otherwise).
- A token has an id (a random UUID in base64, as Kafka's), an HMAC-SHA512 of the id under the
  secret key (its password), an owner (the requester, or the owner named in v3), renewers, and
  three times: issued, expiry (issue + delegation.token.expiry.time.ms, at most the max) and max
  (issue + the requested max lifetime, at most delegation.token.max.lifetime.ms).
- Renewing (by the owner or a renewer: DELEGATION_TOKEN_OWNER_MISMATCH otherwise) moves the expiry to
  now + the renew period (the configured expiry time when negative), never past the max; an expired
  token is DELEGATION_TOKEN_EXPIRED, an unknown HMAC DELEGATION_TOKEN_NOT_FOUND. Expiring with a
  negative period removes the token; otherwise it moves the expiry the same way and a token whose
  expiry has passed is gone.
- A token authenticates SCRAM-SHA-256/512 with the `tokenauth=true` extension: the user name is the
  token id, the password the base64 HMAC; the connection's principal is the token's owner. Tokens
  past their expiry are not found.
- Tokens persist in `__cluster_metadata/delegation_tokens.json` (Kafka's metadata log), saved as
  they will be before memory changes: a save that fails (a full disk) raises OSError with the
  tokens as they were, and the handler answers KAFKA_STORAGE_ERROR (broker.all_or_nothing).
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import hmac
import json
import uuid
from dataclasses import asdict, dataclass, field
from typing import Callable
from pathlib import Path

from kafkalite.storage.files import write_atomic

from .credentials import HASHES, ScramCredential


@dataclass
class Token:
    token_id: str
    hmac: bytes
    owner: str  # Kafka's principal string, User:name
    requester: str
    renewers: list[str]
    issue_ms: int
    expiry_ms: int
    max_ms: int
    # SCRAM credentials of the token (by mechanism), made from its HMAC
    scram: dict[str, ScramCredential] = field(default_factory=dict)

    def to_json(self) -> dict:
        d = asdict(self)
        d["hmac"] = base64.b64encode(self.hmac).decode()
        d["scram"] = {m: c.to_json() for m, c in self.scram.items()}
        return d

    @staticmethod
    def from_json(d: dict) -> "Token":
        t = Token(**{**d, "hmac": base64.b64decode(d["hmac"]), "scram": {}})
        t.scram = {m: ScramCredential.from_json(c) for m, c in d["scram"].items()}
        return t


class TokenError(Exception):
    """A refused token request; `name` is the ErrorCode member's name."""

    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


class DelegationTokens:
    def __init__(self, meta_dir: Path, secret: str, max_lifetime_ms: int, expiry_time_ms: int):
        self.path = meta_dir / "delegation_tokens.json"
        self.secret = secret.encode()
        self.max_lifetime_ms = max_lifetime_ms
        self.expiry_time_ms = expiry_time_ms
        self.tokens: dict[str, Token] = {}
        if self.path.exists():
            self.tokens = {t["token_id"]: Token.from_json(t) for t in json.loads(self.path.read_text())}

    @property
    def enabled(self) -> bool:
        return bool(self.secret)

    def create(self, owner: str, requester: str, renewers: list[str], max_lifetime_ms: int, now: int) -> Token:
        token_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        mac = hmac.new(self.secret, token_id.encode(), hashlib.sha512).digest()
        lifetime = self.max_lifetime_ms if max_lifetime_ms <= 0 else min(max_lifetime_ms, self.max_lifetime_ms)
        max_ms = now + lifetime
        password = base64.b64encode(mac).decode()
        token = Token(token_id, mac, owner, requester, renewers, now, min(now + self.expiry_time_ms, max_ms), max_ms,
                      {m: ScramCredential.from_password(m, password) for m in HASHES})
        self._replace({**self.tokens, token_id: token})
        return token

    def by_hmac(self, mac: bytes) -> Token:
        for t in self.tokens.values():
            if hmac.compare_digest(t.hmac, mac):
                return t
        raise TokenError("delegation_token_not_found")

    def _may_change(self, token: Token, principal: str) -> None:
        if principal != token.owner and principal not in token.renewers:
            raise TokenError("delegation_token_owner_mismatch")

    def renew(self, mac: bytes, principal: str, period_ms: int, now: int) -> int:
        token = self.by_hmac(mac)
        self._may_change(token, principal)
        if token.expiry_ms < now:
            raise TokenError("delegation_token_expired")
        renewed = dataclasses.replace(token, expiry_ms=min(token.max_ms, now + (self.expiry_time_ms if period_ms < 0
                                                                               else period_ms)))
        self._replace({**self.tokens, token.token_id: renewed})
        return renewed.expiry_ms

    def expire(self, mac: bytes, principal: str, period_ms: int, now: int) -> int:
        token = self.by_hmac(mac)
        self._may_change(token, principal)
        if token.expiry_ms < now:
            raise TokenError("delegation_token_expired")
        others = {k: t for k, t in self.tokens.items() if k != token.token_id}
        if period_ms < 0:
            self._replace(others)
            return now
        expiry_ms = min(token.max_ms, now + period_ms)
        self._replace(others if expiry_ms < now else {**others, token.token_id:
                                                      dataclasses.replace(token, expiry_ms=expiry_ms)})
        return expiry_ms

    def visible(self, principal: str, owners: list[str] | None, now: int,
                granted: Callable[[Token], bool]) -> list[Token]:
        """The live tokens of `owners` (all with None) that `principal` may describe: Kafka's
        DelegationTokenManager.filterToken. A token belongs to an owner it names as owner,
        requester or renewer; the principal may describe the ones it is one of those for, and
        the others that `granted` allows (the authorizer's part)."""
        def names(t: Token, who: str) -> bool:
            return who in (t.owner, t.requester) or who in t.renewers
        return [t for t in self.tokens.values()
                if t.expiry_ms >= now and (owners is None or any(names(t, o) for o in owners))
                and (names(t, principal) or granted(t))]

    def scram_credential(self, token_id: str, mechanism: str, now: int) -> tuple[ScramCredential, str] | None:
        """The SCRAM credential and owner of a live token, for authentication."""
        t = self.tokens.get(token_id)
        if t is None or t.expiry_ms < now:
            return None
        cred = t.scram.get(mechanism)
        return None if cred is None else (cred, t.owner)

    def _replace(self, tokens: dict[str, Token]) -> None:
        """All or nothing: the tokens as they will be are saved first; a save that fails (a full
        disk) raises OSError with the tokens in memory as they were."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(self.path, json.dumps([t.to_json() for t in tokens.values()]).encode(), fsync=True)
        self.tokens = tokens
