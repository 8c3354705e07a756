"""All or nothing: what a mutating admin API does when its change cannot be saved.

Rules:
- Every mutating admin API (topics, partitions, configs of every resource type, reassignments,
  ACLs, SCRAM credentials, client quotas, features, delegation tokens) validates, writes what must
  persist as it will be after the change, and only then changes memory. The store that owns the
  state does the three steps (broker.cluster, broker.reassignments, broker.dynamic_configs,
  broker.group_configs, broker.telemetry, broker.authorizer, broker.credentials, broker.quotas,
  broker.features, broker.delegation_tokens); a write that fails (a full disk, an I/O error)
  raises OSError with memory as it was, and the file as it was (storage.files.write_atomic).
- The handler answers KAFKA_STORAGE_ERROR with `storage_error_message` for each resource or
  partition the change was for, where the API's response has one (else on the whole answer), logs
  the failure and keeps the connection. The same request succeeds once the disk does.
- What is not saved cannot fail this way: leaders and ISR (ElectLeaders), logger levels.
"""

from __future__ import annotations


def storage_error_message(exc: OSError) -> str:
    """The message that goes with KAFKA_STORAGE_ERROR when a change could not be saved."""
    return f"The change could not be saved, nothing was changed: {exc.strerror or exc}"
