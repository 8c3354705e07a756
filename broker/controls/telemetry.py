"""What clients pushed with KIP-714 telemetry (a broker started with client.telemetry.enable and a
client-metrics subscription, kafka-client-metrics.sh --alter --metrics ... --interval ...).

    client-telemetry  [client_id]
                      every client instance seen (or those of `client_id`): {"client_instance_id",
                      "client_id", "subscription_id", "requested_metrics", "push_interval_ms",
                      "terminating", "pushes": [{"time_ms", "terminating", "bytes", "metrics": the
                      metric names in the push, or null when unreadable}]}
"""

from __future__ import annotations

from . import ControlError, control


@control("client-telemetry")
async def client_telemetry(broker, *, client_id: str | None = None):
    """The client instances that asked for telemetry subscriptions and what each pushed."""
    if client_id is not None and not isinstance(client_id, str):
        raise ControlError(f"client_id must be a string, not {client_id!r}")
    return [{"client_instance_id": str(iid), "client_id": inst.client_id, "subscription_id": inst.subscription_id,
             "requested_metrics": list(inst.metrics), "push_interval_ms": inst.interval_ms,
             "terminating": inst.terminating, "pushes": list(inst.pushes)}
            for iid, inst in broker.telemetry.instances.items() if client_id is None or inst.client_id == client_id]
