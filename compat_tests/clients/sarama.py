"""IBM sarama v1.61.1 adapter: compat_tests/go/ (godriver sarama), see golang.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from .golang import GoAdmin, GoClient


@dataclass
class SaramaClient(GoClient):
    name: str = field(default="sarama", init=False)


Adapter = SaramaClient


class SaramaAdmin(GoAdmin):
    """Admin through sarama's ClusterAdmin (and a raw OffsetRequest for ListOffsets with an
    isolation level); go/sarama_admin.go. sarama's CreateTopic returns no answer."""

    name = "sarama"
