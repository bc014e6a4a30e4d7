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
import errno
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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


def _operations_class() -> type:
    import mfusepy

    class LazyOperations(mfusepy.Operations):  # type: ignore[misc]
        use_ns = True

        def __init__(self, backing: str) -> None:
            self.backing = backing
            self.files: dict[str, LazyFile] = {}  # by path, while the name exists
            self.handles: dict[int, LazyFile] = {}
            self.next_handle = 1

        def _real(self, path: str) -> str:
            return os.path.join(self.backing, path.lstrip("/"))

        def _file(self, path: str) -> LazyFile:
            lazy = self.files.get(path)
            if lazy is None:
                lazy = self.files[path] = LazyFile(self._real(path))
            return lazy

        def _handle(self, lazy: LazyFile) -> int:
            handle = self.next_handle
            self.next_handle += 1
            self.handles[handle] = lazy
            return handle

        def getattr(self, path: str, fh: int | None = None) -> dict[str, Any]:
            status = os.lstat(self._real(path))
            attributes = {key: getattr(status, key) for key in ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size")}
            attributes.update(st_atime=status.st_atime_ns, st_mtime=status.st_mtime_ns, st_ctime=status.st_ctime_ns)
            lazy = self.handles.get(fh) if fh else self.files.get(path)
            if lazy is not None:
                attributes["st_size"] = lazy.size
            return attributes

        def readdir(self, path: str, fh: int) -> list[str]:
            return [".", "..", *os.listdir(self._real(path))]

        def statfs(self, path: str) -> dict[str, int]:
            status = os.statvfs(self._real(path))
            return {
                key: getattr(status, key)
                for key in (
                    "f_bsize",
                    "f_frsize",
                    "f_blocks",
                    "f_bfree",
                    "f_bavail",
                    "f_files",
                    "f_ffree",
                    "f_favail",
                    "f_namemax",
                )
            }

        def access(self, path: str, amode: int) -> int:
            if not os.access(self._real(path), amode):
                raise OSError(errno.EACCES, "no access")
            return 0

        def mkdir(self, path: str, mode: int) -> int:
            os.mkdir(self._real(path), mode)
            return 0

        def rmdir(self, path: str) -> int:
            os.rmdir(self._real(path))
            return 0

        def chmod(self, path: str, mode: int) -> int:
            os.chmod(self._real(path), mode)
            return 0

        def chown(self, path: str, uid: int, gid: int) -> int:
            os.chown(self._real(path), uid, gid)
            return 0

        def utimens(self, path: str, times: tuple[int, int] | None = None) -> int:
            if times is None:
                os.utime(self._real(path))
            else:
                os.utime(self._real(path), ns=times)
            return 0

        def create(self, path: str, mode: int, fi: Any = None) -> int:
            os.close(os.open(self._real(path), os.O_CREAT | os.O_WRONLY, mode))
            return self._handle(self._file(path))

        def open(self, path: str, flags: int) -> int:
            lazy = self._file(path)
            if flags & os.O_TRUNC:
                lazy.truncate(0)
            return self._handle(lazy)

        def read(self, path: str, size: int, offset: int, fh: int) -> bytes:
            return self.handles[fh].read(size, offset)

        def write(self, path: str, data: bytes, offset: int, fh: int) -> int:
            return self.handles[fh].write(data, offset)

        def truncate(self, path: str, length: int, fh: int | None = None) -> int:
            (self.handles[fh] if fh else self._file(path)).truncate(length)
            return 0

        def fsync(self, path: str, datasync: int, fh: int) -> int:
            self.handles[fh].sync()
            return 0

        def fsyncdir(self, path: str, datasync: int, fh: int) -> int:
            descriptor = os.open(self._real(path), os.O_RDONLY)
            try:
                os.fsync(descriptor)
            finally:
                os.close(descriptor)
            return 0

        def flush(self, path: str, fh: int) -> int:
            return 0  # close(2) does not make anything durable

        def release(self, path: str, fh: int) -> int:
            self.handles.pop(fh, None)  # the file's unsynced pages stay (they are the page cache's)
            return 0

        def unlink(self, path: str) -> int:
            os.unlink(self._real(path))
            self.files.pop(path, None)  # still reachable through open handles, as an unlinked file is
            return 0

        def rename(self, old: str, new: str) -> int:
            os.rename(self._real(old), self._real(new))
            self.files.pop(new, None)
            for path in [path for path in self.files if path == old or path.startswith(old + "/")]:
                self.files[new + path[len(old) :]] = self.files.pop(path)  # a directory moves its files
            return 0

    return LazyOperations


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

    backing, mountpoint = sys.argv[1], sys.argv[2]
    mfusepy.FUSE(_operations_class()(backing), mountpoint, foreground=True, nothreads=True, fsname="lazyfs")


if __name__ == "__main__":
    main()
