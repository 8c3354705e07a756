"""The seed control: a seed document (broker.seed) applied to the running broker.

    seed            document: the JSON of a seed file, or path: a seed file the broker can read
                    (records files named in it are relative to it; in a `document`, to the
                    broker's working directory); returns what was created

A document the broker refuses is answered with the seed's one-line explanation (400), before
anything is applied when the mistake is in the document itself. The files are read, the
document checked and its records encoded in a worker thread (broker.seed reads only regular files
up to seed.max.bytes), so the broker answers its clients meanwhile; only the appending runs on the
loop, in one step.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import trio

from ..seed import Seed, SeedError, apply_seed, load_seed, parse_seed, prepare_seed
from . import ControlError, control


@control("seed")
async def seed(broker, *, document: dict | None = None, path: str | None = None):
    """Apply a seed document (`document`: the JSON object of a seed file; or `path`: a seed file
    on the broker's machine): topics with records, group offsets, ACLs, SCRAM users."""
    if (document is None) == (path is None):
        raise ControlError("give either document (the seed as a JSON object) or path (a seed file)")
    try:
        if path is not None:
            if not isinstance(path, str):
                raise ControlError(f"path must be a string, not {path!r}")
            read = partial(load_seed, path, dict(broker.config.values))
        else:
            read = partial(parse_seed, document, "seed control", Path.cwd(), dict(broker.config.values))

        def read_and_encode() -> Seed:
            return prepare_seed(read(), broker.config["num.partitions"])

        # a cancelled call (the broker stops) leaves the thread to finish its bounded work alone
        parsed = await trio.to_thread.run_sync(read_and_encode, abandon_on_cancel=True)
        return apply_seed(broker, parsed)
    except SeedError as exc:
        raise ControlError(str(exc)) from None
