"""`MemoryPartitionLog`: a partition log kept in process memory (storage kind MEMORY).

Same contract as `SqlitePartitionLog` (one test suite runs against both) except durability: a node
restart loses everything. Records still carry and verify their checksum.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass

from weir_partition_node.storage import held_resolutions, msgids, source_positions
from weir_partition_node.storage.base import (
    CommitBatch,
    HeldResolution,
    LogState,
    Record,
    RowInfo,
    ScrubPage,
    SourcePosition,
    StoredConsumer,
    verify,
)


@dataclass(slots=True)
class _Stored:
    ts_ms: int
    subject: str
    crc: int
    record: bytes


class MemoryPartitionLog:
    """A `PartitionLog` in dictionaries; seqs kept sorted for range reads."""

    def __init__(self, stream: str, partition: int) -> None:
        self.stream = stream
        self.partition = partition
        self._messages: dict[int, _Stored] = {}
        self._seqs: list[int] = []  # sorted
        self._by_subject: dict[str, list[int]] = {}  # subject -> sorted seqs
        self._changes: dict[int, tuple[int, bytes]] = {}
        self._change_seqs: list[int] = []
        self._last_seq = 0
        self._consumers: dict[str, tuple[int, ...]] = {}  # name -> state row without the name
        self._pending: dict[str, dict[int, tuple[int, int, int]]] = {}
        self._msg_id_rows: list[msgids.MsgIdRow] = []  # ascending by seq, as the SQLite log keeps them
        self._expiries: dict[int, int] = {}  # seq -> expires_at_ms, for stored messages with a TTL
        self._source_positions: dict[tuple[str, int], dict[int, int]] = {}  # as storage/source_positions.py
        self._held_resolutions: dict[int, tuple[int, int]] = {}  # as storage/held_resolutions.py

    def commit(self, batch: CommitBatch) -> None:
        self._check(batch)  # first, so a failing batch changes nothing (atomicity)
        for record in batch.records:
            self._insert(record)
        self._expiries.update(batch.expiries)
        for seq in batch.remove_seqs:
            self._remove(seq)
        if batch.truncate_before > 0:
            cut = bisect.bisect_left(self._seqs, batch.truncate_before)
            for seq in self._seqs[:cut]:
                self._remove_index(seq)
            del self._seqs[:cut]
        for change_seq, ts_ms, record_bytes in batch.changes:
            self._changes[change_seq] = (ts_ms, record_bytes)
            bisect.insort(self._change_seqs, change_seq)
        if batch.drop_changes_before > 0:
            cut = bisect.bisect_left(self._change_seqs, batch.drop_changes_before)
            for change_seq in self._change_seqs[:cut]:
                del self._changes[change_seq]
            del self._change_seqs[:cut]
        self._store_consumers(batch)
        self._store_msg_ids(batch)
        if batch.source_positions or batch.msg_ids_after is not None:
            self._source_positions = source_positions.merged(
                self._source_positions, batch.source_positions, batch.msg_ids_after
            )
        if batch.held_resolutions or batch.msg_ids_after is not None:
            self._held_resolutions = held_resolutions.merged(
                self._held_resolutions, batch.held_resolutions, batch.msg_ids_after
            )
        self._last_seq = batch.last_seq

    def _check(self, batch: CommitBatch) -> None:
        """Refuse (ValueError) a batch that would store a seq twice, or duplicate-window rows out of order."""
        for record in batch.records:
            if record[0] in self._messages:
                raise ValueError(f"seq {record[0]} already stored")
        if batch.msg_ids:
            rows = self._msg_id_rows
            kept = [row for row in rows if batch.msg_ids_after is None or row.first_seq <= batch.msg_ids_after]
            stored_through = kept[-1].last_seq if kept else 0
            if batch.msg_ids_after is not None:
                stored_through = min(stored_through, batch.msg_ids_after)
            msgids.check_appended([seq for seq, _, _ in batch.msg_ids], stored_through)

    def _store_consumers(self, batch: CommitBatch) -> None:
        for name in batch.consumer_deletes:
            self._consumers.pop(name, None)
            self._pending.pop(name, None)
        for row in batch.consumer_states:
            self._consumers[row[0]] = row[1:]
        for name, seq in batch.pending_deletes:
            self._pending.get(name, {}).pop(seq, None)
        for name, seq, delivered_at, count, redeliver_at in batch.pending_upserts:
            self._pending.setdefault(name, {})[seq] = (delivered_at, count, redeliver_at)

    def _store_msg_ids(self, batch: CommitBatch) -> None:
        rows = self._msg_id_rows
        if batch.msg_ids_after is not None:
            after = batch.msg_ids_after
            kept = [row for row in rows if row.first_seq <= after]
            if kept and kept[-1].last_seq > after:
                cut = msgids.trimmed(kept[-1], keep_through=after)
                kept[-1:] = [cut] if cut is not None else []
            rows[:] = kept
        rows.extend(msgids.group(batch.msg_ids))
        if batch.msg_id_retention is not None:
            stored_before_ms, max_ids = batch.msg_id_retention
            expired = next((index for index, row in enumerate(rows) if row.stored_at_ms >= stored_before_ms), len(rows))
            del rows[:expired]
            excess = sum(len(row.entries) for row in rows) - max_ids
            while excess > 0 and rows:
                drop = min(excess, len(rows[0].entries))
                cut = msgids.trimmed(rows[0], drop_oldest=drop)
                rows[:1] = [cut] if cut is not None else []
                excess -= drop

    def _insert(self, record: Record) -> None:
        seq, ts_ms, subject, _, crc, encoded = record
        self._messages[seq] = _Stored(ts_ms, subject, crc, encoded)
        if not self._seqs or seq > self._seqs[-1]:
            self._seqs.append(seq)
        else:
            bisect.insort(self._seqs, seq)
        bisect.insort(self._by_subject.setdefault(subject, []), seq)

    def _remove_index(self, seq: int) -> None:
        stored = self._messages.pop(seq)
        self._expiries.pop(seq, None)
        seqs = self._by_subject[stored.subject]
        seqs.pop(bisect.bisect_left(seqs, seq))
        if not seqs:
            del self._by_subject[stored.subject]

    def _remove(self, seq: int) -> None:
        if seq not in self._messages:
            return
        self._remove_index(seq)
        self._seqs.pop(bisect.bisect_left(self._seqs, seq))

    def state(self) -> LogState:
        return LogState(
            msg_count=len(self._messages),
            bytes=sum(len(stored.record) for stored in self._messages.values()),
            first_seq=self._seqs[0] if self._seqs else self._last_seq + 1,
            last_seq=self._last_seq,
            last_change_seq=self._change_seqs[-1] if self._change_seqs else 0,
        )

    def scrub(self, from_seq: int, max_bytes: int) -> ScrubPage:
        # Nothing rests on a disk (and the event loop changes these structures: no worker thread
        # may walk them). Reads still verify every record's checksum.
        return ScrubPage(0, 0, (), from_seq, done=True)

    def integrity(self, timeout_s: float, *, full: bool = False) -> str:
        return "ok"  # nothing rests on a disk

    def _verified(self, seq: int) -> bytes:
        stored = self._messages[seq]
        return verify(self.stream, self.partition, seq, stored.record, stored.crc)

    def read(self, from_seq: int, max_messages: int, max_bytes: int) -> list[tuple[int, bytes]]:
        start = bisect.bisect_left(self._seqs, from_seq)
        return self._bounded(self._seqs[start : start + max_messages], max_bytes)

    def _bounded(self, seqs: list[int], max_bytes: int) -> list[tuple[int, bytes]]:
        """Verified (seq, record) of `seqs` until the next would pass `max_bytes` (the first always goes)."""
        result: list[tuple[int, bytes]] = []
        total = 0
        for seq in seqs:
            record = self._verified(seq)
            total += len(record)
            if result and total > max_bytes:
                break
            result.append((seq, record))
        return result

    def get(self, seq: int) -> bytes | None:
        return self._verified(seq) if seq in self._messages else None

    def latest_at_subject(self, subject: str) -> bytes | None:
        seqs = self._by_subject.get(subject)
        return self._verified(seqs[-1]) if seqs else None

    def subject_last_seq(self, subject: str) -> int:
        seqs = self._by_subject.get(subject)
        return seqs[-1] if seqs else 0

    def expired_seqs(self, now_ms: int, limit: int) -> list[int]:
        due = sorted((at, seq) for seq, at in self._expiries.items() if at <= now_ms)
        return [seq for _, seq in due[:limit]]

    def earliest_expiry_ms(self) -> int:
        return min(self._expiries.values(), default=0)

    def subject_seq_at_or_below(self, subject: str, max_seq: int) -> int:
        seqs = self._by_subject.get(subject, [])
        index = bisect.bisect_right(seqs, max_seq)
        return seqs[index - 1] if index else 0

    def next_subject_seq(self, subject: str, after_seq: int) -> int:
        seqs = self._by_subject.get(subject, [])
        index = bisect.bisect_right(seqs, after_seq)
        return seqs[index] if index < len(seqs) else 0

    def subjects_with_prefix(self, prefix: str, limit: int) -> list[str]:
        return sorted(subject for subject in self._by_subject if subject.startswith(prefix))[:limit]

    def scan_subject(self, subject: str, from_seq: int, limit: int, max_bytes: int) -> list[tuple[int, bytes]]:
        seqs = self._by_subject.get(subject, [])
        start = bisect.bisect_left(seqs, from_seq)
        return self._bounded(seqs[start : start + limit], max_bytes)

    def _row(self, seq: int) -> RowInfo:
        stored = self._messages[seq]
        return RowInfo(seq, len(stored.record), stored.ts_ms)

    def subject_excess(self, subject: str, keep: int) -> list[RowInfo]:
        seqs = self._by_subject.get(subject, [])
        excess = seqs[: max(0, len(seqs) - keep)]
        return [self._row(seq) for seq in excess]

    def oldest(self, from_seq: int, limit: int) -> list[RowInfo]:
        start = bisect.bisect_left(self._seqs, from_seq)
        return [self._row(seq) for seq in self._seqs[start : start + limit]]

    def checksums(self, from_seq: int, limit: int) -> list[tuple[int, int]]:
        start = bisect.bisect_left(self._seqs, from_seq)
        return [(seq, self._messages[seq].crc) for seq in self._seqs[start : start + limit]]

    def read_changes(self, from_change_seq: int, to_change_seq: int, limit: int) -> list[tuple[int, bytes]]:
        start = bisect.bisect_left(self._change_seqs, from_change_seq)
        result: list[tuple[int, bytes]] = []
        for change_seq in self._change_seqs[start:]:
            if change_seq > to_change_seq or len(result) >= limit:
                break
            result.append((change_seq, self._changes[change_seq][1]))
        return result

    def read_matching(
        self, from_seq: int, max_messages: int, max_bytes: int, accepts: Callable[[str], bool] | None, scan_limit: int
    ) -> tuple[list[tuple[int, bytes]], int, bool]:
        limit = max_messages if accepts is None else scan_limit
        start = bisect.bisect_left(self._seqs, from_seq)
        found = self._seqs[start : start + limit]
        result: list[tuple[int, bytes]] = []
        total = 0
        last = from_seq - 1
        for seq in found:
            stored = self._messages[seq]
            if accepts is None or accepts(stored.subject):
                if len(result) >= max_messages or (result and total + len(stored.record) > max_bytes):
                    return result, last, False
                total += len(stored.record)
                result.append((seq, self._verified(seq)))
            last = seq
        return result, last, len(found) < limit

    def rows(self, seqs: list[int]) -> list[RowInfo]:
        return [self._row(seq) for seq in sorted(seqs) if seq in self._messages]

    def count_matching(self, after_seq: int, accepts: Callable[[str], bool] | None) -> int:
        start = bisect.bisect_right(self._seqs, after_seq)
        if accepts is None:
            return len(self._seqs) - start
        return sum(1 for seq in self._seqs[start:] if accepts(self._messages[seq].subject))

    def count_newest_per_subject(self, after_seq: int, until_seq: int, accepts: Callable[[str], bool] | None) -> int:
        count = 0
        for subject, seqs in self._by_subject.items():
            below = bisect.bisect_right(seqs, until_seq)
            if below and seqs[below - 1] > after_seq and (accepts is None or accepts(subject)):
                count += 1
        return count

    def last_matching_seq(self, accepts: Callable[[str], bool] | None) -> int:
        if accepts is None:
            return self._seqs[-1] if self._seqs else 0
        return max((seqs[-1] for subject, seqs in self._by_subject.items() if accepts(subject)), default=0)

    def first_seq_at_time(self, ts_ms: int) -> int:
        return next((seq for seq in self._seqs if self._messages[seq].ts_ms >= ts_ms), 0)

    def load_consumers(self) -> dict[str, StoredConsumer]:
        result: dict[str, StoredConsumer] = {}
        for name, row in self._consumers.items():
            pending = sorted((seq, *entry) for seq, entry in self._pending.get(name, {}).items())
            result[name] = StoredConsumer(row[0], row[1], row[2], row[3:9], pending, row[9])  # type: ignore[arg-type]
        return result

    def recent_msg_ids(self, stored_since_ms: int, limit: int) -> list[tuple[str, int, int]]:
        newest: list[tuple[str, int, int]] = []
        for row in reversed(self._msg_id_rows):
            if row.stored_at_ms < stored_since_ms:
                continue
            for seq, msg_id in reversed(row.entries):
                newest.append((msg_id, seq, row.stored_at_ms))
                if len(newest) >= limit:
                    return newest[::-1]
        return newest[::-1]

    def source_positions(self) -> dict[tuple[str, int], SourcePosition]:
        return source_positions.newest(self._source_positions)

    def held_resolution(self, held_seq: int) -> HeldResolution | None:
        row = self._held_resolutions.get(held_seq)
        return None if row is None else HeldResolution(*row)

    def keep_tail(self, enabled: bool) -> None:
        pass  # everything is in memory already

    def stop_checkpoints(self) -> None:
        pass

    def close(self) -> None:
        pass

    def destroy(self) -> None:
        self._messages.clear()
        self._seqs.clear()
        self._by_subject.clear()
        self._changes.clear()
        self._change_seqs.clear()
        self._consumers.clear()
        self._pending.clear()
        self._msg_id_rows.clear()
        self._source_positions.clear()
        self._held_resolutions.clear()
