"""Files written whole or not at all: a temporary file in the same folder, fsync, ``os.replace``.

A report, a project zip or a table written in place is half a file when the process is killed
mid-write (a server restarted, a batch job over its time), and the reader who opens it later has no
way to tell. Everything the command line writes for a user goes through here instead: the new bytes
go to ``.<name>.<pid>.gpudse-tmp`` beside the target, are flushed to the disk, and replace the
target in one rename (atomic on POSIX and Windows), so a reader finds the old file or the new one,
never a mix. A killed writer leaves only its temporary file, recognisable by its name; the next
write to the same target removes those whose process is gone.

``GPUDSE_TEST_PAUSE_WRITE`` (tests only): when set to a path, a write stops half-way — after the
first half of the bytes is on disk — creates that path and waits for up to a minute, so a test can
kill the process *mid-write* and look at what is left. With ``GPUDSE_TEST_PAUSE_AT`` another named
:func:`pause_at` point pauses instead (a fork's copy, a template build).
"""

from __future__ import annotations

import contextlib
import glob
import os
import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path

SUFFIX = ".gpudse-tmp"
PAUSE_ENV = "GPUDSE_TEST_PAUSE_WRITE"
PAUSE_AT_ENV = "GPUDSE_TEST_PAUSE_AT"  # which pause point: "write" (the default), "fork-copy", "template-build"


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write *data* to *path* atomically; returns the path."""

    def fill(fh) -> None:
        half = len(data) // 2
        fh.write(data[:half])
        _pause(fh)
        fh.write(data[half:])

    return _write(Path(path), fill)


def write_text(path: str | Path, text: str) -> Path:
    return write_bytes(path, text.encode("utf-8"))


@contextlib.contextmanager
def replacing(path: str | Path) -> Iterator[Path]:
    """A temporary path beside *path* for a writer that wants a file name (``to_parquet``, the CSV
    writer); when the block ends without an error it replaces *path*, else it is removed."""
    target = Path(path)
    tmp = _tmp(target)
    try:
        yield tmp
        with open(tmp, "r+b") as fh:
            fh.seek(0, os.SEEK_END)
            _pause(fh)
            _sync(fh)
        _commit(tmp, target)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def _write(target: Path, fill: Callable) -> Path:
    tmp = _tmp(target)
    try:
        with open(tmp, "wb") as fh:
            fill(fh)
            _sync(fh)
        _commit(tmp, target)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()
    return target


def _tmp(target: Path) -> Path:
    _remove_orphans(target)
    return target.with_name(f".{target.name}.{os.getpid()}.{secrets.token_hex(4)}{SUFFIX}")


def _remove_orphans(target: Path) -> None:
    """Temporary files of earlier writes to *target* whose process no longer runs (killed mid-write)."""
    with contextlib.suppress(OSError):
        for p in target.parent.glob(f".{glob.escape(target.name)}.*{SUFFIX}"):
            pid = p.name[len(target.name) + 2:].split(".")[0]
            if pid.isdigit() and not _alive(int(pid)):
                with contextlib.suppress(OSError):
                    p.unlink()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


def _sync(fh) -> None:
    fh.flush()
    os.fsync(fh.fileno())


def _commit(tmp: Path, target: Path) -> None:
    os.replace(tmp, target)
    with contextlib.suppress(OSError):  # the rename itself on disk (POSIX; not possible on Windows)
        fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _pause(fh) -> None:
    if os.environ.get(PAUSE_ENV) and os.environ.get(PAUSE_AT_ENV, "write") == "write":
        _sync(fh)
        pause_at("write")


def pause_at(where: str) -> None:
    """Tests only: stop here for up to a minute when ``GPUDSE_TEST_PAUSE_AT`` names *where* (default
    ``write``) and ``GPUDSE_TEST_PAUSE_WRITE`` names the file to create first, so that a test can
    SIGKILL the process at that point."""
    marker = os.environ.get(PAUSE_ENV)
    if not marker or os.environ.get(PAUSE_AT_ENV, "write") != where:
        return
    Path(marker).write_text(str(os.getpid()))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        time.sleep(0.05)
