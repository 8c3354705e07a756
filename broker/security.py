"""Listener security: which protocol each listener speaks, its TLS context and SASL settings.

Kafka's names throughout. `listener.security.protocol.map` maps a listener name to PLAINTEXT,
SSL, SASL_PLAINTEXT or SASL_SSL (a listener named like a protocol needs no entry). Settings
that Kafka lets a listener override (`ssl.*`, `sasl.enabled.mechanisms`,
`connections.max.reauth.ms`, and the per-mechanism `<mechanism>.sasl.jaas.config`) may be
given as `listener.name.<listener, lower case>.<key>` (which keys exist is
broker.settings.listeners'); the prefixed value wins over the plain one, as in Kafka. Only the
prefixed form exists for the JAAS configs, as in Kafka.

TLS keys and certificates are PEM (Kafka >= 2.7's `ssl.keystore.type=PEM`): a keystore file
holding the private key and the certificate chain, or the PEM text itself in
`ssl.keystore.key` / `ssl.keystore.certificate.chain`; trusted CAs in
`ssl.truststore.location` (type PEM) or `ssl.truststore.certificates`. `ssl.client.auth`
none / requested / required asks for a client certificate; a verified client certificate's
subject becomes the principal through `ssl.principal.mapping.rules` (DEFAULT: the RFC 2253
distinguished name, `User:CN=client,O=Acme`).

`kafkalite --tls-self-signed` makes a throwaway CA and a certificate for the listener hosts
(and localhost, 127.0.0.1, ::1) in the data dir, used by every TLS listener that has no
keystore of its own; the CA's path is printed in the ready line (`ca=PATH`).
"""

from __future__ import annotations

import re
import ssl
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .settings.listeners import MECHANISMS, PROTOCOLS, SecurityConfigError, SelfSigned

if TYPE_CHECKING:
    from .settings.broker_config import BrokerConfig

ANONYMOUS = "User:ANONYMOUS"


# --- JAAS -------------------------------------------------------------------------------------

_JAAS = re.compile(r"\s*(?P<module>[\w.$]+)\s+(?P<flag>required|requisite|sufficient|optional)\s*(?P<opts>.*?)\s*;\s*$",
                   re.S)
_JAAS_OPT = re.compile(r"\s*([\w.\-]+)\s*=\s*(\"((?:[^\"\\]|\\.)*)\"|[^\s\"]+)")


def parse_jaas(text: str) -> tuple[str, dict[str, str]]:
    """One JAAS login module entry as Kafka's `sasl.jaas.config` holds it:
    `org.apache.kafka...PlainLoginModule required username="a" password="b" user_a="b";`."""
    m = _JAAS.fullmatch(text)
    if m is None:
        raise SecurityConfigError("a sasl.jaas.config must be `<LoginModule class> required key=\"value\" ...;`")
    opts: dict[str, str] = {}
    rest = m.group("opts")
    pos = 0
    while pos < len(rest):
        om = _JAAS_OPT.match(rest, pos)
        if om is None:
            if rest[pos:].strip():
                raise SecurityConfigError("a sasl.jaas.config option must be key=\"value\"")
            break
        value = om.group(3) if om.group(3) is not None else om.group(2)
        opts[om.group(1)] = re.sub(r"\\(.)", r"\1", value)
        pos = om.end()
    return m.group("module"), opts


# --- principals from certificates -------------------------------------------------------------

_RULE = re.compile(r"RULE:((?:\\.|[^\\/])*)/((?:\\.|[^\\/])*)/([LU]?)")


def parse_mapping_rules(text: str) -> list[tuple[re.Pattern[str], str, str] | None]:
    """`ssl.principal.mapping.rules`: comma-separated `RULE:pattern/replacement/[LU]` and
    `DEFAULT` (None in the list), tried in order; the first matching rule decides."""
    rules: list[tuple[re.Pattern[str], str, str] | None] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        if text.startswith("DEFAULT", pos):
            rules.append(None)
            pos += len("DEFAULT")
        else:
            m = _RULE.match(text, pos)
            if m is None:
                raise SecurityConfigError(f"ssl.principal.mapping.rules: cannot read {text[pos:]!r}")
            # Java's $1 in a replacement is Python's \1
            replacement = re.sub(r"\$(\d)", r"\\\1", m.group(2))
            rules.append((re.compile(m.group(1)), replacement, m.group(3)))
            pos = m.end()
        while pos < len(text) and text[pos] in ", \t\n":
            pos += 1
    return rules or [None]


def principal_from_dn(dn: str, rules: list[tuple[re.Pattern[str], str, str] | None]) -> str:
    for rule in rules:
        if rule is None:
            return f"User:{dn}"
        pattern, replacement, case = rule
        m = pattern.fullmatch(dn)
        if m is None:
            continue
        name = m.expand(replacement)
        name = name.lower() if case == "L" else name.upper() if case == "U" else name
        return f"User:{name}"
    return f"User:{dn}"


def certificate_subject(der: bytes) -> str:
    """The subject of a DER certificate in RFC 2253 form, as Java's X500Principal.getName()."""
    from cryptography import x509

    return x509.load_der_x509_certificate(der).subject.rfc4514_string()


def pkcs8(key_pem: bytes) -> bytes:
    """A PEM private key as unencrypted PKCS#8, the form Kafka's PEM keystores read."""
    from cryptography.hazmat.primitives import serialization

    key = serialization.load_pem_private_key(key_pem, password=None)
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


# --- throwaway CA -------------------------------------------------------------------------------

def make_self_signed(directory: Path, hosts: list[str]) -> SelfSigned:
    """A new CA and a server certificate for `hosts` (plus the loopback names), written under
    `directory` (made if missing)."""
    try:
        import trustme
    except ImportError:
        raise SecurityConfigError("--tls-self-signed needs trustme (pip install '.[tls]' in a kafkalite checkout)") from None
    names: list[str] = []
    for h in [*hosts, "localhost", "127.0.0.1", "::1"]:
        if h and h not in ("0.0.0.0", "::") and h not in names:
            names.append(h)
    ca = trustme.CA(organization_name="kafkalite throwaway CA")
    cert = ca.issue_cert(*names)
    directory.mkdir(parents=True, exist_ok=True)
    ca_path = directory / "ca.pem"
    keystore = directory / "server.pem"
    ca.cert_pem.write_to_path(str(ca_path))
    keystore.write_bytes(pkcs8(cert.private_key_pem.bytes()) + b"".join(b.bytes() for b in cert.cert_chain_pems))
    keystore.chmod(0o600)
    return SelfSigned(ca_path, keystore)


# --- per listener -------------------------------------------------------------------------------

@dataclass
class ListenerSecurity:
    """What one listener asks of its connections."""

    name: str
    protocol: str = "PLAINTEXT"
    mechanisms: tuple[str, ...] = ()
    ssl_context: ssl.SSLContext | None = None
    client_auth: str = "none"
    mapping_rules: list = field(default_factory=lambda: [None])
    # mechanism -> connections.max.reauth.ms (0: sessions never expire)
    reauth_ms: dict[str, int] = field(default_factory=dict)
    # PLAIN: user -> password (from user_NAME options of the PLAIN JAAS config)
    plain_users: dict[str, str] = field(default_factory=dict)
    # OAUTHBEARER: the unsecured validator's options (unsecuredValidator*)
    oauth_options: dict[str, str] = field(default_factory=dict)

    @property
    def sasl(self) -> bool:
        return self.protocol.startswith("SASL_")

    @property
    def tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")


def _protocol_map(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        name, sep, proto = item.strip().partition(":")
        proto = proto.strip().upper()
        if not sep or proto not in PROTOCOLS:
            raise SecurityConfigError(f"listener.security.protocol.map: {item.strip()!r} is not NAME:PROTOCOL "
                                      f"with PROTOCOL one of {', '.join(PROTOCOLS)}")
        out[name.strip().upper()] = proto
    return out


def _list(value: Any) -> list[str]:
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if str(v).strip()]
    return [v.strip() for v in str(value).split(",") if v.strip()]


def build(config: "BrokerConfig", listener_name: str) -> ListenerSecurity:
    """The security of one listener from the broker's settings."""
    proto_map = _protocol_map(config["listener.security.protocol.map"])
    protocol = proto_map.get(listener_name) or (listener_name if listener_name in PROTOCOLS else None)
    if protocol is None and "listener.security.protocol.map" not in config.origins:
        # kafkalite's listeners were PLAINTEXT under any name before the map existed; Kafka
        # refuses a name missing from the map, as kafkalite does once the map is given
        protocol = "PLAINTEXT"
    if protocol is None:
        raise SecurityConfigError(f"listener {listener_name} has no entry in listener.security.protocol.map "
                                  f"({config['listener.security.protocol.map']})")
    own = config.listener_values.get(listener_name, {})

    def get(key: str) -> Any:
        return own[key] if key in own else config[key]

    sec = ListenerSecurity(listener_name, protocol)
    if sec.tls:
        sec.client_auth = str(get("ssl.client.auth")).strip().lower()
        if sec.client_auth not in ("none", "requested", "required"):
            raise SecurityConfigError(f"ssl.client.auth must be none, requested or required, not {sec.client_auth!r}")
        sec.mapping_rules = parse_mapping_rules(str(get("ssl.principal.mapping.rules")))
        sec.ssl_context = _ssl_context(listener_name, get, config, sec.client_auth)
    if sec.sasl:
        mechs = [m.upper() for m in _list(get("sasl.enabled.mechanisms"))]
        unknown = [m for m in mechs if m not in MECHANISMS]
        if unknown:
            raise SecurityConfigError(f"listener {listener_name}: SASL mechanism {unknown[0]} is not supported "
                                      f"(kafkalite serves {', '.join(MECHANISMS)})")
        if not mechs:
            raise SecurityConfigError(f"listener {listener_name}: sasl.enabled.mechanisms is empty")
        sec.mechanisms = tuple(mechs)
        for mech in mechs:
            key = f"{mech.lower()}.connections.max.reauth.ms"
            sec.reauth_ms[mech] = int(own[key]) if key in own else int(get("connections.max.reauth.ms"))
        if "PLAIN" in mechs:
            jaas = own.get("plain.sasl.jaas.config")
            # without one PLAIN has no users and refuses every login (Kafka refuses to start; here
            # PLAIN is enabled by default, so a SCRAM-only setup need not disable it)
            if jaas is not None:
                _module, opts = parse_jaas(jaas)
                sec.plain_users = {k[len("user_"):]: v for k, v in opts.items() if k.startswith("user_")}
        if "OAUTHBEARER" in mechs:
            jaas = own.get("oauthbearer.sasl.jaas.config")
            if jaas is not None:
                sec.oauth_options = parse_jaas(jaas)[1]
    return sec


def _ssl_context(listener_name: str, get, config: "BrokerConfig", client_auth: str) -> ssl.SSLContext:
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    for key, want in (("ssl.keystore.type", "PEM"), ("ssl.truststore.type", "PEM")):
        if str(get(key)).upper() != want and (get(key.replace("type", "location")) or key == "ssl.keystore.type"):
            raise SecurityConfigError(f"{key}={get(key)}: kafkalite reads PEM files only (set {key}=PEM)")
    location = get("ssl.keystore.location")
    chain, key_text = get("ssl.keystore.certificate.chain"), get("ssl.keystore.key")
    password = get("ssl.key.password") or get("ssl.keystore.password") or None
    try:
        if chain or key_text:
            if not (chain and key_text):
                raise SecurityConfigError("ssl.keystore.certificate.chain and ssl.keystore.key go together")
            with tempfile.TemporaryDirectory(prefix="kafkalite-tls-") as d:
                cert_file, key_file = Path(d) / "chain.pem", Path(d) / "key.pem"
                cert_file.write_text(chain)
                key_file.write_text(key_text)
                ctx.load_cert_chain(cert_file, key_file, password)
        elif location:
            ctx.load_cert_chain(location, None, password)
        elif config.self_signed is not None:
            ctx.load_cert_chain(config.self_signed.keystore_path)
        else:
            raise SecurityConfigError(
                f"listener {listener_name} speaks TLS but has no key: set ssl.keystore.location (PEM: key and "
                "certificate chain), ssl.keystore.certificate.chain + ssl.keystore.key, or --tls-self-signed")
        trust_file, trust_text = get("ssl.truststore.location"), get("ssl.truststore.certificates")
        if trust_file:
            ctx.load_verify_locations(cafile=trust_file)
        elif trust_text:
            ctx.load_verify_locations(cadata=trust_text)
        elif config.self_signed is not None:
            ctx.load_verify_locations(cafile=config.self_signed.ca_path)
    except (OSError, ssl.SSLError) as exc:
        raise SecurityConfigError(f"listener {listener_name}: cannot load TLS key or certificates: {exc}") from None
    ctx.verify_mode = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL}.get(client_auth, ssl.CERT_NONE)
    # Kafka's default ssl.enabled.protocols: TLSv1.2,TLSv1.3
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return ctx
