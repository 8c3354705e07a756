"""Config values: Kafka's config types and how a value given as text parses and prints.

Rules:
- Parsing is Kafka's ConfigDef.parseType for string input; a value that does not parse or is out
  of range is a `ConfigError` carrying ConfigDef's message ("Invalid value v for configuration
  k: <reason>"), INVALID_CONFIG on the wire.
- Values are kept as Kafka prints them (ConfigDef.convertToString of the parsed value), so
  " 100 " or "TRUE" is stored and reported as "100" and "true".
- A boolean broker setting reads true/1/yes or false/0/no in any case (`parse_bool`).
"""

from __future__ import annotations

import enum
import re
from typing import Any, Callable

INT_MAX = 2**31 - 1
LONG_MAX = 2**63 - 1


class ConfigType(enum.IntEnum):
    """DescribeConfigsResponse.ConfigType ids."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class ConfigSource(enum.IntEnum):
    """DescribeConfigsResponse.ConfigSource ids."""

    UNKNOWN = 0
    TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6
    CLIENT_METRICS_CONFIG = 7
    GROUP_CONFIG = 8


class ConfigError(ValueError):
    """A config that Kafka refuses; `str(exc)` is Kafka's message (INVALID_CONFIG)."""


def parse_bool(v: Any) -> bool:
    """A boolean setting as the broker reads every one (config keys, variables, flags): true/1/yes
    or false/0/no, any case; anything else is a ValueError."""
    if isinstance(v, bool):
        return v
    s = str(v).strip().lower()
    if s in ("true", "1", "yes"):
        return True
    if s in ("false", "0", "no"):
        return False
    raise ValueError(f"not a boolean: {v!r}")



# --- parsing (ConfigDef.parseType for string input) ---------------------------------------

_INTEGER = re.compile(r"[+-]?[0-9]+\Z")
_DOUBLE = re.compile(r"[+-]?(NaN|Infinity|(([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?))[fFdD]?\Z")
_LIST_SPLIT = re.compile(r"\s*,\s*")


def _invalid(name: str, value: Any, reason: str | None) -> ConfigError:
    return ConfigError(f"Invalid value {value} for configuration {name}" + (f": {reason}" if reason else ""))


def _parse_integer(name: str, raw: str, lo: int, hi: int, type_name: str) -> int:
    text = raw.strip()
    if not _INTEGER.match(text):
        raise _invalid(name, raw, f"Not a number of type {type_name}")
    value = int(text)
    if not lo <= value <= hi:
        raise _invalid(name, raw, f"Not a number of type {type_name}")
    return value


def parse_value(name: str, ctype: ConfigType, raw: str) -> Any:
    """Parse a string the way Kafka's ConfigDef does; raises ConfigError with Kafka's message."""
    text = raw.strip()
    if ctype == ConfigType.BOOLEAN:
        low = text.lower()
        if low == "true":
            return True
        if low == "false":
            return False
        raise _invalid(name, raw, "Expected value to be either true or false")
    if ctype in (ConfigType.STRING, ConfigType.PASSWORD, ConfigType.CLASS):
        return text
    if ctype == ConfigType.INT:
        return _parse_integer(name, raw, -(2**31), INT_MAX, "INT")
    if ctype == ConfigType.SHORT:
        return _parse_integer(name, raw, -(2**15), 2**15 - 1, "SHORT")
    if ctype == ConfigType.LONG:
        return _parse_integer(name, raw, -(2**63), LONG_MAX, "LONG")
    if ctype == ConfigType.DOUBLE:
        if not _DOUBLE.match(text):
            raise _invalid(name, raw, "Not a number of type DOUBLE")
        body = text.rstrip("fFdD") if not text.endswith("Infinity") else text
        return float(body.replace("Infinity", "inf"))
    if ctype == ConfigType.LIST:
        if not text:
            return []
        return _LIST_SPLIT.split(text)
    raise _invalid(name, raw, None)


def _java_double(value: float) -> str:
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == int(value) and abs(value) < 1e7:
        return f"{int(value)}.0"
    text = repr(value)
    if "e" in text:
        mantissa, exp = text.split("e")
        if "." not in mantissa:
            mantissa += ".0"
        return f"{mantissa}E{int(exp)}"
    return text


def to_string(ctype: ConfigType, value: Any) -> str | None:
    """ConfigDef.convertToString: how Kafka prints a parsed value."""
    if value is None:
        return None
    if ctype == ConfigType.BOOLEAN or isinstance(value, bool):
        return "true" if value else "false"
    if ctype == ConfigType.LIST:
        if isinstance(value, str):
            return value
        return ",".join(str(v) for v in value)
    if ctype == ConfigType.DOUBLE:
        return _java_double(float(value))
    return str(value)


def _java_repr(value: Any) -> str:
    """How a parsed value prints inside a ConfigException message."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


# --- validators ----------------------------------------------------------------------------

Validator = Callable[[str, Any], None]


def at_least(lo: int | float) -> Validator:
    def check(name: str, value: Any) -> None:
        if value < lo:
            raise _invalid(name, _java_repr(value), f"Value must be at least {lo}")
    return check


def between(lo: int | float, hi: int | float) -> Validator:
    def check(name: str, value: Any) -> None:
        if value < lo:
            raise _invalid(name, _java_repr(value), f"Value must be at least {lo}")
        if value > hi:
            raise _invalid(name, _java_repr(value), f"Value must be no more than {hi}")
    return check


def one_of(*valid: str) -> Validator:
    def check(name: str, value: Any) -> None:
        if value not in valid:
            raise _invalid(name, value, "String must be one of: " + ", ".join(valid))
    return check


def list_of(*valid: str, empty_allowed: bool = True) -> Validator:
    """ConfigDef.ValidList (Kafka 4.2): no duplicates, no empty entries, each one of `valid`."""

    def check(name: str, value: list[str]) -> None:
        if not value and not empty_allowed:
            raise ConfigError(f"Configuration '{name}' must not be empty. Valid values include: "
                              "[" + ", ".join(valid) + "]")
        if len(set(value)) != len(value):
            raise ConfigError(f"Configuration '{name}' values must not be duplicated.")
        for item in value:
            if item == "":
                raise ConfigError(f"Configuration '{name}' values must not be empty.")
            if valid and item not in valid:
                raise _invalid(name, item, "String must be one of: " + ", ".join(valid))
    return check


def compression_level(lo: int, hi: int, default: int) -> Validator:
    """GZIP's level validator: a range, or the codec's "default" marker."""

    def check(name: str, value: int) -> None:
        if value > hi or (value < lo and value != default):
            raise _invalid(name, value, f"Value must be between {lo} and {hi} or equal to {default}")
    return check


_THROTTLED = re.compile(r"([0-9]+:[0-9]+)?\Z")


def throttled_replicas(name: str, value: list[str]) -> None:
    items = [v.strip() for v in value]
    if not (all(_THROTTLED.match(v) for v in items) or "".join(items) == "*"):
        raise _invalid(name, _java_repr(value), name + " must be the literal '*' or a list of replicas in the "
                       "following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...")
