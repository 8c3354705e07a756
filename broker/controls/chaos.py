"""Seeded chaos (broker.chaos) as controls.

    chaos      [seed, enabled=true, profile="default"]: start chaos with `seed` (counters and
               log begin anew), or stop it with enabled=false; without a seed, answers its state
    chaos-log  [api, client_id, fault]: the faults injected since chaos began, oldest first,
               each {api, api_key, api_seq, client_id, fault, time_ms} (and error or delay_ms;
               a move: topic, partition, from_node, to_node, leader_epoch, and group or
               transactional_id for a coordinator's; unknown_topic: error and topics)
"""

from __future__ import annotations

from typing import Any

from .. import chaos as engine
from . import ControlError, control, is_int
from .request_log import _api_key


@control("chaos")
async def chaos(broker, *, seed=None, enabled: bool = True, profile: str = "default"):
    """Start seeded chaos (faults a correct client survives, drawn from `seed` per client id, API
    and request number) with profile gentle, default or harsh; enabled=false stops it. Without a
    seed, answers whether chaos runs, its seed, profile and fault counts."""
    if not isinstance(enabled, bool):
        raise ControlError(f"enabled must be true or false, not {enabled!r}")
    if not enabled:
        stopped = engine.stop(broker)
        return {"enabled": False, "stopped": None if stopped is None else stopped.describe()}
    if seed is None:
        running = engine.current(broker)
        return {"enabled": False} if running is None else running.describe()
    if not is_int(seed):
        raise ControlError(f"seed must be an integer, not {seed!r}")
    if profile not in engine.PROFILES:
        raise ControlError(f"profile must be one of {', '.join(engine.PROFILES)}, not {profile!r}")
    return engine.start(broker, seed, profile).describe()


@control("chaos-log")
async def chaos_log(broker, *, api=None, client_id: str | None = None, fault: str | None = None):
    """The faults chaos injected since it began, oldest first: {api, api_key, api_seq, client_id,
    fault, time_ms} (with error or delay_ms; a move's partition, from_node and to_node), filtered
    by api, client_id and fault."""
    running = engine.current(broker)
    if running is None:
        raise ControlError("chaos is not running (start it with the chaos control or --chaos SEED)")
    if fault is not None and fault not in engine.FAULTS:
        raise ControlError(f"fault must be one of {', '.join(engine.FAULTS)}, not {fault!r}")
    api_key = None if api is None else _api_key(api)
    entries: list[dict[str, Any]] = [
        e for e in running.injected
        if (api_key is None or e["api_key"] == api_key) and (client_id is None or e["client_id"] == client_id)
        and (fault is None or e["fault"] == fault)]
    return entries
