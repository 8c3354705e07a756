"""The request log (broker.request_log) as controls: what the broker received and answered.

    record-requests  [enabled=true, limit=10000]: start (or stop) recording; the log keeps the
                     newest `limit` requests (the broker starts with `request.log.size`, 10 000
                     by default, 0: off)
    requests         [api, client_id, topic, group_id, transactional_id, clear=false]: the
                     requests received since the log began or the last reset (which empties
                     the log), oldest first, those matching every filter given; clear=true
                     empties the log after reading it

The entries' fields are described in broker.request_log.
"""

from __future__ import annotations

from typing import Any

from kio.index import api_key_map

from ..request_log import API_NAMES, DEFAULT_LIMIT, RequestLog
from . import ControlError, control, is_int
from .faults import _snake


def _matches(entry: dict[str, Any], api_key: int | None, client_id: str | None, topic: str | None,
             group_id: str | None, transactional_id: str | None) -> bool:
    return ((api_key is None or entry["api_key"] == api_key)
            and (client_id is None or entry["client_id"] == client_id)
            and (topic is None or topic in entry.get("topics", ()))
            and (group_id is None or entry.get("group_id") == group_id)
            and (transactional_id is None or entry.get("transactional_id") == transactional_id))


@control("record-requests")
async def record_requests(broker, *, enabled=True, limit=DEFAULT_LIMIT):
    """Record the requests the broker receives (the newest `limit` are kept; the broker records
    from its start unless request.log.size is 0), or stop with enabled=false. Returns whether it records and how many entries it holds."""
    if not isinstance(enabled, bool):
        raise ControlError(f"enabled must be true or false, not {enabled!r}")
    if not is_int(limit) or limit < 1:
        raise ControlError(f"limit must be a positive integer, not {limit!r}")
    if not enabled:
        broker.request_log = None
    elif broker.request_log is None or broker.request_log.entries.maxlen != limit:
        kept = broker.request_log.entries if broker.request_log is not None else ()
        broker.request_log = RequestLog(limit)
        broker.request_log.entries.extend(kept)
    log = broker.request_log
    return {"enabled": log is not None, "entries": 0 if log is None else len(log.entries),
            "limit": None if log is None else log.entries.maxlen}


@control("requests")
async def requests(broker, *, api=None, client_id=None, topic=None, group_id=None, transactional_id=None,
                   clear=False):
    """The requests received since recording started or the last reset, oldest first, filtered by
    api (a name or key), client_id, topic, group_id and transactional_id; clear=true empties the
    log afterwards. The broker records from its start unless request.log.size is 0."""
    log = broker.request_log
    if log is None:
        raise ControlError("the broker is not recording requests (request.log.size=0 or record-requests "
                           "enabled=false); start with the record-requests control")
    api_key = None if api is None else _api_key(api)
    for what, value in (("client_id", client_id), ("topic", topic), ("group_id", group_id),
                        ("transactional_id", transactional_id)):
        if value is not None and not isinstance(value, str):
            raise ControlError(f"{what} must be a string, not {value!r}")
    found = [e for e in log.entries if _matches(e, api_key, client_id, topic, group_id, transactional_id)]
    if clear:
        log.clear()
    return found


def _api_key(api: Any) -> int:
    """An API key from its number or name (Produce, InitProducerId, init_producer_id, "22")."""
    if is_int(api) or (isinstance(api, str) and api.strip().isdigit()):
        if int(api) in API_NAMES:
            return int(api)
    elif isinstance(api, str):
        wanted = _snake(api.strip()).replace("-", "_")
        for key, name in API_NAMES.items():
            if _snake(name) == wanted or api_key_map[key] == wanted:
                return key
    raise ControlError(f"no Kafka API {api!r}")
