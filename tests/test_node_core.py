"""The transport-neutral node core, in process, with a manual clock (no sleeping for time)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from weir.client import stream_config
from weir.errors import ChangeFeedTruncatedError, ShuttingDownError
from weir.v1 import streams_pb2, types_pb2
from weir_partition_node.clock import ManualClock
from weir_partition_node.node import Node
from weir_partition_node.server import _bounded
from weir_partition_node.settings import NodeSettings

KIB = b"k" * 1024


def settings(tmp_path: Path, **overrides: object) -> NodeSettings:
    values: dict[str, object] = {
        "node_id": "core",
        "data_dir": tmp_path / "data",
        "retention_sweep_interval_ms": 3_600_000,  # tests call sweep_once() themselves
    }
    values.update(overrides)
    return NodeSettings(**values)  # type: ignore[arg-type]


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


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
    outcomes = await node.publish(stream, list(entries), streams_pb2.ACK_LEVEL_LEADER, batch=True)
    return [outcome.seq for outcome in outcomes]


async def changes(node: Node, from_change_seq: int = 0) -> list[types_pb2.Change]:
    records, _, _ = await node.read_changes(from_change_seq, 10_000)
    return [types_pb2.Change.FromString(record) for record in records]


async def test_max_age_sweep_with_manual_clock(node: Node, clock: ManualClock, storage: str) -> None:
    await node.create_stream(stream_config("aged", max_age_ms=60_000, storage=storage))
    await publish(node, "aged", entry(), entry())
    clock.advance(30_000)
    await publish(node, "aged", entry())
    clock.advance(31_000)  # the first two are now 61 s old, the third 31 s
    assert await node.sweep_once() == 2
    info = node.stream_info("aged")
    assert (info.stats.msg_count, info.stats.partitions[0].first_seq) == (1, 3)
    truncations = [c.truncate for c in await changes(node) if c.WhichOneof("kind") == "truncate"]
    assert [(t.first_seq, t.removed_count, t.reason) for t in truncations] == [(3, 2, "max_age")]


async def test_max_msgs_on_publish_and_update_prunes(node: Node, storage: str) -> None:
    await node.create_stream(stream_config("bounded", max_msgs=5, storage=storage))
    assert await publish(node, "bounded", *[entry(payload=KIB) for _ in range(8)]) == list(range(1, 9))
    info = node.stream_info("bounded")
    assert (info.stats.msg_count, info.stats.partitions[0].first_seq, info.stats.partitions[0].last_seq) == (
        5,
        4,
        8,
    )
    config, pruned = await node.update_stream(streams_pb2.UpdateStreamRequest(name="bounded", max_msgs=2))
    assert (config.limits.max_msgs, pruned) == (2, 3)
    config, pruned = await node.update_stream(streams_pb2.UpdateStreamRequest(name="bounded", max_msgs=0))
    assert (config.limits.HasField("max_msgs"), pruned) == (False, 0)
    assert await publish(node, "bounded", *[entry() for _ in range(4)]) == [9, 10, 11, 12]
    assert node.stream_info("bounded").stats.msg_count == 6


async def test_max_bytes_counts_record_bytes(node: Node, storage: str) -> None:
    await node.create_stream(stream_config("bytes", max_bytes=5 * 1100, storage=storage))
    await publish(node, "bytes", *[entry(payload=KIB) for _ in range(10)])
    info = node.stream_info("bytes")
    assert info.stats.bytes <= 5 * 1100
    assert info.stats.msg_count == 5


async def test_max_msgs_per_subject_keeps_history_per_key(node: Node, storage: str) -> None:
    await node.create_stream(stream_config("kv", subjects=["kv.>"], max_msgs_per_subject=2, storage=storage))
    for value in range(5):
        await publish(node, "kv", entry("kv.a", bytes([value])), entry("kv.b", bytes([value])))
    history = node.scan_subject("kv", 0, "kv.a", 0, 100)
    assert [types_pb2.Message.FromString(r).payload for r in history] == [b"\x03", b"\x04"]
    assert node.stream_info("kv").stats.msg_count == 4
    removes = [c.remove for c in await changes(node) if c.WhichOneof("kind") == "remove"]
    assert sum(len(r.seqs) for r in removes) == 6


async def test_expected_last_seq_within_one_group_commit(node: Node, storage: str) -> None:
    await node.create_stream(stream_config("cas", storage=storage))
    outcomes = await node.publish(
        "cas",
        [
            entry("s.k", expected_last_seq=0),
            entry("s.k", expected_last_seq=1),
            entry("s.k", expected_last_seq=1),
        ],
        streams_pb2.ACK_LEVEL_LEADER,
        batch=True,
    )
    assert [(o.seq, o.result_code) for o in outcomes] == [(1, "ok"), (2, "ok"), (2, "wrong_revision")]


async def test_keyed_publish_lands_on_hash_partition(node: Node) -> None:
    from weir.partitioning import partition_for_key

    await node.create_stream(stream_config("keyed", partitions=16))
    keys = [f"user-{index}".encode() for index in range(50)]
    outcomes = await node.publish("keyed", [entry(key=key) for key in keys], streams_pb2.ACK_LEVEL_LEADER, batch=True)
    assert [o.partition for o in outcomes] == [partition_for_key(key, 16) for key in keys]
    info = node.stream_info("keyed")
    assert info.stats.msg_count == 50
    assert sum(p.last_seq for p in info.stats.partitions) == 50


async def test_round_robin_without_key(node: Node) -> None:
    await node.create_stream(stream_config("spread", partitions=4))
    outcomes = await node.publish("spread", [entry() for _ in range(8)], streams_pb2.ACK_LEVEL_LEADER, batch=True)
    assert sorted(o.partition for o in outcomes) == [0, 0, 1, 1, 2, 2, 3, 3]


async def test_change_feed_orders_lifecycle_and_appends(node: Node, storage: str) -> None:
    await node.create_stream(stream_config("feed", storage=storage))
    await publish(node, "feed", entry(), entry())
    await node.update_stream(streams_pb2.UpdateStreamRequest(name="feed", max_msgs=1))
    await node.delete_stream("feed")
    kinds = [(c.WhichOneof("kind"), c.change_seq) for c in await changes(node)]
    assert [kind for kind, _ in kinds] == [
        "stream_created",
        "append",
        "stream_updated",
        "truncate",
        "stream_deleted",
    ]
    seqs = [seq for _, seq in kinds]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == len(seqs)


async def test_change_feed_retention_reports_truncation(tmp_path: Path, clock: ManualClock) -> None:
    core = await Node.open(settings(tmp_path, change_feed_max_changes=1000), clock=clock)
    try:
        await core.create_stream(stream_config("busy"))
        for _ in range(1100):
            await publish(core, "busy", entry())
        await core.sweep_once()
        with pytest.raises(ChangeFeedTruncatedError) as caught:
            await core.read_changes(1, 10)
        first = int(caught.value.metadata["first_change_seq"])
        assert first > 1
        records, _, horizon = await core.read_changes(first, 10_000)
        assert len(records) == horizon - first + 1
    finally:
        await core.close()


async def test_reopen_keeps_streams_and_moves_change_seq_forward(tmp_path: Path, clock: ManualClock) -> None:
    core = await Node.open(settings(tmp_path), clock=clock)
    await core.create_stream(stream_config("durable"))
    await core.create_stream(stream_config("volatile", storage="memory"))
    await publish(core, "durable", entry(), entry())
    await publish(core, "volatile", entry())
    before = core.feed.horizon
    await core.close()
    with pytest.raises(ShuttingDownError):
        await publish(core, "durable", entry())

    reopened = await Node.open(settings(tmp_path), clock=clock)
    try:
        assert reopened.list_streams() == ["durable", "volatile"]
        assert reopened.stream_info("durable").stats.msg_count == 2
        assert reopened.stream_info("volatile").stats.msg_count == 0  # memory storage starts empty
        assert await publish(reopened, "durable", entry()) == [3]
        after = [c.change_seq for c in await changes(reopened, before + 1)]
        assert after
        assert min(after) > before
    finally:
        await reopened.close()


async def test_rejected_batch_does_not_advance_round_robin(node: Node) -> None:
    from weir.errors import InvalidSubjectError

    await node.create_stream(stream_config("fair", partitions=2))
    with pytest.raises(InvalidSubjectError, match=r"entries\[1\]"):
        await publish(node, "fair", entry(), entry("bad..subject"))
    outcomes = await node.publish("fair", [entry(), entry()], streams_pb2.ACK_LEVEL_LEADER, batch=True)
    assert [o.partition for o in outcomes] == [0, 1]
    assert node.stream_info("fair").stats.msg_count == 2


async def test_a_shutdown_step_that_overruns_its_deadline_is_logged_and_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """NodeProcess.stop bounds every step: a stuck one costs its deadline, is named in the log, and
    the stop goes on (the process then exits instead of hanging on SIGTERM)."""
    never = asyncio.get_running_loop().create_future()
    with caplog.at_level("ERROR", logger="weir_partition_node.server"):
        assert not await _bounded("close replication", never, 0.05)
    assert never.cancelled()
    assert "'close replication' did not finish within 0.1 s" in caplog.text
    assert await _bounded("quick step", asyncio.sleep(0), 1.0)
