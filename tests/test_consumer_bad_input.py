"""Bad consumer input through a real node over real gRPC: every rejected consumer request gets a
clear status and result code, and changes no state.

Same method as tests/test_bad_input.py (whose helpers this reuses): each rejection is checked on
the wire (the raw gRPC status code) and as the typed error `WeirError.from_rpc_error` rebuilds
(class, result code, not retryable, a message naming what was wrong), and the node's state must be
identical before and after the call. Here the snapshot also holds, for every stream on the node,
ListConsumers and GetConsumerInfo of each of its consumers (config, ack floors, last delivered,
pending counts, totals), on top of ListStreams, every GetStreamInfo and the change-feed horizon.

Consumers of the fixture streams use a long ack_wait, so nothing becomes due for redelivery (and
the node's sweep dead-letters nothing) while a test runs.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

import grpc
import pytest
from google.protobuf.message import Message
from weir.client import NodeClient, consumer_config, stream_config
from weir.errors import (
    AlreadyExistsError,
    ConsumerBoundError,
    InvalidArgumentError,
    InvalidConfigError,
    InvalidNameError,
    InvalidSubjectError,
    NoSuchConsumerError,
    NoSuchPartitionError,
    NoSuchStreamError,
    NotPendingError,
    WeirError,
)
from weir.v1 import streams_pb2, types_pb2
from weir_server.internal_clients import ChangeFeedClient

from tests.test_bad_input import BAD_NAMES, TIMEOUT_S, Env, Snapshot, check_error, rpc, take_snapshot

LONG_ACK_WAIT_MS = 3_600_000
MAX_ACK_WAIT_MS = 7 * 24 * 3600 * 1000
MAX_U64 = 2**64 - 1
MAX_U32 = 2**32 - 1


# -- helpers -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConsumerSnapshot:
    """Everything a client can observe of the node's state, consumers included."""

    streams: Snapshot
    listed: dict[str, list[types_pb2.ConsumerInfo]]  # ListConsumers of every stream
    infos: dict[tuple[str, str], types_pb2.ConsumerInfo]  # GetConsumerInfo of every consumer


async def take_consumer_snapshot(client: NodeClient, feed: ChangeFeedClient) -> ConsumerSnapshot:
    streams = await take_snapshot(client, feed)
    listed = {name: await client.list_consumers(name) for name in streams.names}
    infos = {
        (name, info.config.name): await client.consumer_info(name, info.config.name)
        for name, consumers in listed.items()
        for info in consumers
    }
    return ConsumerSnapshot(streams, listed, infos)


async def rejected(
    env: Env, call: Callable[[], Awaitable[Any]], error_class: type[WeirError], *fragments: str
) -> WeirError:
    """Run `call`; it must fail with `error_class` (on the wire and typed), its message must contain
    every fragment, and the node's state (consumers included) must be exactly as before."""
    before = await take_consumer_snapshot(env.client, env.feed)
    try:
        response = await call()
    except grpc.aio.AioRpcError as rpc_error:
        error = check_error(rpc_error, error_class, fragments)
    else:
        raise AssertionError(f"expected {error_class.__name__}, the call succeeded: {response}")
    after = await take_consumer_snapshot(env.client, env.feed)
    assert after == before, f"rejected call ({error!r}) changed the node's state"
    return error


def call(env: Env, method: str, request: Message) -> Callable[[], Awaitable[Any]]:
    """A raw stub call, started only when called. A Subscribe is read to its end (a rejected one
    fails at its first read)."""
    if method != "Subscribe":
        return rpc(getattr(env.stub, method), request)

    async def subscribe() -> list[streams_pb2.SubscribeEvent]:
        return [event async for event in env.stub.Subscribe(request, timeout=TIMEOUT_S)]

    return subscribe


@contextlib.contextmanager
def naming(method: str) -> Iterator[None]:
    """Name the RPC in a failure of a test that loops over RPCs."""
    try:
        yield
    except AssertionError as failure:
        failure.add_note(f"RPC: {method}")
        raise


def consumer_requests(stream: str, consumer: str, partition: int = 0, seq: int = 3) -> dict[str, Message]:
    """One otherwise valid request per consumer RPC that addresses `stream` / `consumer`."""
    return {
        "CreateConsumer": streams_pb2.CreateConsumerRequest(stream=stream, config=consumer_config(consumer).to_proto()),
        "DeleteConsumer": streams_pb2.DeleteConsumerRequest(stream=stream, consumer=consumer),
        "ListConsumers": streams_pb2.ListConsumersRequest(stream=stream),
        "GetConsumerInfo": streams_pb2.GetConsumerInfoRequest(stream=stream, consumer=consumer),
        "Fetch": streams_pb2.FetchRequest(stream=stream, consumer=consumer, partition=partition),
        "Ack": streams_pb2.AckRequest(stream=stream, consumer=consumer, partition=partition, seq=seq),
        "AckBatch": streams_pb2.AckBatchRequest(stream=stream, consumer=consumer, partition=partition, seqs=[seq]),
        "Nak": streams_pb2.NakRequest(stream=stream, consumer=consumer, partition=partition, seq=seq),
        "Term": streams_pb2.TermRequest(stream=stream, consumer=consumer, partition=partition, seq=seq),
        "InProgress": streams_pb2.InProgressRequest(stream=stream, consumer=consumer, partition=partition, seq=seq),
        "Subscribe": streams_pb2.SubscribeRequest(
            stream=stream, consumer=consumer, partitions=[partition], stop_when_empty=True
        ),
    }


ALL_RPCS = list(consumer_requests("x", "y"))
CONSUMER_RPCS = [name for name in ALL_RPCS if name not in ("CreateConsumer", "ListConsumers")]
PARTITION_RPCS = ["Fetch", "Ack", "AckBatch", "Nak", "Term", "InProgress", "Subscribe"]
SETTLE_RPCS = ["Ack", "Nak", "Term", "InProgress"]


# -- fixtures ----------------------------------------------------------------------------------------


@pytest.fixture
def env(client: NodeClient, feed_client: ChangeFeedClient) -> Env:
    return Env(client, feed_client)


WORKER = consumer_config(
    "worker", filter_subject="orders.>", ack_wait_ms=LONG_ACK_WAIT_MS, max_deliver=3, dead_letter_subject="dlq.orders"
)
GROUPED = consumer_config("grouped", filter_subject="orders.eu", ack_wait_ms=LONG_ACK_WAIT_MS, deliver_group="g")


async def _create_orders(client: NodeClient, name: str) -> None:
    """A stream of `orders.>` and `dlq.>` subjects, 2 partitions. Partition 0 holds seqs 1..4,
    partition 1 seq 1. Consumer "worker" (filter orders.>) got seqs 1..3 of partition 0 (1 acked,
    2 terminated, 3 pending; 4 stored, not delivered) and seq 1 of partition 1 (pending).
    Consumer "grouped" (deliver_group "g") has delivered nothing."""
    await client.create_stream(stream_config(name, subjects=["orders.>", "dlq.>"], partitions=2))
    entries = [
        streams_pb2.PublishEntry(subject=subject, payload=b"x", partition=0)
        for subject in ("orders.eu", "orders.us", "orders.eu", "orders.eu")
    ]
    entries.append(streams_pb2.PublishEntry(subject="orders.us", payload=b"y", partition=1))
    await client.publish_batch(name, entries)
    await client.create_consumer(name, WORKER)
    await client.create_consumer(name, GROUPED)
    first, second = await asyncio.gather(client.fetch(name, "worker", 0, batch_size=3), client.fetch(name, "worker", 1))
    assert ([m.seq for m in first], [m.seq for m in second]) == ([1, 2, 3], [1])
    await asyncio.gather(client.ack(name, "worker", 0, 1), client.term(name, "worker", 0, 2))
    info = await client.consumer_info(name, "worker")
    partitions = [(p.ack_floor, p.last_delivered, p.num_ack_pending, p.num_pending) for p in info.partitions]
    assert partitions == [(2, 3, 1, 1), (0, 1, 1, 0)]


@pytest.fixture(scope="module")
async def shared_orders(client: NodeClient) -> AsyncIterator[tuple[str, list[types_pb2.ConsumerInfo]]]:
    name = f"consumer-bad-input-{uuid.uuid4().hex[:8]}"
    await _create_orders(client, name)
    yield name, await client.list_consumers(name)
    await client.delete_stream(name)


@pytest.fixture
async def orders(client: NodeClient, shared_orders: tuple[str, list[types_pb2.ConsumerInfo]]) -> str:
    """The stream of `_create_orders`, shared by the tests that only make calls which must be
    rejected (`rejected` checks that each changed nothing); checked intact before every test."""
    name, consumers = shared_orders
    assert await client.list_consumers(name) == consumers, "an earlier test changed the shared stream"
    return name


@pytest.fixture
async def fresh_orders(client: NodeClient, stream_name: str) -> AsyncIterator[str]:
    """A stream of `_create_orders` of this test's own, for tests that change it."""
    await _create_orders(client, stream_name)
    yield stream_name
    await client.delete_stream(stream_name)


@pytest.fixture
async def work_queue(env: Env, stream_name: str) -> AsyncIterator[str]:
    """A work-queue stream of `jobs.>` with consumer "eu" taking `jobs.eu.*`."""
    await env.client.create_stream(stream_config(stream_name, subjects=["jobs.>"], retention="work_queue"))
    await env.client.create_consumer(
        stream_name, consumer_config("eu", filter_subject="jobs.eu.*", ack_wait_ms=LONG_ACK_WAIT_MS)
    )
    yield stream_name
    await env.client.delete_stream(stream_name)


# -- unknown stream / consumer, bad names ------------------------------------------------------------


@pytest.mark.parametrize("method", ALL_RPCS)
async def test_unknown_stream_is_no_such_stream(env: Env, stream_name: str, method: str) -> None:
    request = consumer_requests(stream_name, "worker")[method]
    error = await rejected(env, call(env, method, request), NoSuchStreamError, f"stream {stream_name!r} does not exist")
    assert error.metadata == {"stream": stream_name}


@pytest.mark.parametrize("method", CONSUMER_RPCS)
async def test_unknown_consumer_is_no_such_consumer(env: Env, orders: str, method: str) -> None:
    request = consumer_requests(orders, "ghost")[method]
    error = await rejected(
        env, call(env, method, request), NoSuchConsumerError, f"stream {orders!r} has no consumer 'ghost'"
    )
    assert error.metadata == {"stream": orders, "consumer": "ghost"}


async def test_deleted_consumer_is_no_such_consumer(env: Env, fresh_orders: str) -> None:
    await env.client.delete_consumer(fresh_orders, "grouped")
    for method in CONSUMER_RPCS:
        request = consumer_requests(fresh_orders, "grouped")[method]
        with naming(method):
            await rejected(env, call(env, method, request), NoSuchConsumerError, "has no consumer 'grouped'")


@pytest.mark.parametrize("bad_name", BAD_NAMES.values(), ids=BAD_NAMES.keys())
async def test_illegal_consumer_name_is_invalid_name(env: Env, orders: str, bad_name: str) -> None:
    shown = repr(bad_name) if len(bad_name) <= 64 else bad_name[:61]
    for method in ALL_RPCS:
        if method == "ListConsumers":
            continue  # names no consumer
        request = consumer_requests(orders, bad_name)[method]
        with naming(method):
            error = await rejected(env, call(env, method, request), InvalidNameError, "consumer name", "1..128")
            assert shown in error.message


# The stream-name rule itself is tests/test_bad_input.py's; here: every consumer RPC applies it.
STREAM_NAME_CASES = {key: BAD_NAMES[key] for key in ("empty", "too_long", "dot", "star", "non_ascii", "nul")}


@pytest.mark.parametrize("bad_name", STREAM_NAME_CASES.values(), ids=STREAM_NAME_CASES.keys())
async def test_illegal_stream_name_is_invalid_name(env: Env, bad_name: str) -> None:
    for method in ALL_RPCS:
        request = consumer_requests(bad_name, "worker")[method]
        with naming(method):
            await rejected(env, call(env, method, request), InvalidNameError, "stream name", "1..128")


# -- consumer configs --------------------------------------------------------------------------------


def _config(**fields: Any) -> types_pb2.ConsumerConfig:
    config = consumer_config("new-consumer", ack_wait_ms=LONG_ACK_WAIT_MS, max_deliver=3, max_ack_pending=50).to_proto()
    for field, value in fields.items():
        setattr(config, field, value)  # raw ints also for the enum
    return config


BY_SEQ = types_pb2.DELIVER_POLICY_BY_START_SEQ
BY_TIME = types_pb2.DELIVER_POLICY_BY_START_TIME
BAD_CONSUMER_CONFIGS: dict[str, tuple[types_pb2.ConsumerConfig, type[WeirError], tuple[str, ...]]] = {
    "filter_empty_token": (_config(filter_subject="orders..eu"), InvalidSubjectError, ("'orders..eu'", "empty token")),
    "filter_trailing_dot": (_config(filter_subject="orders."), InvalidSubjectError, ("empty token",)),
    "filter_gt_middle": (_config(filter_subject="orders.>.eu"), InvalidSubjectError, ("last token",)),
    "filter_partial_wildcard": (_config(filter_subject="orders.e*"), InvalidSubjectError, ("whole tokens",)),
    "filter_whitespace": (_config(filter_subject="orders. eu"), InvalidSubjectError, ("whitespace",)),
    "filter_too_long": (_config(filter_subject="o" * 1025), InvalidSubjectError, ("1025 bytes", "1024")),
    "filter_matches_nothing": (
        _config(filter_subject="payments.>"),
        InvalidConfigError,
        ("filter_subject", "'payments.>'", "matches none"),
    ),
    "filter_prefix_only": (_config(filter_subject="orders"), InvalidConfigError, ("'orders'", "matches none")),
    "start_seq_with_all": (_config(start_seq=5), InvalidConfigError, ("start_seq", "only valid", "BY_START_SEQ")),
    "start_seq_with_new": (
        _config(deliver_policy=types_pb2.DELIVER_POLICY_NEW, start_seq=1),
        InvalidConfigError,
        ("start_seq", "only valid"),
    ),
    "by_start_seq_zero": (_config(deliver_policy=BY_SEQ), InvalidConfigError, ("start_seq", ">= 1")),
    "start_time_with_all": (_config(start_time_ms=1000), InvalidConfigError, ("start_time_ms", "only valid")),
    "start_time_with_by_seq": (
        _config(deliver_policy=BY_SEQ, start_seq=1, start_time_ms=1000),
        InvalidConfigError,
        ("start_time_ms", "only valid"),
    ),
    "by_start_time_zero": (_config(deliver_policy=BY_TIME), InvalidConfigError, ("start_time_ms", "> 0")),
    "by_start_time_negative": (
        _config(deliver_policy=BY_TIME, start_time_ms=-5),
        InvalidConfigError,
        ("start_time_ms", "> 0"),
    ),
    "deliver_policy_unknown": (_config(deliver_policy=9), InvalidConfigError, ("deliver_policy", "9")),
    "deliver_policy_negative": (_config(deliver_policy=-1), InvalidConfigError, ("deliver_policy", "-1")),
    "ack_wait_over_7_days": (
        _config(ack_wait_ms=MAX_ACK_WAIT_MS + 1),
        InvalidConfigError,
        ("ack_wait_ms", str(MAX_ACK_WAIT_MS), "7 days", str(MAX_ACK_WAIT_MS + 1)),
    ),
    "ack_wait_max_uint64": (_config(ack_wait_ms=MAX_U64), InvalidConfigError, ("ack_wait_ms", "7 days")),
    "max_ack_pending_over": (
        _config(max_ack_pending=100_001),
        InvalidConfigError,
        ("max_ack_pending", "100000", "100001"),
    ),
    "max_ack_pending_max_uint32": (_config(max_ack_pending=MAX_U32), InvalidConfigError, ("max_ack_pending",)),
    "deliver_group_space": (_config(deliver_group="bad group"), InvalidNameError, ("deliver_group", "'bad group'")),
    "deliver_group_dot": (_config(deliver_group="g.1"), InvalidNameError, ("deliver_group",)),
    "deliver_group_too_long": (_config(deliver_group="g" * 129), InvalidNameError, ("deliver_group", "1..128")),
    "dlq_wildcard": (
        _config(filter_subject="orders.>", dead_letter_subject="dlq.*"),
        InvalidSubjectError,
        ("'dlq.*'", "wildcard"),
    ),
    "dlq_empty_token": (
        _config(filter_subject="orders.>", dead_letter_subject="dlq..orders"),
        InvalidSubjectError,
        ("empty token",),
    ),
    "dlq_whitespace": (
        _config(filter_subject="orders.>", dead_letter_subject="dlq orders"),
        InvalidSubjectError,
        ("whitespace",),
    ),
    "dlq_not_accepted_by_stream": (
        _config(filter_subject="orders.>", dead_letter_subject="payments.dead"),
        InvalidConfigError,
        ("dead_letter_subject", "'payments.dead'", "matches none"),
    ),
    "dlq_matched_by_empty_filter": (
        _config(dead_letter_subject="dlq.orders"),
        InvalidConfigError,
        ("'dlq.orders'", "matches the consumer's own filter", "(every subject)"),
    ),
    "dlq_matched_by_filter": (
        _config(filter_subject="orders.>", dead_letter_subject="orders.dead"),
        InvalidConfigError,
        ("'orders.dead'", "matches the consumer's own filter", "'orders.>'"),
    ),
    "dlq_matched_by_star_filter": (
        _config(filter_subject="orders.*", dead_letter_subject="orders.dead"),
        InvalidConfigError,
        ("matches the consumer's own filter", "'orders.*'"),
    ),
}


@pytest.mark.parametrize("case", BAD_CONSUMER_CONFIGS.values(), ids=BAD_CONSUMER_CONFIGS.keys())
async def test_invalid_consumer_config_is_rejected(
    env: Env, orders: str, case: tuple[types_pb2.ConsumerConfig, type[WeirError], tuple[str, ...]]
) -> None:
    config, error_class, fragments = case
    request = streams_pb2.CreateConsumerRequest(stream=orders, config=config)
    await rejected(env, call(env, "CreateConsumer", request), error_class, *fragments)


async def test_config_boundaries_are_accepted(env: Env, fresh_orders: str) -> None:
    accepted = {
        "max-ack-wait": _config(ack_wait_ms=MAX_ACK_WAIT_MS),
        "max-ack-pending": _config(max_ack_pending=100_000),
        # orders.* matches two-token subjects only: a three-token dead letter subject is fine.
        "star-filter-dlq": _config(filter_subject="orders.*", dead_letter_subject="orders.dead.letters"),
        "by-time": _config(deliver_policy=BY_TIME, start_time_ms=1),
        "by-seq-past-end": _config(deliver_policy=BY_SEQ, start_seq=MAX_U64),
        "group-longest": _config(deliver_group="g" * 128),
    }
    for name, config in accepted.items():
        config.name = name
        info = await env.client.create_consumer(fresh_orders, config)
        assert info.config == config, name
        await env.client.delete_consumer(fresh_orders, name)


# -- already exists ----------------------------------------------------------------------------------


def _worker(**fields: Any) -> types_pb2.ConsumerConfig:
    config = types_pb2.ConsumerConfig()
    config.CopyFrom(WORKER.to_proto())
    for field, value in fields.items():
        setattr(config, field, value)
    return config


OTHER_WORKER_CONFIGS = {
    "filter": _worker(filter_subject="orders.eu"),
    "deliver_policy": _worker(deliver_policy=types_pb2.DELIVER_POLICY_NEW),
    "ack_wait": _worker(ack_wait_ms=LONG_ACK_WAIT_MS + 1),
    "ack_wait_default": _worker(ack_wait_ms=0),
    "max_deliver": _worker(max_deliver=4),
    "no_dlq": _worker(dead_letter_subject=""),
    "max_ack_pending": _worker(max_ack_pending=5),
    "deliver_group": _worker(deliver_group="g"),
}


@pytest.mark.parametrize("config", OTHER_WORKER_CONFIGS.values(), ids=OTHER_WORKER_CONFIGS.keys())
async def test_create_existing_with_other_config_is_already_exists(
    env: Env, orders: str, config: types_pb2.ConsumerConfig
) -> None:
    request = streams_pb2.CreateConsumerRequest(stream=orders, config=config)
    error = await rejected(
        env, call(env, "CreateConsumer", request), AlreadyExistsError, "already has a consumer 'worker'"
    )
    assert error.metadata == {"stream": orders, "consumer": "worker"}


async def test_create_existing_with_same_config_changes_nothing(env: Env, orders: str) -> None:
    before = await take_consumer_snapshot(env.client, env.feed)
    for config in (WORKER, _worker(max_ack_pending=1000)):  # 1000 is the default the node filled in
        info = await env.client.create_consumer(orders, config)
        assert info == before.infos[(orders, "worker")]
    assert await take_consumer_snapshot(env.client, env.feed) == before


OVERLAPPING_FILTERS = {
    "everything": "",
    "gt": "jobs.>",
    "same": "jobs.eu.*",
    "literal_inside": "jobs.eu.a",
    "star_first": "jobs.*.a",
    "star_star": "jobs.*.*",
}


@pytest.mark.parametrize("filter_subject", OVERLAPPING_FILTERS.values(), ids=OVERLAPPING_FILTERS.keys())
async def test_overlapping_work_queue_consumer_is_already_exists(
    env: Env, work_queue: str, filter_subject: str
) -> None:
    config = consumer_config("other", filter_subject=filter_subject).to_proto()
    request = streams_pb2.CreateConsumerRequest(stream=work_queue, config=config)
    error = await rejected(
        env, call(env, "CreateConsumer", request), AlreadyExistsError, "work-queue", "'eu'", "overlaps"
    )
    assert error.metadata == {"stream": work_queue, "consumer": "other"}


async def test_disjoint_work_queue_consumers_are_accepted(env: Env, work_queue: str) -> None:
    for name, filter_subject in (("us", "jobs.us.*"), ("deep", "jobs.eu.a.b"), ("short", "jobs.eu")):
        info = await env.client.create_consumer(work_queue, consumer_config(name, filter_subject=filter_subject))
        assert info.config.filter_subject == filter_subject
    names = [info.config.name for info in await env.client.list_consumers(work_queue)]
    assert names == ["deep", "eu", "short", "us"]


# -- not pending ---------------------------------------------------------------------------------------


def _settle(env: Env, method: str, stream: str, consumer: str, *, partition: int, seq: int) -> Callable[[], Any]:
    return call(env, method, consumer_requests(stream, consumer, partition, seq)[method])


NEVER_DELIVERED = {
    "stored": (0, 4, "last delivered seq is 3"),
    "not_stored": (0, 99, "last delivered seq is 3"),
    "max_uint64": (0, MAX_U64, "last delivered seq is 3"),
    "other_partition": (1, 3, "last delivered seq is 1"),
}


@pytest.mark.parametrize("method", SETTLE_RPCS)
@pytest.mark.parametrize("case", NEVER_DELIVERED.values(), ids=NEVER_DELIVERED.keys())
async def test_settle_of_never_delivered_seq_is_not_pending(
    env: Env, orders: str, method: str, case: tuple[int, int, str]
) -> None:
    partition, seq, last = case
    error = await rejected(
        env,
        _settle(env, method, orders, "worker", partition=partition, seq=seq),
        NotPendingError,
        f"seq {seq} was never delivered",
        "consumer 'worker'",
        last,
    )
    assert error.metadata == {"stream": orders, "partition": str(partition), "consumer": "worker", "seq": str(seq)}


SETTLED = {"acked": 1, "termed": 2}


@pytest.mark.parametrize("method", SETTLE_RPCS)
@pytest.mark.parametrize("seq", SETTLED.values(), ids=SETTLED.keys())
async def test_settle_of_settled_seq_is_not_pending(env: Env, orders: str, method: str, seq: int) -> None:
    error = await rejected(
        env,
        _settle(env, method, orders, "worker", partition=0, seq=seq),
        NotPendingError,
        f"seq {seq} is not pending for consumer 'worker'",
        "already acknowledged",
    )
    assert error.metadata["seq"] == str(seq)


@pytest.mark.parametrize("method", SETTLE_RPCS)
async def test_settle_of_seq_zero_is_not_pending(env: Env, orders: str, method: str) -> None:
    error = await rejected(
        env,
        _settle(env, method, orders, "worker", partition=0, seq=0),
        NotPendingError,
        "seq 0 does not exist",
        "seqs start at 1",
    )
    assert error.metadata["seq"] == "0"


@pytest.mark.parametrize("method", SETTLE_RPCS)
async def test_settle_by_another_consumer_is_not_pending(env: Env, orders: str, method: str) -> None:
    # seq 3 is pending for "worker", never delivered to "grouped".
    await rejected(
        env,
        _settle(env, method, orders, "grouped", partition=0, seq=3),
        NotPendingError,
        "never delivered",
        "consumer 'grouped'",
    )


async def test_ack_after_ack_and_after_term(env: Env, fresh_orders: str) -> None:
    await env.client.ack(fresh_orders, "worker", 1, 1)
    await rejected(
        env, _settle(env, "Ack", fresh_orders, "worker", partition=1, seq=1), NotPendingError, "already acknowledged"
    )
    await env.client.term(fresh_orders, "worker", 0, 3)
    for method in SETTLE_RPCS:
        await rejected(
            env,
            _settle(env, method, fresh_orders, "worker", partition=0, seq=3),
            NotPendingError,
            "seq 3 is not pending",
        )


async def test_ack_batch_of_nothing_pending_changes_nothing(env: Env, orders: str) -> None:
    """Not an error (per-entry results), and nothing changes: no commit, no change-feed entry."""
    before = await take_consumer_snapshot(env.client, env.feed)
    results = await env.client.ack_batch(orders, "worker", 0, [1, 2, 4, 99, MAX_U64])
    assert [(r.seq, r.result_code) for r in results] == [
        (1, "not_pending"),
        (2, "not_pending"),
        (4, "not_pending"),
        (99, "not_pending"),
        (MAX_U64, "not_pending"),
    ]
    assert all(r.message for r in results)
    assert await take_consumer_snapshot(env.client, env.feed) == before


# -- partitions and bounds ---------------------------------------------------------------------------


@pytest.mark.parametrize("method", PARTITION_RPCS)
@pytest.mark.parametrize("partition", [2, MAX_U32])
async def test_missing_partition_is_no_such_partition(env: Env, orders: str, method: str, partition: int) -> None:
    request = consumer_requests(orders, "worker", partition)[method]
    error = await rejected(
        env,
        call(env, method, request),
        NoSuchPartitionError,
        "2 partition(s)",
        f"partition {partition} does not exist",
    )
    assert error.metadata == {"stream": orders, "partition": str(partition)}


async def test_subscribe_with_one_missing_partition_is_no_such_partition(env: Env, orders: str) -> None:
    request = streams_pb2.SubscribeRequest(stream=orders, consumer="worker", partitions=[0, 1, 5], stop_when_empty=True)
    await rejected(env, call(env, "Subscribe", request), NoSuchPartitionError, "partition 5 does not exist")


BAD_BOUNDS: dict[str, tuple[str, dict[str, Any], tuple[str, ...]]] = {
    "fetch_batch_10001": ("Fetch", {"batch_size": 10_001}, ("batch_size", "10000", "10001")),
    "fetch_batch_max_uint32": ("Fetch", {"batch_size": MAX_U32}, ("batch_size", "10000")),
    "fetch_wait_300001": ("Fetch", {"max_wait_ms": 300_001}, ("max_wait_ms", "300000", "300001")),
    "fetch_wait_max_uint64": ("Fetch", {"max_wait_ms": MAX_U64}, ("max_wait_ms", "300000")),
    "subscribe_batch_10001": ("Subscribe", {"batch_size": 10_001}, ("batch_size", "10000", "10001")),
    "ack_batch_empty": ("AckBatch", {"seqs": []}, ("seqs", "at least one")),
    # The pending seq 3 is among them: nothing is acknowledged.
    "ack_batch_10001": ("AckBatch", {"seqs": [3, *range(100, 10_100)]}, ("seqs", "at most 10000", "10001")),
    "nak_delay_too_long": ("Nak", {"delay_ms": 604_800_001}, ("delay_ms", "604800000")),
    "nak_delay_max_uint64": ("Nak", {"delay_ms": MAX_U64}, ("delay_ms",)),
}


@pytest.mark.parametrize("case", BAD_BOUNDS.values(), ids=BAD_BOUNDS.keys())
async def test_out_of_bounds_request_is_invalid_argument(
    env: Env, orders: str, case: tuple[str, dict[str, Any], tuple[str, ...]]
) -> None:
    method, fields, fragments = case
    request = consumer_requests(orders, "worker")[method]
    for field, value in fields.items():
        if field == "seqs":
            request.seqs[:] = value  # type: ignore[attr-defined]
        else:
            setattr(request, field, value)
    await rejected(env, call(env, method, request), InvalidArgumentError, *fragments)


async def test_bounds_are_accepted(env: Env, fresh_orders: str) -> None:
    client = env.client
    assert [m.seq for m in await client.fetch(fresh_orders, "worker", 0, batch_size=10_000)] == [4]
    results = await client.ack_batch(fresh_orders, "worker", 0, [3, *range(100, 10_099)])
    assert len(results) == 10_000
    assert [(r.seq, r.result_code) for r in results[:2]] == [(3, "ok"), (100, "not_pending")]
    await client.nak(fresh_orders, "worker", 0, 4, delay_ms=604_800_000)
    info = await client.consumer_info(fresh_orders, "worker")
    assert [(p.ack_floor, p.last_delivered, p.num_ack_pending) for p in info.partitions] == [(3, 4, 1), (0, 1, 1)]


# -- subscribe groups --------------------------------------------------------------------------------

WRONG_GROUPS = {
    "grouped_other_group": ("grouped", "h", ("consumer 'grouped' delivers to group 'g'", "deliver_group='g'")),
    "grouped_no_group": ("grouped", "", ("delivers to group 'g'",)),
    "grouped_case": ("grouped", "G", ("delivers to group 'g'",)),
    "ungrouped_with_group": ("worker", "g", ("consumer 'worker' has no deliver_group",)),
}


@pytest.mark.parametrize("case", WRONG_GROUPS.values(), ids=WRONG_GROUPS.keys())
async def test_subscribe_with_wrong_deliver_group_is_consumer_bound(
    env: Env, orders: str, case: tuple[str, str, tuple[str, ...]]
) -> None:
    consumer, group, fragments = case
    request = streams_pb2.SubscribeRequest(stream=orders, consumer=consumer, deliver_group=group)
    error = await rejected(env, call(env, "Subscribe", request), ConsumerBoundError, *fragments)
    assert error.metadata == {"stream": orders, "consumer": consumer}
