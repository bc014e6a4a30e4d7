"""A fetch whose caller goes away (cancelled, or past its deadline) before the answer is sent loses
nothing: cancelled while queued, the commit delivers nothing; cancelled after the commit decided its
deliveries, they are taken back (consumers.undeliver) and are due again at once with the same
deliver_count, instead of staying invisible for the ack wait. In-process core with real storage on
a manual clock (the clock never moves: nothing here may wait for an ack wait)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from weir.options import Storage
from weir.v1 import streams_pb2
from weir_partition_node.clock import ManualClock
from weir_partition_node.commit_items import Delivery
from weir_partition_node.node import Node
from weir_partition_node.settings import NodeSettings

from tests.proto_configs import consumer_config, stream_config

T0 = 1_700_000_000_000
MESSAGES = 5
DEADLINE_S = 10.0


@pytest.fixture(params=["file", "memory"])
async def core(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Node]:
    node = await Node.open(
        NodeSettings(node_id="abandon", data_dir=tmp_path / "data", retention_sweep_interval_ms=3_600_000),
        clock=ManualClock(T0),
    )
    try:
        storage: Storage = request.param
        await node.admin.create_stream(stream_config("s", storage=storage))
        await node.consumers.create_consumer("s", consumer_config("c", ack_wait_ms=600_000))
        entries = [streams_pb2.PublishEntry(subject="s.x", payload=b"%d" % n) for n in range(MESSAGES)]
        await node.publisher.publish("s", entries, streams_pb2.ACK_LEVEL_LEADER, batch=True)
        yield node
    finally:
        await node.close()


def ack_pending(core: Node) -> int:
    return core.consumers.consumer_info("s", "c").num_ack_pending


async def fetch_now(core: Node) -> list[tuple[int, int]]:
    deliveries = await core.consumers.fetch("s", "c", 0, batch_size=100)
    return [(delivery.seq, delivery.deliver_count) for delivery in deliveries]


async def cancelled(task: asyncio.Task[list[Delivery]]) -> None:
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def decided(core: Node) -> asyncio.Task[list[Delivery]]:
    """A fetch of everything, running until its commit has decided the deliveries (they are
    pending; the commit may not have finished storing them)."""
    task = asyncio.create_task(core.consumers.fetch("s", "c", 0, batch_size=100))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + DEADLINE_S
    while loop.time() < deadline:  # one loop step at a time: the commit has not stored them yet
        if ack_pending(core):
            break
        await asyncio.sleep(0)
    assert ack_pending(core) == MESSAGES
    return task


async def fetch_when_due(core: Node) -> list[tuple[int, int]]:
    """A long-poll fetch: it answers once something is due (the take-back's commit wakes it, as any
    change of consumer state does), or empty after DEADLINE_S."""
    deliveries = await core.consumers.fetch("s", "c", 0, batch_size=100, max_wait_ms=int(DEADLINE_S * 1000))
    return [(delivery.seq, delivery.deliver_count) for delivery in deliveries]


async def test_a_fetch_cancelled_as_soon_as_it_is_queued_loses_nothing(core: Node) -> None:
    """Cancelled right after it was queued: the commit loop either skips it (it saw the caller go)
    or decides it first and its deliveries are taken back; either way they are due at once."""
    task = asyncio.create_task(core.consumers.fetch("s", "c", 0, batch_size=100))
    await asyncio.sleep(0)  # the fetch is queued
    await cancelled(task)
    assert await fetch_when_due(core) == [(seq, 1) for seq in range(1, MESSAGES + 1)]


async def test_deliveries_of_a_fetch_cancelled_after_its_commit_decided_come_back_at_once(core: Node) -> None:
    await cancelled(await decided(core))
    again = await fetch_when_due(core)
    assert again == [(seq, 1) for seq in range(1, MESSAGES + 1)]  # the same deliver_count: never seen
    await core.consumers.ack_batch("s", "c", 0, [seq for seq, _ in again], [count for _, count in again])
    assert ack_pending(core) == 0
    info = core.consumers.consumer_info("s", "c")
    assert (info.delivered_total, info.redelivered_total) == (MESSAGES, MESSAGES)  # the node made both


async def test_a_delivery_settled_before_its_take_back_stays_settled(core: Node) -> None:
    """A take-back names each delivery: a seq acknowledged (or delivered again) in between is left
    as it is."""
    task = await decided(core)
    task.cancel()
    # Queued before the take-back: the fetch's commit has to finish before that one is queued.
    acking = asyncio.create_task(core.consumers.ack_batch("s", "c", 0, [1, 2]))
    with pytest.raises(asyncio.CancelledError):
        await task
    assert [code for _, code, _ in await acking] == ["ok", "ok"]
    assert await fetch_when_due(core) == [(seq, 1) for seq in range(3, MESSAGES + 1)]
