"""SCRAM credentials (RFC 5802 / 7677): salt, iteration count, StoredKey and ServerKey per user
and mechanism, as Kafka keeps them; never a password.

They live in `<data dir>/scram-credentials.json`, written atomically on every change. Users
come from the `scram.users` setting (kafka-storage format's `--add-scram` syntax:
`SCRAM-SHA-256=[name=alice,password=alice-secret],SCRAM-SHA-512=[name=bob,iterations=8192,password=x]`,
applied at every start) and from AlterUserScramCredentials at run time. All or nothing: a
change is saved as the credentials will be before memory changes; a save that fails (a full
disk) raises OSError with them as they were (broker.all_or_nothing).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from kafkalite.storage.files import write_atomic

# Kafka's ScramMechanism ids (DescribeUserScramCredentials / AlterUserScramCredentials)
MECHANISM_IDS = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
MECHANISM_NAMES = {v: k for k, v in MECHANISM_IDS.items()}
HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
# Kafka's ScramMechanism.minIterations / maxIterations
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
DEFAULT_ITERATIONS = 4096


@dataclass(frozen=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @staticmethod
    def from_salted_password(mechanism: str, salted: bytes, salt: bytes, iterations: int) -> "ScramCredential":
        h = HASHES[mechanism]
        client_key = hmac.new(salted, b"Client Key", h).digest()
        return ScramCredential(salt, hashlib.new(h, client_key).digest(),
                               hmac.new(salted, b"Server Key", h).digest(), iterations)

    @staticmethod
    def from_password(mechanism: str, password: str, iterations: int = DEFAULT_ITERATIONS,
                      salt: bytes | None = None) -> "ScramCredential":
        salt = salt if salt is not None else secrets.token_bytes(32)
        salted = hashlib.pbkdf2_hmac(HASHES[mechanism], password.encode(), salt, iterations)
        return ScramCredential.from_salted_password(mechanism, salted, salt, iterations)

    def to_json(self) -> dict:
        b64 = lambda b: base64.b64encode(b).decode()  # noqa: E731
        return {"salt": b64(self.salt), "stored_key": b64(self.stored_key),
                "server_key": b64(self.server_key), "iterations": self.iterations}

    @staticmethod
    def from_json(d: dict) -> "ScramCredential":
        return ScramCredential(base64.b64decode(d["salt"]), base64.b64decode(d["stored_key"]),
                               base64.b64decode(d["server_key"]), int(d["iterations"]))


_ENTRY = re.compile(r"\s*(SCRAM-SHA-256|SCRAM-SHA-512)\s*=\s*\[([^\]]*)\]\s*")


def parse_scram_users(text: str) -> list[tuple[str, str, str, int]]:
    """`scram.users` -> [(mechanism, user, password, iterations)]; entries are separated by
    commas (or semicolons) between the brackets."""
    out = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _ENTRY.match(text, pos)
        if m is None:
            raise ValueError("scram.users: expected SCRAM-SHA-256=[name=USER,password=PASSWORD] or "
                             "SCRAM-SHA-512=[...], separated by commas")
        fields: dict[str, str] = {}
        for part in m.group(2).split(","):
            k, sep, v = part.partition("=")
            if not sep:
                raise ValueError(f"scram.users: {m.group(1)} entry needs key=value pairs")
            fields[k.strip()] = v.strip().strip('"')
        if not fields.get("name") or "password" not in fields:
            raise ValueError(f"scram.users: a {m.group(1)} entry needs name= and password=")
        iterations = int(fields.get("iterations", DEFAULT_ITERATIONS))
        if not MIN_ITERATIONS <= iterations <= MAX_ITERATIONS:
            raise ValueError(f"scram.users: iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS}")
        out.append((m.group(1), fields["name"], fields["password"], iterations))
        pos = m.end()
        while pos < len(text) and text[pos] in ",;":
            pos += 1
    return out


class TokenCredentials(Protocol):
    def scram_credential(self, token_id: str, mechanism: str, now: int) -> tuple[ScramCredential, str] | None: ...


class ScramStore:
    """user -> mechanism -> credential, persisted in the data dir."""

    FILE = "scram-credentials.json"

    def __init__(self, data_dir: Path):
        self.path = Path(data_dir) / self.FILE
        self.users: dict[str, dict[str, ScramCredential]] = {}
        # the delegation tokens SCRAM also authenticates against (broker.delegation_tokens), once set
        self.tokens: TokenCredentials | None = None
        if self.path.exists():
            raw = json.loads(self.path.read_text())
            self.users = {u: {m: ScramCredential.from_json(c) for m, c in mechs.items()} for u, mechs in raw.items()}

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.users.get(user, {}).get(mechanism)

    def put(self, user: str, mechanism: str, cred: ScramCredential) -> None:
        self.users.setdefault(user, {})[mechanism] = cred

    def delete(self, user: str, mechanism: str) -> bool:
        mechs = self.users.get(user)
        if not mechs or mechanism not in mechs:
            return False
        del mechs[mechanism]
        if not mechs:
            del self.users[user]
        return True

    def alter(self, deletions: list[tuple[str, str]], upserts: list[tuple[str, str, ScramCredential]]) -> None:
        """AlterUserScramCredentials' changes (checked by its handler), all or nothing: the
        credentials as they will be are written first and only then replace those in memory; a
        write that fails raises OSError and changes nothing."""
        users = {u: dict(mechs) for u, mechs in self.users.items()}
        for user, mechanism in deletions:
            users.get(user, {}).pop(mechanism, None)
            if not users.get(user, True):
                del users[user]
        for user, mechanism, cred in upserts:
            users.setdefault(user, {})[mechanism] = cred
        self.replace(users)

    def replace(self, users: dict[str, dict[str, ScramCredential]]) -> None:
        """These credentials instead of all there are: written first, then taken (a write that
        fails raises OSError and changes nothing)."""
        self._write(users)
        self.users = users

    def save(self) -> None:
        self._write(self.users)

    def _write(self, users: dict[str, dict[str, ScramCredential]]) -> None:
        raw = {u: {m: c.to_json() for m, c in mechs.items()} for u, mechs in users.items()}
        # readable by the broker's user only: the file holds salted passwords
        write_atomic(self.path, json.dumps(raw).encode(), fsync=True, mode=0o600)

    def apply_config(self, text: str) -> None:
        """Add the users of `scram.users` (replacing a credential of the same user and mechanism)."""
        entries = parse_scram_users(text)
        for mechanism, user, password, iterations in entries:
            self.put(user, mechanism, ScramCredential.from_password(mechanism, password, iterations))
        if entries:
            self.save()
