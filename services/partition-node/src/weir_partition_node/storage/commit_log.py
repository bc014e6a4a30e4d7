"""`CommitLog`: one node's commit log, the append-only file every partition's record batches go to
(issue 53, docs/design-node-commit.md; RocketMQ's CommitLog). Not wired into the node yet: the
partition logs still keep their records in SQLite.

A commit tick appends the frames of every partition (`append`, one `write` per segment touched) and
makes them durable together (`sync`, one `fsync` per file touched); acknowledgements follow the sync.
Readers address a frame by its **position**: the byte offset of its header in the whole log.

Layout: a directory of **segments**, each named by the position of its first byte (20 digits,
``00000000000000000000.log``), contiguous: a segment starts where the one before it ends. A segment
rolls (the next append opens a new one) once it holds `segment_bytes_max` bytes or more. A frame is
``FRAME`` (a CRC32C of the rest of the header, the payload's length and CRC32C, the partition id
and the kind) and then the payload. The header has a checksum of its own so that a damaged length
is never taken for a write cut short by the end of the file. A partition id is the node catalog's
number for one stream partition, and the kind says what the payload is (a record batch, ...); both
are the caller's.

Recovery (`open`): only the last segment can hold a write that was not synced when the node stopped.
It is read frame by frame; what follows the last whole frame is a **torn tail**, truncated, when it
is one: a frame cut short by the end of the file (its header whole and checked), or zeros to the end
(a file the file system extended but did not fill). A frame that fails its check with other data
after it is damage, not a torn write: `CorruptLogError`, nothing truncated (the node then rebuilds
from a replica, as for a damaged file). Acknowledged frames were synced, so a torn tail never holds
one. Not handled yet: a torn write whose later pages reached the disk while an earlier one did not
reads as damage (a recovery point, the position last known synced, would tell them apart).

Bounds: a payload is at most MAX_PAYLOAD_BYTES; a recovery reads the last segment in chunks of
RECOVERY_CHUNK_BYTES; nothing allocates in proportion to a length it has not checked.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, NamedTuple

import google_crc32c
from weir.errors import CorruptRecordError

# header CRC32C (of the rest of the header), payload length, payload CRC32C, partition id, kind
FRAME = struct.Struct("<IIIQB3x")
_HEADER_CHECKED_FROM = 4
MAX_PAYLOAD_BYTES = 64 * 1024 * 1024
DEFAULT_SEGMENT_BYTES_MAX = 256 * 1024 * 1024
RECOVERY_CHUNK_BYTES = 1024 * 1024
_SUFFIX = ".log"
_NAME_DIGITS = 20


class CorruptLogError(CorruptRecordError):
    """The commit log is damaged where a torn write cannot explain it (the message says where)."""


class Frame(NamedTuple):
    """One frame read back: the position of its header, its partition id, kind and payload."""

    position: int
    partition_id: int
    kind: int
    payload: bytes


@dataclass(frozen=True, slots=True)
class Recovery:
    """What `open` found: the log's end, and the torn tail it truncated (bytes; 0 = none)."""

    end_position: int
    truncated_bytes: int


def encode_frame(partition_id: int, kind: int, payload: bytes) -> bytes:
    """One frame's bytes. Errors: ValueError for a payload over MAX_PAYLOAD_BYTES, a partition id
    outside 0..2**64-1 or a kind outside 0..255."""
    if len(payload) > MAX_PAYLOAD_BYTES:
        raise ValueError(f"payload: at most {MAX_PAYLOAD_BYTES} bytes, got {len(payload)}")
    if not 0 <= partition_id < 2**64 or not 0 <= kind < 256:
        raise ValueError(f"partition id {partition_id} or kind {kind} out of range")
    header = bytearray(FRAME.pack(0, len(payload), _crc32c(payload), partition_id, kind))
    struct.pack_into("<I", header, 0, _crc32c(bytes(header[_HEADER_CHECKED_FROM:])))
    return bytes(header) + payload


def _crc32c(data: bytes) -> int:
    return int(google_crc32c.value(data))


def segment_name(position: int) -> str:
    return f"{position:0{_NAME_DIGITS}d}{_SUFFIX}"


def segment_positions(directory: Path) -> list[int]:
    """The first positions of the segments in `directory`, ascending (other files are ignored)."""
    positions = []
    for path in directory.iterdir():
        stem = path.name[: -len(_SUFFIX)]
        if path.name.endswith(_SUFFIX) and len(stem) == _NAME_DIGITS and stem.isdigit():
            positions.append(int(stem))
    return sorted(positions)


class CommitLog:
    """See the module docstring. One writer (the node's commit step); reads may come from any thread
    once the frames they read were appended. Not thread-safe for writes."""

    def __init__(self, directory: Path, segments: list[tuple[int, int]], segment_bytes_max: int) -> None:
        self.directory = directory
        self.segment_bytes_max = segment_bytes_max
        # (first position, size) of each segment, ascending; the last one is written.
        self._segments = segments
        self._fd = os.open(directory / segment_name(segments[-1][0]), os.O_WRONLY | os.O_APPEND)
        self._unsynced: list[int] = []  # fds written since the last sync (rolled segments' stay open)
        self._created_segment = False

    @classmethod
    def open(cls, directory: Path, *, segment_bytes_max: int = DEFAULT_SEGMENT_BYTES_MAX) -> tuple[CommitLog, Recovery]:
        """Open (or create) the log in `directory`, truncating a torn tail of the last segment.
        Errors: CorruptLogError (damage that is not a torn tail, or segments that are not
        contiguous), OSError."""
        directory.mkdir(parents=True, exist_ok=True)
        positions = segment_positions(directory)
        if not positions:
            (directory / segment_name(0)).touch()
            _sync_directory(directory)
            positions = [0]
        sizes = [(directory / segment_name(position)).stat().st_size for position in positions]
        for index in range(1, len(positions)):
            if positions[index - 1] + sizes[index - 1] != positions[index]:
                raise CorruptLogError(
                    f"commit log {directory}: segment {segment_name(positions[index])} does not start where "
                    f"{segment_name(positions[index - 1])} ends ({positions[index - 1] + sizes[index - 1]})"
                )
        last = directory / segment_name(positions[-1])
        whole = _whole_bytes(last)
        truncated = sizes[-1] - whole
        if truncated:
            with open(last, "r+b") as file:
                file.truncate(whole)
                os.fsync(file.fileno())
            sizes[-1] = whole
        log = cls(directory, list(zip(positions, sizes, strict=True)), segment_bytes_max)
        return log, Recovery(positions[-1] + whole, truncated)

    @property
    def end_position(self) -> int:
        """Where the next frame goes."""
        first, size = self._segments[-1]
        return first + size

    @property
    def first_position(self) -> int:
        return self._segments[0][0]

    def append(self, frames: Sequence[tuple[int, int, bytes]]) -> list[int]:
        """Write `frames` ((partition id, kind, payload) each) after the log's end, not synced; their
        positions. Every frame is checked before anything is written, and a frame never spans two
        segments. Errors: ValueError (see `encode_frame`), OSError (the log's state on disk is then
        unknown: the caller stops writing)."""
        encoded = [encode_frame(partition_id, kind, payload) for partition_id, kind, payload in frames]
        positions: list[int] = []
        pending: list[bytes] = []
        pending_bytes = 0
        for frame in encoded:
            first, size = self._segments[-1]
            if size + pending_bytes >= self.segment_bytes_max and size + pending_bytes > 0:
                self._write(pending)
                self._roll()
                first, size = self._segments[-1]
                pending, pending_bytes = [], 0
            positions.append(first + size + pending_bytes)
            pending.append(frame)
            pending_bytes += len(frame)
        self._write(pending)
        return positions

    def _write(self, pending: list[bytes]) -> None:
        if not pending:
            return
        data = b"".join(pending)
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            view = view[written:]
        first, size = self._segments[-1]
        self._segments[-1] = (first, size + len(data))
        if self._fd not in self._unsynced:
            self._unsynced.append(self._fd)

    def _roll(self) -> None:
        """Start the next segment where the current one ends."""
        position = self.end_position
        fd = os.open(self.directory / segment_name(position), os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL)
        if self._fd not in self._unsynced:
            os.close(self._fd)
        self._fd = fd
        self._segments.append((position, 0))
        self._created_segment = True

    def sync(self) -> None:
        """Make everything appended so far durable: one fsync per segment written since the last
        sync, and the directory's when a segment was created. Errors: OSError."""
        for fd in self._unsynced:
            os.fsync(fd)
            if fd != self._fd:
                os.close(fd)
        self._unsynced = []
        if self._created_segment:
            _sync_directory(self.directory)
            self._created_segment = False

    def read(self, position: int) -> Frame:
        """The frame at `position`. Errors: CorruptRecordError when it fails its check,
        ValueError for a position outside the log or not at a frame."""
        first = self._segment_of(position)
        with open(self.directory / segment_name(first), "rb") as file:
            frame = _read_frame(file, position - first, position)
        if frame is None:
            raise ValueError(f"position {position}: no whole frame there")
        return frame

    def scan(self, from_position: int) -> Iterator[Frame]:
        """Every frame from `from_position` (a frame's position, or the log's first) to the end, in
        order: how an index is brought up to the log's end. Errors: CorruptRecordError."""
        position = max(from_position, self.first_position)
        for first, size in list(self._segments):
            if first + size <= position:
                continue
            with open(self.directory / segment_name(first), "rb") as file:
                offset = position - first
                while offset < size:
                    frame = _read_frame(file, offset, first + offset)
                    if frame is None:
                        raise CorruptLogError(f"commit log {self.directory}: no whole frame at {first + offset}")
                    yield frame
                    offset += FRAME.size + len(frame.payload)
            position = first + size

    def delete_segments_before(self, position: int) -> int:
        """Remove every segment that ends at or before `position` (never the one being written);
        the bytes freed. Errors: OSError."""
        freed = 0
        while len(self._segments) > 1 and sum(self._segments[0]) <= position:
            first, size = self._segments.pop(0)
            (self.directory / segment_name(first)).unlink()
            freed += size
        if freed:
            _sync_directory(self.directory)
        return freed

    def close(self) -> None:
        for fd in {*self._unsynced, self._fd}:
            os.close(fd)
        self._unsynced = []

    def _segment_of(self, position: int) -> int:
        for first, size in self._segments:
            if first <= position < first + size:
                return first
        raise ValueError(f"position {position}: outside the log ({self.first_position}..{self.end_position})")


def _read_frame(file: BinaryIO, offset: int, position: int) -> Frame | None:
    """The frame at `offset` of an open segment, None when it is cut short by the end of the file.
    Errors: CorruptRecordError when its header or payload fails its CRC32C."""
    header = _read_at(file, offset, FRAME.size)
    if len(header) < FRAME.size:
        return None
    header_crc, length, payload_crc, partition_id, kind = FRAME.unpack(header)
    if _crc32c(header[_HEADER_CHECKED_FROM:]) != header_crc or length > MAX_PAYLOAD_BYTES:
        raise CorruptRecordError(f"commit log frame at {position}: its header fails its CRC32C")
    payload = _read_at(file, offset + FRAME.size, length)
    if len(payload) < length:
        return None
    if _crc32c(payload) != payload_crc:
        raise CorruptRecordError(f"commit log frame at {position}: its payload fails its CRC32C")
    return Frame(position, partition_id, kind, payload)


def _whole_bytes(path: Path) -> int:
    """How many bytes from the start of segment `path` are whole frames; what follows is a torn
    tail (a frame cut short by the end of the file, or zeros to the end). Errors: CorruptLogError
    when what follows a bad frame is neither (module docstring)."""
    size = path.stat().st_size
    offset = 0
    with open(path, "rb") as file:
        while offset < size:
            try:
                frame = _read_frame(file, offset, offset)
            except CorruptRecordError as error:
                if _all_zero(file, offset, size):
                    return offset
                raise CorruptLogError(
                    f"commit log segment {path.name}: {error}, and data follows it (damage, not a torn "
                    "write); nothing truncated"
                ) from None
            if frame is None:
                return offset  # the last write was cut short
            offset += FRAME.size + len(frame.payload)
    return offset


def _read_at(file: BinaryIO, offset: int, length: int) -> bytes:
    file.seek(offset)
    return file.read(length)


def _all_zero(file: BinaryIO, start: int, end: int) -> bool:
    """Whether bytes start..end of the segment are all zero, read RECOVERY_CHUNK_BYTES at a time."""
    position = start
    while position < end:
        chunk = _read_at(file, position, min(RECOVERY_CHUNK_BYTES, end - position))
        if not chunk or chunk.count(0) != len(chunk):
            return False
        position += len(chunk)
    return True


def _sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
