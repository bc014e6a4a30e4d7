"""Bad input through a real node over real gRPC: every rejected request gets a clear status and
result code, and changes no state.

Every rejection is checked on the wire (the raw gRPC status code of the call) and as the typed
error `WeirError.from_rpc_error` rebuilds from the status details (class, result code, not
retryable, a message naming what was wrong). "No state changed" means an identical snapshot before
and after the call: ListStreams, GetStreamInfo (config and stats, every partition's seqs) of every
stream on the node, and the change feed horizon (`last_change_seq`).

The last tests pin bugs found while writing this file (huge uint64 seqs and limits reaching SQLite,
sizes counted in characters instead of UTF-8 bytes); they were fixed in the product.
"""

from __future__ import annotations

import asyncio
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import grpc
import pytest
from google.protobuf.message import Message
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from weir.client import NodeClient, stream_config
from weir.errors import (
    AlreadyExistsError,
    InternalError,
    InvalidArgumentError,
    InvalidConfigError,
    InvalidNameError,
    InvalidSubjectError,
    NoSuchMessageError,
    NoSuchPartitionError,
    NoSuchStreamError,
    OversizeError,
    SubjectRejectedError,
    WeirError,
    WrongRevisionError,
)
from weir.v1 import internal_pb2, streams_pb2, types_pb2
from weir_cli.launcher import NodeHandle
from weir_server.internal_clients import ChangeFeedClient

T = TypeVar("T")

# The shared node runs with the default WEIR_NODE_MAX_MESSAGE_BYTES (checked by
# test_max_msg_bytes_boundaries_are_accepted).
NODE_MAX = 1024 * 1024
MAX_PARTITIONS = 1024
MAX_READ = 10_000
YEAR_MS = 365 * 24 * 3600 * 1000
TIMEOUT_S = 10.0
# ReadChanges from past the horizon returns no changes, only `last_change_seq` (cheap to ask).
PAST_HORIZON = 1 << 62
# Every rejection of bad input has one of these statuses; never INTERNAL / UNKNOWN / UNAVAILABLE.
BAD_INPUT_CODES = {
    grpc.StatusCode.INVALID_ARGUMENT,
    grpc.StatusCode.NOT_FOUND,
    grpc.StatusCode.ALREADY_EXISTS,
    grpc.StatusCode.FAILED_PRECONDITION,
}
_VALID_NAME = re.compile(r"[A-Za-z0-9_\-:]{1,128}")


# -- helpers -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    """Everything a client can observe of the node's state."""

    names: list[str]
    infos: dict[str, streams_pb2.GetStreamInfoResponse]
    horizon: int


@dataclass(frozen=True)
class Env:
    client: NodeClient
    feed: ChangeFeedClient

    @property
    def stub(self) -> Any:
        return self.client.stub


async def take_snapshot(client: NodeClient, feed: ChangeFeedClient) -> Snapshot:
    names = await client.list_streams()
    infos = {name: await client.stream_info(name) for name in names}
    horizon = (await feed.read_changes(PAST_HORIZON, 1)).last_change_seq
    return Snapshot(names, infos, horizon)


def rpc(method: Any, request: Message) -> Callable[[], Awaitable[Any]]:
    """A raw stub call, started only when called (so a snapshot can be taken first)."""
    return lambda: method(request, timeout=TIMEOUT_S)


def check_error(rpc_error: grpc.aio.AioRpcError, error_class: type[WeirError], fragments: tuple[str, ...]) -> WeirError:
    error = WeirError.from_rpc_error(rpc_error)
    assert type(error) is error_class, f"expected {error_class.__name__}, got {error!r}"
    assert rpc_error.code() == error_class.status_code, f"wire status {rpc_error.code()} for {error!r}"
    assert error.result_code == error_class.result_code
    assert not error.retryable, f"bad input must not be retryable: {error!r}"
    for fragment in fragments:
        assert fragment in error.message, f"{fragment!r} not in message {error.message!r}"
    return error


async def rejected(
    env: Env, call: Callable[[], Awaitable[Any]], error_class: type[WeirError], *fragments: str
) -> WeirError:
    """Run `call`; it must fail with `error_class` (on the wire and typed), its message must contain
    every fragment, and the node's state must be exactly as before."""
    before = await take_snapshot(env.client, env.feed)
    try:
        response = await call()
    except grpc.aio.AioRpcError as rpc_error:
        error = check_error(rpc_error, error_class, fragments)
    else:
        raise AssertionError(f"expected {error_class.__name__}, the call succeeded: {response}")
    after = await take_snapshot(env.client, env.feed)
    assert after == before, f"rejected call ({error!r}) changed the node's state"
    return error


def entry(subject: str = "orders.eu", payload: bytes = b"x", **fields: Any) -> streams_pb2.PublishEntry:
    return streams_pb2.PublishEntry(subject=subject, payload=payload, **fields)


def publish_request(
    stream: str, subject: str = "orders.eu", payload: bytes = b"x", **fields: Any
) -> streams_pb2.PublishRequest:
    return streams_pb2.PublishRequest(stream=stream, subject=subject, payload=payload, **fields)


def requests_naming(name: str) -> dict[str, Message]:
    """One otherwise valid request per RPC that addresses stream `name`."""
    return {
        "CreateStream": streams_pb2.CreateStreamRequest(config=stream_config(name).to_proto()),
        "GetStreamInfo": streams_pb2.GetStreamInfoRequest(name=name),
        "DeleteStream": streams_pb2.DeleteStreamRequest(name=name),
        "UpdateStream": streams_pb2.UpdateStreamRequest(name=name, max_msgs=5),
        "Publish": publish_request(name),
        "PublishBatch": streams_pb2.PublishBatchRequest(stream=name, entries=[entry(), entry("orders.us")]),
        "GetMessage": streams_pb2.GetMessageRequest(stream=name, partition=0, seq=1),
        "ReadMessages": streams_pb2.ReadMessagesRequest(stream=name),
        "ReadLatestAtSubject": streams_pb2.ReadLatestAtSubjectRequest(stream=name, subject="orders.eu"),
        "ListSubjectsByPrefix": streams_pb2.ListSubjectsByPrefixRequest(stream=name, prefix="orders."),
        "ScanExactAtSubject": streams_pb2.ScanExactAtSubjectRequest(stream=name, subject="orders.eu"),
    }


RPCS_ON_A_STREAM = [name for name in requests_naming("x") if name != "CreateStream"]


# -- fixtures ----------------------------------------------------------------------------------------


@pytest.fixture
def env(client: NodeClient, feed_client: ChangeFeedClient) -> Env:
    return Env(client, feed_client)


@pytest.fixture
async def orders(env: Env, stream_name: str) -> AsyncIterator[str]:
    """A stream of `orders.>` subjects, 2 partitions, max_msg_bytes 256, holding one message
    (orders.eu at partition 0, seq 1)."""
    await env.client.create_stream(stream_config(stream_name, subjects=["orders.>"], partitions=2, max_msg_bytes=256))
    ack = await env.client.publish(stream_name, "orders.eu", b"first", partition=0)
    assert (ack.partition, ack.seq) == (0, 1)
    yield stream_name
    await env.client.delete_stream(stream_name)


# -- stream names ------------------------------------------------------------------------------------

BAD_NAMES = {
    "empty": "",
    "too_long": "n" * 129,
    "space": "has space",
    "leading_space": " lead",
    "dot": "dotted.name",
    "slash": "slash/name",
    "dotdot": "../escape",
    "star": "star*",
    "gt": "gt>",
    "non_ascii": "ümlaut",
    "tab": "tab\tname",
    "nul": "nul\x00",
}


@pytest.mark.parametrize("method", ["CreateStream", *RPCS_ON_A_STREAM])
@pytest.mark.parametrize("bad_name", BAD_NAMES.values(), ids=BAD_NAMES.keys())
async def test_illegal_stream_name_is_invalid_name(env: Env, method: str, bad_name: str) -> None:
    request = requests_naming(bad_name)[method]
    error = await rejected(env, rpc(getattr(env.stub, method), request), InvalidNameError, "stream name", "1..128")
    shown = repr(bad_name) if len(bad_name) <= 64 else bad_name[:61]
    assert shown in error.message


async def test_longest_legal_name_works(env: Env) -> None:
    name = ("Az09_-:" + uuid.uuid4().hex) * 10
    name = name[:128]
    config = await env.client.create_stream(stream_config(name))
    assert config.name == name
    await env.client.delete_stream(name)


# -- stream configs ----------------------------------------------------------------------------------


def _config_case(**fields: Any) -> Callable[[str], types_pb2.StreamConfig]:
    def build(name: str) -> types_pb2.StreamConfig:
        config = stream_config(name).to_proto()
        for field, value in fields.items():
            if field == "subjects":
                config.subjects[:] = value
            elif field == "limits":
                for limit, bound in value.items():
                    setattr(config.limits, limit, bound)
            else:
                setattr(config, field, value)  # raw ints also for the enums
        return config

    return build


BAD_CONFIGS: dict[str, tuple[Callable[[str], types_pb2.StreamConfig], type[WeirError], tuple[str, ...]]] = {
    "pattern_empty": (_config_case(subjects=[""]), InvalidSubjectError, ("subject pattern is empty",)),
    "pattern_empty_token": (
        _config_case(subjects=["orders..eu"]),
        InvalidSubjectError,
        ("'orders..eu'", "empty token"),
    ),
    "pattern_trailing_dot": (_config_case(subjects=["orders."]), InvalidSubjectError, ("'orders.'", "empty token")),
    "pattern_gt_first": (_config_case(subjects=[">.orders"]), InvalidSubjectError, ("'>.orders'", "last token")),
    "pattern_gt_middle": (_config_case(subjects=["a.>.b"]), InvalidSubjectError, ("'a.>.b'", "last token")),
    "pattern_partial_star": (_config_case(subjects=["a*"]), InvalidSubjectError, ("'a*'", "whole tokens")),
    "pattern_partial_gt": (_config_case(subjects=["orders.eu>"]), InvalidSubjectError, ("whole tokens",)),
    "pattern_whitespace": (_config_case(subjects=["ok.>", "bad pattern"]), InvalidSubjectError, ("whitespace",)),
    "pattern_too_long": (_config_case(subjects=["p" * 1025]), InvalidSubjectError, ("1025 bytes", "1024")),
    "too_many_patterns": (
        _config_case(subjects=[f"s{i}" for i in range(257)]),
        InvalidConfigError,
        ("subjects", "256", "257"),
    ),
    "partitions_1025": (
        _config_case(partitions=MAX_PARTITIONS + 1),
        InvalidConfigError,
        ("partitions", "1024", "1025"),
    ),
    "partitions_max_uint32": (_config_case(partitions=2**32 - 1), InvalidConfigError, ("partitions", "1024")),
    "replicas_2": (_config_case(replicas=2), InvalidConfigError, ("replicas", "standalone")),
    "max_msg_bytes_above_node": (
        _config_case(max_msg_bytes=NODE_MAX + 1),
        InvalidConfigError,
        ("max_msg_bytes", str(NODE_MAX + 1), "node maximum", str(NODE_MAX)),
    ),
    "max_msg_bytes_max_uint64": (
        _config_case(max_msg_bytes=2**64 - 1),
        InvalidConfigError,
        ("max_msg_bytes", "node maximum"),
    ),
    "max_msg_bytes_63": (_config_case(max_msg_bytes=63), InvalidConfigError, ("max_msg_bytes", "63", "minimum of 64")),
    "max_msg_bytes_1": (_config_case(max_msg_bytes=1), InvalidConfigError, ("max_msg_bytes", "minimum of 64")),
    "retention_unknown": (_config_case(retention=7), InvalidConfigError, ("retention", "7")),
    "retention_negative": (_config_case(retention=-1), InvalidConfigError, ("retention", "-1")),
    "storage_unknown": (_config_case(storage=9), InvalidConfigError, ("storage", "9")),
    "max_age_over_100_years": (
        _config_case(limits={"max_age_ms": 101 * YEAR_MS}),
        InvalidConfigError,
        ("max_age_ms", "100 years"),
    ),
}


@pytest.mark.parametrize("case", BAD_CONFIGS.values(), ids=BAD_CONFIGS.keys())
async def test_invalid_config_is_rejected(
    env: Env,
    stream_name: str,
    case: tuple[Callable[[str], types_pb2.StreamConfig], type[WeirError], tuple[str, ...]],
) -> None:
    build, error_class, fragments = case
    request = streams_pb2.CreateStreamRequest(config=build(stream_name))
    await rejected(env, rpc(env.stub.CreateStream, request), error_class, *fragments)
    await rejected(
        env, rpc(env.stub.GetStreamInfo, streams_pb2.GetStreamInfoRequest(name=stream_name)), NoSuchStreamError
    )


async def test_max_msg_bytes_boundaries_are_accepted(env: Env, stream_name: str) -> None:
    for max_msg_bytes, effective in ((0, NODE_MAX), (64, 64), (NODE_MAX, NODE_MAX)):
        name = f"{stream_name}-{max_msg_bytes}"
        config = await env.client.create_stream(stream_config(name, max_msg_bytes=max_msg_bytes))
        assert config.max_msg_bytes == effective
        await env.client.delete_stream(name)


async def test_create_existing_with_other_config_is_already_exists(env: Env, stream_name: str) -> None:
    original = await env.client.create_stream(stream_config(stream_name, subjects=["orders.>"], partitions=2))
    await env.client.publish(stream_name, "orders.eu", b"kept")
    info = await env.client.stream_info(stream_name)
    others = {
        "subjects": stream_config(stream_name, subjects=["payments.>"], partitions=2),
        "partitions": stream_config(stream_name, subjects=["orders.>"], partitions=3),
        "limits": stream_config(stream_name, subjects=["orders.>"], partitions=2, max_msgs=10),
        "storage": stream_config(stream_name, subjects=["orders.>"], partitions=2, storage="memory"),
    }
    for config in others.values():
        request = streams_pb2.CreateStreamRequest(config=config.to_proto())
        error = await rejected(
            env, rpc(env.stub.CreateStream, request), AlreadyExistsError, repr(stream_name), "different config"
        )
        assert error.metadata["stream"] == stream_name
    # An existing name with an invalid config: the config error wins, nothing changes.
    bad = streams_pb2.CreateStreamRequest(
        config=stream_config(stream_name, subjects=["orders.>"], max_msg_bytes=10).to_proto()
    )
    await rejected(env, rpc(env.stub.CreateStream, bad), InvalidConfigError, "max_msg_bytes")
    assert await env.client.stream_info(stream_name) == info
    # The same config again is an idempotent no-op: same effective config and created_at_ms, no change.
    before = await take_snapshot(env.client, env.feed)
    response = await env.stub.CreateStream(
        streams_pb2.CreateStreamRequest(
            config=stream_config(stream_name, subjects=["orders.>"], partitions=2).to_proto()
        ),
        timeout=TIMEOUT_S,
    )
    assert response.config == original
    assert response.created_at_ms == info.created_at_ms
    assert await take_snapshot(env.client, env.feed) == before
    await env.client.delete_stream(stream_name)


# -- unknown streams ---------------------------------------------------------------------------------


@pytest.mark.parametrize("method", RPCS_ON_A_STREAM)
async def test_unknown_stream_is_not_found(env: Env, stream_name: str, method: str) -> None:
    request = requests_naming(stream_name)[method]
    error = await rejected(
        env, rpc(getattr(env.stub, method), request), NoSuchStreamError, repr(stream_name), "does not exist"
    )
    assert error.metadata["stream"] == stream_name


# -- publish -----------------------------------------------------------------------------------------

BAD_PUBLISHES: dict[str, tuple[dict[str, Any], type[WeirError], tuple[str, ...]]] = {
    "subject_empty": ({"subject": ""}, InvalidSubjectError, ("subject is empty",)),
    "subject_star": ({"subject": "orders.*"}, InvalidSubjectError, ("'orders.*'", "wildcard")),
    "subject_gt": ({"subject": "orders.>"}, InvalidSubjectError, ("'orders.>'", "wildcard")),
    "subject_space": ({"subject": "orders.e u"}, InvalidSubjectError, ("'orders.e u'", "whitespace")),
    "subject_tab": ({"subject": "orders.\teu"}, InvalidSubjectError, ("whitespace",)),
    "subject_newline": ({"subject": "orders.eu\n"}, InvalidSubjectError, ("whitespace",)),
    "subject_nul": ({"subject": "orders.e\x00u"}, InvalidSubjectError, ("NUL",)),
    "subject_empty_token": ({"subject": "orders..eu"}, InvalidSubjectError, ("'orders..eu'", "empty token")),
    "subject_leading_dot": ({"subject": ".orders.eu"}, InvalidSubjectError, ("empty token",)),
    "subject_trailing_dot": ({"subject": "orders."}, InvalidSubjectError, ("empty token",)),
    "subject_1025_bytes": ({"subject": "orders." + "x" * 1018}, InvalidSubjectError, ("1025 bytes", "1024")),
    "subject_1025_utf8_bytes": ({"subject": "orders." + "é" * 509}, InvalidSubjectError, ("1025 bytes", "1024")),
    "subject_outside_stream": ({"subject": "payments.eu"}, SubjectRejectedError, ("'payments.eu'", "orders.>")),
    "subject_prefix_only": ({"subject": "orders"}, SubjectRejectedError, ("'orders'", "orders.>")),
    "oversize": ({"payload": b"p" * 300}, OversizeError, ("309 bytes", "at most 256")),
    "oversize_by_headers": (
        {"headers": [types_pb2.Header(key="k", value="v" * 250)]},
        OversizeError,
        ("at most 256",),
    ),
    "oversize_node_max": ({"payload": b"p" * (NODE_MAX + 1)}, OversizeError, ("at most 256",)),
    "partition_2": ({"partition": 2}, NoSuchPartitionError, ("2 partition(s)", "partition 2 does not exist")),
    "partition_max_uint32": ({"partition": 2**32 - 1}, NoSuchPartitionError, (f"partition {2**32 - 1}",)),
    "negative_ts": ({"ts_ms": -1}, InvalidArgumentError, ("ts_ms", "-1")),
    "min_int64_ts": ({"ts_ms": -(2**63)}, InvalidArgumentError, ("ts_ms",)),
    "empty_header_key": (
        {"headers": [types_pb2.Header(key="", value="v")]},
        InvalidArgumentError,
        ("header", "empty key"),
    ),
    "unknown_ack_level": ({"ack_level": 7}, InvalidArgumentError, ("ack_level", "7")),
}


@pytest.mark.parametrize("case", BAD_PUBLISHES.values(), ids=BAD_PUBLISHES.keys())
async def test_invalid_publish_is_rejected(
    env: Env, orders: str, case: tuple[dict[str, Any], type[WeirError], tuple[str, ...]]
) -> None:
    fields, error_class, fragments = case
    error = await rejected(env, rpc(env.stub.Publish, publish_request(orders, **fields)), error_class, *fragments)
    if error_class is NoSuchPartitionError:
        assert error.metadata["partition"] == str(fields["partition"])
    if error_class in (SubjectRejectedError, OversizeError):
        assert error.metadata["stream"] == orders


async def test_payload_above_node_max_is_oversize(env: Env, stream_name: str) -> None:
    await env.client.create_stream(stream_config(stream_name))
    request = publish_request(stream_name, "big", b"p" * NODE_MAX)
    error = await rejected(
        env, rpc(env.stub.Publish, request), OversizeError, f"{NODE_MAX + 3} bytes", f"at most {NODE_MAX}"
    )
    assert error.metadata["size"] == str(NODE_MAX + 3)
    await env.client.delete_stream(stream_name)


async def test_expected_last_seq_mismatch_is_wrong_revision(env: Env, orders: str) -> None:
    for expected in (0, 2, 2**64 - 1):
        request = publish_request(orders, "orders.eu", partition=0, expected_last_seq=expected)
        error = await rejected(
            env, rpc(env.stub.Publish, request), WrongRevisionError, "'orders.eu'", "at seq 1", f"expected {expected}"
        )
        assert error.metadata.items() >= {"stream": orders, "partition": "0", "last_seq": "1"}.items()
    # A subject never published to is at seq 0.
    request = publish_request(orders, "orders.us", partition=0, expected_last_seq=1)
    error = await rejected(env, rpc(env.stub.Publish, request), WrongRevisionError, "at seq 0", "expected 1")
    assert error.metadata["last_seq"] == "0"
    # The matching revision commits.
    ack = await env.client.publish(orders, "orders.eu", b"second", partition=0, expected_last_seq=1)
    assert (ack.partition, ack.seq) == (0, 2)


# -- publish batch -----------------------------------------------------------------------------------

BAD_ENTRIES: dict[str, tuple[streams_pb2.PublishEntry, type[WeirError], str]] = {
    "subject_empty": (entry(""), InvalidSubjectError, "subject is empty"),
    "subject_wildcard": (entry("orders.*"), InvalidSubjectError, "wildcard"),
    "subject_whitespace": (entry("orders. eu"), InvalidSubjectError, "whitespace"),
    "subject_rejected": (entry("payments.eu"), SubjectRejectedError, "'payments.eu'"),
    "oversize": (entry(payload=b"p" * 300), OversizeError, "at most 256"),
    "no_such_partition": (entry(partition=5), NoSuchPartitionError, "partition 5"),
    "negative_ts": (entry(ts_ms=-5), InvalidArgumentError, "ts_ms"),
    "empty_header_key": (entry(headers=[types_pb2.Header(key="", value="v")]), InvalidArgumentError, "empty key"),
}


@pytest.mark.parametrize("case", BAD_ENTRIES.values(), ids=BAD_ENTRIES.keys())
async def test_batch_with_one_invalid_entry_stores_nothing(
    env: Env, orders: str, case: tuple[streams_pb2.PublishEntry, type[WeirError], str]
) -> None:
    bad, error_class, fragment = case
    entries = [entry("orders.a", partition=0), entry("orders.b", partition=1), bad, entry("orders.c", partition=0)]
    request = streams_pb2.PublishBatchRequest(stream=orders, entries=entries)
    error = await rejected(env, rpc(env.stub.PublishBatch, request), error_class, fragment)
    assert error.message.startswith("entries[2]: "), error.message


async def test_batch_wrong_revision_fails_only_that_entry(env: Env, orders: str) -> None:
    before = await take_snapshot(env.client, env.feed)
    entries = [
        entry("orders.a", partition=0),
        entry("orders.eu", partition=0, expected_last_seq=7),
        entry("orders.b", partition=0),
    ]
    results = await env.client.publish_batch(orders, entries)
    assert [result.result_code for result in results] == ["ok", "wrong_revision", "ok"]
    assert [(result.partition, result.seq) for result in results] == [(0, 2), (0, 1), (0, 3)]
    assert "expected 7" in results[1].message
    assert "'orders.eu'" in results[1].message
    info = await env.client.stream_info(orders)
    assert info.stats.msg_count == before.infos[orders].stats.msg_count + 2
    assert info.stats.partitions[0].last_seq == 3
    assert info.stats.partitions[1] == before.infos[orders].stats.partitions[1]
    assert [(await env.client.get_message(orders, 0, seq)).subject for seq in (1, 2, 3)] == [
        "orders.eu",
        "orders.a",
        "orders.b",
    ]
    after = await take_snapshot(env.client, env.feed)
    assert after.horizon == before.horizon + 1  # one append change for the one group commit


# -- reads -------------------------------------------------------------------------------------------


async def test_get_message_never_written_is_no_such_message(env: Env, orders: str) -> None:
    for partition, seq in ((0, 2), (0, 99), (0, 0), (1, 1)):
        request = streams_pb2.GetMessageRequest(stream=orders, partition=partition, seq=seq)
        error = await rejected(
            env, rpc(env.stub.GetMessage, request), NoSuchMessageError, f"partition {partition}", f"seq {seq}"
        )
        assert error.metadata.items() >= {"stream": orders, "partition": str(partition), "seq": str(seq)}.items()


def _read_requests(stream: str, partition: int) -> dict[str, Message]:
    return {
        "GetMessage": streams_pb2.GetMessageRequest(stream=stream, partition=partition, seq=1),
        "ReadMessages": streams_pb2.ReadMessagesRequest(stream=stream, partition=partition),
        "ReadLatestAtSubject": streams_pb2.ReadLatestAtSubjectRequest(
            stream=stream, partition=partition, subject="orders.eu"
        ),
        "ListSubjectsByPrefix": streams_pb2.ListSubjectsByPrefixRequest(stream=stream, partition=partition),
        "ScanExactAtSubject": streams_pb2.ScanExactAtSubjectRequest(
            stream=stream, partition=partition, subject="orders.eu"
        ),
    }


@pytest.mark.parametrize("method", list(_read_requests("x", 0)))
async def test_read_of_missing_partition_is_no_such_partition(env: Env, orders: str, method: str) -> None:
    for partition in (2, 2**32 - 1):
        request = _read_requests(orders, partition)[method]
        error = await rejected(
            env,
            rpc(getattr(env.stub, method), request),
            NoSuchPartitionError,
            "2 partition(s)",
            f"partition {partition} does not exist",
        )
        assert error.metadata.items() >= {"stream": orders, "partition": str(partition)}.items()


BAD_READS: dict[str, tuple[str, dict[str, Any], type[WeirError], tuple[str, ...]]] = {
    "read_max_messages": (
        "ReadMessages",
        {"max_messages": MAX_READ + 1},
        InvalidArgumentError,
        ("max_messages", "10000"),
    ),
    "read_max_messages_uint32": ("ReadMessages", {"max_messages": 2**32 - 1}, InvalidArgumentError, ("max_messages",)),
    "scan_limit": (
        "ScanExactAtSubject",
        {"subject": "orders.eu", "limit": MAX_READ + 1},
        InvalidArgumentError,
        ("limit", "10000"),
    ),
    "scan_wildcard": ("ScanExactAtSubject", {"subject": "orders.*"}, InvalidSubjectError, ("wildcard",)),
    "scan_empty_subject": ("ScanExactAtSubject", {"subject": ""}, InvalidSubjectError, ("empty",)),
    "list_limit": ("ListSubjectsByPrefix", {"limit": MAX_READ + 1}, InvalidArgumentError, ("limit", "10000")),
    "latest_wildcard": ("ReadLatestAtSubject", {"subject": "orders.>"}, InvalidSubjectError, ("wildcard",)),
    "latest_empty_token": ("ReadLatestAtSubject", {"subject": "orders..eu"}, InvalidSubjectError, ("empty token",)),
}


@pytest.mark.parametrize("case", BAD_READS.values(), ids=BAD_READS.keys())
async def test_invalid_read_is_rejected(
    env: Env, orders: str, case: tuple[str, dict[str, Any], type[WeirError], tuple[str, ...]]
) -> None:
    method, fields, error_class, fragments = case
    request_class = type(_read_requests(orders, 0)[method])
    await rejected(env, rpc(getattr(env.stub, method), request_class(stream=orders, **fields)), error_class, *fragments)


HUGE_SEQ_READS: dict[str, tuple[str, dict[str, Any]]] = {
    "get_message_seq_2^63": ("GetMessage", {"seq": 2**63}),
    "get_message_seq_max": ("GetMessage", {"seq": 2**64 - 1}),
    "read_messages_from_2^63": ("ReadMessages", {"from_seq": 2**63}),
    "scan_from_2^63": ("ScanExactAtSubject", {"subject": "orders.eu", "from_seq": 2**63}),
}


@pytest.mark.parametrize("case", HUGE_SEQ_READS.values(), ids=HUGE_SEQ_READS.keys())
async def test_read_at_huge_seq_is_not_internal(env: Env, orders: str, case: tuple[str, dict[str, Any]]) -> None:
    method, fields = case
    request = type(_read_requests(orders, 0)[method])(stream=orders, **fields)
    try:
        response = await getattr(env.stub, method)(request, timeout=TIMEOUT_S)
    except grpc.aio.AioRpcError as rpc_error:
        # A seq past the log: no_such_message for GetMessage (as for any unwritten seq), else a
        # clean INVALID_ARGUMENT would do.
        expected = NoSuchMessageError if method == "GetMessage" else InvalidArgumentError
        check_error(rpc_error, expected, ())
    else:
        assert method != "GetMessage"
        assert not response.messages


# -- update stream -----------------------------------------------------------------------------------

BAD_UPDATES: dict[str, tuple[dict[str, int], tuple[str, ...]]] = {
    "max_msg_bytes_above_node": ({"max_msg_bytes": NODE_MAX + 1}, ("max_msg_bytes", "node maximum", str(NODE_MAX))),
    "max_msg_bytes_max_uint64": ({"max_msg_bytes": 2**64 - 1}, ("max_msg_bytes", "node maximum")),
    "max_msg_bytes_below_64": ({"max_msg_bytes": 10}, ("max_msg_bytes", "minimum of 64")),
    "max_age_over_100_years": ({"max_age_ms": 101 * YEAR_MS}, ("max_age_ms", "100 years")),
    # A valid bound next to an invalid one: nothing is applied (max_msgs=1 would prune).
    "partial_is_atomic": ({"max_msgs": 1, "max_msg_bytes": NODE_MAX + 1}, ("max_msg_bytes",)),
}


@pytest.mark.parametrize("case", BAD_UPDATES.values(), ids=BAD_UPDATES.keys())
async def test_invalid_update_changes_nothing(
    env: Env, orders: str, case: tuple[dict[str, int], tuple[str, ...]]
) -> None:
    fields, fragments = case
    await env.client.publish(orders, "orders.us", b"second", partition=0)
    before = await env.client.stream_info(orders)
    request = streams_pb2.UpdateStreamRequest(name=orders, **fields)
    await rejected(env, rpc(env.stub.UpdateStream, request), InvalidConfigError, *fragments)
    assert await env.client.stream_info(orders) == before
    assert before.config.max_msg_bytes == 256
    assert before.stats.partitions[0].msg_count == 2


# -- regressions: bugs found while writing this file ----------------------------------------------------


async def test_oversize_counts_utf8_bytes(env: Env, stream_name: str) -> None:
    await env.client.create_stream(stream_config(stream_name, max_msg_bytes=64))
    try:
        subject = "a." + "é" * 40  # 42 characters, 82 bytes
        headers = [types_pb2.Header(key="k", value="é" * 40)]  # 41 characters, 81 bytes
        for request in (
            publish_request(stream_name, subject, b""),
            publish_request(stream_name, "a", b"", headers=headers),
        ):
            await rejected(env, rpc(env.stub.Publish, request), OversizeError, "at most 64")
    finally:
        await env.client.delete_stream(stream_name)


async def test_huge_limit_is_rejected_or_works(env: Env, stream_name: str) -> None:
    try:
        try:
            await env.client.create_stream(stream_config(stream_name, max_msgs_per_subject=2**64 - 1))
        except InvalidConfigError as error:
            assert "max_msgs_per_subject" in error.message
            return
        ack = await env.client.publish(stream_name, "s", b"x")
        assert ack.seq == 1
    finally:
        if stream_name in await env.client.list_streams():
            await env.client.delete_stream(stream_name)


def _tail_first_batch(env: Env, request: internal_pb2.TailChangesRequest) -> Callable[[], Awaitable[Any]]:
    """TailChanges through the raw stub, read up to its first batch (a server stream fails there)."""

    async def call() -> Any:
        async for batch in env.feed.stub.TailChanges(request, timeout=TIMEOUT_S):
            return batch
        return None

    return call


BAD_TAILS: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "partition_without_stream": ({"partition": 0}, ("partition 0", "needs a stream")),
    "batch_over_10000": ({"max_changes_per_batch": 10_001}, ("max_changes", "10000")),
}


@pytest.mark.parametrize("case", BAD_TAILS.values(), ids=BAD_TAILS.keys())
async def test_invalid_tail_changes_is_rejected(env: Env, case: tuple[dict[str, Any], tuple[str, ...]]) -> None:
    fields, fragments = case
    request = internal_pb2.TailChangesRequest(from_change_seq=PAST_HORIZON, **fields)
    await rejected(env, _tail_first_batch(env, request), InvalidArgumentError, *fragments)


# -- property-based: random requests against the real node ------------------------------------------

RUN_PREFIX = f"badin-{uuid.uuid4().hex[:8]}-"
# The only valid names the property test uses, so it never owns more than a few streams.
POOL = [f"{RUN_PREFIX}s{index}" for index in range(4)]
NAME_CHARS = "abcXYZ019_-:"
BAD_NAME_CHARS = " .*>/\tü\x00"
SUBJECTS = ["orders.eu", "orders.us.east", "pay.1.x", "x", "orders", "ü.ñ"]
PATTERNS = ["orders.>", "orders.*", "pay.*.x", ">", "*", "x", "ü.>"]


def _run(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine on a fresh event loop (not the session loop: grpc.aio channels are bound to
    the loop they were created on). A loop_factory keeps the runner from touching the thread's
    current event loop, which pytest-asyncio owns."""
    with asyncio.Runner(loop_factory=asyncio.new_event_loop) as runner:
        return runner.run(coroutine)


def _optional(strategy: st.SearchStrategy[T]) -> st.SearchStrategy[T | None]:
    return st.one_of(st.none(), strategy)


# Requests are drawn valid (names from POOL) and then get 0-2 corruptions, so that both successes
# and every kind of rejection are common.
BAD_NAMES_STRATEGY = st.one_of(
    st.just(""),
    st.integers(129 - len(RUN_PREFIX), 140 - len(RUN_PREFIX)).map(lambda length: RUN_PREFIX + "n" * length),
    st.tuples(st.text(NAME_CHARS, max_size=3), st.sampled_from(BAD_NAME_CHARS), st.text(max_size=4)).map(
        lambda parts: RUN_PREFIX + "".join(parts)
    ),
)
BAD_SUBJECTS = st.one_of(
    st.text("ab.*> \té\x00", max_size=10),
    st.integers(1020, 1030).map(lambda length: "s" * length),
)
VALID_MAX_MSG_BYTES = st.one_of(st.just(0), st.integers(64, NODE_MAX))
BAD_MAX_MSG_BYTES = st.one_of(st.integers(1, 63), st.integers(NODE_MAX + 1, 2**64 - 1))
# Valid limits stay far below 2**63 (see test_huge_limit_is_rejected_or_works); a valid max_age_ms
# is at least a year, so the background sweeper changes nothing while the test runs.
VALID_LIMITS = {
    "max_msgs": st.integers(0, 50),
    "max_bytes": st.integers(0, 100_000),
    "max_msgs_per_subject": st.integers(0, 10),
    "max_age_ms": st.one_of(st.just(0), st.integers(YEAR_MS, 100 * YEAR_MS)),
}
BAD_MAX_AGE_MS = st.integers(100 * YEAR_MS + 1, 2**64 - 1)
BAD_ENUM = st.one_of(st.integers(-(2**31), -1), st.integers(3, 2**31 - 1))


def _corruptions(draw: st.DrawFn, kinds: list[str]) -> list[str]:
    return draw(st.lists(st.sampled_from(kinds), max_size=2, unique=True))


@st.composite
def _create_requests(draw: st.DrawFn) -> streams_pb2.CreateStreamRequest:
    config = types_pb2.StreamConfig(
        name=draw(st.sampled_from(POOL)),
        subjects=draw(st.lists(st.sampled_from(PATTERNS), max_size=3)),
        partitions=draw(st.integers(0, 3)),
        replicas=draw(st.integers(0, 1)),
        max_msg_bytes=draw(VALID_MAX_MSG_BYTES),
    )
    config.retention = draw(st.integers(0, 2))  # type: ignore[assignment]
    config.storage = draw(st.integers(0, 1))  # type: ignore[assignment]
    for field, values in VALID_LIMITS.items():
        value = draw(_optional(values))
        if value is not None:
            setattr(config.limits, field, value)
    kinds = ["name", "subject", "subjects", "partitions", "replicas", "max_msg_bytes", "retention", "storage", "age"]
    for kind in _corruptions(draw, kinds):
        if kind == "name":
            config.name = draw(BAD_NAMES_STRATEGY)
        elif kind == "subject":
            config.subjects.append(draw(st.text("ab.*> ", max_size=6)))  # often, not always, invalid
        elif kind == "subjects":
            config.subjects[:] = [f"s{index}" for index in range(257)]
        elif kind == "partitions":
            config.partitions = draw(st.integers(MAX_PARTITIONS + 1, 2**32 - 1))
        elif kind == "replicas":
            config.replicas = draw(st.integers(2, 2**32 - 1))
        elif kind == "max_msg_bytes":
            config.max_msg_bytes = draw(BAD_MAX_MSG_BYTES)
        elif kind == "retention":
            config.retention = draw(BAD_ENUM)  # type: ignore[assignment]
        elif kind == "storage":
            config.storage = draw(BAD_ENUM)  # type: ignore[assignment]
        else:
            config.limits.max_age_ms = draw(BAD_MAX_AGE_MS)
    return streams_pb2.CreateStreamRequest(config=config)


@st.composite
def _publish_requests(draw: st.DrawFn) -> streams_pb2.PublishRequest:
    header_pairs = draw(
        st.lists(st.tuples(st.text("ab", min_size=1, max_size=2), st.text("vé", max_size=3)), max_size=2)
    )
    request = streams_pb2.PublishRequest(
        stream=draw(st.sampled_from(POOL)),
        subject=draw(st.sampled_from(SUBJECTS)),
        payload=b"p" * draw(st.integers(0, 200)),
        headers=[types_pb2.Header(key=key, value=value) for key, value in header_pairs],
        ts_ms=draw(st.one_of(st.just(0), st.integers(1, 2**62))),
    )
    # ack_level NONE answers before the commit, so the state check would race it.
    request.ack_level = draw(st.sampled_from([0, 2]))  # type: ignore[assignment]
    partition = draw(_optional(st.integers(0, 3)))  # may exceed the stream's partitions
    if partition is not None:
        request.partition = partition
    key = draw(_optional(st.binary(max_size=3)))
    if key is not None:
        request.key = key
    expected = draw(_optional(st.integers(0, 3)))  # often wrong: wrong_revision
    if expected is not None:
        request.expected_last_seq = expected
    kinds = ["name", "subject", "payload", "header", "ts", "partition", "expected", "ack"]
    for kind in _corruptions(draw, kinds):
        if kind == "name":
            request.stream = draw(BAD_NAMES_STRATEGY)
        elif kind == "subject":
            request.subject = draw(BAD_SUBJECTS)
        elif kind == "payload":
            request.payload = b"p" * draw(st.sampled_from([NODE_MAX - 20, NODE_MAX + 1]))
        elif kind == "header":
            request.headers.add(key="", value=draw(st.text("v", max_size=2)))
        elif kind == "ts":
            request.ts_ms = draw(st.integers(-(2**63), -1))
        elif kind == "partition":
            request.partition = draw(st.integers(4, 2**32 - 1))
        elif kind == "expected":
            request.expected_last_seq = draw(st.integers(1000, 2**64 - 1))
        else:
            request.ack_level = draw(st.integers(3, 2**31 - 1))  # type: ignore[assignment]
    return request


@st.composite
def _update_requests(draw: st.DrawFn) -> streams_pb2.UpdateStreamRequest:
    request = streams_pb2.UpdateStreamRequest(name=draw(st.sampled_from(POOL)))
    for field, strategy in {**VALID_LIMITS, "max_msg_bytes": VALID_MAX_MSG_BYTES}.items():
        value = draw(_optional(strategy))
        if value is not None:
            setattr(request, field, value)
    for kind in _corruptions(draw, ["name", "max_msg_bytes", "age"]):
        if kind == "name":
            request.name = draw(BAD_NAMES_STRATEGY)
        elif kind == "max_msg_bytes":
            request.max_msg_bytes = draw(BAD_MAX_MSG_BYTES)
        else:
            request.max_age_ms = draw(BAD_MAX_AGE_MS)
    return request


@st.composite
def _delete_requests(draw: st.DrawFn) -> streams_pb2.DeleteStreamRequest:
    request = streams_pb2.DeleteStreamRequest(name=draw(st.sampled_from(POOL)))
    if _corruptions(draw, ["name"]):
        request.name = draw(BAD_NAMES_STRATEGY)
    return request


Request = (
    streams_pb2.CreateStreamRequest
    | streams_pb2.PublishRequest
    | streams_pb2.UpdateStreamRequest
    | streams_pb2.DeleteStreamRequest
)
_requests: st.SearchStrategy[Request] = st.one_of(
    _create_requests(),
    _publish_requests(),
    _update_requests(),
    _delete_requests(),
)


def _target(request: Request) -> str:
    if isinstance(request, streams_pb2.CreateStreamRequest):
        return request.config.name
    if isinstance(request, streams_pb2.PublishRequest):
        return request.stream
    return request.name


def _assert_others_unchanged(before: Snapshot, after: Snapshot, name: str) -> None:
    assert [other for other in before.names if other != name] == [other for other in after.names if other != name]
    assert {k: v for k, v in before.infos.items() if k != name} == {k: v for k, v in after.infos.items() if k != name}


def _assert_success_reflected(request: Request, response: Any, before: Snapshot, after: Snapshot) -> None:
    name = _target(request)
    assert _VALID_NAME.fullmatch(name), f"{name!r} was accepted"
    _assert_others_unchanged(before, after, name)
    if isinstance(request, streams_pb2.CreateStreamRequest):
        config = response.config
        assert after.infos[name].config == config
        if name in before.infos:  # idempotent re-create: nothing changes
            assert after == before
            return
        asked = request.config
        assert config.partitions == (asked.partitions or 1)
        assert config.max_msg_bytes == (asked.max_msg_bytes or NODE_MAX)
        assert list(config.subjects) == list(dict.fromkeys(asked.subjects))
        assert (config.retention, config.storage) == (asked.retention, asked.storage)
        stats = after.infos[name].stats
        assert stats.msg_count == 0
        assert [partition.last_seq for partition in stats.partitions] == [0] * config.partitions
        assert after.horizon == before.horizon + 1
    elif isinstance(request, streams_pb2.PublishRequest):
        old, new = before.infos[name], after.infos[name]
        assert new.config == old.config
        if request.HasField("partition"):
            assert response.partition == request.partition
        old_seqs = [partition.last_seq for partition in old.stats.partitions]
        expected_seqs = list(old_seqs)
        expected_seqs[response.partition] += 1
        assert response.seq == expected_seqs[response.partition]
        assert [partition.last_seq for partition in new.stats.partitions] == expected_seqs
        if not old.config.limits.ListFields() and old.config.retention != types_pb2.RETENTION_POLICY_INTEREST:
            assert new.stats.msg_count == old.stats.msg_count + 1  # (interest without consumers keeps nothing)
        assert after.horizon > before.horizon
    elif isinstance(request, streams_pb2.UpdateStreamRequest):
        config = response.config
        assert after.infos[name].config == config
        old_config = before.infos[name].config
        for field in ("name", "subjects", "partitions", "replicas", "retention", "storage"):
            assert getattr(config, field) == getattr(old_config, field), field
        if request.HasField("max_msg_bytes"):
            assert config.max_msg_bytes == (request.max_msg_bytes or NODE_MAX)
        else:
            assert config.max_msg_bytes == old_config.max_msg_bytes
        for field in VALID_LIMITS:
            if not request.HasField(field):
                assert getattr(config.limits, field) == getattr(old_config.limits, field)
            elif getattr(request, field) == 0:
                assert not config.limits.HasField(field)
            else:
                assert getattr(config.limits, field) == getattr(request, field)
    else:
        assert name in before.names
        assert name not in after.names
        assert after.horizon > before.horizon


async def _assert_accepts_a_publish(client: NodeClient, config: types_pb2.StreamConfig) -> None:
    """A stream that was just created or updated takes a valid message (the config it accepted
    must be usable)."""
    subject = config.subjects[0].replace(">", "p").replace("*", "p") if config.subjects else "probe"
    last_seq = (await client.stream_info(config.name)).stats.partitions[0].last_seq
    ack = await client.publish(config.name, subject, b"", partition=0)
    assert (ack.partition, ack.seq) == (0, last_seq + 1)


async def _send(stub: Any, request: Request) -> Any:
    method = {
        streams_pb2.CreateStreamRequest: stub.CreateStream,
        streams_pb2.PublishRequest: stub.Publish,
        streams_pb2.UpdateStreamRequest: stub.UpdateStream,
        streams_pb2.DeleteStreamRequest: stub.DeleteStream,
    }[type(request)]
    return await method(request, timeout=TIMEOUT_S)


async def _check_requests(address: str, feed_address: str, requests: list[Request]) -> None:
    async with NodeClient(address) as client, ChangeFeedClient(feed_address) as feed:
        for request in requests:
            before = await take_snapshot(client, feed)
            try:
                response = await _send(client.stub, request)
            except grpc.aio.AioRpcError as rpc_error:
                error = WeirError.from_rpc_error(rpc_error)
                event(f"{type(request).__name__}: {error.result_code}")
                assert rpc_error.code() in BAD_INPUT_CODES, f"{rpc_error.code()}: {error!r}"
                assert rpc_error.code() == error.status_code, f"{rpc_error.code()}: {error!r}"
                assert not isinstance(error, InternalError), repr(error)
                assert not error.retryable, repr(error)
                assert error.message, repr(error)
                if not _VALID_NAME.fullmatch(_target(request)):
                    assert isinstance(error, InvalidNameError), repr(error)
                after = await take_snapshot(client, feed)
                assert after == before, f"rejected request ({error!r}) changed the node's state"
            else:
                event(f"{type(request).__name__}: ok")
                after = await take_snapshot(client, feed)
                _assert_success_reflected(request, response, before, after)
                if isinstance(request, streams_pb2.CreateStreamRequest | streams_pb2.UpdateStreamRequest):
                    await _assert_accepts_a_publish(client, response.config)


async def _delete_run_streams(address: str) -> None:
    async with NodeClient(address) as client:
        for name in await client.list_streams():
            if name.startswith(RUN_PREFIX):
                await client.delete_stream(name)


@pytest.fixture
def property_node(node: NodeHandle) -> Iterator[NodeHandle]:
    """The shared node with two of the POOL streams present at the start (so that publishes land);
    the streams the property test created are deleted after all examples."""

    async def create() -> None:
        async with NodeClient(node.client_address) as client:
            await client.create_stream(stream_config(POOL[0], partitions=2))
            await client.create_stream(stream_config(POOL[1], subjects=["orders.>", "x"], max_msg_bytes=128))

    _run(create())
    yield node
    _run(_delete_run_streams(node.client_address))


@settings(
    max_examples=150,
    deadline=None,
    database=None,  # no .hypothesis directory in the repository
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(requests=st.lists(_requests, min_size=1, max_size=3))
def test_random_requests_succeed_visibly_or_fail_cleanly(property_node: NodeHandle, requests: list[Request]) -> None:
    """Either a request succeeds and the state shows exactly its effect, or it fails with a
    bad-input status (never INTERNAL/UNKNOWN, never a crash) and the state is unchanged."""
    _run(_check_requests(property_node.client_address, property_node.internal_address, requests))
