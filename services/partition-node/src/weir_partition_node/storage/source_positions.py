"""How a partition log stores its source positions (`CommitBatch.source_positions`; sources.py).

A sourcing stream's tail records how far it has read each source partition: the position is
partition state beside the log, like the consumer store, never a record in it (a record would
show through every API and take a seq of the user's). One row is (source stream, source
partition, at_seq, last_sourced_seq): every source message up to last_sourced_seq was settled by
records at seqs up to at_seq of this log. Rows are written in the commit that stores those
records, so a position is exactly as durable as what it describes, on every copy.

A copy keeps, per source partition, its newest KEPT_PER_SOURCE rows rather than one: a divergent
tail's cut (`CommitBatch.msg_ids_after`, TruncateTail) drops the rows above the cut, and the newest
row left still describes records the copy holds. `newest` picks the position to resume from.
`SqliteSourcePositions` keeps them in the SQLite log's `source_positions` table (the memory log
keeps the same rows in a dict).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable

from weir_partition_node.storage.base import CommitBatch, SourcePosition, SourcePositionRow

KEPT_PER_SOURCE = 8  # rows kept per source partition (older ones go as newer ones come)

TABLE = """CREATE TABLE IF NOT EXISTS source_positions (
    source_stream TEXT NOT NULL,
    source_partition INTEGER NOT NULL,
    at_seq INTEGER NOT NULL,
    last_sourced_seq INTEGER NOT NULL,
    PRIMARY KEY (source_stream, source_partition, at_seq)
) WITHOUT ROWID"""


def merged(
    stored: dict[tuple[str, int], dict[int, int]], rows: Iterable[SourcePositionRow], cut_after: int | None
) -> dict[tuple[str, int], dict[int, int]]:
    """`stored` ((source stream, partition) -> {at_seq: last_sourced_seq}) after a commit: the rows
    above `cut_after` dropped (None: no cut), `rows` added (a position never moves back: a row
    below one already held at or before its at_seq is ignored), the newest KEPT_PER_SOURCE kept.
    Pure; returns a new mapping."""
    result = {
        key: {at_seq: seq for at_seq, seq in by_seq.items() if cut_after is None or at_seq <= cut_after}
        for key, by_seq in stored.items()
    }
    for stream, partition, at_seq, last_sourced_seq in rows:
        by_seq = result.setdefault((stream, partition), {})
        held = max((seq for at, seq in by_seq.items() if at <= at_seq), default=-1)
        if last_sourced_seq > held:
            by_seq[at_seq] = last_sourced_seq
    for key, by_seq in result.items():
        if len(by_seq) > KEPT_PER_SOURCE:
            result[key] = dict(sorted(by_seq.items())[-KEPT_PER_SOURCE:])
    return {key: by_seq for key, by_seq in result.items() if by_seq}


def newest(stored: dict[tuple[str, int], dict[int, int]]) -> dict[tuple[str, int], SourcePosition]:
    """Each source partition's position to resume from: its row with the highest at_seq."""
    positions: dict[tuple[str, int], SourcePosition] = {}
    for key, by_seq in stored.items():
        at_seq = max(by_seq)
        positions[key] = SourcePosition(by_seq[at_seq], at_seq)
    return positions


class SqliteSourcePositions:
    """The rows in the SQLite log's `source_positions` table (writes on the commit thread)."""

    @staticmethod
    def load(db: sqlite3.Connection) -> dict[tuple[str, int], dict[int, int]]:
        stored: dict[tuple[str, int], dict[int, int]] = {}
        for stream, partition, at_seq, seq in db.execute(
            "SELECT source_stream, source_partition, at_seq, last_sourced_seq FROM source_positions"
        ):
            stored.setdefault((stream, partition), {})[at_seq] = seq
        return stored

    def store(self, db: sqlite3.Connection, batch: CommitBatch) -> None:
        """The batch's rows, inside the caller's transaction (see `merged` for the rules)."""
        if not batch.source_positions and batch.msg_ids_after is None:
            return
        before = self.load(db)
        after = merged(before, batch.source_positions, batch.msg_ids_after)
        if after == before:
            return
        db.execute("DELETE FROM source_positions")
        db.executemany(
            "INSERT INTO source_positions (source_stream, source_partition, at_seq, last_sourced_seq) "
            "VALUES (?, ?, ?, ?)",
            [(stream, partition, at, seq) for (stream, partition), rows in after.items() for at, seq in rows.items()],
        )
