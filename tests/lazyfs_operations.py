"""The FUSE operations of tests/lazyfs.py (a separate module: it imports mfusepy, which only the
mounted process needs): every file's writes stay in `LazyFile` pages until an fsync."""

from __future__ import annotations

import errno
import os
from typing import Any

import mfusepy

from tests.lazyfs import LazyFile


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
