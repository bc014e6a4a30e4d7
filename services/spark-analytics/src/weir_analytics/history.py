"""Outputs on disk: Parquet history and the saved state.

Layout under the job's data directory:

    checkpoint/                      Spark's streaming checkpoint (offsets and commits per batch)
    state.json                       the running ClusterStats and the last batch folded in
    parquet/<table>/batch_id=<N>/part-0.parquet

Parquet tables (one file per table per micro-batch; read with
``spark.read.parquet("<data_dir>/parquet/<table>")``, `batch_id` becomes a column):
- `partition_stats`, `consumer_stats`, `replica_stats`, `node_stats`: the figures published after
  the batch (weir.v1.ClusterAnalytics fields, plus `computed_at_ms`);
- `publish_windows`, `consumer_windows`: the batch's share of each window (a window's figure is the
  sum of its rows over all batches);
- `feed_coverage`: which change seqs of which node the batch held (first, last, count), the record
  that lets anyone check no change was counted twice or skipped.

A batch's files are written before state.json names the batch, and a replayed batch (Spark re-runs
the last batch after a crash) overwrites its own directory, so history holds each batch once.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from weir.v1 import types_pb2

from weir_analytics.state import BatchAggregates, ClusterStats

STATE_FILE = "state.json"


def write_atomically(path: Path, text: str) -> None:
    """Write `text` to `path` so that a crash leaves either the old or the new content."""
    temporary = path.with_suffix(path.suffix + ".tmp")
    with open(temporary, "w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    temporary.replace(path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def load_state(data_dir: Path, window_ms: int, windows_kept: int) -> ClusterStats:
    """The saved state, or a fresh one. A saved state with another window length is refused
    (ValueError): its windows would not line up."""
    path = data_dir / STATE_FILE
    if not path.exists():
        return ClusterStats(window_ms=window_ms, windows_kept=windows_kept)
    stats = ClusterStats.from_json(path.read_text())
    if stats.window_ms != window_ms:
        raise ValueError(
            f"{path} was computed with window_ms={stats.window_ms}, the job now runs with {window_ms}; "
            "use a new data directory (or the old window length)"
        )
    stats.windows_kept = windows_kept
    return stats


def save_state(data_dir: Path, stats: ClusterStats) -> None:
    write_atomically(data_dir / STATE_FILE, stats.to_json())


def _table_rows(snapshot: types_pb2.ClusterAnalytics, field: str) -> list[dict[str, Any]]:
    """Flat rows (numbers stay numbers; enums become their names) with the snapshot's time."""
    rows = []
    for item in getattr(snapshot, field):
        row: dict[str, Any] = {"computed_at_ms": snapshot.computed_at_ms}
        for descriptor in item.DESCRIPTOR.fields:
            value = getattr(item, descriptor.name)
            if descriptor.enum_type is not None:
                value = descriptor.enum_type.values_by_number[value].name
            row[descriptor.name] = value
        rows.append(row)
    return rows


def write_history(data_dir: Path, aggregates: BatchAggregates, snapshot: types_pb2.ClusterAnalytics | None) -> None:
    """One Parquet file per table for this batch (replacing any the batch wrote before a crash);
    the figure tables only with a `snapshot` (a batch that counted changes), the others when they
    have rows."""
    empty = types_pb2.ClusterAnalytics()
    figures = snapshot if snapshot is not None else empty
    tables: dict[str, list[dict[str, Any]]] = {
        "partition_stats": _table_rows(figures, "partitions"),
        "consumer_stats": _table_rows(figures, "consumers"),
        "replica_stats": _table_rows(figures, "replicas"),
        "node_stats": _table_rows(figures, "nodes"),
        "publish_windows": [asdict(entry) for entry in aggregates.publish_windows],
        "consumer_windows": [asdict(entry) for entry in aggregates.consumer_windows],
        "feed_coverage": [asdict(entry) for entry in aggregates.coverage],
    }
    for table, rows in tables.items():
        directory = data_dir / "parquet" / table / f"batch_id={aggregates.batch_id}"
        shutil.rmtree(directory, ignore_errors=True)
        if not rows:
            continue
        directory.mkdir(parents=True, exist_ok=True)
        temporary = directory / ".part-0.parquet.tmp"
        pq.write_table(pa.Table.from_pylist(rows), temporary)
        temporary.replace(directory / "part-0.parquet")
