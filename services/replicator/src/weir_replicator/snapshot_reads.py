"""One read of a primary's consumer state for the followers that need no newer one (issue 25).

Each follower loop of a `PartitionShipper` ships the partition's consumer snapshots (full state with
pending, GetConsumerSnapshots on the primary) once the change feed showed a consumer change and
`snapshot_interval_ms` passed. The followers see the same changes at the same time, so each would
read the same state from the primary: a read and its answer at the primary per follower, where one
serves them all.

Generations order what the feed showed: `changed()` counts each consumer change observed, and a
read sent when the count was `g` reflects every change counted up to `g` (the primary committed a
change before its feed carried it). A follower that must catch up with the changes up to `g` takes
the newest answer read at `g` or later, joins a read in flight that was sent at `g` or later, or
sends one.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Callable

from weir.v1 import internal_pb2
from weir_server.replication import ReplicationResult

ReadSnapshots = Callable[[], Awaitable[internal_pb2.GetConsumerSnapshotsResponse]]


class SnapshotReads:
    """The consumer-state reads of one partition's followers. Not thread-safe (one event loop)."""

    def __init__(self, read: ReadSnapshots) -> None:
        self._read = read
        self.generation = 0  # consumer changes observed so far
        self._answer: tuple[int, internal_pb2.GetConsumerSnapshotsResponse] | None = None
        self._reading: tuple[int, asyncio.Future[internal_pb2.GetConsumerSnapshotsResponse]] | None = None

    def changed(self) -> int:
        """Count one consumer change seen on the feed; the generation a follower must now reach."""
        self.generation += 1
        return self.generation

    async def since(self, generation: int) -> internal_pb2.GetConsumerSnapshotsResponse:
        """The primary's snapshots as read at `generation` or later (a kept answer, a read in flight,
        or a new read). An answer other than OK is returned but not kept. Errors: the read's."""
        if self._answer is not None and self._answer[0] >= generation:
            return self._answer[1]
        reading = self._reading
        if reading is None or reading[0] < generation:
            reading = (self.generation, asyncio.ensure_future(self._read()))
            self._reading = reading
            reading[1].add_done_callback(functools.partial(self._done, reading))
        # Shielded: a follower cancelled meanwhile must not cancel the read the others wait for.
        return await asyncio.shield(reading[1])

    def _done(
        self,
        reading: tuple[int, asyncio.Future[internal_pb2.GetConsumerSnapshotsResponse]],
        future: asyncio.Future[internal_pb2.GetConsumerSnapshotsResponse],
    ) -> None:
        if self._reading is reading:
            self._reading = None
        if future.cancelled() or future.exception() is not None:  # retrieved: nobody may be waiting
            return
        answer = future.result()
        if answer.result_code == ReplicationResult.OK and (self._answer is None or self._answer[0] < reading[0]):
            self._answer = (reading[0], answer)

    def close(self) -> None:
        """Cancel a read in flight (the shipper stops)."""
        if self._reading is not None:
            self._reading[1].cancel()
