"""A filesystem that loses what was not fsynced (issue 32's power-loss tests), in the manner of
Jepsen's LazyFS: a FUSE layer (mfusepy over libfuse 3) over a backing directory, in which every
file's written bytes and truncations stay in this process's memory (4 KiB pages: the page cache)
until the file is fsynced (fsync or fdatasync), when they are written to the backing file and
fsynced there. Killing this process with SIGKILL is the power loss: whatever the page cache held is
gone, and a new mount over the same backing directory shows exactly what was made durable.

Names are not cached: create, unlink, rename, mkdir and rmdir reach the backing directory at once,
as on a filesystem whose directory operations are durable when they return (ext4's journal orders
them before the data of a later fsync; a real disk may lose an unsynced rename too, which this
layer does not show). So the layer tests the one promise the broker relies on for its data: bytes
are durable exactly when their fsync returned.

Run as `python -m tests.lazyfs BACKING MOUNTPOINT` (foreground, one thread); `LazyMount` starts it,
crashes it and mounts again. Needs /dev/fuse, fusermount3 and libfuse3 (Debian's fuse3).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

PAGE_BYTES = 4096
REPO_ROOT = Path(__file__).resolve().parent.parent


class LazyFile:
    """One file's unsynced state over its backing file: dirty pages, the size the writer sees, and
    the lowest size a truncate set since the last fsync (backing bytes from there read as zeros)."""

    def __init__(self, backing: str) -> None:
        self.fd = os.open(backing, os.O_RDWR)
        self.size = os.fstat(self.fd).st_size
        self.pages: dict[int, bytearray] = {}
        self.zero_from: int | None = None

    def _backing_page(self, number: int) -> bytearray:
        start = number * PAGE_BYTES
        data = bytearray(os.pread(self.fd, PAGE_BYTES, start).ljust(PAGE_BYTES, b"\0"))
        if self.zero_from is not None and self.zero_from < start + PAGE_BYTES:
            keep = max(0, self.zero_from - start)
            data[keep:] = bytes(PAGE_BYTES - keep)
        return data

    def _page(self, number: int) -> bytearray:
        page = self.pages.get(number)
        return page if page is not None else self._backing_page(number)

    def read(self, size: int, offset: int) -> bytes:
        end = min(offset + size, self.size)
        out = bytearray()
        position = offset
        while position < end:
            number, within = divmod(position, PAGE_BYTES)
            take = min(PAGE_BYTES - within, end - position)
            out += self._page(number)[within : within + take]
            position += take
        return bytes(out)

    def write(self, data: bytes, offset: int) -> int:
        position = offset
        view = memoryview(data)
        while view:
            number, within = divmod(position, PAGE_BYTES)
            take = min(PAGE_BYTES - within, len(view))
            page = self.pages.get(number)
            if page is None:
                page = self.pages[number] = self._backing_page(number)
            page[within : within + take] = view[:take]
            view = view[take:]
            position += take
        self.size = max(self.size, offset + len(data))
        return len(data)

    def truncate(self, length: int) -> None:
        for number in [n for n in self.pages if n * PAGE_BYTES >= length]:
            del self.pages[number]
        number, within = divmod(length, PAGE_BYTES)
        if within and number in self.pages:
            self.pages[number][within:] = bytes(PAGE_BYTES - within)
        self.size = length
        self.zero_from = length if self.zero_from is None else min(self.zero_from, length)

    def sync(self) -> None:
        if self.zero_from is not None:
            os.ftruncate(self.fd, self.zero_from)
        for number in sorted(self.pages):
            start = number * PAGE_BYTES
            os.pwrite(self.fd, bytes(self.pages[number][: max(0, min(PAGE_BYTES, self.size - start))]), start)
        os.ftruncate(self.fd, self.size)
        os.fsync(self.fd)
        self.pages.clear()
        self.zero_from = None


@dataclass
class LazyMount:
    """The layer mounted at `mountpoint` over `backing`: `crash()` is the power loss (SIGKILL, then
    the dead mount is detached), `mount()` brings up a fresh layer over what was made durable."""

    backing: Path
    mountpoint: Path
    log_path: Path
    process: subprocess.Popen[bytes] | None = field(default=None, init=False)
    crashes: int = field(default=0, init=False)

    def mount(self, timeout_s: float = 10.0) -> LazyMount:
        self.backing.mkdir(parents=True, exist_ok=True)
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "tests.lazyfs", str(self.backing), str(self.mountpoint)],
                cwd=REPO_ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        deadline = time.monotonic() + timeout_s
        while not os.path.ismount(self.mountpoint):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"lazyfs did not mount {self.mountpoint}: {self.log_path.read_text()[-2000:]}")
            time.sleep(0.05)
        return self

    def crash(self) -> None:
        """Power loss: everything not fsynced is gone."""
        if self.process is not None:
            with contextlib.suppress(ProcessLookupError):
                self.process.send_signal(signal.SIGKILL)
            self.process.wait()
            self.process = None
        self.crashes += 1
        self.unmount()

    def unmount(self) -> None:
        subprocess.run(["fusermount3", "-u", "-z", str(self.mountpoint)], capture_output=True, check=False)
        if self.process is not None:
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None


def main() -> None:
    import mfusepy

    from tests.lazyfs_operations import LazyOperations

    backing, mountpoint = sys.argv[1], sys.argv[2]
    mfusepy.FUSE(LazyOperations(backing), mountpoint, foreground=True, nothreads=True, fsname="lazyfs")


if __name__ == "__main__":
    main()
