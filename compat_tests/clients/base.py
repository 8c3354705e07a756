"""The interface every client adapter implements, and the record shape they exchange."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Msg:
    """A record as produced or as consumed (offset/partition are filled in on consume)."""

    value: bytes | None
    key: bytes | None = None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    timestamp_ms: int | None = None
    partition: int | None = None
    offset: int | None = None


@dataclass(frozen=True)
class ProduceResult:
    partition: int
    offset: int


class Unsupported(Exception):
    """The client has no way to do what the test asks (not a broker failure)."""


@dataclass
class Client:
    """Base adapter. Subclasses implement what their client can do; the rest raises Unsupported."""

    bootstrap: str
    name: str = field(default="base", init=False)

    def create_topic(self, topic: str, partitions: int = 1, configs: dict[str, str] | None = None) -> None:
        raise Unsupported(f"{self.name}: create_topic")

    def produce(
        self,
        topic: str,
        msgs: list[Msg],
        *,
        partition: int | None = None,
        compression: str = "none",
        idempotent: bool = False,
        acks: str = "all",
    ) -> list[ProduceResult]:
        """Produce in order and wait for every acknowledgement; returns one result per message."""
        raise Unsupported(f"{self.name}: produce")

    def consume(
        self,
        topic: str,
        partitions: list[int],
        count: int,
        *,
        start: str = "earliest",
        isolation: str = "read_uncommitted",
        timeout_s: float = 30.0,
    ) -> list[Msg]:
        """Assign the partitions (no group), read `count` records from `start`, in offset order per partition."""
        raise Unsupported(f"{self.name}: consume")


def refuse_unusable_produce_options(client: str, compression: str, idempotent: bool, acks: str, *,
                                    compressions, codec_module=None) -> None:
    """Raise Unsupported for produce options the client cannot honour: an unknown codec, a codec
    whose library is missing (``codec_module`` has kafka-python's ``has_gzip()``... checks), or
    idempotence without acks=all."""
    if compression not in compressions:
        raise Unsupported(f"{client}: compression {compression}")
    check = getattr(codec_module, f"has_{compression}", None) if codec_module is not None else None
    if check is not None and not check():
        raise Unsupported(f"{client}: no {compression} codec library installed")
    if idempotent and str(acks) not in ("all", "-1"):
        raise Unsupported(f"{client}: an idempotent producer needs acks=all")
