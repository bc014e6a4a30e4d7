"""`WalCheckpointer`: SQLite WAL checkpoints of a node's partition logs, on one background thread.

In WAL mode every commit appends pages to ``log.sqlite-wal``; a checkpoint copies them back into the
database file and fsyncs it, so the WAL can start over. SQLite's own automatic checkpoint runs
inside the commit that crosses its threshold (1,000 pages): that commit, and every publish waiting
on it, then takes 10-15 ms instead of ~0.7 ms (100 records of 1 KiB a commit, measured in
docs/benchmarks.md), about one commit in 150 - the publish-to-ack p99.

With a checkpointer, a `SqlitePartitionLog` asks for a checkpoint once about `checkpoint_bytes`
have been committed since the last request, and this thread runs it (``PRAGMA
wal_checkpoint(PASSIVE)`` on the log's own checkpoint connection: it copies what no reader still
needs and never blocks the writer). The log keeps SQLite's automatic checkpoint as a safety valve at
four times that size, for a checkpointer that falls behind.

Bounded: at most one pending request per log (a log that asks again before its checkpoint ran is
not queued twice), one thread per node.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Protocol

logger = logging.getLogger(__name__)


class Checkpointable(Protocol):
    def checkpoint(self) -> None:
        """Run one checkpoint now, on the checkpointer's thread. May raise: the checkpointer logs
        the error and goes on with the next log (the writer's own checkpoint, the valve, still
        bounds the WAL)."""
        ...


class WalCheckpointer:
    """See the module docstring. `observe(seconds)` is called after each checkpoint (metrics)."""

    def __init__(self, observe: Callable[[float], None] | None = None) -> None:
        self._observe = observe
        self._pending: dict[int, Checkpointable] = {}  # id(log) -> log, oldest request first
        self._condition = threading.Condition()
        self._closed = False
        self.completed = 0
        self._thread = threading.Thread(target=self._run, name="weir-checkpoint", daemon=True)
        self._thread.start()

    def request(self, log: Checkpointable) -> None:
        """Queue a checkpoint of `log` (once: a request already pending covers it). Any thread."""
        with self._condition:
            if self._closed or id(log) in self._pending:
                return
            self._pending[id(log)] = log
            self._condition.notify()

    def pending(self) -> int:
        with self._condition:
            return len(self._pending)

    def _run(self) -> None:
        while True:
            with self._condition:
                while not self._pending and not self._closed:
                    self._condition.wait()
                if self._closed:
                    return
                key = next(iter(self._pending))
                log = self._pending.pop(key)
            started = time.perf_counter()
            try:
                log.checkpoint()
            except Exception:  # the thread must survive a failing log; the writer's valve still works
                logger.exception("WAL checkpoint failed")
                continue
            self.completed += 1
            if self._observe is not None:
                self._observe(time.perf_counter() - started)

    def close(self, timeout_s: float = 30.0) -> None:
        """Drop pending requests and stop after the checkpoint in progress (if any)."""
        with self._condition:
            self._closed = True
            self._pending.clear()
            self._condition.notify_all()
        self._thread.join(timeout_s)
