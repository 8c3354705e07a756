"""Listener settings: the `listeners` grammar and the keys a listener may override.

Rules:
- `listeners` and `advertised.listeners` are Kafka's comma-separated `NAME://host:port` lists
  (`Listener.parse_list`); a listener name is upper-cased.
- Settings that Kafka lets a listener override (`ssl.*`, `sasl.enabled.mechanisms`,
  `connections.max.reauth.ms`, and the per-mechanism `<mechanism>.sasl.jaas.config`) may be
  given as `listener.name.<listener, lower case>.<key>` (`split_listener_key`); any other key
  after that prefix is refused, as in Kafka. What the values mean is broker.security's job.
- `SelfSigned` names the files of the throwaway CA `--tls-self-signed` makes (broker.security).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Listener:
    name: str
    host: str
    port: int

    @staticmethod
    def parse(text: str, default_name: str = "PLAINTEXT") -> "Listener":
        """`NAME://host:port`, `host:port` or `[::1]:port`."""
        original = text
        text = text.strip()
        name = default_name
        if "://" in text:
            name, text = text.split("://", 1)
        host, _, port = text.rpartition(":")
        if host.startswith("[") != host.endswith("]"):
            raise ValueError(f"listener {original!r}: unbalanced brackets around the host")
        host = host.strip("[]")
        if not port.isdigit() or int(port) > 65535:
            raise ValueError(f"listener {original!r} needs a port: NAME://HOST:PORT")
        if not name or not re.fullmatch(r"[A-Za-z0-9_-]+", name):
            raise ValueError(f"listener {original!r} has a bad name {name!r}")
        return Listener(name.upper(), host, int(port))

    @staticmethod
    def parse_list(text: str, default_name: str = "PLAINTEXT") -> list["Listener"]:
        """Kafka's `listeners` syntax: comma-separated `NAME://host:port` entries."""
        return [Listener.parse(item, default_name) for item in text.split(",") if item.strip()]

    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"



# Keys handled by the CLI rather than by BrokerConfig.values (Kafka's names for them).
LISTENER_KEYS = ("listeners", "advertised.listeners")


PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER")
ANONYMOUS = "User:ANONYMOUS"

# Keys Kafka lets `listener.name.<listener>.` override (those kafkalite reads).
PER_LISTENER_KEYS = frozenset({
    "sasl.enabled.mechanisms", "connections.max.reauth.ms",
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.keystore.certificate.chain", "ssl.keystore.key",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
    "ssl.client.auth", "ssl.principal.mapping.rules", "ssl.endpoint.identification.algorithm",
    "ssl.enabled.protocols", "ssl.protocol", "ssl.cipher.suites",
})
# Per listener and mechanism: `listener.name.<listener>.<mechanism>.<key>`.
MECHANISM_KEYS = frozenset({"sasl.jaas.config", "connections.max.reauth.ms"})
SENSITIVE = frozenset({"ssl.keystore.password", "ssl.key.password", "ssl.keystore.key",
                       "ssl.truststore.password", "ssl.truststore.certificates", "sasl.jaas.config"})

_PREFIXED = re.compile(r"listener\.name\.([a-z0-9_-]+)\.(.+)")


class SecurityConfigError(ValueError):
    pass


def split_listener_key(key: str) -> tuple[str, str] | None:
    """`listener.name.sasl_ssl.plain.sasl.jaas.config` -> ("SASL_SSL", "plain.sasl.jaas.config");
    None when `key` has no listener prefix. Raises for a prefixed key Kafka does not define."""
    m = _PREFIXED.fullmatch(key)
    if m is None:
        return None
    listener, sub = m.group(1).upper(), m.group(2)
    if sub in PER_LISTENER_KEYS:
        return listener, sub
    mech, _, rest = sub.partition(".")
    if rest in MECHANISM_KEYS and mech.upper() in MECHANISMS:
        return listener, sub
    raise SecurityConfigError(
        f"unknown listener setting {key!r}: after listener.name.<listener>. kafkalite takes "
        f"{', '.join(sorted(PER_LISTENER_KEYS))} and <mechanism>.sasl.jaas.config")


def listener_env_keys() -> list[str]:
    """The settings a `KAFKALITE_LISTENER_NAME_<LISTENER>_<KEY>` variable may end with."""
    return sorted(PER_LISTENER_KEYS) + [f"{m.lower()}.{k}" for m in MECHANISMS for k in MECHANISM_KEYS]



@dataclass(frozen=True)
class SelfSigned:
    """The throwaway CA of --tls-self-signed and the server keystore it signed."""

    ca_path: Path
    keystore_path: Path  # private key and certificate chain, one PEM file
