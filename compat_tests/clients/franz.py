"""franz-go (kgo, kadm) v1.22.2 adapter: compat_tests/go/ (godriver franz), see golang.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from .golang import GoClient


@dataclass
class FranzClient(GoClient):
    name: str = field(default="franz", init=False)


Adapter = FranzClient
