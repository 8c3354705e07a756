"""Wall-clock time in milliseconds, Kafka's unit for timestamps and timeouts. Coordinators
take a clock callable (this one by default) so their state machines can be tested with a
fake one."""

from __future__ import annotations

import time


def now_ms() -> int:
    return int(time.time() * 1000)
