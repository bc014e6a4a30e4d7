"""What a commit of 100 records costs in the row-per-message layout (before issue 25) and in two
record-batch layouts, as plain SQL prototypes: the measurement issue 25 took before it built the
second (`batch+index`, now `SqlitePartitionLog`'s layout: storage/sqlite_batches.py). The real
log's commit cost is `make bench-commit` (bench.commit_latency).

    uv run python -m bench.storage_layout                 # JSON on stdout
    uv run python -m bench.storage_layout --commits 2000 --sync off

Layouts, each in a fresh SQLite file in WAL mode, committing `--commits` transactions of 100 records
of 1 KiB plus one change-feed row, a WAL checkpoint every 100 commits, this process pinned to CPU 0
(`--sync off`: synchronous=NORMAL, as a node with WEIR_NODE_FSYNC=off):

- ``rows``: the earlier `messages` table and its subject index, one row per message (the table,
  index, INSERT and pragmas `SqlitePartitionLog` had; a commit's other work, msg_ids and consumer rows, is
  left out of every layout alike);
- ``batch+index``: one row per commit holding the record batch's bytes, plus a narrow index row per
  message (seq, subject, ts_ms) with its subject index: what reads by subject, last-per-subject and
  time would still need;
- ``batch``: the batch row alone (no per-message index): the floor, which the API cannot serve.

The prototypes are plain SQL here, not Weir's storage. Prints per layout: CPU (user + system) and wall
time per commit in ms; compare layouts within one run only.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sqlite3
import tempfile
import time
from pathlib import Path
from typing import Any

from weir_partition_node.storage.sqlite import PAGE_SIZE_BYTES

RECORDS_PER_COMMIT = 100
PAYLOAD_BYTES = 1024
CHECKPOINT_EVERY = 100
LAYOUTS = ("rows", "batch+index", "batch")

_SCHEMA = """
CREATE TABLE messages (
    seq INTEGER PRIMARY KEY, ts_ms INTEGER NOT NULL, subject TEXT NOT NULL, size INTEGER NOT NULL,
    crc INTEGER NOT NULL, record BLOB NOT NULL
);
CREATE INDEX messages_by_subject ON messages (subject, seq);
CREATE TABLE batches (base_seq INTEGER PRIMARY KEY, last_seq INTEGER NOT NULL, data BLOB NOT NULL);
CREATE TABLE batch_index (seq INTEGER PRIMARY KEY, subject TEXT NOT NULL, ts_ms INTEGER NOT NULL);
CREATE INDEX batch_index_by_subject ON batch_index (subject, seq);
CREATE TABLE changes (change_seq INTEGER PRIMARY KEY, ts_ms INTEGER NOT NULL, record BLOB NOT NULL);
"""


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _write(db: sqlite3.Connection, layout: str, seq: int, payloads: list[bytes]) -> None:
    """One commit's rows in `layout`, after `seq`."""
    subject = "orders.eu"
    if layout == "rows":
        db.executemany(
            "INSERT INTO messages (seq, ts_ms, subject, size, crc, record) VALUES (?, ?, ?, ?, ?, ?)",
            [(seq + i + 1, 1, subject, len(data), 0, data) for i, data in enumerate(payloads)],
        )
        return
    db.execute("INSERT INTO batches VALUES (?, ?, ?)", (seq + 1, seq + len(payloads), b"".join(payloads)))
    if layout == "batch+index":
        db.executemany(
            "INSERT INTO batch_index VALUES (?, ?, ?)", [(seq + i + 1, subject, 1) for i in range(len(payloads))]
        )


def run(layout: str, commits: int, sync: str, directory: Path) -> dict[str, Any]:
    db = sqlite3.connect(directory / f"{layout}.sqlite", isolation_level=None)
    try:
        # The node's settings (SqlitePartitionLog): its page size, WAL, FULL / NORMAL, its cache.
        db.execute(f"PRAGMA page_size={PAGE_SIZE_BYTES}")
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={'FULL' if sync == 'always' else 'NORMAL'}")
        db.execute("PRAGMA cache_size=-16000")
        db.executescript(_SCHEMA)
        payloads = [os.urandom(PAYLOAD_BYTES) for _ in range(RECORDS_PER_COMMIT)]
        change = os.urandom(60)
        cpu_before, wall_before = _cpu_seconds(), time.perf_counter()
        for commit in range(commits):
            db.execute("BEGIN")
            _write(db, layout, commit * RECORDS_PER_COMMIT, payloads)
            db.execute("INSERT INTO changes VALUES (?, ?, ?)", (commit + 1, 1, change))
            db.execute("COMMIT")
            if commit % CHECKPOINT_EVERY == CHECKPOINT_EVERY - 1:
                db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        cpu, wall = _cpu_seconds() - cpu_before, time.perf_counter() - wall_before
    finally:
        db.close()
    return {"cpu_ms_per_commit": round(cpu / commits * 1e3, 3), "wall_ms_per_commit": round(wall / commits * 1e3, 3)}


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.storage_layout", description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=1000, help="commits of 100 records per layout (default 1000)")
    parser.add_argument("--sync", choices=("always", "off"), default="always", help="fsync every commit (default)")
    arguments = parser.parse_args()
    if arguments.commits < 1:
        parser.error("--commits must be at least 1")
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {0})
    report: dict[str, Any] = {"records_per_commit": RECORDS_PER_COMMIT, "sync": arguments.sync, "layouts": {}}
    with tempfile.TemporaryDirectory(prefix="weir-storage-layout-") as directory:
        for layout in LAYOUTS:
            report["layouts"][layout] = run(layout, arguments.commits, arguments.sync, Path(directory))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
