"""The replicator's shared consumer-state reads (weir_replicator.snapshot_reads, issue 25): one
GetConsumerSnapshots serves every follower that needs no newer state; a follower that must see a
later change never gets an answer read before it. The reading side here records what would go to
the primary; the real exchange is covered by tests/test_cluster.py."""

from __future__ import annotations

import asyncio

import pytest
from weir.v1 import internal_pb2
from weir_replicator.snapshot_reads import SnapshotReads


class Primary:
    """Answers GetConsumerSnapshots with its current `ack_floor` for consumer "c", counting reads."""

    def __init__(self) -> None:
        self.ack_floor = 0
        self.reads = 0
        self.result_code = "ok"
        self.fail: Exception | None = None
        self.release = asyncio.Event()
        self.release.set()
        self.arrived = asyncio.Event()  # set when a read reaches the primary

    async def read(self) -> internal_pb2.GetConsumerSnapshotsResponse:
        self.reads += 1
        floor = self.ack_floor  # what the primary holds when the read arrives
        self.arrived.set()
        await self.release.wait()
        if self.fail is not None:
            raise self.fail
        answer = internal_pb2.GetConsumerSnapshotsResponse(result_code=self.result_code)
        answer.snapshots.add(consumer="c", ack_floor=floor)
        return answer


async def test_followers_that_need_the_same_change_share_one_read() -> None:
    primary = Primary()
    reads = SnapshotReads(primary.read)
    primary.ack_floor = 5
    generation = reads.changed()
    first, second = await asyncio.gather(reads.since(generation), reads.since(generation))
    assert primary.reads == 1
    assert first.snapshots[0].ack_floor == second.snapshots[0].ack_floor == 5
    again = await reads.since(generation)  # a follower that comes later: the kept answer
    assert (primary.reads, again.snapshots[0].ack_floor) == (1, 5)


async def test_a_change_after_the_read_makes_the_next_follower_read_again() -> None:
    primary = Primary()
    reads = SnapshotReads(primary.read)
    primary.ack_floor = 5
    assert (await reads.since(reads.changed())).snapshots[0].ack_floor == 5
    primary.ack_floor = 9
    later = reads.changed()
    assert (await reads.since(later)).snapshots[0].ack_floor == 9
    assert primary.reads == 2
    assert (await reads.since(later - 1)).snapshots[0].ack_floor == 9, "a newer answer serves an older need"


async def test_a_read_in_flight_from_before_a_change_is_not_joined_for_it() -> None:
    primary = Primary()
    reads = SnapshotReads(primary.read)
    primary.release.clear()
    primary.ack_floor = 5
    early = asyncio.ensure_future(reads.since(reads.changed()))
    await primary.arrived.wait()  # the first read reached the primary
    primary.arrived.clear()
    primary.ack_floor = 9
    late = asyncio.ensure_future(reads.since(reads.changed()))
    await primary.arrived.wait()
    primary.release.set()
    assert (await early).snapshots[0].ack_floor == 5
    assert (await late).snapshots[0].ack_floor == 9
    assert primary.reads == 2
    # The kept answer is the newest, whichever read finished last.
    assert (await reads.since(reads.generation)).snapshots[0].ack_floor == 9
    assert primary.reads == 2


async def test_a_refusal_or_an_error_is_returned_and_not_kept() -> None:
    primary = Primary()
    reads = SnapshotReads(primary.read)
    generation = reads.changed()
    primary.result_code = "not_leader"
    assert (await reads.since(generation)).result_code == "not_leader"
    primary.result_code = "ok"
    primary.fail = ConnectionError("primary gone")
    with pytest.raises(ConnectionError):
        await reads.since(generation)
    primary.fail = None
    assert (await reads.since(generation)).result_code == "ok"
    assert primary.reads == 3


async def test_a_cancelled_follower_does_not_cancel_the_read_the_others_wait_for() -> None:
    primary = Primary()
    reads = SnapshotReads(primary.read)
    primary.release.clear()
    generation = reads.changed()
    leaving = asyncio.ensure_future(reads.since(generation))
    staying = asyncio.ensure_future(reads.since(generation))
    await asyncio.sleep(0)
    leaving.cancel()
    await asyncio.sleep(0)
    primary.release.set()
    assert (await staying).result_code == "ok"
    assert primary.reads == 1
    with pytest.raises(asyncio.CancelledError):
        await leaving


async def test_close_cancels_a_read_in_flight() -> None:
    primary = Primary()
    reads = SnapshotReads(primary.read)
    primary.release.clear()
    waiting = asyncio.ensure_future(reads.since(reads.changed()))
    await asyncio.sleep(0)
    reads.close()
    with pytest.raises(asyncio.CancelledError):
        await waiting
