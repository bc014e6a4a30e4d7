"""`BatchCache`: a primary's newest commits as the record batches FetchReplication ships.

A primary with followers turns each commit's records into one record batch (`record_batch.py`) as
soon as the commit is durable, from what the commit already knows (seq, timestamp, subject, stored
CRC-32, and the msg_id, schedule and expiry noted when each record was made): no record is decoded
again to ship it. A follower whose log ends where a cached batch starts (the end of an earlier
commit: where the last fetch left it) is answered with that batch and the ones after it, as stored;
any other position, or a batch no longer cached, is read from the log (`replication_batches`).

What the cache holds is always what the log holds: a batch any of whose records was removed since
(a work-queue ack, a dead letter, retention) is dropped, as is every batch below a truncation, so a
follower never gets a record back that the primary removed. What every follower holds is dropped
as their fetches report it (`forget_through`), so the cache holds the commits in flight, within
`max_bytes` (oldest first: a follower far behind reads the log); it is emptied when the partition
stops leading or its leader epoch changes. Event loop only.
"""

from __future__ import annotations

import logging
import struct
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from weir_partition_node import record_batch
from weir_partition_node.record_batch import BatchRecord, RecordBatchError
from weir_partition_node.storage.base import Record

logger = logging.getLogger(__name__)

DEFAULT_BATCH_CACHE_BYTES = 2 * 1024 * 1024

# A record's (msg_id, scheduled_seq, expires_at_ms) when any is set, by seq.
RecordExtras = dict[int, tuple[str, int, int]]


@dataclass(slots=True, frozen=True)
class CachedBatch:
    previous_seq: int  # the seq the batch follows
    last_seq: int
    count: int
    last_crc32: int  # its last record's CRC-32 (what the next batch's log-matching check names)
    data: bytes


class BatchCache:
    """See the module docstring."""

    def __init__(self, max_bytes: int = DEFAULT_BATCH_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._batches: list[CachedBatch] = []  # ascending, contiguous or not
        self._last_seqs: list[int] = []  # their last seqs (bisect)
        self._bytes = 0
        self._leader_epoch = 0

    def __len__(self) -> int:
        return len(self._batches)

    def add(
        self,
        records: list[Record],
        extras: RecordExtras,
        *,
        leader_epoch: int,
        previous_crc32: Callable[[int], int | None],
    ) -> None:
        """Cache a durable commit's `records` (ascending, contiguous seqs after the log's previous
        end) as one batch. `previous_crc32(seq)`: the CRC-32 of the stored record at seq, asked only
        when the batch before is not cached."""
        if not records:
            return
        if leader_epoch != self._leader_epoch:
            self.clear()
            self._leader_epoch = leader_epoch
        previous_seq = records[0][0] - 1
        if self._batches and self._batches[-1].last_seq == previous_seq:
            crc32: int | None = self._batches[-1].last_crc32
        else:
            crc32 = previous_crc32(previous_seq) if previous_seq else None
        try:
            data = record_batch.encode(
                _batch_records(records, extras),
                leader_epoch=leader_epoch,
                previous_seq=previous_seq,
                previous_crc32=crc32,
            )
        except (RecordBatchError, struct.error) as error:  # not expected (publish bounds every field)
            logger.warning(
                "a commit up to seq %d is not cached as a batch (%s); followers read the log", records[-1][0], error
            )
            self.clear()
            return
        last = records[-1]
        self._batches.append(CachedBatch(previous_seq, last[0], len(records), last[4], data))
        self._last_seqs.append(last[0])
        self._bytes += len(data)
        while self._bytes > self.max_bytes and len(self._batches) > 1:
            self._drop_range(0, 1)

    def take(self, after_seq: int, max_messages: int, max_bytes: int) -> tuple[list[bytes], int] | None:
        """The cached batches from the one that follows `after_seq` on, while each follows the one
        before, within `max_messages` records and about `max_bytes` (at least one batch); and how
        many records they hold. None when no cached batch follows `after_seq`, or the first alone
        exceeds `max_messages`: read the log instead."""
        index = bisect_right(self._last_seqs, after_seq)
        if index >= len(self._batches) or self._batches[index].previous_seq != after_seq:
            return None
        taken: list[bytes] = []
        count = size = 0
        expected = after_seq
        for batch in self._batches[index:]:
            if batch.previous_seq != expected or count + batch.count > max_messages:
                break
            if taken and size + len(batch.data) > max_bytes:
                break
            taken.append(batch.data)
            count += batch.count
            size += len(batch.data)
            expected = batch.last_seq
        return (taken, count) if taken else None

    def forget_through(self, seq: int) -> None:
        """Drop the batches every follower holds: those ending at or below `seq`."""
        index = bisect_right(self._last_seqs, seq)
        if index:
            self._drop_range(0, index)

    def removed(self, seqs: Iterable[int]) -> None:
        """Drop the batches that hold any of `seqs` (removed from the log)."""
        for seq in seqs:
            index = bisect_left(self._last_seqs, seq)
            if index < len(self._batches) and self._batches[index].previous_seq < seq:
                self._drop_range(index, index + 1)

    def truncated(self, before_seq: int) -> None:
        """Drop the batches that hold any seq below `before_seq`."""
        index = bisect_left(self._last_seqs, before_seq)
        if index < len(self._batches) and self._batches[index].previous_seq + 1 < before_seq:
            index += 1
        if index:
            self._drop_range(0, index)

    def clear(self) -> None:
        self._batches.clear()
        self._last_seqs.clear()
        self._bytes = 0

    def _drop_range(self, start: int, end: int) -> None:
        self._bytes -= sum(len(batch.data) for batch in self._batches[start:end])
        del self._batches[start:end]
        del self._last_seqs[start:end]


def _batch_records(records: list[Record], extras: RecordExtras) -> list[BatchRecord]:
    batch: list[BatchRecord] = []
    for seq, ts_ms, subject, _, crc32, encoded in records:
        extra = extras.get(seq)
        if extra is None:
            batch.append(BatchRecord(seq, ts_ms, subject, encoded, crc32))
        else:
            batch.append(BatchRecord(seq, ts_ms, subject, encoded, crc32, *extra))
    return batch
