"""The reads a partition's consumers need from its SQLite log (`SqlitePartitionLog` inherits
them): deliveries in seq order filtered by subject, with the tail cache in front; pending counts;
the last matching seq; the seq at a time; and the stored cursors and pending sets at start-up.

Every record read is checked against its stored CRC (storage.base.verify): a damaged one raises
CorruptRecordError naming the stream, partition and seq, and is never returned.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable

from weir_partition_node.storage.base import SQLITE_MAX_INTEGER, RowInfo, StoredConsumer
from weir_partition_node.storage.sqlite_batches import INDEX_COLUMNS, IndexRow, fetch, read_transaction
from weir_partition_node.storage.tailcache import TailCache


def clamp(value: int) -> int:
    """API seqs are uint64; SQLite integers are signed 64-bit. No stored seq exceeds the clamp."""
    return value if value <= SQLITE_MAX_INTEGER else SQLITE_MAX_INTEGER


class SqliteConsumerReads:
    """The consumer reads of a SQLite partition log, over its read-only connection `_reader` and
    its tail cache (`_cache()`, with `_tail_lock` held)."""

    stream: str
    partition: int
    _reader: sqlite3.Connection
    _tail_lock: threading.Lock

    def _cache(self) -> TailCache | None:
        raise NotImplementedError

    def read_matching(
        self, from_seq: int, max_messages: int, max_bytes: int, accepts: Callable[[str], bool] | None, scan_limit: int
    ) -> tuple[list[tuple[int, bytes]], int, bool]:
        with self._tail_lock:
            tail = self._cache()
            matched = (
                tail.read_matching(from_seq, max_messages, max_bytes, accepts, scan_limit) if tail is not None else None
            )
        if matched is not None:
            return matched
        with read_transaction(self._reader):
            chosen, last, exhausted = self._matching_rows(from_seq, max_messages, max_bytes, accepts, scan_limit)
            return fetch(self._reader, self.stream, self.partition, chosen), last, exhausted

    def _matching_rows(
        self, from_seq: int, max_messages: int, max_bytes: int, accepts: Callable[[str], bool] | None, scan_limit: int
    ) -> tuple[list[IndexRow], int, bool]:
        """read_matching's index rows, from the index alone (no record is loaded to choose)."""
        # Unfiltered: exactly max_messages rows. Filtered: chunks sized to the request, so a dense
        # filter reads about what it returns and a sparse one stops after scan_limit rows.
        chunk = max_messages if accepts is None else min(scan_limit, max(2 * max_messages, 128))
        result: list[IndexRow] = []
        total = 0
        last = from_seq - 1
        scanned = 0
        while True:
            rows = self._reader.execute(
                f"SELECT subject, {INDEX_COLUMNS} FROM messages WHERE seq >= ? ORDER BY seq LIMIT ?",
                (clamp(last + 1), chunk),
            )
            found = 0
            try:
                for subject, *index in rows:
                    found += 1
                    seq, size = index[0], index[4]
                    if accepts is None or accepts(subject):
                        if len(result) >= max_messages or (result and total + size > max_bytes):
                            return result, last, False
                        total += size
                        result.append((seq, index[1], index[2], index[3], size))
                    last = seq
            finally:
                rows.close()
            scanned += found
            if found < chunk:
                return result, last, True
            if accepts is None or scanned >= scan_limit:
                return result, last, False

    def rows(self, seqs: list[int]) -> list[RowInfo]:
        result: list[RowInfo] = []
        for start in range(0, len(seqs), 500):
            chunk = seqs[start : start + 500]
            marks = ",".join("?" * len(chunk))
            found = self._reader.execute(
                f"SELECT seq, size, ts_ms FROM messages WHERE seq IN ({marks}) ORDER BY seq",
                [clamp(seq) for seq in chunk],
            ).fetchall()
            result.extend(RowInfo(seq, size, ts) for seq, size, ts in found)
        return result

    def count_matching(self, after_seq: int, accepts: Callable[[str], bool] | None) -> int:
        if accepts is None:
            (count,) = self._reader.execute(
                "SELECT count(*) FROM messages WHERE seq > ?", (clamp(after_seq),)
            ).fetchone()
            return int(count)
        found = self._reader.execute(
            "SELECT subject, count(*) FROM messages WHERE seq > ? GROUP BY subject", (clamp(after_seq),)
        ).fetchall()
        return sum(int(count) for subject, count in found if accepts(subject))

    def count_newest_per_subject(self, after_seq: int, until_seq: int, accepts: Callable[[str], bool] | None) -> int:
        found = self._reader.execute(
            "SELECT subject, max(seq) FROM messages WHERE seq <= ? GROUP BY subject", (clamp(until_seq),)
        ).fetchall()
        return sum(1 for subject, newest in found if newest > after_seq and (accepts is None or accepts(subject)))

    def last_matching_seq(self, accepts: Callable[[str], bool] | None) -> int:
        if accepts is None:
            (last,) = self._reader.execute("SELECT coalesce(max(seq), 0) FROM messages").fetchone()
            return int(last)
        found = self._reader.execute("SELECT subject, max(seq) FROM messages GROUP BY subject").fetchall()
        return max((int(seq) for subject, seq in found if accepts(subject)), default=0)

    def first_seq_at_time(self, ts_ms: int) -> int:
        (seq,) = self._reader.execute(
            "SELECT coalesce(min(seq), 0) FROM messages WHERE ts_ms >= ?", (clamp(ts_ms),)
        ).fetchone()
        return int(seq)

    def load_consumers(self) -> dict[str, StoredConsumer]:
        """Every consumer's cursor and pending set as of one commit: both tables are read in one
        read transaction (a commit between the two reads gave a cursor of one commit with the
        pending set of a later one, which a secondary refused)."""
        consumers: dict[str, StoredConsumer] = {}
        self._reader.execute("BEGIN")
        try:
            for name, incarnation, floor, last, *totals, until in self._reader.execute(
                "SELECT name, incarnation, ack_floor, last_delivered, delivered, acked, redelivered, dead_lettered, "
                "dropped, termed, last_per_subject_until FROM consumers"
            ):
                consumers[name] = StoredConsumer(incarnation, floor, last, (*totals,), [], until)
            for name, seq, delivered_at, count, redeliver_at in self._reader.execute(
                "SELECT consumer, seq, delivered_at_ms, deliver_count, redeliver_at_ms FROM pending "
                "ORDER BY consumer, seq"
            ):
                stored = consumers.get(name)
                if stored is not None:
                    stored.pending.append((seq, delivered_at, count, redeliver_at))
        finally:
            self._reader.execute("COMMIT")
        return consumers
