"""The wheel a user builds from a clone (README: ``python -m pip wheel --no-deps -w dist .``),
installed into a fresh, plain venv as the README says: one top-level import package, kafkalite;
the CLI starts a broker; without the console extra, --console is one line naming what to install.

The build runs on a copy of what a clone holds for the package (pyproject.toml, README.md and the
package folders), so that nothing the checkout built or cached before leaks into the wheel. The
venv downloads kafkalite's three dependencies from PyPI (pip's cache makes that quick)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import kafkalite

pytestmark = pytest.mark.timeout(600)

ROOT = Path(kafkalite.__file__).resolve().parent.parent
PACKAGE_PARTS = ("kafkalite", "broker", "protocol", "storage")


def _run(args: list[str], **kwargs) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    out = subprocess.run(args, capture_output=True, text=True, env=env, **kwargs)
    return out


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    """A fresh venv with the wheel built from a copy of the clone installed (no extras)."""
    base = tmp_path_factory.mktemp("wheel")
    src = base / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    ignore = shutil.ignore_patterns("__pycache__", "node_modules", "tests", "web", "*.pyc")
    for part in PACKAGE_PARTS:
        shutil.copytree(ROOT / part, src / part, symlinks=True, ignore=ignore)
    dist = base / "dist"
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist),
                  str(src)], timeout=300)
    assert built.returncode == 0, built.stderr
    [wheel] = dist.glob("kafkalite-*.whl")
    env_dir = base / "venv"
    made = _run([sys.executable, "-m", "venv", str(env_dir)], timeout=120)
    assert made.returncode == 0, made.stderr
    installed = _run([str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                      str(wheel)], timeout=400)
    assert installed.returncode == 0, installed.stderr
    return env_dir


def test_kafkalite_is_the_only_top_level_package(venv, tmp_path):
    code = ("import importlib.metadata as m\n"
            "files = m.distribution('kafkalite').files\n"
            "print(sorted({f.parts[0] for f in files if len(f.parts) > 1 and not f.parts[0].endswith('.dist-info')"
            " and f.parts[0] != '..'}))")
    out = _run([str(venv / "bin" / "python"), "-c", code], cwd=tmp_path, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "['kafkalite']"
    for name in ("broker", "protocol", "storage"):
        imported = _run([str(venv / "bin" / "python"), "-c", f"import {name}"], cwd=tmp_path, timeout=60)
        assert imported.returncode == 1 and f"No module named '{name}'" in imported.stderr
    for name in ("kafkalite.broker.cli", "kafkalite.protocol.client", "kafkalite.storage.log"):
        imported = _run([str(venv / "bin" / "python"), "-c", f"import {name}"], cwd=tmp_path, timeout=60)
        assert imported.returncode == 0, imported.stderr


def test_the_cli_starts_a_broker(venv, tmp_path):
    proc = subprocess.Popen([str(venv / "bin" / "kafkalite"), "--port", "0", "--data-dir", str(tmp_path / "data")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        line = proc.stdout.readline() if proc.stdout else ""
        assert kafkalite.READY_PATTERN.match(line), (line, proc.stderr.read() if proc.poll() is not None else "")
        bootstrap = kafkalite.launcher.parse_ready_line(line)["bootstrap"]
        from kafkalite.protocol.client import WireClient
        from kio.schema.api_versions.v3.request import ApiVersionsRequest
        from kio.schema.errors import ErrorCode

        with WireClient(bootstrap) as client:
            response = client.request(ApiVersionsRequest(client_software_name="wheel-test",
                                                         client_software_version="1"))
        assert response.error_code == ErrorCode.none
    finally:
        proc.terminate()
        proc.wait(30)
    assert proc.returncode == 0


def test_without_the_console_extra_the_flag_names_what_to_install(venv, tmp_path):
    out = _run([str(venv / "bin" / "kafkalite"), "--port", "0", "--console", "0"], cwd=tmp_path, timeout=60)
    assert out.returncode == 2 and out.stdout == ""
    [line] = out.stderr.splitlines()
    python = venv / "bin" / "python"
    assert line.startswith("kafkalite: --console needs the console extra, and starlette and hypercorn and anyio "
                           f"are not installed: {python} -m pip install "), line
    assert "'starlette>=0.40'" in line and "'hypercorn>=0.17'" in line and "'anyio[trio]>=4.10'" in line
