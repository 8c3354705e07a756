"""HTTP basic auth for the schema registry and the console, against the broker's own SASL users: when any listener
requires SASL, every request must carry `Authorization: Basic` with a user and password that
would log in over SASL on one of those listeners (PLAIN: a `user_NAME` of a listener's PLAIN JAAS
config; SCRAM-SHA-256/512: a credential of the broker's SCRAM store, checked by deriving the
stored key from the password with the credential's salt and iterations). Without SASL listeners
the registry is open, as Confluent's is without an authentication method configured, and so is
the console.

The registry's refusal is Confluent's: HTTP 401 `{"error_code": 401, "message": "Unauthorized"}` with
`WWW-Authenticate: Basic realm="kafkalite"`. Passwords that passed a SCRAM check are remembered
(their SHA-256 with the credential's salt) so that a client's every request does not pay PBKDF2.
The console's is broker.http_endpoint.guarded's (the same status and challenge)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from typing import Any

from .credentials import HASHES, ScramCredential


class BasicAuth:
    def __init__(self, broker: Any):
        self.broker = broker
        self._verified: set[tuple[str, str, bytes]] = set()

    @property
    def required(self) -> bool:
        return any(sec.sasl for sec in getattr(self.broker, "security", {}).values())

    def allows(self, header: str | None) -> bool:
        """Whether the Authorization header names a user the broker's SASL would accept."""
        if not self.required:
            return True
        if not header or not header[:6].lower() == "basic ":
            return False
        try:
            user, sep, password = base64.b64decode(header[6:].strip(), validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError, ValueError):
            return False
        if not sep or not user:
            return False
        for sec in self.broker.security.values():
            if not sec.sasl:
                continue
            expected = sec.plain_users.get(user) if "PLAIN" in sec.mechanisms else None
            if expected is not None and hmac.compare_digest(expected.encode(), password.encode()):
                return True
            for mechanism in sec.mechanisms:
                if mechanism in HASHES and self._scram(user, password, mechanism):
                    return True
        return False

    def _scram(self, user: str, password: str, mechanism: str) -> bool:
        cred = self.broker.scram.get(user, mechanism)
        if cred is None:
            return False
        key = (user, mechanism, hashlib.sha256(cred.salt + cred.stored_key + password.encode()).digest())
        if key in self._verified:
            return True
        derived = ScramCredential.from_password(mechanism, password, cred.iterations, cred.salt)
        if hmac.compare_digest(derived.stored_key, cred.stored_key):
            self._verified.add(key)
            return True
        return False
