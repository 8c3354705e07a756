"""A disk that fails on demand, for the storage-error tests: each helper patches one storage call
so that it fails while `switch[key]` is true and behaves as before once it is set back."""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from typing import Any

import pytest

from kafkalite.storage import files as storage_files
from kafkalite.storage import log as storage_log
from kafkalite.storage import segment as storage_segment


def no_space() -> OSError:
    return OSError(errno.ENOSPC, "No space left on device")


def fail_while(switch: dict[str, Any], key: str, real: Callable[..., Any],
               error: Callable[[], OSError]) -> Callable[..., Any]:
    """`real`, except that it raises `error()` while `switch[key]` is true."""
    def call(*args: Any, **kw: Any) -> Any:
        if switch[key]:
            raise error()
        return real(*args, **kw)
    return call


def fill_disk_while(monkeypatch: pytest.MonkeyPatch, switch: dict[str, Any], key: str) -> None:
    """Every log write (write_all, and writev_all for produced bytes) writes 10 bytes and then
    fails with ENOSPC, as a disk that fills up mid-write."""
    real_write_all, real_writev_all = storage_segment.write_all, storage_segment.writev_all

    def write_all(fd: int, data: Any) -> Any:
        if switch[key]:
            os.write(fd, bytes(data)[:10])
            raise no_space()
        return real_write_all(fd, data)

    def writev_all(fd: int, parts: Any) -> Any:
        if switch[key]:
            os.write(fd, bytes(parts[0])[:10])
            raise no_space()
        return real_writev_all(fd, parts)

    monkeypatch.setattr(storage_segment, "write_all", write_all)
    monkeypatch.setattr(storage_segment, "writev_all", writev_all)


def fail_fsync_while(monkeypatch: pytest.MonkeyPatch, switch: dict[str, Any], key: str) -> None:
    """Every fsync of a log fails with EIO."""
    monkeypatch.setattr(storage_log.os, "fsync",
                        fail_while(switch, key, os.fsync, lambda: OSError(errno.EIO, "Input/output error")))


def fill_metadata_disk_while(monkeypatch: pytest.MonkeyPatch, switch: dict[str, Any], key: str) -> None:
    """Every whole-file write of storage.files (the metadata files: topics, configs, ACLs, SCRAM
    credentials, quotas, features, tokens; and the logs' checkpoints) writes 10 bytes and then
    fails with ENOSPC, as a disk that fills up mid-write."""
    real_write_all = storage_files.write_all

    def write_all(fd: int, data: Any) -> Any:
        if switch[key]:
            os.write(fd, bytes(data)[:10])
            raise no_space()
        return real_write_all(fd, data)

    monkeypatch.setattr(storage_files, "write_all", write_all)
