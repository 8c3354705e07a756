"""IBM sarama v1.61.1 adapter: compat_tests/go/ (godriver sarama), see golang.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from .golang import GoClient


@dataclass
class SaramaClient(GoClient):
    name: str = field(default="sarama", init=False)


Adapter = SaramaClient
