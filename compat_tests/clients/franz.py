"""franz-go (kgo, kadm) v1.22.2 adapter: compat_tests/go/ (godriver franz), see golang.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from .golang import GoAdmin, GoClient


@dataclass
class FranzClient(GoClient):
    name: str = field(default="franz", init=False)


Adapter = FranzClient


class FranzAdmin(GoAdmin):
    """Admin through franz-go: kadm, and kmsg requests for what kadm lacks (by-id topics,
    ListOffsets with an isolation level, DescribeConfigs' read-only flag); go/franz_admin.go."""

    name = "franz"
