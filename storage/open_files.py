"""The bounded cache of open segment files shared by every partition of the process.

A broker with 10 000 partitions must not hold 10 000 descriptors (the common limit is
1 024), so a segment's `.log` file is opened when it is first used and closed again when
it is the least recently used of more than `limit` open files. Appends, reads, truncation
and fsync all borrow the descriptor through `acquire`/`release`: a borrowed descriptor is
pinned and never closed under its user (a flush thread and the event loop may borrow at the
same time), so the cache may exceed its limit for as long as more files than that are
borrowed at once. Closing a file loses nothing: appends are `os.write`s to the page cache,
and an fsync through a new descriptor flushes the file's data whichever descriptor wrote it.

Readers lease the segments they are about to read (`lease`/`unlease`): a lease costs no descriptor, and
a file closed for good (its segment deleted by retention or DeleteRecords, or replaced by the
cleaner, which `hold` its descriptor first) stays open until the last lease and the last borrow
end. So a read that found a segment in the log's list reads it whole, old or replaced, and
never meets a closed file; a lease on a file already closed is refused, and the reader looks at
the log's list again (storage.log).

The limit comes from the broker setting `log.segment.open.files.max` (broker/config.py);
`-1` means half the process's soft RLIMIT_NOFILE, leaving the other half to sockets.

When the process runs out of descriptors anyway (connections took the other half, or the limit
was set above what the process may open), the open that failed is answered as any failed disk
operation (KAFKA_STORAGE_ERROR; a connection not accepted waits in the backlog), and
`descriptors_exhausted` logs one line, at most every LIMIT_NOTE_INTERVAL seconds, naming the
limit, what holds the descriptors and the two settings that decide it.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
from collections import OrderedDict
from pathlib import Path
import contextlib
from typing import Callable, Iterator, Protocol, Sequence, TypeVar

DEFAULT_LIMIT = 512      # where RLIMIT_NOFILE cannot be read
MIN_LIMIT = 2            # a roll holds the old and the new segment
# errnos of an open or accept refused for want of descriptors (per process, system-wide)
OUT_OF_DESCRIPTORS = (errno.EMFILE, errno.ENFILE)
LIMIT_NOTE_INTERVAL = 10.0

log = logging.getLogger("kafkalite.storage")
_last_note = [-LIMIT_NOTE_INTERVAL]


def descriptors_exhausted(what: str) -> None:
    """Log that `what` failed for want of file descriptors, with the limit and the settings that
    decide it (at most once per LIMIT_NOTE_INTERVAL seconds: an accept loop meets it often)."""
    now = time.monotonic()
    if now - _last_note[0] < LIMIT_NOTE_INTERVAL:
        return
    _last_note[0] = now
    soft = "unknown"
    try:
        import resource

        soft = str(resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    except (ImportError, OSError, ValueError):
        pass
    log.error("out of file descriptors while %s: the process holds the %s its soft RLIMIT_NOFILE allows "
              "(ulimit -n), %d of them segment files (log.segment.open.files.max=%d; -1 is half RLIMIT_NOFILE), "
              "the rest connections and other files; raise the limit, or lower log.segment.open.files.max "
              "or the number of connections", what, soft, len(OPEN_FILES), OPEN_FILES.limit)


def open_segment_file(path: Path, flags: int, mode: int = 0o644) -> int:
    """os.open of a segment file, logging when it fails for want of descriptors."""
    try:
        return os.open(path, flags, mode)
    except OSError as exc:
        if exc.errno in OUT_OF_DESCRIPTORS:
            descriptors_exhausted(f"opening {path}")
        raise


class CachedFile(Protocol):
    """What the cache keeps per file: a Segment (storage.segment) carries these fields."""

    @property
    def log_path(self) -> Path: ...   # read when the file is (re)opened

    _fd: int
    _pins: int
    _leases: int
    _closed: bool
    _held: bool


def default_limit() -> int:
    try:
        import resource

        soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (ImportError, OSError, ValueError):
        return DEFAULT_LIMIT
    if soft == resource.RLIM_INFINITY or soft <= 0:
        return DEFAULT_LIMIT * 8
    return max(MIN_LIMIT, soft // 2)


class OpenFiles:
    """An LRU of open descriptors, keyed by the object that owns the file."""

    def __init__(self, limit: int = -1):
        self._lock = threading.Lock()
        self._lru: OrderedDict[CachedFile, None] = OrderedDict()
        self.limit = default_limit()
        self.opened = 0       # descriptors opened since start (reopens after eviction included)
        self.set_limit(limit)

    def set_limit(self, limit: int) -> None:
        """`limit` open files at most (-1: half the soft descriptor limit); closes the excess."""
        self.limit = default_limit() if limit < 0 else max(MIN_LIMIT, limit)
        with self._lock:
            self._evict()

    def __len__(self) -> int:
        return len(self._lru)

    def adopt(self, owner: CachedFile, fd: int) -> None:
        """Put a descriptor its owner has just opened (a new segment) under the cache."""
        with self._lock:
            owner._fd = fd
            self._lru[owner] = None
            self.opened += 1
            self._evict()

    def acquire(self, owner: CachedFile) -> int:
        """The owner's open descriptor, opened if needed and pinned until `release`. A file closed
        for good is still borrowed while leases or other borrowers keep its descriptor open."""
        with self._lock:
            if owner._closed and owner._fd < 0:
                raise OSError(errno.EBADF, f"{owner.log_path} is closed")
            fd = owner._fd
            if fd >= 0:
                self._lru.move_to_end(owner)
            else:
                fd = open_segment_file(owner.log_path, os.O_RDWR | os.O_APPEND)
                owner._fd = fd
                self._lru[owner] = None
                self.opened += 1
            owner._pins += 1
            if len(self._lru) > self.limit:
                self._evict()
            return fd

    def release(self, owner: CachedFile) -> None:
        with self._lock:
            owner._pins -= 1
            if owner._pins == 0 and (owner._closed or len(self._lru) > self.limit):
                if owner._closed:
                    self._close(owner)
                else:
                    self._evict()

    def lease(self, owners: Sequence[CachedFile]) -> bool:
        """Keep each of `owners`' files from being closed for good until `unlease` (a file may
        still be evicted and is then reopened by path: one whose path is about to go is held
        first). Every one or none: False when one is closed already, and the caller looks for
        its data in the log's list again."""
        with self._lock:
            if any(owner._closed for owner in owners):
                return False
            for owner in owners:
                owner._leases += 1
            return True

    def unlease(self, owners: Sequence[CachedFile]) -> None:
        with self._lock:
            for owner in owners:
                owner._leases -= 1
                if owner._leases == 0 and owner._closed:
                    self._unhold(owner)

    def hold(self, owner: CachedFile) -> None:
        """Keep the owner's current file open until `close`, whatever happens to its path: a
        segment about to be deleted or replaced by the cleaner is still read, until it is
        retired, from the file it named (a reopen by path would find nothing, or another file)."""
        self.acquire(owner)
        with self._lock:
            if owner._held:
                owner._pins -= 1
            owner._held = True

    def close(self, owner: CachedFile) -> None:
        """The owner is done with its file for good (segment closed, retired or deleted): the
        descriptor is closed now, or when the last lease and the last borrow end."""
        with self._lock:
            owner._closed = True
            if owner._leases == 0:
                self._unhold(owner)
            elif not owner._held and owner._fd >= 0:
                # leased readers read on from this descriptor: no eviction closes it under them
                owner._held = True
                owner._pins += 1

    def _unhold(self, owner: CachedFile) -> None:
        """A closed owner's last lease is gone: drop its hold, and the descriptor with the last pin."""
        if owner._held:
            owner._held = False
            owner._pins -= 1
        if owner._pins == 0:
            self._close(owner)

    def _close(self, owner: CachedFile) -> None:
        fd = owner._fd
        self._lru.pop(owner, None)
        if fd >= 0:
            owner._fd = -1
            os.close(fd)

    def _evict(self) -> None:
        """Close least recently used, unpinned files until at most `limit` are open."""
        excess = len(self._lru) - self.limit
        if excess <= 0:
            return
        victims = []
        for owner in self._lru:
            if owner._pins == 0:
                victims.append(owner)
                if len(victims) == excess:
                    break
        for owner in victims:
            self._close(owner)


Owner = TypeVar("Owner", bound=CachedFile)


def segments_kept_leaving(where: object) -> OSError:
    """What a read says when its every look at a list found a file closed meanwhile."""
    return OSError(errno.EAGAIN, f"{where}: segments kept leaving the log under a read")


@contextlib.contextmanager
def leased(current: Callable[[], list[Owner]], where: object, attempts: int) -> Iterator[list[Owner]]:
    """`current()` (a list that is replaced, never changed in place) with every file in it leased
    for the block: read again while one of it was closed between the read and the lease."""
    for _attempt in range(attempts):
        owners = current()
        if OPEN_FILES.lease(owners):
            break
    else:
        raise segments_kept_leaving(where)
    try:
        yield owners
    finally:
        OPEN_FILES.unlease(owners)


# One cache for the process: the descriptor limit it protects is the process's.
OPEN_FILES = OpenFiles()
