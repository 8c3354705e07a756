"""The seed control: a seed document (broker.seed) applied to the running broker.

    seed            document: the JSON of a seed file, or path: a seed file the broker can read
                    (records files named in it are relative to it; in a `document`, to the
                    broker's working directory); returns what was created

A document the broker refuses is answered with the seed's one-line explanation (400), before
anything is applied when the mistake is in the document itself.
"""

from __future__ import annotations

from pathlib import Path

from ..seed import SeedError, apply_seed, load_seed, parse_seed
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
            parsed = load_seed(path, broker.config.values)
        else:
            parsed = parse_seed(document, "seed control", Path.cwd(), broker.config.values)
        return apply_seed(broker, parsed)
    except SeedError as exc:
        raise ControlError(str(exc)) from None
