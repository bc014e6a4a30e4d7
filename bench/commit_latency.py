"""How long one partition log's commits take, with WAL checkpoints in the commit (SQLite's automatic
checkpoint) or on the node's background thread (`WalCheckpointer`).

    uv run python -m bench.commit_latency --checkpoint-bytes 0          # SQLite's own checkpoint
    uv run python -m bench.commit_latency --checkpoint-bytes 8388608    # the node's default

Commits `--commits` batches of 100 records of 1 KiB (fsync=always, as a node's default) to a fresh
`SqlitePartitionLog` in a temporary directory, this process pinned to CPU 0, and prints JSON: the
commit duration percentiles and mean in µs, the process's CPU (user + system) per record in µs, the
checkpoints the background thread ran, and the WAL file's largest size in MiB. In process, no gRPC:
it isolates the storage layer's tail latency (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from weir.v1 import types_pb2
from weir_partition_node.storage.base import CommitBatch, make_record
from weir_partition_node.storage.checkpoint import WalCheckpointer
from weir_partition_node.storage.sqlite import SqlitePartitionLog

RECORDS_PER_COMMIT = 100
PAYLOAD_BYTES = 1024


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run(commits: int, checkpoint_bytes: int, directory: Path) -> dict[str, Any]:
    checkpointer = WalCheckpointer() if checkpoint_bytes > 0 else None
    log = SqlitePartitionLog(
        directory, "bench", 0, "always", checkpointer=checkpointer, checkpoint_bytes=checkpoint_bytes
    )
    payload = os.urandom(PAYLOAD_BYTES)
    seq = 0
    durations: list[float] = []
    cpu_before = _cpu_seconds()
    try:
        for _ in range(commits):
            records = []
            for _ in range(RECORDS_PER_COMMIT):
                seq += 1
                encoded = types_pb2.Message(seq=seq, ts_ms=1, subject="bench", payload=payload).SerializeToString()
                records.append(make_record(seq, 1, "bench", encoded))
            started = time.perf_counter()
            log.commit(CommitBatch(records=records, last_seq=seq))
            durations.append((time.perf_counter() - started) * 1e6)
        cpu = _cpu_seconds() - cpu_before
        wal_bytes = (directory / "log.sqlite-wal").stat().st_size
    finally:
        log.close()
        if checkpointer is not None:
            checkpointer.close()
    durations.sort()

    def percentile(fraction: float) -> float:
        return round(durations[max(0, int(fraction * len(durations)) - 1)])

    return {
        "checkpoint": f"background every {checkpoint_bytes} bytes" if checkpointer else "SQLite automatic",
        "commits": commits,
        "records_per_commit": RECORDS_PER_COMMIT,
        "commit_us": {
            "mean": round(sum(durations) / len(durations)),
            "p50": percentile(0.5),
            "p90": percentile(0.9),
            "p99": percentile(0.99),
            "p99_9": percentile(0.999),
            "max": round(durations[-1]),
        },
        "cpu_us_per_record": round(cpu / seq * 1e6, 2),
        "background_checkpoints": checkpointer.completed if checkpointer else None,
        "wal_peak_mib": round(wal_bytes / 2**20, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.commit_latency", description=__doc__.split("\n\n")[0])
    parser.add_argument("--commits", type=int, default=1500, help="commits of 100 records (default 1500)")
    parser.add_argument(
        "--checkpoint-bytes", type=int, default=8 * 1024 * 1024, help="0 = SQLite's automatic checkpoint"
    )
    arguments = parser.parse_args()
    if arguments.commits < 1 or arguments.checkpoint_bytes < 0:
        parser.error("--commits must be at least 1 and --checkpoint-bytes at least 0")
    if hasattr(os, "sched_setaffinity") and (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {0})
    with tempfile.TemporaryDirectory(prefix="weir-commit-latency-") as directory:
        print(json.dumps(run(arguments.commits, arguments.checkpoint_bytes, Path(directory) / "p0"), indent=2))


if __name__ == "__main__":
    main()
