"""Durable consumers in the in-process node core, with a manual clock (no sleeping for time):
lifecycle, delivery policies, fetch bounds, redelivery, settling, dead letters, work-queue and
interest retention, the change feed, restarts, long-poll fetch and subscribe."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, AsyncIterator
from pathlib import Path
from typing import cast

import pytest
from weir.errors import (
    AlreadyExistsError,
    ConsumerBoundError,
    InvalidArgumentError,
    InvalidConfigError,
    NoSuchConsumerError,
    NoSuchMessageError,
    NoSuchPartitionError,
    NoSuchStreamError,
    NotPendingError,
)
from weir.options import Storage
from weir.v1 import streams_pb2, types_pb2
from weir_partition_node.clock import ManualClock
from weir_partition_node.commit_items import Delivery
from weir_partition_node.consumers import ConsumerCursor, ConsumerSpec, Pending, check_cursor
from weir_partition_node.node import Node
from weir_partition_node.node_subscriptions import bind_refusal
from weir_partition_node.settings import NodeSettings

from tests.proto_configs import consumer_config, stream_config

T0 = 1_700_000_000_000  # ManualClock's default start
DEADLINE_S = 5.0


def settings(tmp_path: Path, **overrides: object) -> NodeSettings:
    values: dict[str, object] = {
        "node_id": "consumers",
        "data_dir": tmp_path / "data",
        "retention_sweep_interval_ms": 3_600_000,  # tests call sweep_once() themselves
    }
    values.update(overrides)
    return NodeSettings(**values)  # type: ignore[arg-type]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(T0)


@pytest.fixture
async def node(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Node]:
    core = await Node.open(settings(tmp_path), clock=clock)
    yield core
    if not core._closing:
        await core.close()


@pytest.fixture(params=["file", "memory"])
def storage(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def entry(subject: str = "s.a", payload: bytes = b"x", **fields: object) -> streams_pb2.PublishEntry:
    return streams_pb2.PublishEntry(subject=subject, payload=payload, **fields)  # type: ignore[arg-type]


async def publish(node: Node, stream: str, *entries: streams_pb2.PublishEntry) -> list[int]:
    outcomes = await node.publisher.publish(stream, list(entries), streams_pb2.ACK_LEVEL_LEADER, batch=True)
    assert all(outcome.result_code == "ok" for outcome in outcomes)
    return [outcome.seq for outcome in outcomes]


async def changes(node: Node, from_change_seq: int = 0) -> list[types_pb2.Change]:
    records, _, _ = await node.changes.read_changes(from_change_seq, 10_000)
    return [types_pb2.Change.FromString(record) for record in records]


def got(deliveries: list[Delivery]) -> list[tuple[int, int]]:
    return [(delivery.seq, delivery.deliver_count) for delivery in deliveries]


async def fetch(
    node: Node,
    stream: str,
    name: str = "c",
    partition: int = 0,
    *,
    batch: int = 100,
    max_bytes: int = 0,
    max_wait_ms: int = 0,
) -> list[tuple[int, int]]:
    return got(
        await node.consumers.fetch(
            stream, name, partition, batch_size=batch, max_bytes=max_bytes, max_wait_ms=max_wait_ms
        )
    )


def partition_states(info: types_pb2.ConsumerInfo) -> list[tuple[int, int, int, int, int, int]]:
    """(partition, ack_floor, last_delivered, num_ack_pending, num_pending, num_redelivered)"""
    return [
        (p.partition, p.ack_floor, p.last_delivered, p.num_ack_pending, p.num_pending, p.num_redelivered)
        for p in info.partitions
    ]


def totals(info: types_pb2.ConsumerInfo) -> tuple[int, int, int, int, int, int]:
    """(delivered, acked, redelivered, dead_lettered, dropped, termed)"""
    return (
        info.delivered_total,
        info.acked_total,
        info.redelivered_total,
        info.dead_lettered_total,
        info.dropped_total,
        info.termed_total,
    )


def record_size(node: Node, stream: str, seq: int, partition: int = 0) -> int:
    return len(node.reads.get_message(stream, partition, seq))


def stored_seqs(node: Node, stream: str, partition: int = 0) -> list[int]:
    records, _, _ = node.reads.read_messages(stream, partition, 0, 10_000, 0)
    return [seq for seq, _ in records]


def stored_bytes(node: Node, stream: str, partition: int = 0) -> int:
    records, _, _ = node.reads.read_messages(stream, partition, 0, 10_000, 0)
    return sum(len(record) for _, record in records)


def stats(node: Node, stream: str, partition: int = 0) -> tuple[int, int, int, int]:
    """(msg_count, bytes, first_seq, last_seq) of one partition."""
    p = node.stream_info(stream).stats.partitions[partition]
    return p.msg_count, p.bytes, p.first_seq, p.last_seq


def of_kind(all_changes: list[types_pb2.Change], kind: str) -> list[types_pb2.Change]:
    return [change for change in all_changes if change.WhichOneof("kind") == kind]


# -- lifecycle ----------------------------------------------------------------------------------------------


async def test_create_is_idempotent_info_list_delete(node: Node, clock: ManualClock, storage: Storage) -> None:
    await node.admin.create_stream(stream_config("life", subjects=["s.>"], partitions=2, storage=storage))
    info = await node.consumers.create_consumer("life", consumer_config("b", filter_subject="s.b"))
    assert info.config == consumer_config(
        "b", filter_subject="s.b", ack_wait_ms=30_000, max_deliver=5, max_ack_pending=1000
    )
    assert (info.stream, info.created_at_ms) == ("life", T0)
    assert partition_states(info) == [(0, 0, 0, 0, 0, 0), (1, 0, 0, 0, 0, 0)]
    assert totals(info) == (0, 0, 0, 0, 0, 0)
    clock.advance(5)
    # the same effective config (defaults spelled out) is the same consumer
    again = await node.consumers.create_consumer("life", consumer_config("b", filter_subject="s.b", max_deliver=5))
    assert again == info
    for other in (
        consumer_config("b", filter_subject="s.c"),
        consumer_config("b", filter_subject="s.b", ack_wait_ms=1),
    ):
        with pytest.raises(AlreadyExistsError, match="already has a consumer 'b' with a different config"):
            await node.consumers.create_consumer("life", other)
    await node.consumers.create_consumer("life", consumer_config("a"))
    assert [i.config.name for i in node.consumers.list_consumers("life")] == ["a", "b"]
    assert node.consumers.list_consumers("life")[1] == info
    await node.consumers.delete_consumer("life", "b")
    assert [i.config.name for i in node.consumers.list_consumers("life")] == ["a"]
    with pytest.raises(NoSuchConsumerError, match="stream 'life' has no consumer 'b'"):
        node.consumers.consumer_info("life", "b")
    with pytest.raises(NoSuchConsumerError):
        await node.consumers.delete_consumer("life", "b")
    with pytest.raises(NoSuchConsumerError):
        await fetch(node, "life", "b")
    with pytest.raises(NoSuchConsumerError):
        await node.consumers.ack("life", "b", 0, 1)
    with pytest.raises(NoSuchStreamError):
        await node.consumers.create_consumer("nope", consumer_config("a"))
    with pytest.raises(NoSuchPartitionError):
        await fetch(node, "life", "a", 2)


async def test_create_validates_against_the_stream(node: Node) -> None:
    await node.admin.create_stream(stream_config("checked", subjects=["s.>"]))
    with pytest.raises(InvalidConfigError, match=r"filter_subject 't\.>' matches none"):
        await node.consumers.create_consumer("checked", consumer_config("c", filter_subject="t.>"))
    with pytest.raises(InvalidConfigError, match=r"dead_letter_subject 'dlq\.c' matches none"):
        await node.consumers.create_consumer(
            "checked", consumer_config("c", filter_subject="s.a", dead_letter_subject="dlq.c")
        )
    assert node.consumers.list_consumers("checked") == []
    assert of_kind(await changes(node), "consumer_created") == []


async def test_fetch_argument_bounds(node: Node) -> None:
    await node.admin.create_stream(stream_config("bounds"))
    await node.consumers.create_consumer("bounds", consumer_config("c"))
    with pytest.raises(InvalidArgumentError, match="batch_size: at most 10000"):
        await fetch(node, "bounds", batch=10_001)
    with pytest.raises(InvalidArgumentError, match="max_wait_ms: at most 300000"):
        await fetch(node, "bounds", max_wait_ms=300_001)
    with pytest.raises(InvalidArgumentError, match="seqs: at least one"):
        await node.consumers.ack_batch("bounds", "c", 0, [])
    with pytest.raises(InvalidArgumentError, match="seqs: at most 10000, got 10001"):
        await node.consumers.ack_batch("bounds", "c", 0, list(range(1, 10_002)))


# -- delivery policies --------------------------------------------------------------------------------------


async def test_delivery_policies_over_partitions(node: Node, storage: Storage) -> None:
    await node.admin.create_stream(stream_config("pol", subjects=["s.>"], partitions=3, storage=storage))
    # p0: 1 s.a, 2 s.b, 3 s.a, 4 s.b; p1: 1 s.a, 2 s.a; p2: empty
    await publish(node, "pol", *[entry(s, partition=0) for s in ("s.a", "s.b", "s.a", "s.b")])
    await publish(node, "pol", entry("s.a", partition=1), entry("s.a", partition=1))
    configs = {
        "all": consumer_config("all"),
        "last": consumer_config("last", deliver_policy="last"),
        "last_a": consumer_config("last_a", deliver_policy="last", filter_subject="s.a"),
        "last_b": consumer_config("last_b", deliver_policy="last", filter_subject="s.b"),
        "seq2": consumer_config("seq2", deliver_policy="by_start_seq", start_seq=2),
        "new": consumer_config("new", deliver_policy="new"),
    }
    starts = {}
    for name, config in configs.items():
        info = await node.consumers.create_consumer("pol", config)
        starts[name] = [(p.last_delivered, p.ack_floor, p.num_pending) for p in info.partitions]
    assert starts == {
        "all": [(0, 0, 4), (0, 0, 2), (0, 0, 0)],
        "last": [(3, 3, 1), (1, 1, 1), (0, 0, 0)],
        "last_a": [(2, 2, 1), (1, 1, 1), (0, 0, 0)],
        "last_b": [(3, 3, 1), (2, 2, 0), (0, 0, 0)],
        "seq2": [(1, 1, 3), (1, 1, 1), (1, 1, 0)],
        "new": [(4, 4, 0), (2, 2, 0), (0, 0, 0)],
    }
    await publish(node, "pol", entry("s.a", partition=0), entry("s.a", partition=1), entry("s.a", partition=2))
    delivered = {name: [[seq for seq, _ in await fetch(node, "pol", name, p)] for p in range(3)] for name in configs}
    assert delivered == {
        "all": [[1, 2, 3, 4, 5], [1, 2, 3], [1]],
        "last": [[4, 5], [2, 3], [1]],
        "last_a": [[3, 5], [2, 3], [1]],
        "last_b": [[4], [], []],
        "seq2": [[2, 3, 4, 5], [2, 3], []],
        "new": [[5], [3], [1]],
    }


async def test_deliver_last_per_subject_then_every_later_message(node: Node, storage: Storage) -> None:
    """Of what is stored at creation, the newest message of each subject (in seq order); after it,
    every message, none passed over even when a later one shares its subject (a key-value watch)."""
    await node.admin.create_stream(stream_config("kv", subjects=["k.>"], partitions=2, storage=storage))
    # p0: 1 k.a, 2 k.b, 3 k.a, 4 k.c, 5 k.b; p1: 1 k.a
    await publish(node, "kv", *[entry(s, partition=0) for s in ("k.a", "k.b", "k.a", "k.c", "k.b")])
    await publish(node, "kv", entry("k.a", partition=1))
    created = await node.consumers.create_consumer("kv", consumer_config("c", deliver_policy="last_per_subject"))
    assert [(p.last_per_subject_until, p.num_pending) for p in created.partitions] == [(5, 3), (1, 1)]
    await node.consumers.create_consumer(
        "kv", consumer_config("b", deliver_policy="last_per_subject", filter_subject="k.b")
    )
    # stored after creation, before the first fetch: k.a's value at creation (3) is still delivered
    await publish(node, "kv", entry("k.a", partition=0), entry("k.a", partition=0), entry("k.b", partition=0))
    assert node.consumers.consumer_info("kv", "c").partitions[0].num_pending == 6  # 3, 4, 5, then 6, 7, 8
    assert await fetch(node, "kv", "c", batch=2) == [(3, 1), (4, 1)]  # a batch counts deliveries only
    assert node.consumers.consumer_info("kv", "c").partitions[0].num_pending == 4
    assert await fetch(node, "kv", "c") == [(5, 1), (6, 1), (7, 1), (8, 1)]
    assert await fetch(node, "kv", "c", 1) == [(1, 1)]
    assert await fetch(node, "kv", "b") == [(5, 1), (8, 1)]
    info = node.consumers.consumer_info("kv", "c")
    assert [(p.partition, p.last_delivered, p.num_ack_pending) for p in info.partitions] == [(0, 8, 6), (1, 1, 1)]
    # a stream empty at creation: nothing to pass over
    await node.admin.create_stream(stream_config("empty", subjects=["k.>"], storage=storage))
    await node.consumers.create_consumer("empty", consumer_config("c", deliver_policy="last_per_subject"))
    await publish(node, "empty", entry("k.a"), entry("k.a"))
    assert await fetch(node, "empty", "c") == [(1, 1), (2, 1)]


async def test_last_per_subject_keeps_its_horizon_across_a_restart(tmp_path: Path, clock: ManualClock) -> None:
    core = await Node.open(settings(tmp_path), clock=clock)
    await core.admin.create_stream(stream_config("kv", subjects=["k.>"]))
    await publish(core, "kv", *[entry(s) for s in ("k.a", "k.b", "k.a", "k.b", "k.c")])  # newest: 3, 4, 5
    await core.consumers.create_consumer(
        "kv", consumer_config("fresh", deliver_policy="last_per_subject")
    )  # never fetched
    await core.consumers.create_consumer("kv", consumer_config("begun", deliver_policy="last_per_subject"))
    assert await fetch(core, "kv", "begun", batch=1) == [(3, 1)]
    await publish(core, "kv", entry("k.a"), entry("k.c"))  # 6, 7: after the horizon
    await core.close()

    reopened = await Node.open(settings(tmp_path), clock=clock)
    try:
        assert await fetch(reopened, "kv", "fresh") == [(3, 1), (4, 1), (5, 1), (6, 1), (7, 1)]  # from the catalog
        assert await fetch(reopened, "kv", "begun") == [(4, 1), (5, 1), (6, 1), (7, 1)]  # from its stored state
        assert reopened._stream("kv").partitions[0].consumers["begun"].last_per_subject_until == 5
    finally:
        await reopened.close()


async def test_deliver_by_start_time(node: Node, clock: ManualClock, storage: Storage) -> None:
    await node.admin.create_stream(stream_config("timed", partitions=3, storage=storage))
    await publish(node, "timed", entry(partition=0), entry(partition=0), entry(partition=1))
    clock.advance(1000)
    await publish(node, "timed", entry(partition=0), entry(partition=1), entry(partition=1))
    clock.advance(1000)
    info = await node.consumers.create_consumer(
        "timed", consumer_config("c", deliver_policy="by_start_time", start_time_ms=T0 + 1000)
    )
    assert [(p.last_delivered, p.num_pending) for p in info.partitions] == [(2, 1), (1, 2), (0, 0)]
    late = await node.consumers.create_consumer(
        "timed", consumer_config("late", deliver_policy="by_start_time", start_time_ms=T0 + 1001)
    )
    assert [p.last_delivered for p in late.partitions] == [3, 3, 0]  # nothing that new yet: only new ones
    await publish(node, "timed", entry(partition=2))
    assert [await fetch(node, "timed", "c", p) for p in range(3)] == [[(3, 1)], [(2, 1), (3, 1)], [(1, 1)]]
    assert [await fetch(node, "timed", "late", p) for p in range(3)] == [[], [], [(1, 1)]]


# -- fetch -------------------------------------------------------------------------------------------------


async def test_filter_skips_and_last_delivered_advances(node: Node, storage: Storage) -> None:
    await node.admin.create_stream(stream_config("filt", subjects=["s.>"], storage=storage))
    await publish(node, "filt", *[entry(s) for s in ("s.b", "s.a", "s.a", "s.b", "s.a")])
    info = await node.consumers.create_consumer("filt", consumer_config("c", filter_subject="s.b"))
    assert partition_states(info) == [(0, 0, 0, 0, 2, 0)]
    assert await fetch(node, "filt", batch=1) == [(1, 1)]
    # stopped before the next match: seqs 2 and 3 were looked at and skipped
    assert partition_states(node.consumers.consumer_info("filt", "c")) == [(0, 0, 3, 1, 1, 0)]
    assert await fetch(node, "filt") == [(4, 1)]
    assert partition_states(node.consumers.consumer_info("filt", "c")) == [(0, 0, 5, 2, 0, 0)]
    await publish(node, "filt", entry("s.a"))
    assert await fetch(node, "filt") == []
    await node.consumers.ack("filt", "c", 0, 1)
    await node.consumers.ack("filt", "c", 0, 4)
    assert partition_states(node.consumers.consumer_info("filt", "c")) == [(0, 6, 6, 0, 0, 0)]
    await publish(node, "filt", entry("s.b"), entry("s.a"))
    assert partition_states(node.consumers.consumer_info("filt", "c")) == [(0, 6, 6, 0, 1, 0)]


async def test_fetch_batch_size_and_max_bytes(node: Node, storage: Storage) -> None:
    await node.admin.create_stream(stream_config("sized", storage=storage))
    await publish(node, "sized", *[entry(payload=b"p" * 100) for _ in range(8)])
    size = record_size(node, "sized", 1)
    assert all(record_size(node, "sized", seq) == size for seq in range(1, 9))
    await node.consumers.create_consumer("sized", consumer_config("c"))
    assert await fetch(node, "sized", batch=2) == [(1, 1), (2, 1)]
    assert await fetch(node, "sized", max_bytes=2 * size) == [(3, 1), (4, 1)]
    assert await fetch(node, "sized", max_bytes=2 * size - 1) == [(5, 1)]
    assert await fetch(node, "sized", max_bytes=1) == [(6, 1)]  # at least one message
    assert await fetch(node, "sized", batch=10) == [(7, 1), (8, 1)]
    assert await fetch(node, "sized") == []
    deliveries = await node.consumers.fetch("sized", "c", 0, batch_size=0)
    assert deliveries == []


async def test_fetch_record_is_the_stored_message(node: Node) -> None:
    await node.admin.create_stream(stream_config("rec", partitions=2))
    headers = [types_pb2.Header(key="h", value="v")]
    await publish(node, "rec", entry("s.a", b"body", headers=headers, partition=1))
    await node.consumers.create_consumer("rec", consumer_config("c"))
    (delivery,) = await node.consumers.fetch("rec", "c", 1, batch_size=10)
    message = types_pb2.Message.FromString(delivery.record)
    assert (message.seq, message.subject, message.payload, message.partition, message.ts_ms) == (
        1,
        "s.a",
        b"body",
        1,
        T0,
    )
    assert [(h.key, h.value) for h in message.headers] == [("h", "v")]
    assert delivery.record == node.reads.get_message("rec", 1, 1)


async def test_max_ack_pending_bounds_fetch(node: Node, storage: Storage) -> None:
    await node.admin.create_stream(stream_config("bound", storage=storage))
    await publish(node, "bound", *[entry() for _ in range(5)])
    await node.consumers.create_consumer("bound", consumer_config("c", max_ack_pending=2))
    assert await fetch(node, "bound", batch=10) == [(1, 1), (2, 1)]
    assert await fetch(node, "bound", batch=10) == []
    assert await fetch(node, "bound", batch=10, max_wait_ms=20) == []
    await node.consumers.ack("bound", "c", 0, 2)
    assert await fetch(node, "bound", batch=10) == [(3, 1)]
    assert await fetch(node, "bound", batch=10) == []
    await node.consumers.ack_batch("bound", "c", 0, [1, 3])
    assert await fetch(node, "bound", batch=10) == [(4, 1), (5, 1)]
    assert node.consumers.consumer_info("bound", "c").num_ack_pending == 2


async def test_due_redeliveries_are_made_at_the_max_ack_pending_bound(node: Node, clock: ManualClock) -> None:
    await node.admin.create_stream(stream_config("stuck"))
    await publish(node, "stuck", entry(), entry(), entry())
    await node.consumers.create_consumer("stuck", consumer_config("c", max_ack_pending=2, ack_wait_ms=1000))
    assert await fetch(node, "stuck") == [(1, 1), (2, 1)]
    clock.advance(1000)  # the client went away: both are due again
    assert await fetch(node, "stuck") == [(1, 2), (2, 2)]


async def test_redelivery_after_ack_wait_with_rising_deliver_count(
    node: Node, clock: ManualClock, storage: Storage
) -> None:
    await node.admin.create_stream(stream_config("redo", storage=storage))
    await publish(node, "redo", entry(), entry())
    await node.consumers.create_consumer("redo", consumer_config("c", ack_wait_ms=1000))
    assert await fetch(node, "redo") == [(1, 1), (2, 1)]
    clock.advance(999)
    assert await fetch(node, "redo") == []
    clock.advance(1)
    assert await fetch(node, "redo", batch=1) == [(1, 2)]  # lowest seq first
    assert await fetch(node, "redo") == [(2, 2)]
    clock.advance(1000)
    assert await fetch(node, "redo") == [(1, 3), (2, 3)]
    info = node.consumers.consumer_info("redo", "c")
    assert totals(info) == (2, 0, 4, 0, 0, 0)
    assert partition_states(info) == [(0, 0, 2, 2, 0, 2)]
    await node.consumers.ack("redo", "c", 0, 1)
    assert partition_states(node.consumers.consumer_info("redo", "c")) == [(0, 1, 2, 1, 0, 1)]


async def test_redeliveries_come_before_new_messages(node: Node, clock: ManualClock) -> None:
    await node.admin.create_stream(stream_config("order"))
    await publish(node, "order", entry(), entry())
    await node.consumers.create_consumer("order", consumer_config("c", ack_wait_ms=1000))
    assert await fetch(node, "order", batch=1) == [(1, 1)]
    clock.advance(1000)
    assert await fetch(node, "order", batch=2) == [(1, 2), (2, 1)]


async def test_due_redeliveries_left_by_max_bytes_come_next(node: Node, clock: ManualClock) -> None:
    await node.admin.create_stream(stream_config("bytesredo"))
    await publish(node, "bytesredo", *[entry(payload=b"p" * 100) for _ in range(3)])
    size = record_size(node, "bytesredo", 1)
    await node.consumers.create_consumer("bytesredo", consumer_config("c", ack_wait_ms=1000))
    assert await fetch(node, "bytesredo") == [(1, 1), (2, 1), (3, 1)]
    clock.advance(1000)
    assert await fetch(node, "bytesredo", max_bytes=size) == [(1, 2)]
    assert await fetch(node, "bytesredo", max_bytes=size) == [(2, 2)]
    assert await fetch(node, "bytesredo") == [(3, 2)]


async def test_nak_with_delay_and_without(node: Node, clock: ManualClock, storage: Storage) -> None:
    await node.admin.create_stream(stream_config("nak", storage=storage))
    await publish(node, "nak", entry(), entry())
    await node.consumers.create_consumer("nak", consumer_config("c", ack_wait_ms=60_000))
    assert await fetch(node, "nak") == [(1, 1), (2, 1)]
    await node.consumers.nak("nak", "c", 0, 1, 5000)
    await node.consumers.nak("nak", "c", 0, 2, 0)
    assert await fetch(node, "nak") == [(2, 2)]
    clock.advance(4999)
    assert await fetch(node, "nak") == []
    clock.advance(1)
    assert await fetch(node, "nak") == [(1, 2)]
    with pytest.raises(NotPendingError, match="seq 3 was never delivered"):
        await node.consumers.nak("nak", "c", 0, 3, 0)
    with pytest.raises(InvalidArgumentError, match="delay_ms: at most"):
        await node.consumers.nak("nak", "c", 0, 1, 604_800_001)
    assert node.consumers.consumer_info("nak", "c").redelivered_total == 2


async def test_term_is_never_redelivered(node: Node, clock: ManualClock, storage: Storage) -> None:
    await node.admin.create_stream(stream_config("term", storage=storage))
    await publish(node, "term", entry(), entry())
    await node.consumers.create_consumer("term", consumer_config("c", ack_wait_ms=1000))
    assert await fetch(node, "term") == [(1, 1), (2, 1)]
    await node.consumers.term("term", "c", 0, 1)
    clock.advance(1000)
    assert await fetch(node, "term") == [(2, 2)]
    clock.advance(10_000)
    assert await fetch(node, "term") == [(2, 3)]
    for call in (node.consumers.term, node.consumers.ack, node.consumers.in_progress):
        with pytest.raises(NotPendingError, match="seq 1 is not pending for consumer 'c'"):
            await call("term", "c", 0, 1)
    info = node.consumers.consumer_info("term", "c")
    assert totals(info) == (2, 0, 2, 0, 0, 1)
    assert partition_states(info) == [(0, 1, 2, 1, 0, 1)]
    assert stats(node, "term")[0] == 2  # limits: nothing removed


async def test_in_progress_pushes_the_due_time(node: Node, clock: ManualClock, storage: Storage) -> None:
    await node.admin.create_stream(stream_config("busy", storage=storage))
    await publish(node, "busy", entry())
    await node.consumers.create_consumer("busy", consumer_config("c", ack_wait_ms=1000))
    assert await fetch(node, "busy") == [(1, 1)]
    clock.advance(800)
    assert await node.consumers.in_progress("busy", "c", 0, 1) == T0 + 1800
    clock.advance(500)  # past the original due time
    assert await fetch(node, "busy") == []
    clock.advance(500)
    assert await fetch(node, "busy") == [(1, 2)]  # in_progress did not count as a delivery
    with pytest.raises(NotPendingError, match="never delivered"):
        await node.consumers.in_progress("busy", "c", 0, 2)


async def test_ack_errors_and_ack_batch_results(node: Node) -> None:
    await node.admin.create_stream(stream_config("acks"))
    await publish(node, "acks", entry(), entry(), entry())
    await node.consumers.create_consumer("acks", consumer_config("c"))
    assert await fetch(node, "acks", batch=2) == [(1, 1), (2, 1)]
    with pytest.raises(NotPendingError, match=r"seq 3 was never delivered to consumer 'c' \(last delivered seq is 2\)"):
        await node.consumers.ack("acks", "c", 0, 3)
    await node.consumers.ack("acks", "c", 0, 1)
    with pytest.raises(NotPendingError, match="seq 1 is not pending") as caught:
        await node.consumers.ack("acks", "c", 0, 1)
    assert caught.value.metadata == {"stream": "acks", "partition": "0", "consumer": "c", "seq": "1"}
    results = await node.consumers.ack_batch("acks", "c", 0, [2, 1, 3, 2])
    assert [(seq, code) for seq, code, _ in results] == [
        (2, "ok"),
        (1, "not_pending"),
        (3, "not_pending"),
        (2, "not_pending"),
    ]
    assert "never delivered" in results[2][2]
    assert results[0][2] == ""
    info = node.consumers.consumer_info("acks", "c")
    assert (info.acked_total, info.num_ack_pending) == (2, 0)
    assert partition_states(info) == [(0, 2, 2, 0, 1, 0)]


# -- max_deliver and dead letters -------------------------------------------------------------------------------


async def dead_letter_setup(node: Node, clock: ManualClock, storage: Storage, dead_letter_subject: str) -> None:
    await node.admin.create_stream(stream_config("dl", subjects=["s.>", "dlq.>"], partitions=2, storage=storage))
    headers = [types_pb2.Header(key="trace", value="t-1"), types_pb2.Header(key="k", value="v")]
    await publish(node, "dl", entry("s.a", b"one", partition=0), entry("s.a", b"orig", headers=headers, partition=1))
    config = consumer_config(
        "c", filter_subject="s.>", ack_wait_ms=1000, max_deliver=2, dead_letter_subject=dead_letter_subject
    )
    await node.consumers.create_consumer("dl", config)
    assert await fetch(node, "dl", partition=1) == [(1, 1)]
    clock.advance(1000)
    assert await fetch(node, "dl", partition=1) == [(1, 2)]
    clock.advance(1000)


def assert_dead_letter(node: Node, clock: ManualClock) -> None:
    assert stats(node, "dl", 1)[2:] == (1, 2)
    message = types_pb2.Message.FromString(node.reads.get_message("dl", 1, 2))
    assert (message.seq, message.subject, message.payload, message.partition, message.ts_ms) == (
        2,
        "dlq.c",
        b"orig",
        1,
        clock.now_ms(),
    )
    assert [(h.key, h.value) for h in message.headers] == [
        ("trace", "t-1"),
        ("k", "v"),
        ("x-weir-dlq-stream", "dl"),
        ("x-weir-dlq-partition", "1"),
        ("x-weir-dlq-seq", "1"),
        ("x-weir-dlq-subject", "s.a"),
        ("x-weir-dlq-ts-ms", str(T0)),
        ("x-weir-dlq-consumer", "c"),
        ("x-weir-dlq-deliver-count", "2"),
        ("x-weir-dlq-reason", "max_deliver"),
    ]
    assert stats(node, "dl", 0)[2:] == (1, 1)  # the other partition is untouched
    info = node.consumers.consumer_info("dl", "c")
    assert totals(info) == (1, 0, 1, 1, 0, 0)
    assert partition_states(info)[1] == (1, 1, 1, 0, 0, 0)  # the dead letter does not match the filter


async def test_max_deliver_dead_letters_at_fetch(node: Node, clock: ManualClock, storage: Storage) -> None:
    await dead_letter_setup(node, clock, storage, "dlq.c")
    assert await fetch(node, "dl", partition=1) == []
    assert_dead_letter(node, clock)
    with pytest.raises(NotPendingError):
        await node.consumers.ack("dl", "c", 1, 1)
    assert await fetch(node, "dl", partition=1) == []  # skips the dead letter (filter)
    assert partition_states(node.consumers.consumer_info("dl", "c"))[1] == (1, 2, 2, 0, 0, 0)
    assert stats(node, "dl", 1)[0] == 2  # limits: the original stays


async def test_sweep_dead_letters_without_a_fetch(node: Node, clock: ManualClock, storage: Storage) -> None:
    await dead_letter_setup(node, clock, storage, "dlq.c")
    assert await node.sweep_once() == 0
    assert_dead_letter(node, clock)
    assert await node.sweep_once() == 0
    assert stats(node, "dl", 1)[3] == 2  # only once


async def test_max_deliver_without_dead_letter_subject_drops(node: Node, clock: ManualClock, storage: Storage) -> None:
    await dead_letter_setup(node, clock, storage, "")
    assert await fetch(node, "dl", partition=1) == []
    info = node.consumers.consumer_info("dl", "c")
    assert totals(info) == (1, 0, 1, 0, 1, 0)
    assert partition_states(info)[1] == (1, 1, 1, 0, 0, 0)
    assert stats(node, "dl", 1)[2:] == (1, 1)  # nothing appended
    state = of_kind(await changes(node), "consumer_state")[-1].consumer_state
    assert (state.dropped, state.dead_lettered, state.pending_count, state.ack_floor) == (1, 0, 0, 1)


async def test_sweep_drops_without_dead_letter_subject(node: Node, clock: ManualClock, storage: Storage) -> None:
    await dead_letter_setup(node, clock, storage, "")
    await node.sweep_once()
    assert totals(node.consumers.consumer_info("dl", "c")) == (1, 0, 1, 0, 1, 0)


async def test_not_yet_due_exhausted_entry_waits(node: Node, clock: ManualClock) -> None:
    await dead_letter_setup(node, clock, "file", "dlq.c")
    await node.consumers.nak("dl", "c", 1, 1, 5000)
    await node.sweep_once()
    assert await fetch(node, "dl", partition=1) == []
    assert node.consumers.consumer_info("dl", "c").num_ack_pending == 1
    clock.advance(5000)
    await node.sweep_once()
    assert_dead_letter(node, clock)


# -- work-queue retention -----------------------------------------------------------------------------------


async def test_work_queue_ack_removes_the_message(node: Node, storage: Storage) -> None:
    await node.admin.create_stream(stream_config("wq", retention="work_queue", storage=storage))
    await publish(node, "wq", entry(payload=b"a"), entry(payload=b"bb" * 50), entry(payload=b"ccc"))
    sizes = {seq: record_size(node, "wq", seq) for seq in (1, 2, 3)}
    await node.consumers.create_consumer("wq", consumer_config("c"))
    assert await fetch(node, "wq") == [(1, 1), (2, 1), (3, 1)]
    before = len(await changes(node))
    await node.consumers.ack("wq", "c", 0, 2)
    assert stats(node, "wq")[::3] == (2, 3)  # (msg_count, last_seq)
    assert stats(node, "wq")[1] == sizes[1] + sizes[3]
    assert stored_seqs(node, "wq") == [1, 3]
    assert stored_bytes(node, "wq") == sizes[1] + sizes[3]
    with pytest.raises(NoSuchMessageError):
        node.reads.get_message("wq", 0, 2)
    new = await changes(node)
    assert [c.WhichOneof("kind") for c in new[before:]] == ["remove", "consumer_state"]
    remove = new[before].remove
    assert (list(remove.seqs), remove.removed_bytes, remove.reason) == ([2], sizes[2], "work_queue_ack")
    await node.consumers.term("wq", "c", 0, 3)  # term does not remove
    assert stats(node, "wq")[:2] == (2, sizes[1] + sizes[3])
    results = await node.consumers.ack_batch("wq", "c", 0, [1, 3])
    assert [code for _, code, _ in results] == ["ok", "not_pending"]  # 3 was terminated
    assert stats(node, "wq")[:2] == (1, sizes[3])
    assert stored_seqs(node, "wq") == [3]
    removes = of_kind(await changes(node), "remove")
    assert [(list(r.remove.seqs), r.remove.reason) for r in removes] == [
        ([2], "work_queue_ack"),
        ([1], "work_queue_ack"),
    ]
    info = node.consumers.consumer_info("wq", "c")
    assert totals(info) == (3, 2, 0, 0, 0, 1)
    assert partition_states(info) == [(0, 3, 3, 0, 0, 0)]


async def test_work_queue_ack_moves_first_seq(node: Node) -> None:
    await node.admin.create_stream(stream_config("wqfirst", retention="work_queue"))
    await publish(node, "wqfirst", entry(), entry(), entry())
    await node.consumers.create_consumer("wqfirst", consumer_config("c"))
    await fetch(node, "wqfirst")
    await node.consumers.ack("wqfirst", "c", 0, 1)
    assert stored_seqs(node, "wqfirst") == [2, 3]
    assert stats(node, "wqfirst")[2] == 2


async def test_work_queue_dead_letter_moves_the_original(node: Node, clock: ManualClock, storage: Storage) -> None:
    await node.admin.create_stream(
        stream_config("wqd", subjects=["s.>", "dlq.>"], retention="work_queue", storage=storage)
    )
    await publish(node, "wqd", entry("s.a", b"first"), entry("s.a", b"second"))
    size = record_size(node, "wqd", 1)
    await node.consumers.create_consumer(
        "wqd", consumer_config("c", filter_subject="s.>", max_deliver=1, ack_wait_ms=1000, dead_letter_subject="dlq.x")
    )
    assert await fetch(node, "wqd", batch=1) == [(1, 1)]
    clock.advance(1000)
    assert await fetch(node, "wqd", batch=1) == [(2, 1)]  # seq 1 dead-lettered in the same commit
    assert stored_seqs(node, "wqd") == [2, 3]
    dead = types_pb2.Message.FromString(node.reads.get_message("wqd", 0, 3))
    assert (dead.subject, dead.payload) == ("dlq.x", b"first")
    msg_count, total, _, last_seq = stats(node, "wqd")
    assert (msg_count, total, last_seq) == (2, stored_bytes(node, "wqd"), 3)
    removes = of_kind(await changes(node), "remove")
    assert [(list(r.remove.seqs), r.remove.removed_bytes, r.remove.reason) for r in removes] == [
        ([1], size, "dead_letter")
    ]
    assert totals(node.consumers.consumer_info("wqd", "c")) == (2, 0, 0, 1, 0, 0)


async def test_work_queue_refuses_overlapping_consumers(node: Node) -> None:
    await node.admin.create_stream(stream_config("wqo", subjects=["s.>", "t.>"], retention="work_queue"))
    await node.consumers.create_consumer("wqo", consumer_config("a", filter_subject="s.a"))
    await node.consumers.create_consumer("wqo", consumer_config("b", filter_subject="s.b"))
    await node.consumers.create_consumer("wqo", consumer_config("t", filter_subject="t.>"))
    for name, pattern in (("c", "s.*"), ("d", "s.>"), ("e", ""), ("f", "*.b"), ("g", "s.a")):
        with pytest.raises(AlreadyExistsError, match="work-queue stream 'wqo'"):
            await node.consumers.create_consumer("wqo", consumer_config(name, filter_subject=pattern))
    await node.consumers.create_consumer("wqo", consumer_config("a", filter_subject="s.a"))  # idempotent still
    assert [i.config.name for i in node.consumers.list_consumers("wqo")] == ["a", "b", "t"]
    await node.consumers.delete_consumer("wqo", "a")
    with pytest.raises(AlreadyExistsError, match=r"consumer 'b' already takes filter 's\.b'"):
        await node.consumers.create_consumer("wqo", consumer_config("c", filter_subject="s.*"))
    await node.consumers.delete_consumer("wqo", "b")
    await node.consumers.create_consumer("wqo", consumer_config("c", filter_subject="s.*"))  # nothing overlaps now
    assert [i.config.name for i in node.consumers.list_consumers("wqo")] == ["c", "t"]


async def test_work_queue_single_consumer_without_filter_is_exclusive(node: Node) -> None:
    await node.admin.create_stream(stream_config("wqe", retention="work_queue"))
    await node.consumers.create_consumer("wqe", consumer_config("all"))
    with pytest.raises(AlreadyExistsError, match="consumer 'all' already takes filter '\\(every subject\\)'"):
        await node.consumers.create_consumer("wqe", consumer_config("other", filter_subject="s.a"))


# -- interest retention -------------------------------------------------------------------------------------


async def test_interest_removes_below_every_consumers_ack_floor(node: Node, storage: Storage) -> None:
    await node.admin.create_stream(stream_config("int", retention="interest", storage=storage))
    await node.consumers.create_consumer("int", consumer_config("a"))
    await node.consumers.create_consumer("int", consumer_config("b"))
    await publish(node, "int", *[entry(payload=bytes([i]) * 10) for i in range(5)])
    size = record_size(node, "int", 1)
    assert await fetch(node, "int", "a") == [(seq, 1) for seq in range(1, 6)]
    await node.consumers.ack_batch("int", "a", 0, [1, 2, 3, 4, 5])
    assert stats(node, "int") == (5, 5 * size, 1, 5)  # b still needs them
    assert await fetch(node, "int", "b") == [(seq, 1) for seq in range(1, 6)]
    await node.consumers.ack("int", "b", 0, 2)
    assert stats(node, "int") == (5, 5 * size, 1, 5)  # b's floor is still 0
    await node.consumers.ack("int", "b", 0, 1)
    assert stats(node, "int") == (3, 3 * size, 3, 5)
    await node.consumers.ack("int", "b", 0, 4)
    assert stats(node, "int")[2] == 3
    await node.consumers.term("int", "b", 0, 3)
    assert stats(node, "int") == (1, size, 5, 5)
    assert stored_seqs(node, "int") == [5]
    truncates = of_kind(await changes(node), "truncate")
    assert [
        (t.truncate.first_seq, t.truncate.removed_count, t.truncate.removed_bytes, t.truncate.reason) for t in truncates
    ] == [
        (3, 2, 2 * size, "interest"),
        (5, 2, 2 * size, "interest"),
    ]


async def test_interest_without_consumers_removes_at_once(node: Node, storage: Storage) -> None:
    await node.admin.create_stream(stream_config("lonely", retention="interest", storage=storage))
    assert await publish(node, "lonely", entry(), entry()) == [1, 2]
    assert stats(node, "lonely") == (0, 0, 3, 2)
    size = len(types_pb2.Message(seq=1, subject="s.a", ts_ms=T0, payload=b"x").SerializeToString())
    truncates = of_kind(await changes(node), "truncate")
    assert [
        (t.truncate.first_seq, t.truncate.removed_count, t.truncate.removed_bytes, t.truncate.reason) for t in truncates
    ] == [(3, 2, 2 * size, "interest")]
    await node.consumers.create_consumer("lonely", consumer_config("c"))
    assert await publish(node, "lonely", entry()) == [3]
    assert stats(node, "lonely")[0] == 1
    assert await fetch(node, "lonely") == [(3, 1)]


async def test_interest_deleting_the_slowest_consumer_releases(node: Node, storage: Storage) -> None:
    await node.admin.create_stream(stream_config("slow", retention="interest", storage=storage))
    await node.consumers.create_consumer("slow", consumer_config("fast"))
    await node.consumers.create_consumer("slow", consumer_config("slow"))
    await publish(node, "slow", *[entry() for _ in range(4)])
    assert len(await fetch(node, "slow", "fast")) == 4
    await node.consumers.ack_batch("slow", "fast", 0, [1, 2, 3])
    assert stats(node, "slow")[0] == 4
    await node.consumers.delete_consumer("slow", "slow")
    assert stats(node, "slow")[::2] == (1, 4)  # (msg_count, first_seq)
    truncate = of_kind(await changes(node), "truncate")[-1].truncate
    assert (truncate.first_seq, truncate.removed_count, truncate.reason) == (4, 3, "interest")
    await node.consumers.delete_consumer("slow", "fast")
    assert stats(node, "slow")[::2] == (0, 5)


async def test_interest_filtered_consumer_releases_what_it_skips(node: Node) -> None:
    await node.admin.create_stream(stream_config("intf", subjects=["s.>"], retention="interest"))
    await node.consumers.create_consumer("intf", consumer_config("c", filter_subject="s.b"))
    await publish(node, "intf", entry("s.a"), entry("s.b"), entry("s.a"))
    assert stats(node, "intf")[0] == 3
    assert await fetch(node, "intf") == [(2, 1)]
    assert stats(node, "intf")[::2] == (2, 2)  # seq 1 skipped: nobody needs it
    await node.consumers.ack("intf", "c", 0, 2)
    assert stats(node, "intf")[::2] == (0, 4)


async def test_limits_acks_remove_nothing(node: Node, storage: Storage) -> None:
    await node.admin.create_stream(stream_config("lim", storage=storage))
    await node.consumers.create_consumer("lim", consumer_config("c"))
    await publish(node, "lim", entry(), entry(), entry())
    before = stats(node, "lim")
    await fetch(node, "lim")
    await node.consumers.ack_batch("lim", "c", 0, [1, 2, 3])
    assert stats(node, "lim") == before
    assert stored_seqs(node, "lim") == [1, 2, 3]
    assert of_kind(await changes(node), "remove") == of_kind(await changes(node), "truncate") == []


# -- change feed ----------------------------------------------------------------------------------------------


async def test_change_feed_consumer_changes(node: Node, clock: ManualClock, storage: Storage) -> None:
    await node.admin.create_stream(stream_config("cf", partitions=2, storage=storage))
    await publish(node, "cf", entry(partition=1), entry(partition=1), entry(partition=1))
    info = await node.consumers.create_consumer("cf", consumer_config("c", ack_wait_ms=1000))
    await fetch(node, "cf", partition=1)
    await node.consumers.ack("cf", "c", 1, 1)
    await node.consumers.nak("cf", "c", 1, 2, 0)
    await node.consumers.term("cf", "c", 1, 3)
    assert await fetch(node, "cf", partition=1) == [(2, 2)]
    await node.consumers.in_progress("cf", "c", 1, 2)
    await node.consumers.ack_batch("cf", "c", 1, [2, 3])
    await fetch(node, "cf", partition=1)  # nothing: no change
    await node.consumers.delete_consumer("cf", "c")
    all_changes = await changes(node)
    created = of_kind(all_changes, "consumer_created")
    assert [(c.stream, c.consumer_created.config) for c in created] == [("cf", info.config)]
    assert created[0].ts_ms == T0
    deleted = of_kind(all_changes, "consumer_deleted")
    assert [(c.stream, c.consumer_deleted.consumer) for c in deleted] == [("cf", "c")]
    states = [(c.stream, c.partition, c.consumer_state) for c in of_kind(all_changes, "consumer_state")]
    assert all((stream, partition) == ("cf", 1) for stream, partition, _ in states)

    def row(s: types_pb2.ConsumerStateChange) -> tuple[int, ...]:
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

    assert {s.consumer for _, _, s in states} == {"c"}
    assert [row(s) for _, _, s in states] == [
        # floor, last, pending, delivered, redelivered, acked, naked, termed, in_progress, dl, dropped
        (0, 3, 3, 3, 0, 0, 0, 0, 0, 0, 0),
        (1, 3, 2, 0, 0, 1, 0, 0, 0, 0, 0),
        (1, 3, 2, 0, 0, 0, 1, 0, 0, 0, 0),
        (1, 3, 1, 0, 0, 0, 0, 1, 0, 0, 0),
        (1, 3, 1, 0, 1, 0, 0, 0, 0, 0, 0),
        (1, 3, 1, 0, 0, 0, 0, 0, 1, 0, 0),
        (3, 3, 0, 0, 0, 1, 0, 0, 0, 0, 0),
    ]
    seqs = [c.change_seq for c in all_changes]
    assert seqs == sorted(seqs)
    kinds = [c.WhichOneof("kind") for c in all_changes]
    assert kinds.index("consumer_created") < kinds.index("consumer_state") < kinds.index("consumer_deleted")


async def test_watch_lifecycle_includes_consumer_events(node: Node) -> None:
    start = node.feed.horizon + 1
    await node.admin.create_stream(stream_config("watched"))
    await node.consumers.create_consumer("watched", consumer_config("c"))
    await node.consumers.delete_consumer("watched", "c")
    await node.admin.delete_stream("watched")
    seen: list[tuple[str, str]] = []

    async def watch() -> None:
        async for change in node.changes.watch_lifecycle(start):
            kind = change.WhichOneof("kind") or ""
            name = change.consumer_created.config.name or change.consumer_deleted.consumer
            seen.append((kind, name))
            if kind == "stream_deleted":
                return

    await asyncio.wait_for(watch(), DEADLINE_S)
    assert seen == [
        ("stream_created", ""),
        ("consumer_created", "c"),
        ("consumer_deleted", "c"),
        ("stream_deleted", ""),
    ]


# -- durability -------------------------------------------------------------------------------------------------


async def test_reopen_restores_consumer_state_exactly(tmp_path: Path, clock: ManualClock) -> None:
    core = await Node.open(settings(tmp_path), clock=clock)
    await core.admin.create_stream(stream_config("dur", partitions=2))
    await publish(core, "dur", *[entry(partition=0) for _ in range(6)], entry(partition=1))
    await core.consumers.create_consumer("dur", consumer_config("c", ack_wait_ms=1000, max_deliver=3))
    await core.consumers.create_consumer("dur", consumer_config("idle", deliver_policy="new"))
    assert len(await fetch(core, "dur")) == 6
    clock.advance(100)
    await core.consumers.ack("dur", "c", 0, 1)
    await core.consumers.nak("dur", "c", 0, 3, 500)
    await core.consumers.term("dur", "c", 0, 4)
    await core.consumers.in_progress("dur", "c", 0, 6)
    clock.advance(1000)
    assert await fetch(core, "dur", batch=2) == [(2, 2), (3, 2)]
    cursor = core._stream("dur").partitions[0].consumers["c"]
    expected_pending = {
        2: Pending(T0 + 1100, 2, T0 + 2100),
        3: Pending(T0 + 1100, 2, T0 + 2100),
        5: Pending(T0, 1, T0 + 1000),
        6: Pending(T0, 1, T0 + 1100),
    }
    assert cursor.pending == expected_pending
    before = core.consumers.list_consumers("dur")
    await core.close()

    reopened = await Node.open(settings(tmp_path), clock=clock)
    try:
        assert reopened.consumers.list_consumers("dur") == before
        restored = reopened._stream("dur").partitions[0].consumers["c"]
        assert restored.pending == expected_pending
        assert list(restored.pending) == [2, 3, 5, 6]
        assert (restored.ack_floor, restored.last_delivered) == (1, 6)
        assert restored.totals.as_tuple() == (6, 1, 2, 0, 0, 1)
        info = reopened.consumers.consumer_info("dur", "c")
        assert totals(info) == (6, 1, 2, 0, 0, 1)
        assert partition_states(info) == [(0, 1, 6, 4, 0, 2), (1, 0, 0, 0, 1, 0)]
        # due entries (5 and 6) are redelivered with their restored counts
        assert await fetch(reopened, "dur") == [(5, 2), (6, 2)]
        clock.advance(1000)
        assert await fetch(reopened, "dur") == [(2, 3), (3, 3), (5, 3), (6, 3)]
        assert [p.last_delivered for p in reopened.consumers.consumer_info("dur", "idle").partitions] == [6, 1]
    finally:
        await reopened.close()


async def test_recreated_consumer_starts_fresh(tmp_path: Path, clock: ManualClock) -> None:
    core = await Node.open(settings(tmp_path), clock=clock)
    await core.admin.create_stream(stream_config("again"))
    await publish(core, "again", entry(), entry(), entry())
    await core.consumers.create_consumer("again", consumer_config("c", ack_wait_ms=1000))
    assert len(await fetch(core, "again")) == 3
    await core.consumers.ack("again", "c", 0, 1)
    await core.consumers.delete_consumer("again", "c")
    info = await core.consumers.create_consumer("again", consumer_config("c", ack_wait_ms=1000))
    assert partition_states(info) == [(0, 0, 0, 0, 3, 0)]
    assert totals(info) == (0, 0, 0, 0, 0, 0)
    assert await fetch(core, "again", batch=1) == [(1, 1)]
    clock.advance(5000)
    assert await fetch(core, "again") == [(1, 2), (2, 1), (3, 1)]  # nothing stale is due
    await core.consumers.ack("again", "c", 0, 2)
    await core.close()

    reopened = await Node.open(settings(tmp_path), clock=clock)
    try:
        info = reopened.consumers.consumer_info("again", "c")
        assert partition_states(info) == [(0, 0, 3, 2, 0, 1)]
        assert totals(info) == (3, 1, 1, 0, 0, 0)
        cursor = reopened._stream("again").partitions[0].consumers["c"]
        assert cursor.pending == {1: Pending(T0 + 5000, 2, T0 + 6000), 3: Pending(T0 + 5000, 1, T0 + 6000)}
    finally:
        await reopened.close()


async def test_deleted_consumer_stays_deleted_after_reopen(tmp_path: Path, clock: ManualClock) -> None:
    core = await Node.open(settings(tmp_path), clock=clock)
    await core.admin.create_stream(stream_config("gone"))
    await publish(core, "gone", entry())
    await core.consumers.create_consumer("gone", consumer_config("c"))
    await fetch(core, "gone")
    await core.consumers.delete_consumer("gone", "c")
    await core.close()
    reopened = await Node.open(settings(tmp_path), clock=clock)
    try:
        assert reopened.consumers.list_consumers("gone") == []
        assert reopened._stream("gone").partitions[0].log.load_consumers() == {}
    finally:
        await reopened.close()


async def test_memory_stream_consumer_after_reopen_sees_new_messages(tmp_path: Path, clock: ManualClock) -> None:
    core = await Node.open(settings(tmp_path), clock=clock)
    await core.admin.create_stream(stream_config("vol", storage="memory"))
    await publish(core, "vol", entry(), entry(), entry())
    await core.consumers.create_consumer("vol", consumer_config("c", deliver_policy="new"))
    await core.close()
    reopened = await Node.open(settings(tmp_path), clock=clock)
    try:
        assert await publish(reopened, "vol", entry(), entry()) == [1, 2]
        assert await fetch(reopened, "vol") == [(1, 1), (2, 1)]
    finally:
        await reopened.close()


# -- long poll and subscribe -------------------------------------------------------------------------------------


async def test_long_poll_fetch_wakes_on_publish(node: Node) -> None:
    await node.admin.create_stream(stream_config("poll"))
    await node.consumers.create_consumer("poll", consumer_config("c"))
    started = time.monotonic()
    waiting = asyncio.create_task(fetch(node, "poll", max_wait_ms=20_000))
    await asyncio.sleep(0.02)  # let the fetch reach its wait (not a timing assertion)
    assert not waiting.done()
    await publish(node, "poll", entry())
    assert await asyncio.wait_for(waiting, DEADLINE_S) == [(1, 1)]
    assert time.monotonic() - started < DEADLINE_S


async def test_long_poll_fetch_times_out_empty(node: Node) -> None:
    await node.admin.create_stream(stream_config("idle"))
    await node.consumers.create_consumer("idle", consumer_config("c"))
    started = time.monotonic()
    assert await fetch(node, "idle", max_wait_ms=50) == []
    elapsed = time.monotonic() - started
    assert 0.045 <= elapsed < DEADLINE_S


async def test_long_poll_fetch_wakes_on_clock_advance(node: Node, clock: ManualClock) -> None:
    await node.admin.create_stream(stream_config("tick"))
    await publish(node, "tick", entry())
    await node.consumers.create_consumer("tick", consumer_config("c", ack_wait_ms=3_600_000))
    assert await fetch(node, "tick") == [(1, 1)]
    waiting = asyncio.create_task(fetch(node, "tick", max_wait_ms=60_000))
    await asyncio.sleep(0.02)
    assert not waiting.done()
    clock.advance(3_600_000)
    assert await asyncio.wait_for(waiting, DEADLINE_S) == [(1, 2)]


async def test_long_poll_fetch_wakes_on_ack_at_the_bound(node: Node) -> None:
    await node.admin.create_stream(stream_config("full"))
    await publish(node, "full", entry(), entry())
    await node.consumers.create_consumer("full", consumer_config("c", max_ack_pending=1))
    assert await fetch(node, "full") == [(1, 1)]
    waiting = asyncio.create_task(fetch(node, "full", max_wait_ms=60_000))
    await asyncio.sleep(0.02)
    assert not waiting.done()
    await node.consumers.ack("full", "c", 0, 1)
    assert await asyncio.wait_for(waiting, DEADLINE_S) == [(2, 1)]


async def collect(stream: AsyncIterator[tuple[int, Delivery] | str]) -> list[tuple[int, int, int] | str]:
    items: list[tuple[int, int, int] | str] = []
    async for item in stream:
        items.append(item if isinstance(item, str) else (item[0], item[1].seq, item[1].deliver_count))
    return items


async def test_subscribe_stop_when_empty(node: Node, storage: Storage) -> None:
    await node.admin.create_stream(stream_config("sub", partitions=3, storage=storage))
    await publish(node, "sub", entry(partition=0), entry(partition=2), entry(partition=2))
    await node.consumers.create_consumer("sub", consumer_config("c"))
    items = await asyncio.wait_for(
        collect(node.subscriptions.subscribe("sub", "c", batch_size=1, stop_when_empty=True)), DEADLINE_S
    )
    assert sorted(items[:-1], key=str) == [(0, 1, 1), (2, 1, 1), (2, 2, 1)]
    assert items[-1] == "empty"
    info = node.consumers.consumer_info("sub", "c")
    assert (info.num_ack_pending, info.delivered_total) == (3, 3)
    only = await asyncio.wait_for(
        collect(node.subscriptions.subscribe("sub", "c", partitions=[1], stop_when_empty=True)), DEADLINE_S
    )
    assert only == ["empty"]


async def test_subscribe_ends_when_the_consumer_is_deleted(node: Node) -> None:
    await node.admin.create_stream(stream_config("subdel"))
    await node.consumers.create_consumer("subdel", consumer_config("c"))
    seen: asyncio.Queue[tuple[int, int, int] | str] = asyncio.Queue()

    async def run() -> None:
        async for item in node.subscriptions.subscribe("subdel", "c"):
            await seen.put(item if isinstance(item, str) else (item[0], item[1].seq, item[1].deliver_count))

    task = asyncio.create_task(run())
    await publish(node, "subdel", entry())
    assert await asyncio.wait_for(seen.get(), DEADLINE_S) == (0, 1, 1)
    await publish(node, "subdel", entry())
    assert await asyncio.wait_for(seen.get(), DEADLINE_S) == (0, 2, 1)
    await node.consumers.delete_consumer("subdel", "c")
    assert await asyncio.wait_for(seen.get(), DEADLINE_S) == "consumer_deleted"
    await asyncio.wait_for(task, DEADLINE_S)


async def test_subscribe_ends_when_the_stream_is_deleted(node: Node) -> None:
    await node.admin.create_stream(stream_config("subgone"))
    await node.consumers.create_consumer("subgone", consumer_config("c"))
    task = asyncio.create_task(collect(node.subscriptions.subscribe("subgone", "c")))
    await asyncio.sleep(0.02)
    await node.admin.delete_stream("subgone")
    assert await asyncio.wait_for(task, DEADLINE_S) == ["stream_deleted"]


async def first_item(stream: AsyncIterator[tuple[int, Delivery] | str]) -> tuple[int, int, int]:
    item = await asyncio.wait_for(anext(stream), DEADLINE_S)
    assert not isinstance(item, str), item
    return item[0], item[1].seq, item[1].deliver_count


async def close(stream: AsyncIterator[tuple[int, Delivery] | str]) -> None:
    await cast(AsyncGenerator[tuple[int, Delivery] | str, None], stream).aclose()


async def resubscribe(node: Node, stream: str, name: str) -> list[tuple[int, int, int] | str]:
    """Subscribe (stop_when_empty) once the previous Subscribe has let go, within a bounded deadline."""
    deadline = time.monotonic() + DEADLINE_S
    while True:
        try:
            return await collect(node.subscriptions.subscribe(stream, name, stop_when_empty=True))
        except ConsumerBoundError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.001)


async def test_closed_subscribe_unbinds_at_once(node: Node) -> None:
    await node.admin.create_stream(stream_config("rebind"))
    await node.consumers.create_consumer("rebind", consumer_config("solo"))
    await publish(node, "rebind", entry(), entry())
    first = node.subscriptions.subscribe("rebind", "solo", batch_size=1)
    assert await first_item(first) == (0, 1, 1)
    await close(first)
    assert await collect(node.subscriptions.subscribe("rebind", "solo", stop_when_empty=True)) == [(0, 2, 1), "empty"]


def test_bind_refusal_decides_who_may_subscribe() -> None:
    """The binding rule alone: a consumer with a deliver_group takes any number of subscribers naming
    that group; one without takes one subscriber naming none."""
    solo, shared = consumer_config("solo"), consumer_config("shared", deliver_group="g")
    assert bind_refusal(solo, 0, "", "s") is None
    assert bind_refusal(shared, 0, "g", "s") is None
    assert bind_refusal(shared, 5, "g", "s") is None  # a group shares
    refusals = {
        "second subscriber": bind_refusal(solo, 1, "", "s"),
        "group on a solo consumer": bind_refusal(solo, 0, "g", "s"),
        "no group on a shared one": bind_refusal(shared, 0, "", "s"),
        "another group": bind_refusal(shared, 0, "h", "s"),
    }
    assert all(isinstance(refusal, ConsumerBoundError) for refusal in refusals.values()), refusals
    assert "another Subscribe is bound" in str(refusals["second subscriber"])
    assert "delivers to group 'g'" in str(refusals["another group"])


async def test_subscribe_binding_rules(node: Node) -> None:
    await node.admin.create_stream(stream_config("bind"))
    await node.consumers.create_consumer("bind", consumer_config("solo"))
    await node.consumers.create_consumer("bind", consumer_config("shared", deliver_group="g"))
    await publish(node, "bind", *[entry() for _ in range(4)])

    first = node.subscriptions.subscribe("bind", "solo", batch_size=1)
    assert await first_item(first) == (0, 1, 1)
    with pytest.raises(ConsumerBoundError, match="another Subscribe is bound"):
        await anext(node.subscriptions.subscribe("bind", "solo", stop_when_empty=True))
    with pytest.raises(ConsumerBoundError, match="has no deliver_group"):
        await anext(node.subscriptions.subscribe("bind", "solo", deliver_group="g"))
    await close(first)
    assert await resubscribe(node, "bind", "solo") == [(0, 2, 1), (0, 3, 1), (0, 4, 1), "empty"]

    for group in ("", "other"):
        with pytest.raises(ConsumerBoundError, match="delivers to group 'g'"):
            await anext(node.subscriptions.subscribe("bind", "shared", deliver_group=group))
    one = node.subscriptions.subscribe("bind", "shared", deliver_group="g", batch_size=1)
    two = node.subscriptions.subscribe("bind", "shared", deliver_group="g", batch_size=1)
    a = await first_item(one)
    b = await first_item(two)
    rest = await collect(node.subscriptions.subscribe("bind", "shared", deliver_group="g", stop_when_empty=True))
    assert (a, b) == ((0, 1, 1), (0, 2, 1))  # both bound at once, sharing the messages
    assert rest == [(0, 3, 1), (0, 4, 1), "empty"]
    await close(one)
    await close(two)
    assert node.consumers.consumer_info("bind", "shared").delivered_total == 4


def test_check_cursor_refuses_a_cursor_that_breaks_the_pending_invariants() -> None:
    """consumers.check_cursor (run on every cursor a commit stores): pending seqs ascend and none is
    above last_delivered; a cursor that breaks it is a bug the commit must not store."""
    spec = ConsumerSpec("c", 1, None, 30_000, 5, "", 1_000)
    fine = ConsumerCursor(spec, 10, {4: Pending(0, 1, 0), 9: Pending(0, 1, 0)})
    check_cursor(fine)
    check_cursor(ConsumerCursor(spec, 0))
    for broken in (
        ConsumerCursor(spec, 8, {4: Pending(0, 1, 0), 9: Pending(0, 1, 0)}),  # 9 was never delivered
        ConsumerCursor(spec, 10, {9: Pending(0, 1, 0), 4: Pending(0, 1, 0)}),  # out of order
    ):
        with pytest.raises(AssertionError, match="pending seqs"):
            check_cursor(broken)
