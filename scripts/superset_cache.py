"""The real-Superset cache's location and its one rule: each cached result is built once.

Concurrent callers (the test fixtures start instances in parallel, two CI jobs may share a
cache) take one file lock for a build; the others wait and then use its result. Split from
`real_superset.py`, which says what is built; this says how a build stays whole and single.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

CACHE = Path(os.environ.get("SUPERSET_AGENT_CACHE", "~/.cache/superset-agent")).expanduser()
BUILD_LOCK = CACHE / "build.lock"


def log(message: str) -> None:
    print(f"[real_superset] {message}", file=sys.stderr, flush=True)


@contextlib.contextmanager
def build_lock() -> Iterator[None]:
    """Hold the cache's one build lock for the whole of a build.

    flock, not a lock file's existence: the kernel releases it when its holder exits, even
    on kill -9, so a crashed build never leaves the cache locked. Not re-entrant (a second
    open file in the same process would wait on the first), so a holder must not call a
    function that takes it again. The holder's pid is written into the file only so that a
    waiter can say whom it waits for.
    """
    CACHE.mkdir(parents=True, exist_ok=True)
    with BUILD_LOCK.open("a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"waiting for the build in progress ({holder_of(lock)})")
            fcntl.flock(lock, fcntl.LOCK_EX)
        lock.truncate(0)
        lock.write(f"pid {os.getpid()} since {time.strftime('%H:%M:%S')}")
        lock.flush()
        try:
            yield
        finally:
            lock.truncate(0)


def holder_of(lock: IO[str], patience: float = 2.0,
              pause: Callable[[float], None] = time.sleep) -> str:
    """Who holds the build lock, as the holder wrote it ("pid N since HH:MM:SS").

    The holder writes that just after its flock succeeds, so a waiter arriving in between
    reads an empty file (CI once logged "holder unknown" for a live holder): read again for
    up to `patience` seconds before saying so. The lock itself is never waited on here.
    """
    deadline = time.monotonic() + patience
    while True:
        lock.seek(0)
        holder = lock.read().strip()
        if holder or time.monotonic() >= deadline:
            return holder or "holder unknown"
        pause(0.02)


def build_once(target: Path, marker: str, build: Callable[[Path], None]) -> float:
    """Make `target` (a directory holding `marker` when complete) by `build` unless another
    process already did; returns the seconds spent building (0.0 when it was there).

    Under the build lock the marker is checked again, so a waiter finds the finished result
    and builds nothing. `build` fills a fresh sibling directory that is renamed into place
    with its marker already written: readers that see the marker see a whole result, and a
    failed or killed build leaves only a `.NAME.building-*` directory, removed by the next.
    """
    if (target / marker).exists():
        return 0.0
    with build_lock():
        if (target / marker).exists():
            return 0.0
        started = time.monotonic()
        for leftover in target.parent.glob(f".{target.name}.*-*"):
            shutil.rmtree(leftover, ignore_errors=True)
        work = Path(tempfile.mkdtemp(prefix=f".{target.name}.building-", dir=target.parent))
        work.chmod(0o755)  # mkdtemp's 0700 would otherwise become the target's mode
        aside = work.with_name(work.name.replace(".building-", ".stale-"))
        try:
            build(work)
            (work / marker).write_text(time.strftime("%Y-%m-%dT%H:%M:%S"))
            if target.exists():  # unfinished, left by a build from before this lock existed
                target.rename(aside)
            work.rename(target)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        finally:
            shutil.rmtree(aside, ignore_errors=True)
        return time.monotonic() - started
