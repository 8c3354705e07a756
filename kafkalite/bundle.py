"""`kafkalite bundle OUT`: the broker and its libraries in one file that any `python3` (3.11 or
newer, of the minor version and platform it was built for) runs with nothing installed:

    python3 -I -S OUT --port 0          # every option of the `kafkalite` command works
    kafkalite bundle OUT --platform linux-aarch64 --python-version 3.12   # for another machine

The file is a zipapp made by shiv (a well-kept builder of self-contained zipapps): its first run
unpacks the libraries once into a cache ($SHIV_ROOT, default ~/.shiv, one folder per build), so
later starts import from plain files as an installed command does. Inside are kafkalite and every
library of its `console`, `schema-registry`, `tls` and `compression` extras that is installed
where the bundle is built (`kafkalite bundle` prints which, and which extras had a library
missing). Some of them are compiled (kio's parser, crc32c, cryptography, rpds, cramjam): that is
why a bundle is for one Python minor version and one platform, which it records and checks
before starting. By default that is the interpreter and machine that build it, and the installed
files go in. For another (`--platform`, `--python-version`), the pure-Python libraries are the
installed files all the same, and each compiled one is that same version's wheel for the target,
fetched with `pip download` from the index pip is configured for.

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


def _manylinux(arch: str) -> list[str]:
    # glibc 2.17 to 2.31: what a stock CI image or a laptop's Linux of the last five years has
    return [f"manylinux_2_{minor}_{arch}" for minor in range(31, 16, -1)] + [f"manylinux2014_{arch}"]


def _macos(arch: str, first_major: int) -> list[str]:
    versions = [f"{major}_0" for major in range(15, 10, -1)] + \
        ([f"10_{minor}" for minor in range(15, 8, -1)] if first_major == 10 else [])
    return [f"macosx_{v}_{a}" for v in versions for a in (arch, "universal2")]


# --platform: the uname a bundle checks at start, and the wheel platform tags pip may take for it
PLATFORMS: dict[str, tuple[dict[str, str], list[str]]] = {
    "linux-x86_64": ({"system": "Linux", "machine": "x86_64"}, _manylinux("x86_64")),
    "linux-aarch64": ({"system": "Linux", "machine": "aarch64"}, _manylinux("aarch64")),
    "macos-x86_64": ({"system": "Darwin", "machine": "x86_64"}, _macos("x86_64", 10)),
    "macos-arm64": ({"system": "Darwin", "machine": "arm64"}, _macos("arm64", 11)),
}


def target_for(platform: str, python_version: str) -> dict[str, str]:
    """The target dict (as running_target's) of a --platform and a --python-version like 3.12."""
    major, _, minor = python_version.partition(".")
    if major != "3" or not minor.isdigit() or int(minor) < 11:
        raise ValueError(f"--python-version must be 3.11 or newer, like 3.12, not {python_version!r}")
    return {"cache_tag": f"cpython-3{minor}", **PLATFORMS[platform][0]}


def _marker_environment(target: dict[str, str]) -> dict[str, str]:
    """What requirement markers see on the target, where they differ from here."""
    version = f"3.{target['cache_tag'].removeprefix('cpython-3')}"
    system = target["system"]
    return {"python_version": version, "python_full_version": f"{version}.0", "platform_system": system,
            "sys_platform": "darwin" if system == "Darwin" else "linux", "platform_machine": target["machine"]}


def describe(target: dict[str, str]) -> str:
    return f"{target.get('cache_tag')} on {target.get('system')} {target.get('machine')}"


# --------------------------------------------------------------------------- building

def _requirements(dist_name: str, extras: set[str], markers: dict[str, str]) -> list[tuple[str, str | None]]:
    """(name, extra it came from or None) of what `dist_name` needs with `extras` on, where the
    requirement markers see `markers` (the target's) over this interpreter's own values."""
    from importlib.metadata import requires

    from packaging.requirements import Requirement

    out = []
    for text in requires(dist_name) or []:
        req = Requirement(text)
        wanted_by = None
        if req.marker is not None:
            matched = [e for e in sorted(extras | {""}) if req.marker.evaluate({**markers, "extra": e})]
            if not matched:
                continue
            wanted_by = matched[0] or None
        out.append((req.name, wanted_by))
        for extra in req.extras:  # anyio[trio] brings trio
            out.extend((name, wanted_by) for name, _ in _requirements(req.name, {extra}, markers) if name != req.name)
    return out


def distributions(extras: tuple[str, ...] = BUNDLED_EXTRAS, markers: dict[str, str] | None = None
                  ) -> tuple[list, list[str]]:
    """The installed distributions kafkalite needs with `extras`, and text naming what is
    missing (a library of an extra not installed here leaves that extra out; a library of the
    core missing is an error)."""
    from importlib.metadata import PackageNotFoundError, distribution

    found: dict[str, object] = {}
    missing: list[str] = []
    markers = markers or {}
    queue = _requirements("kafkalite", set(extras), markers)
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
        queue.extend((n, extra) for n, _ in _requirements(dist.metadata["Name"], set(), markers))
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


def _is_compiled(dist) -> bool:
    """Whether a distribution's wheel was for one platform (it holds compiled code)."""
    return "Root-Is-Purelib: false" in (dist.read_text("WHEEL") or "")


def _fetch_wheels(dists: list, platform: str, target: dict[str, str], into: Path) -> list[Path]:
    """The wheels of `dists`, at the versions installed here, for `platform` and the target's
    Python, fetched by pip (one run, its own index and cache settings)."""
    import subprocess

    version = f"3.{target['cache_tag'].removeprefix('cpython-3')}"
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
               "--implementation", "cp", "--python-version", version, "--dest", str(into)]
    for tag in PLATFORMS[platform][1]:
        command += ["--platform", tag]
    command += [f"{d.metadata['Name']}=={d.version}" for d in dists]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["pip download failed"])[-1]
        raise RuntimeError(f"no wheels for {platform} and Python {version}: {last}")
    return sorted(into.glob("*.whl"))


def _unpack_wheel(wheel: Path, site_packages: Path) -> None:
    """A wheel's files as pip would install them into site-packages: its purelib and platlib
    data folders at the top; scripts, headers and data files are not a library's and stay out."""
    import zipfile

    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            parts = Path(info.filename).parts
            if info.is_dir() or ".." in parts:
                continue
            if parts[0].endswith(".data"):
                if len(parts) < 3 or parts[1] not in ("purelib", "platlib"):
                    continue
                parts = parts[2:]
            dest = site_packages.joinpath(*parts)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(archive.read(info))
            mode = (info.external_attr >> 16) & 0o777
            if mode:
                dest.chmod(mode)


def build(out: Path, python: str = "/usr/bin/env python3", platform: str | None = None,
          python_version: str | None = None) -> list[str]:
    """Writes the bundle to `out` for the running interpreter and machine, or for `platform`
    and `python_version` when either is given; returns lines saying what went in and what did not."""
    import tempfile
    from datetime import datetime, timezone

    from shiv import builder
    from shiv.bootstrap.environment import Environment
    from shiv.constants import BUILD_AT_TIMESTAMP_FORMAT

    here = running_target()
    target = here
    if platform is not None or python_version is not None:
        platform = platform or _platform_of(here)
        target = target_for(platform, python_version or f"3.{sys.version_info.minor}")
    dists, missing = distributions(markers=_marker_environment(target))
    fetched = [d for d in dists if _is_compiled(d)] if target != here else []
    with tempfile.TemporaryDirectory(prefix="kafkalite-bundle-") as tmp:
        site_packages = Path(tmp) / "site-packages"
        for dist in dists:
            if dist not in fetched:
                _copy_distribution(dist, site_packages)
        if fetched:
            assert platform is not None
            for wheel in _fetch_wheels(fetched, platform, target, Path(tmp) / "wheels"):
                _unpack_wheel(wheel, site_packages)
        _copy_kafkalite(site_packages)
        (site_packages / "kafkalite" / TARGET_FILE).write_text(json.dumps(target))
        env = Environment(built_at=datetime.now(timezone.utc).strftime(BUILD_AT_TIMESTAMP_FORMAT),
                          entry_point="kafkalite.bundle_start:start", compile_pyc=False, shiv_version=_shiv_version())
        out.parent.mkdir(parents=True, exist_ok=True)
        builder.create_archive([site_packages], target=out, interpreter=python, main="_bootstrap:bootstrap",
                               env=env, compressed=True)
    names = sorted(f"{d.metadata['Name']} {d.version}" for d in dists)
    lines = [f"wrote {out} ({out.stat().st_size / 1e6:.1f} MB) for {describe(target)}",
             "bundled: " + ", ".join(names)]
    if fetched:
        lines.append(f"wheels for {describe(target)}: " + ", ".join(sorted(d.metadata["Name"] for d in fetched)))
    if missing:
        lines.append("not installed here, so not bundled: " + ", ".join(missing))
    return lines


def _platform_of(target: dict[str, str]) -> str:
    for name, (uname, _tags) in PLATFORMS.items():
        if uname == {"system": target["system"], "machine": target["machine"]}:
            return name
    raise ValueError(f"no --platform is known for {target['system']} {target['machine']}; name one")


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
    p.add_argument("--platform", choices=sorted(PLATFORMS),
                   help="build for this platform (default: this machine's); its compiled libraries are "
                        "fetched with pip download")
    p.add_argument("--python-version", metavar="3.N",
                   help="build for this Python minor version, 3.11 or newer (default: this interpreter's)")
    args = p.parse_args(argv)
    try:
        import packaging.requirements  # noqa: F401
        import shiv  # noqa: F401
    except ImportError as exc:
        print(f"kafkalite bundle: needs the bundle extra (pip install 'kafkalite[bundle]'): {exc}", file=sys.stderr)
        return 2
    try:
        lines = build(Path(args.out), args.python, args.platform, args.python_version)
    except (RuntimeError, OSError, ValueError) as exc:
        print(f"kafkalite bundle: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0
