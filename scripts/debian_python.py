"""Unpacks Debian's own CPython of one architecture and release into a folder, with the shared
libraries it loads, from Debian's package archive, so that tests can run a `kafkalite bundle`
built for another platform or Python on the interpreter a user of that system has:

    python3 scripts/debian_python.py arm64 bookworm .deps/python-arm64-bookworm
    qemu-aarch64 -L .deps/python-arm64-bookworm .deps/python-arm64-bookworm/usr/bin/python3.11 -I -S kafkalite.pyz

Nothing is installed: the packages' files are unpacked with `dpkg-deb -x` under the folder, which
is kept (a second run with the folder present does nothing). The dependencies followed are the
packages' Depends and Pre-Depends, less those that hold no library the interpreter loads at start
or that the broker imports (terminal, database and configuration packages)."""

from __future__ import annotations

import hashlib
import lzma
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

ARCHIVE = "https://deb.debian.org/debian/"
# Debian's python3 of each release: the package of the interpreter and of its standard library
PYTHONS = {"bookworm": "3.11", "trixie": "3.13"}
NOT_NEEDED = {"tzdata", "media-types", "mailcap", "debconf", "readline-common", "libc-bin", "netbase",
              "libdb5.3", "libdb5.3t64", "libncursesw6", "libtinfo6", "libreadline8", "libreadline8t64",
              "libnsl2", "libtirpc3", "libtirpc3t64", "libsqlite3-0", "libuuid1", "gcc-12-base", "gcc-14-base"}


def _packages(arch: str, release: str) -> dict[str, dict[str, str]]:
    with urllib.request.urlopen(f"{ARCHIVE}dists/{release}/main/binary-{arch}/Packages.xz", timeout=120) as index:
        text = lzma.decompress(index.read()).decode()
    packages = {}
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            if line[:1] not in (" ", "\t"):
                key, _, value = line.partition(":")
                fields[key] = value.strip()
        if "Package" in fields:
            packages[fields["Package"]] = fields
    return packages


def _closure(packages: dict[str, dict[str, str]], roots: list[str]) -> list[str]:
    wanted, seen = list(roots), set()
    while wanted:
        name = wanted.pop()
        if name in seen or name in NOT_NEEDED:
            continue
        seen.add(name)
        for field in ("Pre-Depends", "Depends"):
            for dep in packages[name].get(field, "").split(","):
                first = dep.split("|")[0].strip().split(" ")[0].split(":")[0]
                if first:
                    wanted.append(first)
    return sorted(seen)


def unpack(arch: str, release: str, dest: Path) -> Path:
    """Debian `release`'s python3 for `arch` unpacked into `dest`; returns the interpreter's path."""
    version = PYTHONS[release]
    interpreter = dest / "usr" / "bin" / f"python{version}"
    if interpreter.exists():
        return interpreter
    packages = _packages(arch, release)
    with tempfile.TemporaryDirectory(prefix="debian-python-") as tmp:
        staging = Path(tmp) / "root"
        for name in _closure(packages, [f"python{version}-minimal", f"libpython{version}-stdlib"]):
            deb = Path(tmp) / f"{name}.deb"
            urllib.request.urlretrieve(ARCHIVE + packages[name]["Filename"], deb)
            if hashlib.sha256(deb.read_bytes()).hexdigest() != packages[name]["SHA256"]:
                sys.exit(f"{name}: the downloaded package does not match the archive index's SHA256")
            subprocess.run(["dpkg-deb", "-x", str(deb), str(staging)], check=True)
        dest.parent.mkdir(parents=True, exist_ok=True)
        staging.rename(dest)  # whole or not at all: a folder that exists is a finished one
    return interpreter


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[2] not in PYTHONS:
        sys.exit(f"usage: {sys.argv[0]} ARCH {{{','.join(PYTHONS)}}} DEST")
    print(unpack(sys.argv[1], sys.argv[2], Path(sys.argv[3])))
