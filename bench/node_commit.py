"""What one node's commit tick costs when `K` partitions each have a batch of 100 records ready
(issue 53: "one commit per node per tick", chosen by measurement). Four ways to make the K batches
durable, as plain prototypes of the layouts issue 53 allows (not Weir's storage code):

- ``sqlite-per-partition``: today's shape: one SQLite file per partition (WAL, synchronous=FULL),
  one transaction each (the stored batch as one row, an index row per record with its subject
  index), so K commits and K fsyncs;
- ``sqlite-group``: the same files and rows, each transaction with synchronous=OFF, then one fsync
  of each touched WAL file, all in one pass: K fsyncs, no per-commit sync inside SQLite;
- ``segments``: Kafka's shape: each batch appended to its partition's segment file, one fsync per
  file, the index rows in each partition's SQLite without a sync (rebuildable from the segment);
- ``commit-log``: RocketMQ's shape: every batch appended to one node-wide log file and one fsync;
  the index rows (ConsumeQueue's role) in one node-wide SQLite without a sync, rebuildable from the
  log.

    uv run python -m bench.node_commit                      # JSON on stdout
    uv run python -m bench.node_commit --partitions 1,4,16 --ticks 200

Each tick writes K batches of 100 records of 1 KiB (one subject of 12 bytes per record). Prints per
layout and K: CPU (user + system of this process, one thread) and wall per tick in ms and CPU µs per
record. The process is pinned to CPU 0 when it can be. Compare within one run only.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import struct
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

RECORDS = 100
PAYLOAD_BYTES = 1024
LAYOUTS = ("sqlite-per-partition", "sqlite-group", "segments", "commit-log")
_INDEX = """
CREATE TABLE IF NOT EXISTS batches (partition INTEGER, base_seq INTEGER, last_seq INTEGER, location INTEGER,
    data BLOB, PRIMARY KEY (partition, base_seq));
CREATE TABLE IF NOT EXISTS messages (partition INTEGER, seq INTEGER, ts_ms INTEGER, subject TEXT, size INTEGER,
    crc INTEGER, batch_seq INTEGER, batch_offset INTEGER, PRIMARY KEY (partition, seq));
"""
_SUBJECT_INDEX = "CREATE INDEX IF NOT EXISTS messages_by_subject ON messages (partition, subject, seq)"
_FRAME = struct.Struct("<IIQI")  # length, partition, base seq, crc


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _open(path: Path, synchronous: str, subject_index: bool) -> sqlite3.Connection:
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute(f"PRAGMA synchronous={synchronous}")
    db.executescript(_INDEX)
    if subject_index:
        db.execute(_SUBJECT_INDEX)
    return db


def _batch_rows(partition: int, base_seq: int) -> list[tuple[Any, ...]]:
    """The index rows of a batch of RECORDS records from `base_seq`, one per record."""
    return [
        (partition, base_seq + i, 1_700_000_000_000, f"orders.{i:05d}", PAYLOAD_BYTES, 0, base_seq, i * PAYLOAD_BYTES)
        for i in range(RECORDS)
    ]


def _insert(db: sqlite3.Connection, partition: int, base_seq: int, data: bytes | None, rows: list[Any]) -> None:
    db.execute("INSERT INTO batches VALUES (?, ?, ?, ?, ?)", (partition, base_seq, base_seq + RECORDS - 1, 0, data))
    db.executemany("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)


class Layout:
    """One prototype over `directory` with `partitions` partitions; `tick` makes one batch per
    partition durable."""

    def __init__(self, name: str, directory: Path, partitions: int, subject_index: bool) -> None:
        self.name = name
        self.partitions = partitions
        sync = "FULL" if name == "sqlite-per-partition" else "OFF"
        if name == "commit-log":
            self.dbs = [_open(directory / "index.db", "OFF", subject_index)]
        else:
            self.dbs = [_open(directory / f"p{index}.db", sync, subject_index) for index in range(partitions)]
        self.directory = directory
        self.wal_fds: list[int] = []  # opened after the first commit made the WAL files
        if name == "segments":
            self.files = [
                os.open(directory / f"p{index}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
                for index in range(partitions)
            ]
        elif name == "commit-log":
            self.files = [os.open(directory / "commit.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND)]
        else:
            self.files = []

    def close(self) -> None:
        for db in self.dbs:
            db.close()
        for fd in (*self.wal_fds, *self.files):
            os.close(fd)

    def tick(self, base_seq: int, batches: list[tuple[bytes, list[Any]]]) -> None:
        writes: dict[str, Callable[[], None]] = {
            "sqlite-per-partition": lambda: self._sqlite(base_seq, batches, sync_wal=False),
            "sqlite-group": lambda: self._sqlite(base_seq, batches, sync_wal=True),
            "segments": lambda: self._segments(base_seq, batches),
            "commit-log": lambda: self._commit_log(base_seq, batches),
        }
        writes[self.name]()

    def _sqlite(self, base_seq: int, batches: list[tuple[bytes, list[Any]]], *, sync_wal: bool) -> None:
        for partition, (data, rows) in enumerate(batches):
            db = self.dbs[partition]
            db.execute("BEGIN")
            _insert(db, partition, base_seq, data, rows)
            db.execute("COMMIT")
        if sync_wal:
            if not self.wal_fds:
                self.wal_fds = [
                    os.open(self.directory / f"p{index}.db-wal", os.O_RDONLY) for index in range(len(batches))
                ]
            for fd in self.wal_fds:
                os.fsync(fd)

    def _segments(self, base_seq: int, batches: list[tuple[bytes, list[Any]]]) -> None:
        for partition, (data, rows) in enumerate(batches):
            os.write(self.files[partition], _FRAME.pack(len(data), partition, base_seq, 0) + data)
            db = self.dbs[partition]
            db.execute("BEGIN")
            _insert(db, partition, base_seq, None, rows)
            db.execute("COMMIT")
        for fd in self.files:
            os.fsync(fd)

    def _commit_log(self, base_seq: int, batches: list[tuple[bytes, list[Any]]]) -> None:
        os.write(
            self.files[0],
            b"".join(
                _FRAME.pack(len(data), partition, base_seq, 0) + data for partition, (data, _) in enumerate(batches)
            ),
        )
        os.fsync(self.files[0])
        db = self.dbs[0]
        db.execute("BEGIN")
        for partition, (_, rows) in enumerate(batches):
            _insert(db, partition, base_seq, None, rows)
        db.execute("COMMIT")


def run(name: str, partitions: int, ticks: int, subject_index: bool) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="weir-node-commit-") as directory:
        layout = Layout(name, Path(directory), partitions, subject_index)
        datas = [os.urandom(PAYLOAD_BYTES * RECORDS) for _ in range(partitions)]
        # Every tick's index rows are made before the clock starts: only the writes are measured.
        ticks_batches = [
            [(datas[partition], _batch_rows(partition, 1 + tick * RECORDS)) for partition in range(partitions)]
            for tick in range(ticks)
        ]
        try:
            cpu, wall = _cpu_s(), time.perf_counter()
            for tick in range(ticks):
                layout.tick(1 + tick * RECORDS, ticks_batches[tick])
            cpu, wall = _cpu_s() - cpu, time.perf_counter() - wall
        finally:
            layout.close()
    records = ticks * partitions * RECORDS
    return {
        "cpu_ms_per_tick": round(cpu / ticks * 1000, 3),
        "wall_ms_per_tick": round(wall / ticks * 1000, 3),
        "cpu_us_per_record": round(cpu / records * 1e6, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--partitions", default="1,4,16", help="comma-separated partition counts K")
    parser.add_argument("--ticks", type=int, default=200, help="ticks per layout and K")
    parser.add_argument("--layouts", default=",".join(LAYOUTS))
    parser.add_argument(
        "--no-subject-index", action="store_true", help="leave out the per-record subject index (what it costs)"
    )
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, {0})
    results: dict[str, dict[str, Any]] = {}
    for partitions in (int(value) for value in args.partitions.split(",")):
        for name in args.layouts.split(","):
            results.setdefault(name, {})[f"K={partitions}"] = run(
                name, partitions, args.ticks, not args.no_subject_index
            )
    summary = {"records_per_batch": RECORDS, "payload_bytes": PAYLOAD_BYTES, "subject_index": not args.no_subject_index}
    print(json.dumps({**summary, "results": results}, indent=1))


if __name__ == "__main__":
    main()
