"""Where settings come from besides the command line: Java properties files (`--config`) and
`KAFKALITE_<KEY>` environment variables.

Rules:
- A properties file is read as `java.util.Properties.load` reads it: `key=value`, `key: value`
  or `key value`, `#`/`!` comments, `\\` line continuations and escapes.
- A variable's name is the key upper-cased with `.` and `-` as `_` (`num.partitions` ->
  `KAFKALITE_NUM_PARTITIONS`); `KAFKALITE_LISTENER_NAME_<LISTENER>_<KEY>` sets a listener's
  override. A KAFKALITE_ variable that names no key (and is no CLI flag's) is an error.
- Values stay text here; BrokerConfig parses them.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator, Mapping

from .broker_keys import BROKER_KEYS, UnknownConfig
from .listeners import LISTENER_KEYS, listener_env_keys

# --- Java properties files ----------------------------------------------------------------

_PROPS_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _logical_lines(text: str) -> Iterator[tuple[int, str]]:
    """Java's LineReader: joins lines ending in an odd number of backslashes, drops comments
    and blank lines, strips the leading whitespace of every physical line."""
    buf = ""
    start_no = 0
    continuing = False
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.lstrip(" \t\f")
        if not continuing:
            if not line or line[0] in "#!":
                continue
            start_no = no
        trailing = len(line) - len(line.rstrip("\\"))
        if trailing % 2 == 1:
            buf += line[:-1]
            continuing = True
            continue
        buf += line
        continuing = False
        yield start_no, buf
        buf = ""
    if continuing and buf:
        yield start_no, buf


def _unescape(s: str) -> str:
    out = []
    i = 0
    while i < len(s):
        c = s[i]
        if c != "\\" or i + 1 >= len(s):
            out.append(c)
            i += 1
            continue
        nxt = s[i + 1]
        if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", s[i + 2 : i + 6] or ""):
            out.append(chr(int(s[i + 2 : i + 6], 16)))
            i += 6
            continue
        out.append(_PROPS_ESCAPES.get(nxt, nxt))
        i += 2
    return "".join(out)


def parse_properties(text: str) -> dict[str, str]:
    """Parse Java `.properties` text (as `java.util.Properties.load` does): `key=value`,
    `key: value` or `key value`; `#`/`!` comments; `\\` line continuations; escapes."""
    result: dict[str, str] = {}
    for _no, line in _logical_lines(text):
        # the key ends at the first unescaped '=', ':' or whitespace
        i = 0
        n = len(line)
        while i < n:
            c = line[i]
            if c == "\\":
                i += 2
                continue
            if c in "=: \t\f":
                break
            i += 1
        key = line[:i]
        rest = line[i:]
        rest = rest.lstrip(" \t\f")
        if rest[:1] in ("=", ":"):  # one separator, possibly after whitespace
            rest = rest[1:].lstrip(" \t\f")
        result[_unescape(key)] = _unescape(rest)
    return result


def load_properties(path: str | Path) -> dict[str, str]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise UnknownConfig(f"cannot read config file {path}: {exc.strerror or exc}") from None
    return parse_properties(text)


# --- environment variables ----------------------------------------------------------------

ENV_PREFIX = "KAFKALITE_"


def env_name(key: str) -> str:
    """The environment variable for a broker key: `num.partitions` -> `KAFKALITE_NUM_PARTITIONS`."""
    return ENV_PREFIX + re.sub(r"[.\-]", "_", key).upper()


def env_values(environ: Mapping[str, str], reserved: frozenset[str] | set[str] = frozenset()) -> dict[str, str]:
    """Broker settings from `KAFKALITE_<KEY>` variables. Variables in `reserved` (full names:
    flags such as KAFKALITE_PORT) are skipped; any other KAFKALITE_ variable that names no key
    is an error, so a typo is reported rather than ignored."""
    by_env = {env_name(k): k for k in list(BROKER_KEYS) + list(LISTENER_KEYS)}
    out: dict[str, str] = {}
    for name, value in environ.items():
        if not name.startswith(ENV_PREFIX) or name in reserved:
            continue
        key = by_env.get(name) or _listener_env_key(name)
        if key is None:
            import difflib  # only for a mistyped variable: not part of every start

            close = difflib.get_close_matches(name, list(by_env) + sorted(reserved), n=1, cutoff=0.8)
            hint = f"; did you mean {close[0]}?" if close else ""
            raise UnknownConfig(
                f"environment variable {name} names no broker config{hint} (use {ENV_PREFIX}<KEY> with the "
                f"key's dots as underscores, e.g. {env_name('num.partitions')}; kafkalite --list-configs lists every key)")
        out[key] = value
    return out


def _listener_env_key(name: str) -> str | None:
    """KAFKALITE_LISTENER_NAME_SASL_SSL_PLAIN_SASL_JAAS_CONFIG ->
    listener.name.sasl_ssl.plain.sasl.jaas.config (the listener is what precedes a known key)."""
    prefix = ENV_PREFIX + "LISTENER_NAME_"
    if not name.startswith(prefix):
        return None
    rest = name[len(prefix):]
    for sub in sorted(listener_env_keys(), key=len, reverse=True):
        tail = "_" + re.sub(r"[.\-]", "_", sub).upper()
        if rest.endswith(tail) and len(rest) > len(tail):
            return f"listener.name.{rest[:-len(tail)].lower()}.{sub}"
    return None
