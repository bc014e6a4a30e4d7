"""A replicated partition whose file cannot be read is rebuilt from another copy (issue 32): the
file is moved aside, never deleted (`<data_dir>/damaged/<stream>/<partition>-<ms>/`, for an
operator to look at), an empty log takes its place, and a marker file in the partition's directory
(`REBUILDING`, fsynced with its directory) says so until the log caught up with its primary, so a
restart in between never takes the empty log for the partition's history.

While the marker is there the partition never leads, is never a candidate for failover, and its
node lists it in its heartbeat (`rebuilding_partitions`), which makes the controller move its
leadership if it had it (weir_router.core, failover).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

MARKER = "REBUILDING"


def is_rebuilding(directory: Path) -> bool:
    return (directory / MARKER).exists()


def quarantine(directory: Path, damaged_root: Path, stream: str, partition: int, reason: str) -> Path:
    """Move the partition's `directory` to `damaged_root/<stream>/<partition>-<now ms>/`, make it
    anew with the marker (saying `reason`) durable in it; returns where the damaged files went."""
    target = damaged_root / stream / f"{partition}-{int(time.time() * 1000)}"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.move(str(directory), str(target))
    directory.mkdir(parents=True)
    marker = directory / MARKER
    with marker.open("w") as file:
        file.write(f"rebuilding from another copy; the unreadable files are in {target}: {reason}\n")
        file.flush()
        os.fsync(file.fileno())
    _fsync_directory(directory)
    _fsync_directory(directory.parent)
    return target


def finish(directory: Path) -> None:
    """The log caught up: remove the marker (durably)."""
    (directory / MARKER).unlink(missing_ok=True)
    _fsync_directory(directory)


def _fsync_directory(directory: Path) -> None:
    descriptor = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
