"""What keeps the broker's start fast (bench/startup.py measures it): imports deferred or hidden
while the broker starts, and the cyclic garbage collector's work at start avoided.

Rules:
- Each trick applies only when it is safe in this process (nothing imported the module already,
  a single thread), and undoes itself, so that an embedding program sees the real modules.
- Only the standard library is imported at the top: this module is imported by broker.cli before
  anything heavy.
"""

from __future__ import annotations

import gc
import sys
import types


def hide_hypothesis() -> bool:
    """kio registers hypothesis strategies for its types whenever hypothesis is importable; that
    import costs 0.2 s of every broker start (more under pytest) for nothing the broker uses. Make
    it look absent while the broker imports kio (only if nothing imported it already)."""
    if "hypothesis" in sys.modules or "kio" in sys.modules:
        return False
    sys.modules["hypothesis"] = None  # type: ignore[assignment]
    return True


def import_kio_serial_without_asyncio() -> None:
    """kio 0.6.5's kio/serial/writers.py imports asyncio only to name `asyncio.StreamWriter` in a
    type alias (`Writable`): about 30 modules and 10-40 ms of CPU at every broker start, for a
    broker that runs on trio. While this process is still single-threaded, kio.serial is imported
    with a stand-in `asyncio` module holding that one name, removed right after, so whatever
    imports asyncio later gets the real one (kio's writers keep the stand-in, which they never
    use at run time)."""
    import threading

    if "asyncio" in sys.modules or "kio.serial" in sys.modules or threading.active_count() > 1:
        return  # imported already, or another thread could see the stand-in
    stand_in = types.ModuleType("asyncio", "stand-in while kio.serial is imported (broker.fast_start)")
    stand_in.StreamWriter = type("StreamWriter", (), {})  # type: ignore[attr-defined]
    sys.modules["asyncio"] = stand_in
    try:
        import kio.serial  # noqa: F401
    finally:
        if sys.modules.get("asyncio") is stand_in:
            del sys.modules["asyncio"]


# The collector's thresholds in the broker's own process (CPython's are 700, 10, 10). A broker
# holds about ten objects a partition for as long as it runs, and every request makes short-lived
# ones by the thousand (a Metadata of 50 000 partitions, 300 000): at 700 they outlive young
# collections, are promoted, and set off full collections that walk every partition's objects,
# so creating partitions and answering Metadata cost more than their number as the count grew
# (bench/scale.py: at 50 000 partitions, 6 full collections and 0.3 s during their creation; none
# at these thresholds).
GC_THRESHOLDS = (10_000, 20, 20)


def imports_done() -> None:
    """`python -m kafkalite` starts with the cyclic garbage collector off (kafkalite/__main__.py); once
    the modules that answer requests are imported, their objects go to the collector's permanent
    generation (they live as long as the process) and it is turned on again, with GC_THRESHOLDS,
    before any data is loaded. A broker started any other way (the `kafkalite` script, an embedding
    program) keeps its collector as it was."""
    if gc.isenabled():
        return
    from .handlers import load_all

    load_all()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    gc.enable()
