"""Idempotent publish (issue 22): msg_id, the duplicate window, and what it survives.

The pure window (`dedupe.DuplicateWindow`) against a reference model; the node core in process
with a manual clock, on file and memory storage; and the real node over gRPC, including a SIGKILL
and restart. Failover of a replicated partition is in `test_reliability.py` (slow tier).
"""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from weir.client import NodeClient, stream_config
from weir.errors import InvalidArgumentError, InvalidConfigError
from weir.options import Storage
from weir.partitioning import partition_for_key
from weir.v1 import streams_pb2, types_pb2
from weir_cli.launcher import NodeHandle
from weir_partition_node.clock import ManualClock
from weir_partition_node.dedupe import DuplicateWindow
from weir_partition_node.node import Node

from tests.conftest import http_get
from tests.test_node_core import entry, settings

LEADER = streams_pb2.ACK_LEVEL_LEADER


# -- the window, pure ------------------------------------------------------------------------------


def test_the_window_answers_an_id_until_its_time_is_up() -> None:
    window = DuplicateWindow(window_ms=1000, max_msgs=10)
    window.add("a", 7, stored_at_ms=100)
    assert window.seq_of("a", 100) == 7
    assert window.seq_of("a", 1099) == 7
    assert window.seq_of("a", 1100) is None  # exactly window_ms later: gone
    assert window.seq_of("b", 100) is None
    assert window.expire(1100) == 1
    assert len(window) == 0


def test_the_window_keeps_the_newest_ids_within_its_count() -> None:
    window = DuplicateWindow(window_ms=10_000, max_msgs=3)
    for seq in range(1, 6):
        window.add(f"id{seq}", seq, stored_at_ms=seq)
    assert [window.seq_of(f"id{seq}", 10) for seq in range(1, 6)] == [None, None, 3, 4, 5]
    window.resize(window_ms=10_000, max_msgs=1, now_ms=10)
    assert [window.seq_of(f"id{seq}", 10) for seq in range(1, 6)] == [None, None, None, None, 5]
    window.resize(window_ms=5, max_msgs=1, now_ms=10)  # stored at 5, now 10: a 5 ms window is over
    assert window.seq_of("id5", 10) is None


def claim_one(window: DuplicateWindow, msg_id: str, seq: int, now_ms: int) -> int | None:
    """One commit that claims one id, as the partition's commit does it."""
    window.open_group(seq, now_ms)
    original = window.claim(msg_id, seq, now_ms)
    window.close_group(0 if original is not None else 1, seq)
    return original


def test_claim_answers_a_remembered_id_or_remembers_it() -> None:
    window = DuplicateWindow(window_ms=100, max_msgs=2)
    assert claim_one(window, "a", 1, now_ms=0) is None
    assert claim_one(window, "a", 2, now_ms=99) == 1  # inside the window: the original's seq, unchanged
    assert claim_one(window, "a", 2, now_ms=100) is None  # its window is over: remembered anew at seq 2
    assert window.seq_of("a", 150) == 2
    window.open_group(3, 150)  # one commit of two ids
    assert (window.claim("b", 3, 150), window.claim("c", 4, 150), window.claim("b", 5, 150)) == (None, None, 3)
    window.release("c")  # say its revision check failed
    window.close_group(1, 4)
    assert (window.seq_of("b", 150), window.seq_of("c", 150)) == (3, None)
    assert window.seq_of("a", 150) == 2  # the newer group holds 1 id, not max_msgs = 2: a stays
    assert claim_one(window, "d", 5, 151) is None
    assert (window.seq_of("a", 151), window.seq_of("b", 151), len(window)) == (None, 3, 2)


def test_loading_rows_keeps_the_latest_row_of_an_id() -> None:
    window = DuplicateWindow(window_ms=100, max_msgs=10)
    window.load([("a", 1, 10), ("b", 2, 20), ("a", 3, 30)], now_ms=50)
    assert (window.seq_of("a", 50), window.seq_of("b", 50)) == (3, 2)
    window.load([("c", 4, 40)], now_ms=125)  # b, stored at 20, is over now
    assert (len(window), window.seq_of("a", 125), window.seq_of("b", 125), window.seq_of("c", 125)) == (2, 3, None, 4)


@pytest.mark.parametrize("seed", range(6))
def test_the_window_matches_a_reference_model(seed: int) -> None:
    """The window as the module docstring states it: ids in groups of one stored-at time; groups
    stored window_ms or more ago are forgotten, and the oldest groups while the newer ones hold
    max_msgs ids; an id counts at the seq of its latest claim when that is in a remembered group."""
    rng = random.Random(seed)
    window_ms, max_msgs = rng.randint(1, 50), rng.randint(1, 8)
    window = DuplicateWindow(window_ms, max_msgs)
    groups: list[tuple[int, list[tuple[str, int]]]] = []  # (stored_at, [(id, seq)]), oldest first
    now = 0
    for seq in range(1, 400):
        now += rng.choice([0, 0, 1, 2, 5])
        msg_id = f"m{rng.randint(0, 12)}"
        expected_seq = _model_seq(groups, msg_id, now, window_ms)
        assert claim_one(window, msg_id, seq, now) == expected_seq, (seq, msg_id)
        if expected_seq is None:
            if groups and groups[-1][0] == now:
                groups[-1][1].append((msg_id, seq))
            else:
                groups.append((now, [(msg_id, seq)]))
            while len(groups) > 1 and sum(len(ids) for _, ids in groups[1:]) >= max_msgs:
                groups.pop(0)
        if rng.random() < 0.2:
            window.expire(now)
            while groups and groups[0][0] <= now - window_ms:
                groups.pop(0)
            while len(groups) > 1 and sum(len(ids) for _, ids in groups[1:]) >= max_msgs:
                groups.pop(0)
        probe = f"m{rng.randint(0, 12)}"
        assert window.seq_of(probe, now) == _model_seq(groups, probe, now, window_ms), (seq, probe)
        assert len(window) == sum(len(ids) for _, ids in groups)
        assert len(window._ids) <= len(window)  # a forgotten group's ids leave memory with it


def _model_seq(groups: list[tuple[int, list[tuple[str, int]]]], msg_id: str, now: int, window_ms: int) -> int | None:
    for stored_at, ids in reversed(groups):
        for claimed, seq in reversed(ids):
            if claimed == msg_id:
                return seq if now - stored_at < window_ms else None
    return None


# -- the node core ---------------------------------------------------------------------------------


@pytest.fixture
async def core(tmp_path: Path, clock: ManualClock) -> AsyncIterator[Node]:
    node = await Node.open(settings(tmp_path), clock=clock)
    yield node
    if not node._closing:
        await node.close()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()


@pytest.fixture(params=["file", "memory"])
def storage(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def outcomes(core: Node, stream: str, *entries: streams_pb2.PublishEntry) -> list[tuple[int, int, bool]]:
    """(partition, seq, duplicate) per entry."""
    answered = await core.publisher.publish(stream, list(entries), LEADER, batch=True)
    return [(outcome.partition, outcome.seq, outcome.duplicate) for outcome in answered]


async def test_a_repeated_msg_id_is_answered_with_the_original_seq_and_stores_nothing(
    core: Node, storage: Storage
) -> None:
    await core.admin.create_stream(stream_config("orders", storage=storage).to_proto())
    assert await outcomes(core, "orders", entry(msg_id="a"), entry(msg_id="b"), entry()) == [
        (0, 1, False),
        (0, 2, False),
        (0, 3, False),
    ]
    assert await outcomes(core, "orders", entry(payload=b"other", msg_id="a"), entry(msg_id="c")) == [
        (0, 1, True),
        (0, 4, False),
    ]
    # Within one request (one group commit) the second of two equal ids is the duplicate.
    assert await outcomes(core, "orders", entry(msg_id="d"), entry(msg_id="d"), entry()) == [
        (0, 5, False),
        (0, 5, True),
        (0, 6, False),
    ]
    assert core.stream_info("orders").stats.msg_count == 6
    stored = [types_pb2.Message.FromString(record) for _, record in core.reads.read_messages("orders", 0, 1, 100, 0)[0]]
    assert [message.msg_id for message in stored] == ["a", "b", "", "c", "d", ""]


async def test_an_id_whose_publish_failed_its_revision_check_is_not_remembered(core: Node) -> None:
    await core.admin.create_stream(stream_config("orders").to_proto())
    failed = await core.publisher.publish("orders", [entry(msg_id="a", expected_last_seq=5)], LEADER, batch=True)
    assert (failed[0].result_code, failed[0].duplicate) == ("wrong_revision", False)
    assert await outcomes(core, "orders", entry(msg_id="a", expected_last_seq=0)) == [(0, 1, False)]
    # A retry of a stored one is a duplicate before its (now stale) revision is looked at.
    assert await outcomes(core, "orders", entry(msg_id="a", expected_last_seq=0)) == [(0, 1, True)]


async def test_the_window_ends_after_duplicate_window_ms(core: Node, clock: ManualClock, storage: Storage) -> None:
    await core.admin.create_stream(stream_config("orders", storage=storage, duplicate_window_ms=10_000).to_proto())
    await outcomes(core, "orders", entry(msg_id="a"))
    clock.advance(9_999)
    assert await outcomes(core, "orders", entry(msg_id="a")) == [(0, 1, True)]
    clock.advance(1)
    assert await outcomes(core, "orders", entry(msg_id="a")) == [(0, 2, False)]


async def test_the_window_keeps_at_most_duplicate_window_max_msgs_ids(
    core: Node, clock: ManualClock, storage: Storage
) -> None:
    await core.admin.create_stream(stream_config("orders", storage=storage, duplicate_window_max_msgs=3).to_proto())
    for index in range(5):  # one commit each: the count bound forgets whole commits
        await outcomes(core, "orders", entry(msg_id=f"m{index}"))
        clock.advance(1)
    assert await outcomes(core, "orders", entry(msg_id="m4"), entry(msg_id="m2"), entry(msg_id="m1")) == [
        (0, 5, True),
        (0, 3, True),
        (0, 6, False),  # m1 had been pushed out by newer ids
    ]


async def test_an_id_is_remembered_after_retention_removed_its_message(core: Node, storage: Storage) -> None:
    await core.admin.create_stream(stream_config("orders", storage=storage, max_msgs=1).to_proto())
    await outcomes(core, "orders", entry(msg_id="a"), entry(msg_id="b"))
    assert core.stream_info("orders").stats.msg_count == 1
    assert await outcomes(core, "orders", entry(msg_id="a")) == [(0, 1, True)]


async def test_the_window_survives_a_reopen_of_a_file_stream(tmp_path: Path, clock: ManualClock) -> None:
    node = await Node.open(settings(tmp_path), clock=clock)
    await node.admin.create_stream(stream_config("orders", partitions=3).to_proto())
    first = await outcomes(node, "orders", *(entry(msg_id=f"id{index}") for index in range(30)))
    await node.close()
    clock.advance(60_000)
    reopened = await Node.open(settings(tmp_path), clock=clock)
    try:
        again = await outcomes(reopened, "orders", *(entry(msg_id=f"id{index}") for index in range(30)))
        assert again == [(partition, seq, True) for partition, seq, _ in first]
        clock.advance(60_000)  # 120 s after they were stored: the default window is over
        assert (await outcomes(reopened, "orders", entry(msg_id="id0")))[0][2] is False
    finally:
        await reopened.close()


async def test_without_key_or_partition_the_msg_id_picks_the_partition(core: Node) -> None:
    await core.admin.create_stream(stream_config("orders", partitions=8).to_proto())
    answered = await outcomes(core, "orders", *(entry(msg_id=f"order-{index}") for index in range(20)))
    assert [partition for partition, _, _ in answered] == [
        partition_for_key(f"order-{index}".encode(), 8) for index in range(20)
    ]
    assert len({partition for partition, _, _ in answered}) > 1
    # an explicit partition or key still decides
    keyed = await outcomes(core, "orders", entry(msg_id="x", key=b"k"), entry(msg_id="y", partition=5))
    assert [partition for partition, _, _ in keyed] == [partition_for_key(b"k", 8), 5]


async def test_update_stream_changes_the_window(core: Node, clock: ManualClock) -> None:
    await core.admin.create_stream(stream_config("orders").to_proto())
    await outcomes(core, "orders", entry(msg_id="a"))
    clock.advance(5_000)
    config, _ = await core.admin.update_stream(
        streams_pb2.UpdateStreamRequest(name="orders", duplicate_window_ms=5_000)
    )
    assert config.duplicate_window_ms == 5_000
    assert await outcomes(core, "orders", entry(msg_id="a")) == [(0, 2, False)]
    config, _ = await core.admin.update_stream(streams_pb2.UpdateStreamRequest(name="orders", duplicate_window_ms=0))
    assert config.duplicate_window_ms == 120_000  # 0 = back to the default
    config, _ = await core.admin.update_stream(streams_pb2.UpdateStreamRequest(name="orders", max_age_ms=1_000))
    assert config.duplicate_window_ms == 1_000  # a shorter max_age_ms takes the window along


async def test_duplicate_window_bounds_are_validated(core: Node) -> None:
    config = (await core.admin.create_stream(stream_config("aged", max_age_ms=30_000).to_proto()))[0]
    assert (config.duplicate_window_ms, config.duplicate_window_max_msgs) == (30_000, 100_000)
    for bad, field in (
        (stream_config("w1", duplicate_window_ms=86_400_001), "duplicate_window_ms"),
        (stream_config("w2", max_age_ms=1_000, duplicate_window_ms=2_000), "max_age_ms"),
        (stream_config("w3", duplicate_window_max_msgs=1_000_001), "duplicate_window_max_msgs"),
    ):
        with pytest.raises(InvalidConfigError, match=field):
            await core.admin.create_stream(bad.to_proto())
    with pytest.raises(InvalidConfigError, match="max_age_ms"):
        await core.admin.update_stream(streams_pb2.UpdateStreamRequest(name="aged", duplicate_window_ms=60_000))
    assert core.list_streams() == ["aged"]


async def test_an_oversized_msg_id_rejects_the_request_and_stores_nothing(core: Node) -> None:
    await core.admin.create_stream(stream_config("orders").to_proto())
    with pytest.raises(InvalidArgumentError, match=r"entries\[1\]: msg_id: at most 256 bytes"):
        await outcomes(core, "orders", entry(msg_id="ok"), entry(msg_id="é" * 129))
    assert core.stream_info("orders").stats.msg_count == 0
    assert await outcomes(core, "orders", entry(msg_id="ok")) == [(0, 1, False)]


# -- over gRPC, with a SIGKILL ---------------------------------------------------------------------


async def test_duplicates_over_grpc_and_after_a_sigkill(fresh_node: NodeHandle, stream_name: str) -> None:
    async with NodeClient(fresh_node.client_address) as client:
        await client.create_stream(stream_config(stream_name, partitions=2))
        first = await client.publish(stream_name, "orders.new", b"one", msg_id="order-1", partition=1)
        assert (first.partition, first.seq, first.duplicate) == (1, 1, False)
        again = await client.publish(stream_name, "orders.new", b"one", msg_id="order-1", partition=1)
        assert (again.partition, again.seq, again.duplicate) == (1, 1, True)
        results = await client.publish_batch(
            stream_name,
            [
                streams_pb2.PublishEntry(subject="orders.new", payload=b"two", msg_id="order-2", partition=1),
                streams_pb2.PublishEntry(subject="orders.new", payload=b"one", msg_id="order-1", partition=1),
            ],
        )
        assert [(result.seq, result.duplicate, result.result_code) for result in results] == [
            (2, False, "ok"),
            (1, True, "ok"),
        ]
        stored = await client.get_message(stream_name, 1, 1)
        assert (stored.msg_id, stored.payload) == ("order-1", b"one")
    page = http_get(f"http://127.0.0.1:{fresh_node.metrics_port}/metrics")
    assert f'weir_publish_duplicates_total{{partition="1",stream="{stream_name}"}} 2.0' in page
    fresh_node.kill()
    fresh_node.restart()
    async with NodeClient(fresh_node.client_address) as client:
        after = await client.publish(stream_name, "orders.new", b"two", msg_id="order-2", partition=1)
        assert (after.seq, after.duplicate) == (2, True)
        info = await client.stream_info(stream_name)
        assert info.stats.msg_count == 2
        assert info.config.duplicate_window_ms == 120_000


async def test_bad_msg_id_and_timeout_are_invalid_argument_over_grpc(client: NodeClient, stream_name: str) -> None:
    await client.create_stream(stream_config(stream_name))
    for request in (
        streams_pb2.PublishRequest(stream=stream_name, subject="a", msg_id="x" * 257),
        streams_pb2.PublishRequest(stream=stream_name, subject="a", timeout_ms=300_001),
    ):
        with pytest.raises(grpc.aio.AioRpcError) as raised:
            await client.stub.Publish(request)
        assert raised.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert (await client.stream_info(stream_name)).stats.msg_count == 0
