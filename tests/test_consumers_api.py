"""Durable consumers through a real partition node over real gRPC (weir.client.NodeClient).

Covers the consumer lifecycle (create / info / list / delete, exact info fields), pull delivery
(Fetch, Ack, AckBatch, Nak, Term, InProgress), redelivery and dead letters, work-queue and interest
retention, the change feed and WatchStreams events, and push delivery (Subscribe).

Tests that need time to pass (ack_wait, nak delays, max_deliver) run on a node of their own started
with WEIR_NODE_TEST_CLOCK=true: its clock moves only through TestClock.AdvanceClock, so nothing here
sleeps to let time pass. That node's background sweep is pushed out to an hour so that dead
letters happen at the fetch the test makes (deterministic change-feed contents). Everything else
runs on the session's shared node (real clock, ack_wait long enough that nothing is redelivered
while a test runs).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator, Iterator
from typing import Any, NamedTuple

import grpc
import pytest
from weir.client import NodeClient, consumer_config, stream_config
from weir.errors import ConsumerBoundError, NoSuchConsumerError, NotPendingError
from weir.v1 import streams_pb2, types_pb2
from weir_cli.launcher import NodeHandle, start_node
from weir_server.internal_clients import ChangeFeedClient, TestClockClient

from tests.conftest import needs_own_processes

EVENT_TIMEOUT_S = 5.0
LONG_ACK_WAIT_MS = 3_600_000  # real-clock tests: nothing is redelivered while they run
PAST_HORIZON = 1 << 62


# -- helpers -----------------------------------------------------------------------------------------


class P(NamedTuple):
    """A consumer's state in one partition (ConsumerPartitionState), comparable as a tuple."""

    partition: int
    ack_floor: int = 0
    last_delivered: int = 0
    num_ack_pending: int = 0
    num_pending: int = 0
    num_redelivered: int = 0


def state(info: types_pb2.ConsumerInfo) -> dict[str, Any]:
    """Everything of a ConsumerInfo except config and created_at_ms, for exact comparison."""
    return {
        "partitions": [
            P(p.partition, p.ack_floor, p.last_delivered, p.num_ack_pending, p.num_pending, p.num_redelivered)
            for p in info.partitions
        ],
        "num_ack_pending": info.num_ack_pending,
        "num_pending": info.num_pending,
        "delivered": info.delivered_total,
        "acked": info.acked_total,
        "redelivered": info.redelivered_total,
        "dead_lettered": info.dead_lettered_total,
        "dropped": info.dropped_total,
        "termed": info.termed_total,
    }


def expected(
    *partitions: P,
    delivered: int = 0,
    acked: int = 0,
    redelivered: int = 0,
    dead_lettered: int = 0,
    dropped: int = 0,
    termed: int = 0,
) -> dict[str, Any]:
    return {
        "partitions": list(partitions),
        "num_ack_pending": sum(p.num_ack_pending for p in partitions),
        "num_pending": sum(p.num_pending for p in partitions),
        "delivered": delivered,
        "acked": acked,
        "redelivered": redelivered,
        "dead_lettered": dead_lettered,
        "dropped": dropped,
        "termed": termed,
    }


def delivered(messages: list[types_pb2.Message]) -> list[tuple[int, int, int]]:
    """(partition, seq, deliver_count) of fetched messages, in order."""
    return [(m.partition, m.seq, m.deliver_count) for m in messages]


async def next_event(events: AsyncIterator[streams_pb2.SubscribeEvent]) -> streams_pb2.SubscribeEvent:
    return await asyncio.wait_for(anext(events), EVENT_TIMEOUT_S)


async def close(events: AsyncIterator[Any]) -> None:
    """End a server-streaming call (the client's generator cancels the call on close)."""
    assert isinstance(events, AsyncGenerator)
    await events.aclose()


async def assert_ended(events: AsyncIterator[streams_pb2.SubscribeEvent]) -> None:
    """After a `stopped` event the server ends the call."""
    with pytest.raises(StopAsyncIteration):
        await asyncio.wait_for(anext(events), EVENT_TIMEOUT_S)


async def consumer_changes(feed: ChangeFeedClient, start: int, stream: str) -> list[types_pb2.Change]:
    response = await feed.read_changes(start, 10_000)
    kinds = ("consumer_created", "consumer_deleted", "consumer_state")
    return [c for c in response.changes if c.stream == stream and c.WhichOneof("kind") in kinds]


def state_change(change: types_pb2.Change) -> tuple[int, ...]:
    """(ack_floor, last_delivered, pending_count, delivered, redelivered, acked, naked, termed,
    in_progress, dead_lettered, dropped) of a consumer_state change."""
    s = change.consumer_state
    return (
        s.ack_floor,
        s.last_delivered,
        s.pending_count,
        s.delivered,
        s.redelivered,
        s.acked,
        s.naked,
        s.termed,
        s.in_progress,
        s.dead_lettered,
        s.dropped,
    )


async def horizon(feed: ChangeFeedClient) -> int:
    return (await feed.read_changes(PAST_HORIZON, 1)).last_change_seq


# -- fixtures ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def clock_node(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeHandle]:
    """A node of this module whose time moves only through TestClock.AdvanceClock."""
    needs_own_processes()
    handle = start_node(
        tmp_path_factory.mktemp("consumer-clock-node") / "data",
        node_id="consumer-clock",
        env={"WEIR_NODE_TEST_CLOCK": "true", "WEIR_NODE_RETENTION_SWEEP_INTERVAL_MS": "3600000"},
    )
    yield handle
    handle.stop()


@pytest.fixture(scope="module")
async def tclient(clock_node: NodeHandle) -> AsyncIterator[NodeClient]:
    async with NodeClient(clock_node.client_address) as node_client:
        yield node_client


@pytest.fixture(scope="module")
async def tclock(clock_node: NodeHandle) -> AsyncIterator[TestClockClient]:
    async with TestClockClient(clock_node.internal_address) as clock_client:
        yield clock_client


@pytest.fixture(scope="module")
async def tfeed(clock_node: NodeHandle) -> AsyncIterator[ChangeFeedClient]:
    async with ChangeFeedClient(clock_node.internal_address) as change_client:
        yield change_client


@pytest.fixture
async def stream(client: NodeClient, stream_name: str) -> AsyncIterator[str]:
    """A name for a stream on the shared node; the stream is deleted after the test if it exists."""
    yield stream_name
    if stream_name in await client.list_streams():
        await client.delete_stream(stream_name)


@pytest.fixture
async def tstream(tclient: NodeClient, stream_name: str) -> AsyncIterator[str]:
    """A name for a stream on the test-clock node; deleted after the test if it exists."""
    yield stream_name
    if stream_name in await tclient.list_streams():
        await tclient.delete_stream(stream_name)


# -- lifecycle and info ------------------------------------------------------------------------------


async def test_create_info_list_delete_exact(client: NodeClient, stream: str) -> None:
    await client.create_stream(stream_config(stream, subjects=["orders.>"], partitions=2))
    for partition, subject in ((0, "orders.eu"), (0, "orders.us"), (0, "orders.eu"), (1, "orders.eu")):
        await client.publish(stream, subject, b"x", partition=partition)

    before_ms = time.time_ns() // 1_000_000
    config = consumer_config(
        "eu", filter_subject="orders.eu", ack_wait_ms=5000, max_deliver=3, max_ack_pending=10, deliver_group="g"
    )
    info = await client.create_consumer(stream, config)
    after_ms = time.time_ns() // 1_000_000
    assert info.stream == stream
    assert info.config == config.to_proto()  # nothing to fill in: every field was given
    assert before_ms <= info.created_at_ms <= after_ms
    assert state(info) == expected(P(0, num_pending=2), P(1, num_pending=1))
    assert await client.consumer_info(stream, "eu") == info
    # Idempotent: the same config again changes nothing and returns the same info.
    assert await client.create_consumer(stream, config) == info

    # Defaults are filled in; the same effective config given explicitly is the same consumer.
    defaults = await client.create_consumer(stream, consumer_config("all"))
    assert defaults.config == types_pb2.ConsumerConfig(
        name="all",
        deliver_policy=types_pb2.DELIVER_POLICY_ALL,
        ack_wait_ms=30_000,
        max_deliver=5,
        max_ack_pending=1000,
    )
    assert state(defaults) == expected(P(0, num_pending=3), P(1, num_pending=1))
    explicit = consumer_config("all", ack_wait_ms=30_000, max_deliver=5, max_ack_pending=1000)
    assert await client.create_consumer(stream, explicit) == defaults

    listed = await client.list_consumers(stream)
    assert [c.config.name for c in listed] == ["all", "eu"]  # sorted by name
    assert listed == [defaults, info]

    await client.delete_consumer(stream, "eu")
    assert [c.config.name for c in await client.list_consumers(stream)] == ["all"]
    with pytest.raises(NoSuchConsumerError) as raised:
        await client.consumer_info(stream, "eu")
    assert raised.value.metadata == {"stream": stream, "consumer": "eu"}
    with pytest.raises(NoSuchConsumerError):
        await client.delete_consumer(stream, "eu")
    # A consumer re-created under a deleted name starts afresh.
    again = await client.create_consumer(stream, consumer_config("eu", filter_subject="orders.eu"))
    assert state(again) == expected(P(0, num_pending=2), P(1, num_pending=1))


async def test_deliver_policies_set_the_start(client: NodeClient, stream: str) -> None:
    await client.create_stream(stream_config(stream, subjects=["s.>"]))
    for index, subject in enumerate(["s.a", "s.b", "s.a", "s.b"], start=1):
        await client.publish(stream, subject, b"x", ts_ms=index * 1000)  # seqs 1..4 at 1 s .. 4 s
    cases = {
        "all": (consumer_config("all"), 0),
        "new": (consumer_config("new", deliver_policy="new"), 4),
        "last": (consumer_config("last", deliver_policy="last", filter_subject="s.a"), 2),
        "seq": (consumer_config("seq", deliver_policy="by_start_seq", start_seq=3), 2),
        "time": (consumer_config("time", deliver_policy="by_start_time", start_time_ms=2000), 1),
        "time2": (consumer_config("time2", deliver_policy="by_start_time", start_time_ms=2001), 2),
    }
    for name, (config, start) in cases.items():
        info = await client.create_consumer(stream, config)
        matching = 1 if name == "last" else 4 - start
        assert state(info) == expected(P(0, start, start, 0, matching)), name
        first = await client.fetch(stream, name, batch_size=1)
        assert [m.seq for m in first] == ([start + 1] if start < 4 else []), name
    await client.publish(stream, "s.a", b"x")
    assert [m.seq for m in await client.fetch(stream, "new")] == [5]


async def test_last_per_subject_delivers_each_subjects_newest_then_every_change(
    client: NodeClient, stream: str
) -> None:
    await client.create_stream(stream_config(stream, subjects=["kv.>"]))
    for subject in ["kv.a", "kv.b", "kv.a", "kv.c", "kv.a"]:  # seqs 1..5: newest kv.b 2, kv.c 4, kv.a 5
        await client.publish(stream, subject, subject.encode())
    info = await client.create_consumer(stream, consumer_config("watch", deliver_policy="last_per_subject"))
    assert [(p.last_delivered, p.num_pending, p.last_per_subject_until) for p in info.partitions] == [(0, 3, 5)]
    assert [m.seq for m in await client.fetch(stream, "watch", batch_size=10)] == [2, 4, 5]
    await client.publish(stream, "kv.b", b"x")
    await client.publish(stream, "kv.b", b"y")
    assert [(m.seq, m.payload) for m in await client.fetch(stream, "watch", batch_size=10)] == [(6, b"x"), (7, b"y")]


# -- pull delivery ----------------------------------------------------------------------------------


async def test_fetch_and_ack(client: NodeClient, stream: str) -> None:
    await client.create_stream(stream_config(stream, subjects=["o.>"]))
    subjects = ["o.a", "o.b", "o.a", "o.a", "o.b", "o.a"]
    for index, subject in enumerate(subjects, start=1):
        await client.publish(stream, subject, f"m{index}".encode(), headers={"n": str(index)})
    await client.create_consumer(stream, consumer_config("a", filter_subject="o.a", ack_wait_ms=LONG_ACK_WAIT_MS))

    batch = await client.fetch(stream, "a", batch_size=2)
    assert delivered(batch) == [(0, 1, 1), (0, 3, 1)]
    assert [(m.subject, m.payload, list(m.headers)) for m in batch] == [
        ("o.a", b"m1", [types_pb2.Header(key="n", value="1")]),
        ("o.a", b"m3", [types_pb2.Header(key="n", value="3")]),
    ]
    assert all(m.ts_ms > 0 for m in batch)
    info = await client.consumer_info(stream, "a")
    assert state(info) == expected(P(0, 0, 3, 2, 2), delivered=2)

    await client.ack(stream, "a", 0, 3)  # out of order: the floor waits for seq 1
    assert state(await client.consumer_info(stream, "a")) == expected(P(0, 0, 3, 1, 2), delivered=2, acked=1)
    await client.ack(stream, "a", 0, 1)
    assert state(await client.consumer_info(stream, "a")) == expected(P(0, 3, 3, 0, 2), delivered=2, acked=2)

    assert delivered(await client.fetch(stream, "a")) == [(0, 4, 1), (0, 6, 1)]
    assert await client.fetch(stream, "a") == []  # nothing new, nothing due
    for seq in (4, 6):
        await client.ack(stream, "a", 0, seq)
    assert state(await client.consumer_info(stream, "a")) == expected(P(0, 6, 6), delivered=4, acked=4)


async def test_fetch_respects_max_ack_pending_and_max_bytes(client: NodeClient, stream: str) -> None:
    await client.create_stream(stream_config(stream, partitions=2))
    for _ in range(5):
        await client.publish(stream, "s", b"p" * 100, partition=1)
    await client.create_consumer(stream, consumer_config("c", max_ack_pending=2, ack_wait_ms=LONG_ACK_WAIT_MS))
    assert await client.fetch(stream, "c", 0) == []  # partition 0 is empty
    assert delivered(await client.fetch(stream, "c", 1, batch_size=10)) == [(1, 1, 1), (1, 2, 1)]
    assert await client.fetch(stream, "c", 1) == []  # at max_ack_pending
    await client.ack(stream, "c", 1, 1)
    assert delivered(await client.fetch(stream, "c", 1, batch_size=10)) == [(1, 3, 1)]
    await client.ack_batch(stream, "c", 1, [2, 3])
    # max_bytes smaller than one message still returns one; then it bounds the batch.
    assert delivered(await client.fetch(stream, "c", 1, batch_size=10, max_bytes=1)) == [(1, 4, 1)]
    info = await client.consumer_info(stream, "c")
    assert state(info) == expected(P(0), P(1, 3, 4, 1, 1), delivered=4, acked=3)


async def test_ack_batch_reports_per_entry(client: NodeClient, stream: str) -> None:
    await client.create_stream(stream_config(stream))
    for _ in range(5):
        await client.publish(stream, "s", b"x")
    await client.create_consumer(stream, consumer_config("c", ack_wait_ms=LONG_ACK_WAIT_MS))
    assert [m.seq for m in await client.fetch(stream, "c", batch_size=4)] == [1, 2, 3, 4]
    await client.ack(stream, "c", 0, 2)

    results = await client.ack_batch(stream, "c", 0, [1, 2, 3, 99, 3, 5])
    assert [(r.seq, r.result_code) for r in results] == [
        (1, "ok"),
        (2, "not_pending"),  # acknowledged before
        (3, "ok"),
        (99, "not_pending"),  # never delivered
        (3, "not_pending"),  # acknowledged earlier in this batch
        (5, "not_pending"),  # stored, not delivered yet
    ]
    assert [r.message for r in results if r.result_code == "ok"] == ["", ""]
    assert "already acknowledged" in results[1].message
    assert "never delivered" in results[3].message
    assert "already acknowledged" in results[4].message
    assert "never delivered" in results[5].message
    # The ok ones took effect: only seq 4 is pending.
    assert state(await client.consumer_info(stream, "c")) == expected(P(0, 3, 4, 1, 1), delivered=4, acked=3)
    with pytest.raises(NotPendingError):
        await client.ack(stream, "c", 0, 3)
    await client.ack(stream, "c", 0, 4)
    assert state(await client.consumer_info(stream, "c")) == expected(P(0, 4, 4, 0, 1), delivered=4, acked=4)


async def test_fetch_long_poll_wakes_on_publish(client: NodeClient, stream: str) -> None:
    await client.create_stream(stream_config(stream))
    await client.create_consumer(stream, consumer_config("c", ack_wait_ms=LONG_ACK_WAIT_MS))
    started = time.monotonic()
    fetch = asyncio.create_task(client.fetch(stream, "c", max_wait_ms=60_000))
    done, _ = await asyncio.wait({fetch}, timeout=0.3)
    assert not done, "a long-polling fetch on an empty stream answered at once"

    async def publish() -> None:
        await client.publish(stream, "s", b"wake")

    await asyncio.create_task(publish())
    messages = await asyncio.wait_for(fetch, EVENT_TIMEOUT_S)
    assert [(m.seq, m.payload, m.deliver_count) for m in messages] == [(1, b"wake", 1)]
    assert time.monotonic() - started < 30  # woke up; did not wait out max_wait_ms


async def test_fetch_long_poll_times_out_empty(client: NodeClient, stream: str) -> None:
    await client.create_stream(stream_config(stream))
    await client.create_consumer(stream, consumer_config("c"))
    started = time.monotonic()
    assert await client.fetch(stream, "c", max_wait_ms=200) == []
    assert time.monotonic() - started >= 0.2


# -- time: redelivery, nak, term, in progress (test clock) ---------------------------------------------


async def test_redelivery_after_ack_wait(tclient: NodeClient, tclock: TestClockClient, tstream: str) -> None:
    await tclient.create_stream(stream_config(tstream))
    await tclient.publish(tstream, "s", b"x")
    await tclient.create_consumer(tstream, consumer_config("c", ack_wait_ms=10_000, max_deliver=10))
    assert delivered(await tclient.fetch(tstream, "c")) == [(0, 1, 1)]
    await tclock.advance(9_999)
    assert await tclient.fetch(tstream, "c") == []
    await tclock.advance(1)
    assert delivered(await tclient.fetch(tstream, "c")) == [(0, 1, 2)]
    assert await tclient.fetch(tstream, "c") == []  # the redelivery restarted ack_wait
    await tclock.advance(10_000)
    assert delivered(await tclient.fetch(tstream, "c")) == [(0, 1, 3)]
    info = await tclient.consumer_info(tstream, "c")
    assert state(info) == expected(P(0, 0, 1, 1, 0, 1), delivered=1, redelivered=2)
    await tclient.ack(tstream, "c", 0, 1)
    await tclock.advance(100_000)
    assert await tclient.fetch(tstream, "c") == []
    assert state(await tclient.consumer_info(tstream, "c")) == expected(P(0, 1, 1), delivered=1, acked=1, redelivered=2)


async def test_redeliveries_come_first_lowest_seq_first(
    tclient: NodeClient, tclock: TestClockClient, tstream: str
) -> None:
    await tclient.create_stream(stream_config(tstream))
    for _ in range(3):
        await tclient.publish(tstream, "s", b"x")
    await tclient.create_consumer(tstream, consumer_config("c", ack_wait_ms=1000))
    assert delivered(await tclient.fetch(tstream, "c", batch_size=2)) == [(0, 1, 1), (0, 2, 1)]
    await tclock.advance(1000)
    await tclient.publish(tstream, "s", b"x")
    assert delivered(await tclient.fetch(tstream, "c", batch_size=3)) == [(0, 1, 2), (0, 2, 2), (0, 3, 1)]
    assert delivered(await tclient.fetch(tstream, "c")) == [(0, 4, 1)]


async def test_redeliveries_are_not_held_back_by_max_ack_pending(
    tclient: NodeClient, tclock: TestClockClient, tstream: str
) -> None:
    await tclient.create_stream(stream_config(tstream))
    for _ in range(3):
        await tclient.publish(tstream, "s", b"x")
    await tclient.create_consumer(tstream, consumer_config("c", ack_wait_ms=1000, max_ack_pending=2))
    assert delivered(await tclient.fetch(tstream, "c", batch_size=10)) == [(0, 1, 1), (0, 2, 1)]
    assert await tclient.fetch(tstream, "c") == []  # at the bound: seq 3 waits
    await tclock.advance(1000)
    # Overdue messages are already pending: they come back; the bound still holds seq 3 back.
    assert delivered(await tclient.fetch(tstream, "c", batch_size=10)) == [(0, 1, 2), (0, 2, 2)]
    await tclient.ack(tstream, "c", 0, 1)
    assert delivered(await tclient.fetch(tstream, "c", batch_size=10)) == [(0, 3, 1)]


async def test_byte_limited_fetch_leaves_the_rest_due(
    tclient: NodeClient, tclock: TestClockClient, tstream: str
) -> None:
    await tclient.create_stream(stream_config(tstream))
    for _ in range(3):
        await tclient.publish(tstream, "s", b"p" * 100)
    await tclient.create_consumer(tstream, consumer_config("c", ack_wait_ms=1000))
    assert [m.seq for m in await tclient.fetch(tstream, "c")] == [1, 2, 3]
    await tclock.advance(1000)
    for seq in (1, 2, 3):  # one message per fetch (max_bytes below one message), no clock move
        assert delivered(await tclient.fetch(tstream, "c", max_bytes=1)) == [(0, seq, 2)]
    assert await tclient.fetch(tstream, "c") == []


async def test_nak_with_delay(tclient: NodeClient, tclock: TestClockClient, tstream: str) -> None:
    await tclient.create_stream(stream_config(tstream))
    await tclient.publish(tstream, "s", b"x")
    await tclient.create_consumer(tstream, consumer_config("c", ack_wait_ms=60_000))
    assert delivered(await tclient.fetch(tstream, "c")) == [(0, 1, 1)]
    await tclient.nak(tstream, "c", 0, 1, delay_ms=5_000)
    assert await tclient.fetch(tstream, "c") == []
    await tclock.advance(4_999)
    assert await tclient.fetch(tstream, "c") == []
    await tclock.advance(1)
    assert delivered(await tclient.fetch(tstream, "c")) == [(0, 1, 2)]
    await tclient.nak(tstream, "c", 0, 1)  # delay 0: due at once
    assert delivered(await tclient.fetch(tstream, "c")) == [(0, 1, 3)]
    info = await tclient.consumer_info(tstream, "c")
    assert state(info) == expected(P(0, 0, 1, 1, 0, 1), delivered=1, redelivered=2)


async def test_nak_wakes_a_long_poll(tclient: NodeClient, tstream: str) -> None:
    await tclient.create_stream(stream_config(tstream))
    await tclient.publish(tstream, "s", b"x")
    await tclient.create_consumer(tstream, consumer_config("c", ack_wait_ms=60_000))
    assert delivered(await tclient.fetch(tstream, "c")) == [(0, 1, 1)]
    fetch = asyncio.create_task(tclient.fetch(tstream, "c", max_wait_ms=60_000))
    done, _ = await asyncio.wait({fetch}, timeout=0.3)
    assert not done
    await tclient.nak(tstream, "c", 0, 1)
    assert delivered(await asyncio.wait_for(fetch, EVENT_TIMEOUT_S)) == [(0, 1, 2)]


async def test_clock_advance_wakes_a_long_poll(tclient: NodeClient, tclock: TestClockClient, tstream: str) -> None:
    await tclient.create_stream(stream_config(tstream))
    await tclient.publish(tstream, "s", b"x")
    await tclient.create_consumer(tstream, consumer_config("c", ack_wait_ms=60_000))
    assert delivered(await tclient.fetch(tstream, "c")) == [(0, 1, 1)]
    fetch = asyncio.create_task(tclient.fetch(tstream, "c", max_wait_ms=60_000))
    done, _ = await asyncio.wait({fetch}, timeout=0.3)
    assert not done
    await tclock.advance(60_000)
    assert delivered(await asyncio.wait_for(fetch, EVENT_TIMEOUT_S)) == [(0, 1, 2)]


async def test_term_is_never_redelivered(tclient: NodeClient, tclock: TestClockClient, tstream: str) -> None:
    await tclient.create_stream(stream_config(tstream))
    for _ in range(2):
        await tclient.publish(tstream, "s", b"x")
    await tclient.create_consumer(tstream, consumer_config("c", ack_wait_ms=1000, max_deliver=100))
    assert [m.seq for m in await tclient.fetch(tstream, "c")] == [1, 2]
    await tclient.term(tstream, "c", 0, 1)
    assert state(await tclient.consumer_info(tstream, "c")) == expected(P(0, 1, 2, 1), delivered=2, termed=1)
    for deliver_count in (2, 3, 4):
        await tclock.advance(1000)
        assert delivered(await tclient.fetch(tstream, "c")) == [(0, 2, deliver_count)]
    await tclient.ack(tstream, "c", 0, 2)
    await tclock.advance(10_000)
    assert await tclient.fetch(tstream, "c") == []
    assert state(await tclient.consumer_info(tstream, "c")) == expected(
        P(0, 2, 2), delivered=2, acked=1, redelivered=3, termed=1
    )
    with pytest.raises(NotPendingError):
        await tclient.ack(tstream, "c", 0, 1)


async def test_in_progress_restarts_ack_wait(tclient: NodeClient, tclock: TestClockClient, tstream: str) -> None:
    await tclient.create_stream(stream_config(tstream))
    await tclient.publish(tstream, "s", b"x")
    await tclient.create_consumer(tstream, consumer_config("c", ack_wait_ms=10_000))
    assert delivered(await tclient.fetch(tstream, "c")) == [(0, 1, 1)]  # due at t0 + 10 s
    now = await tclock.advance(6_000)  # t0 + 6 s
    redeliver_at_ms = await tclient.in_progress(tstream, "c", 0, 1)
    assert redeliver_at_ms == now + 10_000
    await tclock.advance(4_000)  # t0 + 10 s: the old due time
    assert await tclient.fetch(tstream, "c") == []
    now = await tclock.advance(5_999)
    assert now == redeliver_at_ms - 1
    assert await tclient.fetch(tstream, "c") == []
    await tclock.advance(1)
    assert delivered(await tclient.fetch(tstream, "c")) == [(0, 1, 2)]  # in_progress did not count
    assert state(await tclient.consumer_info(tstream, "c")) == expected(P(0, 0, 1, 1, 0, 1), delivered=1, redelivered=1)


# -- max_deliver: dead letters and drops (test clock) -----------------------------------------------------


async def test_max_deliver_dead_letters(
    tclient: NodeClient, tclock: TestClockClient, tfeed: ChangeFeedClient, tstream: str
) -> None:
    await tclient.create_stream(stream_config(tstream, subjects=["jobs.>", "dlq.>"], partitions=2))
    headers = [("trace", "t-1"), ("k", "v")]
    ack = await tclient.publish(tstream, "jobs.a", b"work", headers=headers, partition=1, ts_ms=1234)
    assert (ack.partition, ack.seq) == (1, 1)
    config = consumer_config(
        "worker", filter_subject="jobs.>", ack_wait_ms=1000, max_deliver=2, dead_letter_subject="dlq.jobs"
    )
    await tclient.create_consumer(tstream, config)
    await tclient.create_consumer(tstream, consumer_config("dlq-reader", filter_subject="dlq.>"))
    start = await horizon(tfeed) + 1

    assert delivered(await tclient.fetch(tstream, "worker", 1)) == [(1, 1, 1)]
    await tclock.advance(1000)
    assert delivered(await tclient.fetch(tstream, "worker", 1)) == [(1, 1, 2)]
    now = await tclock.advance(1000)
    assert await tclient.fetch(tstream, "worker", 1) == []  # dead-lettered instead of a 3rd delivery

    dead = await tclient.read_messages(tstream, 1, 2)
    assert len(dead.messages) == 1
    letter = dead.messages[0]
    assert (letter.seq, letter.subject, letter.payload, letter.ts_ms, letter.partition, letter.deliver_count) == (
        2,
        "dlq.jobs",
        b"work",
        now,
        1,
        0,
    )
    assert [(h.key, h.value) for h in letter.headers] == [
        ("trace", "t-1"),
        ("k", "v"),
        ("x-weir-dlq-stream", tstream),
        ("x-weir-dlq-partition", "1"),
        ("x-weir-dlq-seq", "1"),
        ("x-weir-dlq-subject", "jobs.a"),
        ("x-weir-dlq-ts-ms", "1234"),
        ("x-weir-dlq-consumer", "worker"),
        ("x-weir-dlq-deliver-count", "2"),
        ("x-weir-dlq-reason", "max_deliver"),
    ]
    assert await tclient.scan_subject(tstream, "dlq.jobs", partition=1) == [letter]
    original = await tclient.get_message(tstream, 1, 1)  # Limits retention: the original stays
    assert (original.subject, original.payload) == ("jobs.a", b"work")

    info = await tclient.consumer_info(tstream, "worker")
    assert state(info) == expected(P(0), P(1, 1, 1), delivered=1, redelivered=1, dead_lettered=1)
    # The dead letter is a message like any other: a consumer of dlq.> gets it.
    (received,) = await tclient.fetch(tstream, "dlq-reader", 1)
    assert (received.seq, received.deliver_count, list(received.headers)) == (2, 1, list(letter.headers))
    # The worker's next fetch skips the dead letter (its filter does not match it).
    assert await tclient.fetch(tstream, "worker", 1) == []
    info = await tclient.consumer_info(tstream, "worker")
    assert state(info) == expected(P(0), P(1, 2, 2), delivered=1, redelivered=1, dead_lettered=1)

    changes = await consumer_changes(tfeed, start, tstream)
    worker = [state_change(c) for c in changes if c.consumer_state.consumer == "worker"]
    assert worker == [
        (0, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0),
        (0, 1, 1, 0, 1, 0, 0, 0, 0, 0, 0),
        (1, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0),
        (2, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0),
    ]
    assert {c.partition for c in changes} == {1}


async def test_max_deliver_without_dead_letter_subject_drops(
    tclient: NodeClient, tclock: TestClockClient, tstream: str
) -> None:
    await tclient.create_stream(stream_config(tstream))
    for _ in range(2):
        await tclient.publish(tstream, "s", b"x")
    await tclient.create_consumer(tstream, consumer_config("c", ack_wait_ms=1000, max_deliver=1))
    assert delivered(await tclient.fetch(tstream, "c")) == [(0, 1, 1), (0, 2, 1)]
    await tclient.ack(tstream, "c", 0, 2)
    await tclock.advance(1000)
    assert await tclient.fetch(tstream, "c") == []
    assert state(await tclient.consumer_info(tstream, "c")) == expected(P(0, 2, 2), delivered=2, acked=1, dropped=1)
    info = await tclient.stream_info(tstream)
    assert (info.stats.msg_count, info.stats.partitions[0].last_seq) == (2, 2)  # nothing appended
    with pytest.raises(NotPendingError):
        await tclient.ack(tstream, "c", 0, 1)


async def test_work_queue_dead_letter_moves_the_message(
    tclient: NodeClient, tclock: TestClockClient, tfeed: ChangeFeedClient, tstream: str
) -> None:
    await tclient.create_stream(stream_config(tstream, subjects=["jobs.>", "dlq.>"], retention="work_queue"))
    await tclient.publish(tstream, "jobs.a", b"work")
    await tclient.publish(tstream, "jobs.b", b"keep")
    config = consumer_config(
        "worker", filter_subject="jobs.>", ack_wait_ms=1000, max_deliver=1, dead_letter_subject="dlq.jobs"
    )
    await tclient.create_consumer(tstream, config)
    start = await horizon(tfeed) + 1
    assert delivered(await tclient.fetch(tstream, "worker", batch_size=1)) == [(0, 1, 1)]
    await tclock.advance(1000)
    assert delivered(await tclient.fetch(tstream, "worker", batch_size=1)) == [(0, 2, 1)]
    stored = [(m.seq, m.subject) async for m in tclient.read_all(tstream)]
    assert stored == [(2, "jobs.b"), (3, "dlq.jobs")]
    response = await tfeed.read_changes(start, 10_000)
    removes = [
        (list(c.remove.seqs), c.remove.reason) for c in response.changes if c.stream == tstream and c.remove.seqs
    ]
    assert removes == [([1], "dead_letter")]
    info = await tclient.consumer_info(tstream, "worker")
    assert (info.dead_lettered_total, info.num_ack_pending) == (1, 1)


# -- retention by consumers ----------------------------------------------------------------------------


async def test_work_queue_ack_removes_the_message(
    client: NodeClient, feed_client: ChangeFeedClient, stream: str
) -> None:
    await client.create_stream(stream_config(stream, retention="work_queue"))
    for _ in range(3):
        await client.publish(stream, "s", b"x")
    await client.create_consumer(stream, consumer_config("c", ack_wait_ms=LONG_ACK_WAIT_MS))
    start = await horizon(feed_client) + 1
    assert [m.seq for m in await client.fetch(stream, "c")] == [1, 2, 3]

    await client.ack(stream, "c", 0, 2)
    stats = (await client.stream_info(stream)).stats
    assert (stats.msg_count, [(p.first_seq, p.last_seq, p.msg_count) for p in stats.partitions]) == (2, [(1, 3, 2)])
    assert [m.seq async for m in client.read_all(stream)] == [1, 3]
    await client.term(stream, "c", 0, 3)  # term does not remove (seed semantics)
    assert (await client.stream_info(stream)).stats.msg_count == 2
    await client.ack(stream, "c", 0, 1)
    stats = (await client.stream_info(stream)).stats
    assert stats.msg_count == 1
    assert [m.seq async for m in client.read_all(stream)] == [3]
    response = await feed_client.read_changes(start, 10_000)
    removes = [(list(c.remove.seqs), c.remove.reason) for c in response.changes if c.stream == stream and c.remove.seqs]
    assert removes == [([2], "work_queue_ack"), ([1], "work_queue_ack")]


async def test_work_queue_first_seq_follows_removals(client: NodeClient, stream: str) -> None:
    """PartitionStats.first_seq is the first seq still stored, also after single removals."""
    await client.create_stream(stream_config(stream, retention="work_queue"))
    for _ in range(3):
        await client.publish(stream, "s", b"x")
    await client.create_consumer(stream, consumer_config("c", ack_wait_ms=LONG_ACK_WAIT_MS))
    await client.fetch(stream, "c")
    stats = []
    for seq in (1, 3, 2):
        await client.ack(stream, "c", 0, seq)
        partition = (await client.stream_info(stream)).stats.partitions[0]
        stats.append((partition.first_seq, partition.last_seq, partition.msg_count))
    assert stats == [(2, 3, 2), (2, 3, 1), (4, 3, 0)]


async def test_interest_retention(client: NodeClient, feed_client: ChangeFeedClient, stream: str) -> None:
    await client.create_stream(stream_config(stream, retention="interest"))
    await client.publish(stream, "s", b"nobody")  # no consumer: removed at once
    stats = (await client.stream_info(stream)).stats
    assert [(p.first_seq, p.last_seq, p.msg_count) for p in stats.partitions] == [(2, 1, 0)]
    await client.create_consumer(stream, consumer_config("a", deliver_policy="new", ack_wait_ms=LONG_ACK_WAIT_MS))
    await client.create_consumer(stream, consumer_config("b", deliver_policy="new", ack_wait_ms=LONG_ACK_WAIT_MS))
    for _ in range(3):
        await client.publish(stream, "s", b"x")  # seqs 2..4
    start = await horizon(feed_client) + 1
    assert [m.seq for m in await client.fetch(stream, "a")] == [2, 3, 4]
    assert [m.seq for m in await client.fetch(stream, "b")] == [2, 3, 4]
    await client.ack_batch(stream, "a", 0, [2, 3])
    assert (await client.stream_info(stream)).stats.msg_count == 3  # b still holds them
    await client.ack(stream, "b", 0, 2)
    stats = (await client.stream_info(stream)).stats
    assert [(p.first_seq, p.last_seq, p.msg_count) for p in stats.partitions] == [(3, 4, 2)]
    await client.delete_consumer(stream, "b")  # interest no longer waits for b: seq 3 goes (a acked it)
    stats = (await client.stream_info(stream)).stats
    assert [(p.first_seq, p.last_seq, p.msg_count) for p in stats.partitions] == [(4, 4, 1)]
    await client.ack(stream, "a", 0, 4)
    stats = (await client.stream_info(stream)).stats
    assert [(p.first_seq, p.last_seq, p.msg_count) for p in stats.partitions] == [(5, 4, 0)]
    response = await feed_client.read_changes(start, 10_000)
    truncates = [
        (c.truncate.first_seq, c.truncate.removed_count, c.truncate.reason)
        for c in response.changes
        if c.stream == stream and c.WhichOneof("kind") == "truncate"
    ]
    assert truncates == [(3, 1, "interest"), (4, 1, "interest"), (5, 1, "interest")]


# -- change feed and watch --------------------------------------------------------------------------------


async def test_change_feed_consumer_changes(client: NodeClient, feed_client: ChangeFeedClient, stream: str) -> None:
    await client.create_stream(stream_config(stream))
    for _ in range(3):
        await client.publish(stream, "s", b"x")
    start = await horizon(feed_client) + 1
    info = await client.create_consumer(stream, consumer_config("c", ack_wait_ms=LONG_ACK_WAIT_MS))
    assert [m.seq for m in await client.fetch(stream, "c")] == [1, 2, 3]
    await client.ack(stream, "c", 0, 1)
    await client.in_progress(stream, "c", 0, 2)
    await client.nak(stream, "c", 0, 2)
    assert delivered(await client.fetch(stream, "c")) == [(0, 2, 2)]
    await client.term(stream, "c", 0, 3)
    assert [r.result_code for r in await client.ack_batch(stream, "c", 0, [2, 3])] == ["ok", "not_pending"]
    assert await client.fetch(stream, "c") == []  # nothing delivered: no change
    with pytest.raises(NotPendingError):
        await client.ack(stream, "c", 0, 2)  # failed: no change
    await client.delete_consumer(stream, "c")

    changes = await consumer_changes(feed_client, start, stream)
    assert [c.WhichOneof("kind") for c in changes] == ["consumer_created"] + ["consumer_state"] * 7 + [
        "consumer_deleted"
    ]
    assert changes[0].consumer_created.config == info.config
    assert changes[-1].consumer_deleted.consumer == "c"
    assert {c.consumer_state.consumer for c in changes[1:-1]} == {"c"}
    assert [state_change(c) for c in changes[1:-1]] == [
        # floor, last, pending, delivered, redelivered, acked, naked, termed, in_progress, dl, dropped
        (0, 3, 3, 3, 0, 0, 0, 0, 0, 0, 0),  # fetch 1..3
        (1, 3, 2, 0, 0, 1, 0, 0, 0, 0, 0),  # ack 1
        (1, 3, 2, 0, 0, 0, 0, 0, 1, 0, 0),  # in_progress 2
        (1, 3, 2, 0, 0, 0, 1, 0, 0, 0, 0),  # nak 2
        (1, 3, 2, 0, 1, 0, 0, 0, 0, 0, 0),  # redelivery of 2
        (1, 3, 1, 0, 0, 0, 0, 1, 0, 0, 0),  # term 3
        (3, 3, 0, 0, 0, 1, 0, 0, 0, 0, 0),  # ack_batch: 2 ok
    ]
    seqs = [c.change_seq for c in changes]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    assert all(c.partition == 0 and c.ts_ms > 0 for c in changes)


async def test_watch_streams_shows_consumer_events(
    client: NodeClient, feed_client: ChangeFeedClient, stream: str
) -> None:
    await client.create_stream(stream_config(stream))
    start = await horizon(feed_client) + 1
    events: list[streams_pb2.WatchEvent] = []

    async def watch() -> None:
        async for event in client.watch_streams(start):
            if event.stream == stream:
                events.append(event)
                if event.type == streams_pb2.WATCH_EVENT_TYPE_STREAM_DELETED:
                    return

    watcher = asyncio.create_task(watch())  # starts at `start`, so it cannot miss what follows
    await client.create_consumer(stream, consumer_config("c"))
    await client.delete_consumer(stream, "c")
    await client.delete_stream(stream)  # the sentinel: every earlier event came before it
    await asyncio.wait_for(watcher, 10)
    assert [(e.type, e.consumer) for e in events] == [
        (streams_pb2.WATCH_EVENT_TYPE_CONSUMER_CREATED, "c"),
        (streams_pb2.WATCH_EVENT_TYPE_CONSUMER_DELETED, "c"),
        (streams_pb2.WATCH_EVENT_TYPE_STREAM_DELETED, ""),
    ]
    assert all(e.node_id == "shared" and e.change_seq >= start for e in events)


# -- push delivery (Subscribe) ----------------------------------------------------------------------------


async def test_subscribe_receives_a_message_published_to_an_idle_stream(client: NodeClient, stream: str) -> None:
    await client.create_stream(stream_config(stream))
    await client.create_consumer(stream, consumer_config("c", ack_wait_ms=LONG_ACK_WAIT_MS))
    events = client.subscribe(stream, "c")
    try:
        first = asyncio.create_task(next_event(events))
        done, _ = await asyncio.wait({first}, timeout=0.3)
        assert not done, "Subscribe on an empty stream produced an event"
        await client.publish(stream, "s", b"one")
        event = await first
        assert (event.message.seq, event.message.payload, event.message.deliver_count) == (1, b"one", 1)
        # Idle again (seq 1 is pending, nothing else is ready): the next publish arrives too.
        await client.publish(stream, "s", b"two")
        event = await next_event(events)
        assert (event.message.seq, event.message.payload) == (2, b"two")
    finally:
        await close(events)


async def test_subscribe_stop_when_empty(client: NodeClient, stream: str) -> None:
    await client.create_stream(stream_config(stream))
    for index in range(20):
        await client.publish(stream, "s", str(index).encode())
    await client.create_consumer(stream, consumer_config("c", ack_wait_ms=LONG_ACK_WAIT_MS))
    events = [event async for event in client.subscribe(stream, "c", batch_size=3, stop_when_empty=True)]
    assert [e.WhichOneof("event") for e in events] == ["message"] * 20 + ["stopped"]
    assert [(e.message.seq, e.message.payload, e.message.deliver_count) for e in events[:-1]] == [
        (seq, str(seq - 1).encode(), 1) for seq in range(1, 21)
    ]
    assert events[-1].stopped.reason == "empty"
    info = await client.consumer_info(stream, "c")
    assert state(info) == expected(P(0, 0, 20, 20, 0), delivered=20)
    # Nothing ready now: stops at once.
    again = [event async for event in client.subscribe(stream, "c", stop_when_empty=True)]
    assert [(e.WhichOneof("event"), e.stopped.reason) for e in again] == [("stopped", "empty")]


async def test_subscribe_batch_events(client: NodeClient, stream: str) -> None:
    await client.create_stream(stream_config(stream))
    for _ in range(5):
        await client.publish(stream, "s", b"x")
    await client.create_consumer(stream, consumer_config("c", ack_wait_ms=LONG_ACK_WAIT_MS))
    events = [
        event async for event in client.subscribe(stream, "c", batch_size=2, stop_when_empty=True, batch_events=True)
    ]
    assert [e.WhichOneof("event") for e in events] == ["batch", "batch", "batch", "stopped"]
    assert [delivered(list(e.batch.messages)) for e in events[:-1]] == [
        [(0, 1, 1), (0, 2, 1)],
        [(0, 3, 1), (0, 4, 1)],
        [(0, 5, 1)],
    ]
    assert events[-1].stopped.reason == "empty"


async def test_deleting_the_consumer_ends_a_subscribe(client: NodeClient, stream: str) -> None:
    await client.create_stream(stream_config(stream))
    await client.publish(stream, "s", b"x")
    await client.create_consumer(stream, consumer_config("c", ack_wait_ms=LONG_ACK_WAIT_MS))
    events = client.subscribe(stream, "c")
    try:
        assert (await next_event(events)).message.seq == 1  # bound and then idle
        await client.delete_consumer(stream, "c")
        event = await next_event(events)
        assert (event.WhichOneof("event"), event.stopped.reason) == ("stopped", "consumer_deleted")
        await assert_ended(events)
    finally:
        await close(events)


async def test_deleting_the_stream_ends_a_subscribe(client: NodeClient, stream: str) -> None:
    await client.create_stream(stream_config(stream))
    await client.publish(stream, "s", b"x")
    await client.create_consumer(stream, consumer_config("c", ack_wait_ms=LONG_ACK_WAIT_MS))
    events = client.subscribe(stream, "c")
    try:
        assert (await next_event(events)).message.seq == 1
        await client.delete_stream(stream)
        event = await next_event(events)
        assert (event.WhichOneof("event"), event.stopped.reason) == ("stopped", "stream_deleted")
        await assert_ended(events)
    finally:
        await close(events)


async def test_second_subscribe_without_group_is_consumer_bound(client: NodeClient, stream: str) -> None:
    await client.create_stream(stream_config(stream))
    await client.publish(stream, "s", b"x")
    await client.create_consumer(stream, consumer_config("c", ack_wait_ms=LONG_ACK_WAIT_MS))
    first = client.subscribe(stream, "c")
    try:
        assert (await next_event(first)).message.seq == 1  # the first one is bound
        second = client.subscribe(stream, "c", stop_when_empty=True)
        with pytest.raises(ConsumerBoundError) as raised:
            await next_event(second)
        await close(second)
        assert raised.value.status_code == grpc.StatusCode.FAILED_PRECONDITION
        assert raised.value.metadata == {"stream": stream, "consumer": "c"}
        assert "another Subscribe is bound" in raised.value.message
        # The first one still works.
        await client.publish(stream, "s", b"y")
        assert (await next_event(first)).message.seq == 2
    finally:
        await close(first)
    # Once the first is gone, the consumer takes a new Subscribe (its end reaches the server
    # asynchronously: bounded retries).
    deadline = time.monotonic() + EVENT_TIMEOUT_S
    while True:
        try:
            events = [event async for event in client.subscribe(stream, "c", stop_when_empty=True)]
        except ConsumerBoundError:
            assert time.monotonic() < deadline, "the closed Subscribe still holds the consumer"
            await asyncio.sleep(0.02)
            continue
        assert [e.stopped.reason for e in events] == ["empty"]
        break


async def test_deliver_group_shares_messages(client: NodeClient, stream: str) -> None:
    await client.create_stream(stream_config(stream))
    await client.create_consumer(stream, consumer_config("c", deliver_group="g", ack_wait_ms=LONG_ACK_WAIT_MS))
    received: dict[str, list[int]] = {"one": [], "two": []}
    acked: list[int] = []
    count = 40
    subscriptions = {name: client.subscribe(stream, "c", deliver_group="g", batch_size=1) for name in received}

    async def collect(name: str) -> None:
        async for event in subscriptions[name]:
            assert event.WhichOneof("event") == "message"
            received[name].append(event.message.seq)
            await client.ack(stream, "c", 0, event.message.seq)
            acked.append(event.message.seq)

    tasks = [asyncio.create_task(collect(name)) for name in received]
    try:
        for _ in range(count):
            await client.publish(stream, "s", b"x")
        deadline = time.monotonic() + EVENT_TIMEOUT_S
        # Until every message arrived and its ack was answered (the info below counts the acks).
        while sum(len(seqs) for seqs in received.values()) < count or len(acked) < count:
            assert time.monotonic() < deadline, f"only {received} arrived"
            assert not any(task.done() for task in tasks), [task.exception() for task in tasks if task.done()]
            await asyncio.sleep(0.01)
        info = await client.consumer_info(stream, "c")
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for events in subscriptions.values():
            await close(events)
    everything = received["one"] + received["two"]
    assert sorted(everything) == list(range(1, count + 1))  # each message to exactly one of them
    assert state(info) == expected(P(0, count, count), delivered=count, acked=count)


async def test_acks_while_subscribed(client: NodeClient, stream: str) -> None:
    await client.create_stream(stream_config(stream))
    for _ in range(5):
        await client.publish(stream, "s", b"x")
    await client.create_consumer(stream, consumer_config("c", max_ack_pending=2, ack_wait_ms=LONG_ACK_WAIT_MS))
    events = client.subscribe(stream, "c")
    try:
        assert [(await next_event(events)).message.seq for _ in range(2)] == [1, 2]
        # At max_ack_pending: the server holds the rest back (its deliveries are recorded first).
        assert state(await client.consumer_info(stream, "c")) == expected(P(0, 0, 2, 2, 3), delivered=2)
        await client.ack(stream, "c", 0, 1)
        assert (await next_event(events)).message.seq == 3
        assert [r.result_code for r in await client.ack_batch(stream, "c", 0, [2, 3])] == ["ok", "ok"]
        assert [(await next_event(events)).message.seq for _ in range(2)] == [4, 5]
        await client.ack_batch(stream, "c", 0, [4, 5])
        assert state(await client.consumer_info(stream, "c")) == expected(P(0, 5, 5), delivered=5, acked=5)
    finally:
        await close(events)


async def test_subscribe_over_every_partition(client: NodeClient, stream: str) -> None:
    await client.create_stream(stream_config(stream, partitions=3))
    for partition in range(3):
        for _ in range(2):
            await client.publish(stream, "s", f"p{partition}".encode(), partition=partition)
    await client.create_consumer(stream, consumer_config("all", ack_wait_ms=LONG_ACK_WAIT_MS))
    await client.create_consumer(stream, consumer_config("some", ack_wait_ms=LONG_ACK_WAIT_MS))

    events = [event async for event in client.subscribe(stream, "all", stop_when_empty=True)]
    assert events[-1].stopped.reason == "empty"
    got = sorted((e.message.partition, e.message.seq, e.message.payload) for e in events[:-1])
    assert got == [(p, seq, f"p{p}".encode()) for p in range(3) for seq in (1, 2)]

    events = [event async for event in client.subscribe(stream, "some", partitions=[0, 2], stop_when_empty=True)]
    assert events[-1].stopped.reason == "empty"
    assert sorted((e.message.partition, e.message.seq) for e in events[:-1]) == [(0, 1), (0, 2), (2, 1), (2, 2)]
    info = await client.consumer_info(stream, "some")
    assert state(info) == expected(P(0, 0, 2, 2), P(1, 0, 0, 0, 2), P(2, 0, 2, 2), delivered=4)


async def test_subscribe_over_partitions_wakes_on_any(client: NodeClient, stream: str) -> None:
    await client.create_stream(stream_config(stream, partitions=2))
    await client.create_consumer(stream, consumer_config("c", ack_wait_ms=LONG_ACK_WAIT_MS))
    events = client.subscribe(stream, "c")
    try:
        for partition in (1, 0, 1):
            ack = await client.publish(stream, "s", b"x", partition=partition)
            event = await next_event(events)
            assert (event.message.partition, event.message.seq) == (partition, ack.seq)
    finally:
        await close(events)
