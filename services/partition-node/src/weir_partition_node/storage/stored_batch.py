"""Stored record batches: how a SQLite partition log keeps its records on disk (issue 25).

A commit's records are stored as one record batch, as Kafka stores them: one row of the `batches`
table holds a header, one entry per record and the records' bytes; the `messages` table is the
per-message index the API needs (seq, time, subject, size, CRC-32, and where the record lies in its
batch). A commit larger than `MAX_BATCH_BYTES` is stored as several batches, so a scrub step or a
read never loads more than about that much of one batch.

Layout (little-endian; `HEADER`, one `ENTRY` per record, then the records' bytes):

- header: magic ``WSB1``; CRC32C (Castagnoli) of every byte after this field; base seq (the first
  record's); last seq; record count; first and max timestamps (ms).
- one entry per record: seq - base seq, record length, record CRC-32 (zlib, as the index has it).

A record is an encoded weir.v1.Message with seq and ts_ms set. What happens to a batch when its
records are removed one by one (it goes with the last, and is compacted when less than a quarter
is left) is `sqlite_batches.py`'s. Reads take a record's bytes by its offset and check its own
CRC-32; the scrub checks each batch's CRC32C as well (`check`), so a damaged byte anywhere in a
batch is found, and a damaged record is never served.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Sequence

import google_crc32c
from weir_partition_node.storage.base import Record

MAGIC = b"WSB1"
# magic, crc32c, base_seq, last_seq, count, first_ts_ms, max_ts_ms
HEADER = struct.Struct("<4sIQQIQQ")
# seq delta, record length, record crc32
ENTRY = struct.Struct("<QII")
_CHECKED_FROM = 8  # the CRC32C covers the batch from the base seq on
MAX_BATCH_BYTES = 1024 * 1024


class StoredBatchError(ValueError):
    """A stored batch that is not whole and undamaged; the message says what is wrong."""


def split(records: Sequence[Record], max_bytes: int = MAX_BATCH_BYTES) -> Iterator[Sequence[Record]]:
    """`records` (a commit's, ascending by seq) in runs of about `max_bytes` of record bytes at most,
    each at least one record: one stored batch each."""
    start = size = 0
    for index, record in enumerate(records):
        if index > start and size + record[3] > max_bytes:
            yield records[start:index]
            start, size = index, 0
        size += record[3]
    if start < len(records):
        yield records[start:] if start else records


def encode(records: Sequence[Record]) -> tuple[bytes, list[int]]:
    """One stored batch of `records` (ascending by seq, at least one) and the offset of each record
    in it. Errors: StoredBatchError when `records` is empty or not ascending."""
    if not records:
        raise StoredBatchError("a stored batch holds at least one record")
    base_seq, first_ts_ms = records[0][0], records[0][1]
    offset = HEADER.size + ENTRY.size * len(records)
    offsets: list[int] = []
    entries: list[bytes] = []
    pack = ENTRY.pack
    previous = base_seq - 1
    max_ts_ms = first_ts_ms
    for seq, ts_ms, _, size, crc, _ in records:
        if seq <= previous:
            raise StoredBatchError(f"seq {seq} does not follow seq {previous}")
        previous = seq
        max_ts_ms = max(max_ts_ms, ts_ms)
        entries.append(pack(seq - base_seq, size, crc))
        offsets.append(offset)
        offset += size
    header = HEADER.pack(MAGIC, 0, base_seq, previous, len(records), first_ts_ms, max_ts_ms)
    body = b"".join((header[_CHECKED_FROM:], *entries, *[record[5] for record in records]))
    return header[:4] + struct.pack("<I", google_crc32c.value(body)) + body, offsets


def check(data: bytes) -> None:
    """Raise StoredBatchError unless `data` is a whole stored batch whose CRC32C matches."""
    if len(data) < HEADER.size:
        raise StoredBatchError(f"{len(data)} bytes: shorter than a batch header ({HEADER.size})")
    magic, crc = struct.unpack_from("<4sI", data)
    if magic != MAGIC:
        raise StoredBatchError(f"magic {magic!r}: not a stored batch ({MAGIC!r})")
    actual = google_crc32c.value(data[_CHECKED_FROM:])
    if actual != crc:
        raise StoredBatchError(f"CRC32C {actual:#010x} does not match the batch's {crc:#010x}: damaged")
