"""`kafkalite bundle OUT`: the broker and its libraries in one file that any `python3` (3.11 or
newer, the same minor version and platform as the one that built it) runs with nothing installed:

    python3 -I -S OUT --port 0          # every option of the `kafkalite` command works

The file is a zipapp made by shiv (a well-kept builder of self-contained zipapps): its first run
unpacks the libraries once into a cache ($SHIV_ROOT, default ~/.shiv, one folder per build), so
later starts import from plain files as an installed command does. Inside are kafkalite and every
library of its `console`, `schema-registry`, `tls` and `compression` extras that is installed
where the bundle is built (`kafkalite bundle` prints which, and which extras had a library
missing). Some of them are compiled (kio's parser, crc32c, cryptography, rpds, cramjam): that is
why a bundle is for the Python minor version and the platform that built it, which it names
(`--describe`) and checks before starting.

This module builds a bundle; its entry point is kafkalite.bundle_start (apart, so that the
`kafkalite` command, which runs `kafkalite bundle`, and the bundle's start import each other not).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

# where the bundle records what it was built for, beside this module inside the bundle
TARGET_FILE = "bundle_target.json"
# the extras whose libraries go in when they are installed
BUNDLED_EXTRAS = ("console", "schema-registry", "tls", "compression")
# folders of the kafkalite package tree that a broker never imports
SKIPPED_DIRS = {"tests", "__pycache__", "node_modules", "web"}


def running_target() -> dict[str, str]:
    """What a compiled library depends on: the interpreter's ABI and the machine."""
    uname = os.uname()
    return {"cache_tag": sys.implementation.cache_tag or "", "system": uname.sysname, "machine": uname.machine}


def describe(target: dict[str, str]) -> str:
    return f"{target.get('cache_tag')} on {target.get('system')} {target.get('machine')}"


# --------------------------------------------------------------------------- building

def _requirements(dist_name: str, extras: set[str]) -> list[tuple[str, str | None]]:
    """(name, extra it came from or None) of what `dist_name` needs here with `extras` on."""
    from importlib.metadata import requires

    from packaging.requirements import Requirement

    out = []
    for text in requires(dist_name) or []:
        req = Requirement(text)
        wanted_by = None
        if req.marker is not None:
            matched = [e for e in sorted(extras | {""}) if req.marker.evaluate({"extra": e})]
            if not matched:
                continue
            wanted_by = matched[0] or None
        out.append((req.name, wanted_by))
        for extra in req.extras:  # anyio[trio] brings trio
            out.extend((name, wanted_by) for name, _ in _requirements(req.name, {extra}) if name != req.name)
    return out


def distributions(extras: tuple[str, ...] = BUNDLED_EXTRAS) -> tuple[list, list[str]]:
    """The installed distributions kafkalite needs with `extras`, and text naming what is
    missing (a library of an extra not installed here leaves that extra out; a library of the
    core missing is an error)."""
    from importlib.metadata import PackageNotFoundError, distribution

    found: dict[str, object] = {}
    missing: list[str] = []
    queue = _requirements("kafkalite", set(extras))
    while queue:
        name, extra = queue.pop()
        key = name.lower().replace("_", "-")
        if key in found:
            continue
        try:
            dist = distribution(name)
        except PackageNotFoundError:
            if extra is None:
                raise RuntimeError(f"kafkalite needs {name}, which is not installed") from None
            missing.append(f"{name} (extra {extra})")
            continue
        found[key] = dist
        queue.extend((n, extra) for n, _ in _requirements(dist.metadata["Name"], set()))
    return list(found.values()), sorted(set(missing))


def _copy_distribution(dist, site_packages: Path) -> None:
    for file in dist.files or []:
        rel = Path(str(file))
        if rel.parts[0] == ".." or "__pycache__" in rel.parts or rel.suffix == ".pyc":
            continue  # console scripts land outside site-packages; bytecode is written on first use
        source = Path(str(dist.locate_file(file)))
        if rel.name == "RECORD" or not source.is_file():
            continue
        dest = site_packages / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(source.read_bytes())
        dest.chmod(source.stat().st_mode & 0o777)


def _copy_kafkalite(site_packages: Path) -> None:
    """The kafkalite package as imported here (a checkout or site-packages), following the
    broker/protocol/storage links, without tests, the console's web sources or bytecode."""
    root = Path(__file__).resolve().parent
    for folder, dirs, files in os.walk(root, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d not in SKIPPED_DIRS)
        for name in files:
            if name.endswith(".pyc"):
                continue
            source = Path(folder) / name
            dest = site_packages / "kafkalite" / source.relative_to(root)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(source.read_bytes())


def build(out: Path, python: str = "/usr/bin/env python3") -> list[str]:
    """Writes the bundle to `out`; returns lines saying what went in and what did not."""
    import tempfile
    from datetime import datetime, timezone

    from shiv import builder
    from shiv.bootstrap.environment import Environment
    from shiv.constants import BUILD_AT_TIMESTAMP_FORMAT

    dists, missing = distributions()
    with tempfile.TemporaryDirectory(prefix="kafkalite-bundle-") as tmp:
        site_packages = Path(tmp)
        for dist in dists:
            _copy_distribution(dist, site_packages)
        _copy_kafkalite(site_packages)
        (site_packages / "kafkalite" / TARGET_FILE).write_text(json.dumps(running_target()))
        env = Environment(built_at=datetime.now(timezone.utc).strftime(BUILD_AT_TIMESTAMP_FORMAT),
                          entry_point="kafkalite.bundle_start:start", compile_pyc=False, shiv_version=_shiv_version())
        out.parent.mkdir(parents=True, exist_ok=True)
        builder.create_archive([site_packages], target=out, interpreter=python, main="_bootstrap:bootstrap",
                               env=env, compressed=True)
    names = sorted(f"{d.metadata['Name']} {d.version}" for d in dists)
    lines = [f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB) for {describe(running_target())}",
             "bundled: " + ", ".join(names)]
    if missing:
        lines.append("not installed here, so not bundled: " + ", ".join(missing))
    return lines


def _shiv_version() -> str:
    from importlib.metadata import version

    return version("shiv")


def main(argv: list[str] | None = None) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="kafkalite bundle",
                                description="Write the broker and its installed libraries into one file that "
                                            "`python3 -I -S FILE [options]` runs with nothing installed.")
    p.add_argument("out", help="the file to write")
    p.add_argument("--python", default="/usr/bin/env python3",
                   help="the interpreter line of the file, for running it as ./FILE (default: %(default)s)")
    args = p.parse_args(argv)
    try:
        import packaging.requirements  # noqa: F401
        import shiv  # noqa: F401
    except ImportError as exc:
        print(f"kafkalite bundle: needs the bundle extra (pip install 'kafkalite[bundle]'): {exc}", file=sys.stderr)
        return 2
    try:
        lines = build(Path(args.out), args.python)
    except (RuntimeError, OSError) as exc:
        print(f"kafkalite bundle: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0
