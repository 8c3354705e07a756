"""SASL mechanisms on the server side and the state of one connection's authentication.

Each mechanism is a small object with `evaluate(token) -> bytes`, `complete`, `principal` and
`credential_expiry_ms` (OAUTHBEARER's token expiry, else None), raising `SaslFailed` with the
message Kafka gives the client:

- PLAIN (RFC 4616): `authzid NUL user NUL password`, checked against the `user_NAME`
  options of the listener's PLAIN JAAS config; a wrong user or password is "Authentication
  failed: Invalid username or password", as Kafka's PlainSaslServer.
- SCRAM-SHA-256/512 (RFC 5802/7677), against the salted credentials of broker.credentials, or
  with Kafka's `tokenauth=true` extension against a delegation token's (broker.delegation_tokens:
  the user is the token id, the principal the token's owner); any failure is reported with
  Kafka's generic "Authentication failed during authentication due to invalid credentials with
  SASL mechanism SCRAM-SHA-256".
- OAUTHBEARER (RFC 7628) with Kafka's unsecured JWS validator: an unsigned JWT (`alg` none)
  whose principal claim (`sub`) names the user, `exp` (seconds) in the future, `iat` if given
  not in the future, and the scopes of `unsecuredValidatorRequiredScope` present in `scope`.
  A refused token is answered with Kafka's error JSON (`{"status":"invalid_token"}`), and the
  client's following %x01 with SASL_AUTHENTICATION_FAILED carrying that JSON.

Nothing here logs a password, a SCRAM proof or a token.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import logging
import re
import secrets
import enum
import time

from kafkalite.protocol.api_keys import ApiKey

from .credentials import HASHES, ScramCredential, ScramStore

log = logging.getLogger("kafkalite.sasl")


class SaslFailed(Exception):
    """Authentication failed; the message is what the client is told."""


class Mechanism:
    complete = False
    principal: str | None = None
    credential_expiry_ms: int | None = None
    # authenticated with a delegation token (which may not ask for more tokens)
    token_authenticated = False

    def evaluate(self, token: bytes) -> bytes:
        raise NotImplementedError


class Plain(Mechanism):
    def __init__(self, users: dict[str, str]):
        self.users = users

    def evaluate(self, token: bytes) -> bytes:
        parts = token.split(b"\0")
        if len(parts) != 3:
            raise SaslFailed("Invalid SASL/PLAIN response: expected 3 tokens, got %d" % len(parts))
        authzid, user, password = (p.decode("utf-8", "replace") for p in parts)
        if not user:
            raise SaslFailed("Authentication failed: username not specified")
        if not password:
            raise SaslFailed("Authentication failed: password not specified")
        expected = self.users.get(user)
        if expected is None or not hmac.compare_digest(expected.encode(), password.encode()):
            raise SaslFailed("Authentication failed: Invalid username or password")
        if authzid and authzid != user:
            raise SaslFailed("Authentication failed: Client requested an authorization id that is different from username")
        self.principal = f"User:{user}"
        self.complete = True
        return b""


# Kafka's ScramMessages patterns: a nonce is printable ASCII without ',' (a nonce with a control
# character or a space fails, as on Kafka), names escape ',' and '=' as =2C and =3D
_SASLNAME = r"(?:[\x01-\x2b\x2d-\x3c\x3e-\x7f]|=2C|=3D)+"
_PRINTABLE = r"[\x21-\x2b\x2d-\x7e]+"
_VALUE = r"[\x01-\x2b\x2d-\x7f]+"
_BASE64 = r"(?:[a-zA-Z0-9/+]{4})*(?:[a-zA-Z0-9/+]{3}=|[a-zA-Z0-9/+]{2}==)?"
_EXTENSIONS = rf"(?:,[a-zA-Z]+={_VALUE})*"
_CLIENT_FIRST = re.compile(rf"n,(?:a=(?P<authzid>{_SASLNAME}))?,(?P<bare>(?:m={_VALUE},)?n=(?P<name>{_SASLNAME}),"
                           rf"r=(?P<nonce>{_PRINTABLE})(?P<ext>{_EXTENSIONS}))")
_CLIENT_FINAL = re.compile(rf"c=(?P<cbind>{_BASE64}),r=(?P<nonce>{_PRINTABLE}){_EXTENSIONS},p=(?P<proof>{_BASE64})")


class Scram(Mechanism):
    """The server side of RFC 5802 as Kafka's ScramSaslServer does it: Kafka's message patterns,
    a final nonce that must equal the combined nonce, the generic failure message. By hand:
    scramp, the library for it, refuses Kafka's tokenauth extension syntax."""

    def __init__(self, mechanism: str, store: ScramStore):
        self.mechanism = mechanism
        self.hash = HASHES[mechanism]
        self.store = store
        self.user: str | None = None
        self.cred: ScramCredential | None = None
        self.first_bare = ""
        self.server_first = ""
        self.nonce = ""
        self.owner = ""  # the principal: User:<user>, or a delegation token's owner

    def _invalid(self) -> SaslFailed:
        return SaslFailed("Authentication failed during authentication due to invalid credentials with SASL "
                          f"mechanism {self.mechanism}")

    def evaluate(self, token: bytes) -> bytes:
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise self._invalid() from None
        if self.cred is None:
            return self._first(text)
        return self._final(text)

    def _first(self, text: str) -> bytes:
        m = _CLIENT_FIRST.fullmatch(text)
        if m is None:
            raise self._invalid()
        extensions = dict(e.split("=", 1) for e in m.group("ext").split(",") if e)
        # Kafka's only extension is tokenauth=true: the user is a delegation token's id
        if set(extensions) - {"tokenauth"} or extensions.get("tokenauth", "true") != "true":
            raise self._invalid()
        user = m.group("name").replace("=2C", ",").replace("=3D", "=")
        if (m.group("authzid") and m.group("authzid") != user) or not m.group("nonce"):
            raise self._invalid()
        owner = f"User:{user}"
        if extensions:
            found = None if self.store.tokens is None else \
                self.store.tokens.scram_credential(user, self.mechanism, int(time.time() * 1000))
            cred, owner = found if found is not None else (None, owner)
            self.token_authenticated = found is not None
        else:
            cred = self.store.get(user, self.mechanism)
        if cred is None:
            log.debug("SCRAM %s: no credential for %r", self.mechanism, user)
            raise self._invalid()
        self.user, self.cred, self.owner = user, cred, owner
        self.first_bare = m.group("bare")
        self.nonce = m.group("nonce") + secrets.token_hex(16)
        self.server_first = f"r={self.nonce},s={base64.b64encode(cred.salt).decode()},i={cred.iterations}"
        return self.server_first.encode()

    def _final(self, text: str) -> bytes:
        assert self.cred is not None
        m = _CLIENT_FINAL.fullmatch(text)
        # exactly the combined nonce (RFC 5802), as Kafka 4.x checks it (3.x accepted any nonce
        # ending with it): librdkafka before 2.6.1 sends the client nonce twice and is refused
        if m is None or m.group("nonce") != self.nonce:
            log.debug("SCRAM %s: bad final message or nonce from %r", self.mechanism, self.user)
            raise self._invalid()
        auth_message = f"{self.first_bare},{self.server_first},{text[: text.rindex(',p=')]}".encode()
        client_signature = hmac.new(self.cred.stored_key, auth_message, self.hash).digest()
        try:
            proof = base64.b64decode(m.group("proof"), validate=True)
        except binascii.Error:
            raise self._invalid() from None
        if len(proof) != len(client_signature):
            raise self._invalid()
        client_key = bytes(a ^ b for a, b in zip(proof, client_signature))
        if not hmac.compare_digest(hashlib.new(self.hash, client_key).digest(), self.cred.stored_key):
            log.debug("SCRAM %s: wrong proof from %r", self.mechanism, self.user)
            raise self._invalid()
        server_signature = hmac.new(self.cred.server_key, auth_message, self.hash).digest()
        self.principal = self.owner
        self.complete = True
        return b"v=" + base64.b64encode(server_signature)


def _b64url(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


class OAuthBearer(Mechanism):
    """Kafka's OAuthBearerUnsecuredValidatorCallbackHandler with its JAAS options:
    unsecuredValidatorPrincipalClaimName (sub), unsecuredValidatorScopeClaimName (scope),
    unsecuredValidatorRequiredScope (none), unsecuredValidatorAllowableClockSkewMs (0)."""

    def __init__(self, options: dict[str, str]):
        self.principal_claim = options.get("unsecuredValidatorPrincipalClaimName", "sub") or "sub"
        self.scope_claim = options.get("unsecuredValidatorScopeClaimName", "scope") or "scope"
        self.required_scope = [s for s in options.get("unsecuredValidatorRequiredScope", "").split() if s]
        self.skew_ms = int(options.get("unsecuredValidatorAllowableClockSkewMs", "0") or 0)
        self.error: str | None = None

    def evaluate(self, token: bytes) -> bytes:
        if token == b"\x01" and self.error is not None:
            raise SaslFailed(self.error)
        self.error = None
        try:
            text = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslFailed("Invalid OAUTHBEARER client first message") from None
        gs2, sep, rest = text.partition("\x01")
        m = re.fullmatch(r"n,(?:a=([^,]*))?,", gs2)
        if not sep or m is None or not rest.endswith("\x01\x01"):
            raise SaslFailed("Invalid OAUTHBEARER client first message")
        pairs = dict(kv.partition("=")[::2] for kv in rest[:-2].split("\x01") if kv)
        auth = pairs.get("auth", "")
        if not auth.lower().startswith("bearer "):
            raise SaslFailed("Invalid OAUTHBEARER client first message")
        failure = self._validate(auth[len("bearer "):].strip())
        if failure is not None:
            self.error = failure
            return failure.encode()
        authzid = m.group(1) or ""
        if authzid and authzid != self._name:
            raise SaslFailed("Authentication failed: Client requested an authorization id (%s) that is different "
                             "from the token's principal name (%s)" % (authzid, self._name))
        self.principal = f"User:{self._name}"
        self.complete = True
        return b""

    def _validate(self, compact: str) -> str | None:
        """None when the token is valid, else Kafka's error JSON."""
        invalid = '{"status":"invalid_token"}'
        parts = compact.split(".")
        if len(parts) != 3 or parts[2] != "":
            return invalid
        try:
            header = json.loads(_b64url(parts[0]))
            claims = json.loads(_b64url(parts[1]))
        except (ValueError, binascii.Error):
            return invalid
        if not isinstance(header, dict) or not isinstance(claims, dict) or header.get("alg") != "none":
            return invalid
        now = time.time() * 1000
        exp, iat, name = claims.get("exp"), claims.get("iat"), claims.get(self.principal_claim)
        if not isinstance(exp, (int, float)) or isinstance(exp, bool) or exp * 1000 <= now - self.skew_ms:
            return invalid
        if iat is not None and (not isinstance(iat, (int, float)) or iat * 1000 > now + self.skew_ms):
            return invalid
        if not isinstance(name, str) or not name.strip():
            return invalid
        scope = claims.get(self.scope_claim)
        # as Kafka's OAuthBearerUnsecuredJws: a string is one scope (not split), a list is several
        scopes = [scope] if isinstance(scope, str) else [s for s in scope if isinstance(s, str)] \
            if isinstance(scope, list) else []
        missing = [s for s in self.required_scope if s not in scopes]
        if missing:
            return '{"status":"insufficient_scope", "scope":"[%s]"}' % ", ".join(self.required_scope)
        self._name = name
        self.credential_expiry_ms = int(exp * 1000)
        return None


def make_mechanism(name: str, security, store: ScramStore) -> Mechanism:
    if name == "PLAIN":
        return Plain(security.plain_users)
    if name.startswith("SCRAM-"):
        return Scram(name, store)
    if name == "OAUTHBEARER":
        return OAuthBearer(security.oauth_options)
    raise ValueError(name)


# --- one connection's authentication (Kafka's SaslServerAuthenticator states) ------------------

class SaslState(enum.Enum):
    """SaslServerAuthenticator.SaslState, by Kafka's names (the values, which messages print)."""

    VERSIONS_OR_HANDSHAKE = "HANDSHAKE_OR_VERSIONS_REQUEST"
    HANDSHAKE = "HANDSHAKE_REQUEST"
    AUTHENTICATE = "AUTHENTICATE"
    COMPLETE = "COMPLETE"
    REAUTH_HANDSHAKE = "REAUTH_PROCESS_HANDSHAKE"
    REAUTH_BAD_MECHANISM = "REAUTH_BAD_MECHANISM"



class SaslSession:
    """Where a connection of a SASL listener is in its (re-)authentication."""

    def __init__(self, security, store: ScramStore):
        self.security = security
        self.store = store
        self.state: SaslState = SaslState.VERSIONS_OR_HANDSHAKE
        self.mechanism_name: str | None = None
        self.mechanism: Mechanism | None = None
        self.principal: str | None = None  # once authenticated
        self.expires_at: float | None = None  # time.monotonic() deadline of the session
        self.reauth_started = 0.0
        self.reauthenticating = False
        self.bad_mechanism_message = ""
        # after a SaslHandshake v0 the tokens come as bare size-prefixed frames, without
        # SaslAuthenticate around them (Kafka's pre-KIP-152 framing, still served)
        self.raw_tokens = False

    @property
    def expects_raw_token(self) -> bool:
        return self.raw_tokens and self.state in (SaslState.AUTHENTICATE, SaslState.REAUTH_BAD_MECHANISM)

    @property
    def authenticated(self) -> bool:
        return self.state == SaslState.COMPLETE

    @property
    def token_authenticated(self) -> bool:
        """Authenticated with a delegation token."""
        return self.authenticated and self.mechanism is not None and self.mechanism.token_authenticated

    def refusal(self, api_key: int) -> str | None:
        """Why a request of `api_key` closes the connection in the current state (None: it may go on)."""
        if self.state == SaslState.COMPLETE:
            return None
        if self.state == SaslState.VERSIONS_OR_HANDSHAKE and api_key in (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE):
            return None
        if self.state in (SaslState.HANDSHAKE, SaslState.REAUTH_HANDSHAKE) and api_key == ApiKey.SASL_HANDSHAKE:
            return None
        if self.state in (SaslState.AUTHENTICATE, SaslState.REAUTH_BAD_MECHANISM) and api_key == ApiKey.SASL_AUTHENTICATE:
            return None
        during = "authentication" if self.state in (SaslState.AUTHENTICATE, SaslState.REAUTH_BAD_MECHANISM) else "handshake"
        return f"unexpected request with api key {api_key} during SASL {during} (state {self.state.value})"

    def answers_before_closing(self, api_key: int) -> bool:
        """A request other than SaslAuthenticate once the handshake chose a mechanism (v1
        framing): Kafka's SaslServerAuthenticator answers it with the request's own error
        response, ILLEGAL_SASL_STATE, and then closes. Out of order before the handshake, it
        closes without an answer."""
        return (self.state in (SaslState.AUTHENTICATE, SaslState.REAUTH_BAD_MECHANISM) and not self.raw_tokens
                and api_key != ApiKey.SASL_AUTHENTICATE)

    def expired(self, now: float) -> bool:
        return self.state == SaslState.COMPLETE and self.expires_at is not None and now >= self.expires_at

    def may_begin_reauthentication(self, now: float) -> bool:
        """KIP-368: a SaslHandshake on an authenticated connection whose session has a lifetime
        starts re-authentication, at most once a second (as Kafka's KafkaChannel)."""
        return self.state == SaslState.COMPLETE and self.expires_at is not None and now - self.reauth_started >= 1.0

    def begin_reauthentication(self, now: float) -> None:
        self.reauth_started = now
        self.reauthenticating = True
        self.state = SaslState.REAUTH_HANDSHAKE

    def handshake(self, mechanism: str) -> bool:
        """True when the mechanism is enabled; the next step is SaslAuthenticate."""
        if mechanism not in self.security.mechanisms:
            return False
        if self.reauthenticating and mechanism != self.mechanism_name:
            self.bad_mechanism_message = (f"SASL mechanism '{mechanism}' requested by client is not supported for "
                                          f"re-authentication of mechanism '{self.mechanism_name}'")
            self.state = SaslState.REAUTH_BAD_MECHANISM
            return True
        self.mechanism_name = mechanism
        self.mechanism = make_mechanism(mechanism, self.security, self.store)
        self.state = SaslState.AUTHENTICATE
        return True

    def authenticate(self, token: bytes) -> tuple[bytes, int]:
        """One SaslAuthenticate step: the server's token and, once complete, the session lifetime
        in ms (0 when sessions do not expire). Raises SaslFailed."""
        if self.state == SaslState.REAUTH_BAD_MECHANISM:
            raise SaslFailed(self.bad_mechanism_message)
        assert self.mechanism is not None and self.mechanism_name is not None
        out = self.mechanism.evaluate(token)
        if not self.mechanism.complete:
            return out, 0
        principal = self.mechanism.principal
        if self.reauthenticating and principal != self.principal:
            raise SaslFailed("Cannot change principals during re-authentication from %s: %s" % (
                (self.principal or "").replace(":", ".", 1), (principal or "").replace(":", ".", 1)))
        # Kafka's ReauthInfo.calcCompletionTimesAndReturnSessionLifetimeMs
        now_ms = time.time() * 1000
        max_reauth = self.security.reauth_ms.get(self.mechanism_name, 0)
        expiry = self.mechanism.credential_expiry_ms
        lifetime = 0
        self.expires_at = None
        if expiry is not None or max_reauth > 0:
            if expiry is None:
                lifetime = max(0, max_reauth)
            elif max_reauth <= 0:
                lifetime = max(0, int(expiry - now_ms))
            else:
                lifetime = max(0, min(int(expiry - now_ms), max_reauth))
            self.expires_at = time.monotonic() + lifetime / 1000
        self.principal = principal
        self.state = SaslState.COMPLETE
        self.reauthenticating = False
        return out, lifetime
