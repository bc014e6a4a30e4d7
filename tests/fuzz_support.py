"""Helpers of the fuzz suite (tests/test_fuzz.py): which gRPC methods every port of a local cluster
serves, hypothesis strategies of random well-typed protobuf messages, raw (bytes in, bytes out)
calls of any method with a bounded wait, and the rules an outcome must follow.

The methods are enumerated from the generated service descriptors (`weir.v1.*_pb2`, the gateway's
kafka-pixy and RocketMQ v1 protos, grpc.health.v1 and server reflection), so a new RPC of a served
service is fuzzed without touching the suite; which services each port serves is `PORT_SERVICES`,
which the suite checks against each port's server reflection (a new service on a port fails that
check until it is listed here).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, cast

import grpc
from google.protobuf import descriptor_pool, message_factory
from google.protobuf.descriptor import Descriptor, FieldDescriptor, MethodDescriptor, ServiceDescriptor
from google.protobuf.message import DecodeError, Message
from google.rpc import error_details_pb2, status_pb2
from grpc_health.v1 import health_pb2
from grpc_reflection.v1alpha import reflection_pb2
from hypothesis import strategies as st
from weir.v1 import collections_pb2, internal_pb2, invoker_pb2, kv_pb2, objects_pb2, router_pb2, streams_pb2
from weir_gateway.kafka_pixy.pb import kafkapixy_pb2
from weir_gateway.rocketmq_v1.pb import service_pb2 as rocketmq_service_pb2
from weir_gateway.rocketmq_v2.pb import service_pb2 as rocketmq_v2_service_pb2
from weir_gateway.waymaker_streams.pb import waymaker_streams_pb2

# -- what is served where ------------------------------------------------------------------------------

HEALTH = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
REFLECTION = reflection_pb2.DESCRIPTOR.services_by_name["ServerReflection"].full_name
STREAMS = streams_pb2.DESCRIPTOR.services_by_name["Streams"].full_name
CHANGE_FEED = internal_pb2.DESCRIPTOR.services_by_name["ChangeFeed"].full_name
REPLICATION = internal_pb2.DESCRIPTOR.services_by_name["Replication"].full_name
ROUTER = router_pb2.DESCRIPTOR.services_by_name["Router"].full_name
KEY_VALUE = kv_pb2.DESCRIPTOR.services_by_name["KeyValue"].full_name
COLLECTIONS = collections_pb2.DESCRIPTOR.services_by_name["Collections"].full_name
OBJECTS = objects_pb2.DESCRIPTOR.services_by_name["ObjectStore"].full_name
KAFKA_PIXY = kafkapixy_pb2.DESCRIPTOR.services_by_name["KafkaPixy"].full_name
ROCKETMQ = rocketmq_service_pb2.DESCRIPTOR.services_by_name["MessagingService"].full_name
ROCKETMQ_V2 = rocketmq_v2_service_pb2.DESCRIPTOR.services_by_name["MessagingService"].full_name
WAYMAKER_STREAMS = waymaker_streams_pb2.DESCRIPTOR.services_by_name["WaymakerStreamsService"].full_name
INVOKER = invoker_pb2.DESCRIPTOR.services_by_name["Invoker"].full_name

NODE_CLIENT, NODE_INTERNAL, ROUTER_PORT, KAFKA_PIXY_PORT, ROCKETMQ_PORT, WAYMAKER_STREAMS_PORT, INVOKER_PORT = (
    "node-client",
    "node-internal",
    "router",
    "kafka-pixy",
    "rocketmq",
    "waymaker-streams",
    "invoker",
)
# The services each port of a clustered node, a router and a gateway serves (weir.v1.TestClock is
# served only by a node with WEIR_NODE_TEST_CLOCK=true, which the fuzzed cluster is not).
PORT_SERVICES: dict[str, tuple[str, ...]] = {
    NODE_CLIENT: (STREAMS, HEALTH, REFLECTION),
    NODE_INTERNAL: (STREAMS, CHANGE_FEED, REPLICATION, HEALTH, REFLECTION),
    ROUTER_PORT: (ROUTER, KEY_VALUE, COLLECTIONS, OBJECTS, HEALTH, REFLECTION),
    KAFKA_PIXY_PORT: (KAFKA_PIXY, HEALTH, REFLECTION),
    ROCKETMQ_PORT: (ROCKETMQ, ROCKETMQ_V2, HEALTH, REFLECTION),
    WAYMAKER_STREAMS_PORT: (WAYMAKER_STREAMS, HEALTH, REFLECTION),
    INVOKER_PORT: (INVOKER, HEALTH, REFLECTION),
}
# Methods not fuzzed, and why: RegisterDeployment dials the URL it is given (the fuzzer would send
# the invoker to random hosts, and this machine's traffic stays on 127.0.0.1); tests/test_invoker.py
# covers its bad input (a malformed URL, nothing listening, something that is not an SDK).
NOT_FUZZED = frozenset({f"/{INVOKER}/RegisterDeployment"})
GATEWAY_PORTS = (KAFKA_PIXY_PORT, ROCKETMQ_PORT, WAYMAKER_STREAMS_PORT)
# Protocols Weir serves but did not design: they may answer UNIMPLEMENTED for what Weir does not do
# (RocketMQ offset acks and SQL filters, grpc.health.v1's List on grpcio's asyncio servicer).
FOREIGN_SERVICES = frozenset({HEALTH, REFLECTION, KAFKA_PIXY, ROCKETMQ, WAYMAKER_STREAMS})


@dataclass(frozen=True)
class Endpoint:
    """One method on one port."""

    port: str
    method: MethodDescriptor

    @property
    def path(self) -> str:
        return f"/{self.method.containing_service.full_name}/{self.method.name}"

    @property
    def id(self) -> str:
        return f"{self.port}:{self.method.containing_service.name}.{self.method.name}"

    @property
    def request_class(self) -> type[Message]:
        return message_class(self.method.input_type)

    @property
    def response_class(self) -> type[Message]:
        return message_class(self.method.output_type)


def service(full_name: str) -> ServiceDescriptor:
    """A service descriptor of the default pool (every module above registered its file there)."""
    return descriptor_pool.Default().FindServiceByName(full_name)


def endpoints() -> list[Endpoint]:
    """Every method of every service of every port, in `PORT_SERVICES` order."""
    every = [
        Endpoint(port, method)
        for port, names in PORT_SERVICES.items()
        for name in names
        for method in service(name).methods
    ]
    return [endpoint for endpoint in every if endpoint.path not in NOT_FUZZED]


def message_class(descriptor: Descriptor) -> type[Message]:
    return message_factory.GetMessageClass(descriptor)


def _message_type(field_descriptor: FieldDescriptor) -> Descriptor:
    """The message type of a message (or map) field."""
    assert field_descriptor.message_type is not None, field_descriptor.full_name
    return field_descriptor.message_type


# -- random well-typed messages ------------------------------------------------------------------------

# Strings that reach past "not found": the fuzzed cluster's victim stream, consumer and subjects,
# the kafka-pixy cluster name and the node ids, besides edge cases of names and subjects.
VICTIM_STREAM = "fuzz-victim"
VICTIM_CONSUMER = "fuzz-group"
TOKENS = (
    "",
    VICTIM_STREAM,
    VICTIM_CONSUMER,
    f"{VICTIM_STREAM}.a",
    "default",
    "node-1",
    "node-2",
    ">",
    "*",
    "a.*.>",
    "..",
    "\x00",
    "\u202e\ufeff",
    "💥" * 5,
    "n" * 129,
    "ß" * 700,
)
# Fields that ask the server to wait (long polls, replication timeouts): mostly short, so that an
# example costs milliseconds, sometimes anything.
WAIT_FIELDS = frozenset({"max_wait_ms", "timeout_ms"})
WAIT_DURATIONS = frozenset({"await_time"})
MAX_DEPTH = 3

_INT_RANGES = {
    FieldDescriptor.TYPE_INT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SINT32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_SFIXED32: (-(2**31), 2**31 - 1),
    FieldDescriptor.TYPE_INT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SINT64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_SFIXED64: (-(2**63), 2**63 - 1),
    FieldDescriptor.TYPE_UINT32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_FIXED32: (0, 2**32 - 1),
    FieldDescriptor.TYPE_UINT64: (0, 2**64 - 1),
    FieldDescriptor.TYPE_FIXED64: (0, 2**64 - 1),
}


def _integers(low: int, high: int, name: str) -> st.SearchStrategy[int]:
    edges = st.sampled_from(sorted({low, high, max(low, -1), 0, 1, min(high, 2**31), min(high, 2**53 + 1)}))
    anything = st.integers(low, high)
    if name in WAIT_FIELDS:
        return st.one_of(st.integers(0, 50), st.integers(0, 50), anything)
    return st.one_of(st.integers(max(low, -2), min(high, 1100)), edges, anything)


def _strings() -> st.SearchStrategy[str]:
    no_surrogates = st.characters(exclude_categories=["Cs"])
    return st.one_of(
        st.sampled_from(TOKENS), st.text(no_surrogates, max_size=24), st.text(max_size=8).filter(_encodable)
    )


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _scalar(field_descriptor: FieldDescriptor) -> st.SearchStrategy[Any]:
    kind = field_descriptor.type
    if kind in _INT_RANGES:
        low, high = _INT_RANGES[kind]
        return _integers(low, high, field_descriptor.name)
    if kind == FieldDescriptor.TYPE_BOOL:
        return st.booleans()
    if kind == FieldDescriptor.TYPE_STRING:
        return _strings()
    if kind == FieldDescriptor.TYPE_BYTES:
        return st.one_of(st.binary(max_size=48), st.sampled_from([token.encode() for token in TOKENS]))
    if kind == FieldDescriptor.TYPE_DOUBLE:
        return st.floats(allow_nan=True, allow_infinity=True)
    if kind == FieldDescriptor.TYPE_FLOAT:
        return st.floats(width=32, allow_nan=True, allow_infinity=True)
    if kind == FieldDescriptor.TYPE_ENUM:
        enum_type = field_descriptor.enum_type
        assert enum_type is not None, field_descriptor.full_name
        known = st.sampled_from([value.number for value in enum_type.values])
        if enum_type.is_closed:
            return known
        return st.one_of(known, st.integers(-(2**31), 2**31 - 1))
    raise AssertionError(f"no strategy for field {field_descriptor.full_name} of type {kind}")


def _value(field_descriptor: FieldDescriptor, depth: int) -> st.SearchStrategy[Any] | None:
    if field_descriptor.type not in (FieldDescriptor.TYPE_MESSAGE, FieldDescriptor.TYPE_GROUP):
        return _scalar(field_descriptor)
    if depth >= MAX_DEPTH:
        return None
    message_type = _message_type(field_descriptor)
    if message_type.full_name == "google.protobuf.Duration" and field_descriptor.name in WAIT_DURATIONS:
        return st.builds(message_class(message_type), seconds=st.integers(0, 1), nanos=st.integers(0, 10**8))
    return st.deferred(lambda: messages(message_type, depth + 1))


def _is_map(field_descriptor: FieldDescriptor) -> bool:
    message_type = field_descriptor.message_type
    return message_type is not None and message_type.GetOptions().map_entry


def _field_strategy(field_descriptor: FieldDescriptor, depth: int) -> st.SearchStrategy[Any] | None:
    if _is_map(field_descriptor):
        entry = _message_type(field_descriptor)
        keys, values = _value(entry.fields_by_name["key"], depth), _value(entry.fields_by_name["value"], depth)
        if keys is None or values is None:
            return None
        return st.dictionaries(keys, values, max_size=3)
    single = _value(field_descriptor, depth)
    if single is None:
        return None
    if field_descriptor.is_repeated:
        return st.lists(single, max_size=3)
    return single


def _fill(message: Message, values: dict[str, Any]) -> Message:
    for name, value in values.items():
        field_descriptor = cast(FieldDescriptor, message.DESCRIPTOR.fields_by_name[name])
        target = getattr(message, name)
        if _is_map(field_descriptor):
            is_message = _message_type(field_descriptor).fields_by_name["value"].message_type is not None
            for key, item in value.items():
                if is_message:
                    target[key].CopyFrom(item)
                else:
                    target[key] = item
        elif field_descriptor.is_repeated:
            target.extend(value)
        elif field_descriptor.message_type is not None:
            target.CopyFrom(value)
        else:
            setattr(message, name, value)
    return message


def messages(descriptor: Descriptor, depth: int = 0) -> st.SearchStrategy[Message]:
    """Random messages of `descriptor`: any subset of its fields set to values of their types
    (ints anywhere in their range and at its edges, odd unicode, bytes, unknown enum numbers,
    nested messages up to `MAX_DEPTH`, at most 3 repeated items or map entries)."""
    optional = {}
    for field_descriptor in descriptor.fields:
        strategy = _field_strategy(field_descriptor, depth)
        if strategy is not None:
            optional[field_descriptor.name] = strategy
    cls = message_class(descriptor)
    return st.fixed_dictionaries({}, optional=optional).map(lambda values: _fill(cls(), values))


def bodies(descriptor: Descriptor) -> st.SearchStrategy[bytes]:
    """Random request bodies: any bytes, or a valid encoding of `descriptor` cut short or with
    junk appended (closer to what a decoder may half-accept)."""
    encoded = messages(descriptor).map(lambda message: message.SerializeToString())
    cut = st.tuples(encoded, st.integers(0, 64)).map(lambda pair: pair[0][: max(0, len(pair[0]) - 1 - pair[1])])
    junk = st.tuples(encoded, st.binary(min_size=1, max_size=16)).map(lambda pair: pair[0] + pair[1])
    return st.one_of(st.binary(max_size=256), cut, junk)


# -- raw calls -----------------------------------------------------------------------------------------

UNARY_TIMEOUT_S = 8.0  # a unary call (or a stream's first answer) must come within this
STREAM_WINDOW_S = 0.5  # a server stream still open after this, with no answer yet, is left open


@dataclass
class Outcome:
    """What one raw call ended with."""

    code: grpc.StatusCode
    details: str
    responses: list[bytes] = field(default_factory=list)
    trailing: tuple[tuple[str, str | bytes], ...] = ()
    left_open: bool = False  # a server stream we ended ourselves (DEADLINE_EXCEEDED or cancel)


def _of_error(error: grpc.aio.AioRpcError, responses: list[bytes], left_open: bool = False) -> Outcome:
    trailing = tuple(error.trailing_metadata() or ())
    return Outcome(error.code(), error.details() or "", responses, trailing, left_open)


async def _first_answer(call: Any, window_s: float, responses: list[bytes]) -> Outcome:
    """Read a streaming call's first response (then cancel it) or its end, within `window_s`."""
    try:
        first = await asyncio.wait_for(call.read(), window_s)
    except TimeoutError:
        call.cancel()
        return Outcome(grpc.StatusCode.DEADLINE_EXCEEDED, "left open by the test", responses, left_open=True)
    if first is grpc.aio.EOF:
        code = await call.code()
        return Outcome(code, await call.details() or "", responses, tuple(await call.trailing_metadata() or ()))
    responses.append(first)
    call.cancel()
    return Outcome(grpc.StatusCode.OK, "", responses, left_open=True)


async def invoke(channel: grpc.aio.Channel, endpoint: Endpoint, body: bytes) -> Outcome:
    """Call `endpoint` with `body` as the raw request (one item for a client stream; the request
    side is then closed). A unary answer must come within `UNARY_TIMEOUT_S`; a stream is read up
    to its first response or its end (a server-only stream waits `STREAM_WINDOW_S` for it, a
    bidirectional one, which answers each request, `UNARY_TIMEOUT_S`)."""
    method, path = endpoint.method, endpoint.path
    responses: list[bytes] = []
    try:
        if not method.server_streaming:
            if method.client_streaming:
                call: Any = channel.stream_unary(path)(iter([body]), timeout=UNARY_TIMEOUT_S)
            else:
                call = channel.unary_unary(path)(body, timeout=UNARY_TIMEOUT_S)
            response = await asyncio.wait_for(call, UNARY_TIMEOUT_S + 2)
            return Outcome(grpc.StatusCode.OK, "", [response], tuple(await call.trailing_metadata() or ()))
        if method.client_streaming:
            call = channel.stream_stream(path)(iter([body]), timeout=UNARY_TIMEOUT_S + 1)
            return await _first_answer(call, UNARY_TIMEOUT_S, responses)
        call = channel.unary_stream(path)(body, timeout=UNARY_TIMEOUT_S + 1)
        return await _first_answer(call, STREAM_WINDOW_S, responses)
    except grpc.aio.AioRpcError as error:
        return _of_error(error, responses)
    except TimeoutError:
        return Outcome(grpc.StatusCode.DEADLINE_EXCEEDED, "no answer: the client gave up", responses)


# -- the rules -----------------------------------------------------------------------------------------

CLEAR_CODES = frozenset(
    {
        grpc.StatusCode.OK,
        grpc.StatusCode.INVALID_ARGUMENT,
        grpc.StatusCode.NOT_FOUND,
        grpc.StatusCode.FAILED_PRECONDITION,
        grpc.StatusCode.ALREADY_EXISTS,
        grpc.StatusCode.OUT_OF_RANGE,
        grpc.StatusCode.PERMISSION_DENIED,
        grpc.StatusCode.UNAUTHENTICATED,
        grpc.StatusCode.RESOURCE_EXHAUSTED,
        grpc.StatusCode.ABORTED,
    }
)
# The gateway's protocols document UNAVAILABLE (retry: the cluster is away, a group's receive quota)
# as an answer of theirs.
GATEWAY_CODES = CLEAR_CODES | {grpc.StatusCode.UNAVAILABLE}
# Request bodies no protobuf message decodes from: field number 0, a truncated tag varint, a
# length-delimited field longer than the body.
UNDECODABLE_BODIES = (b"\x00", b"\xff", b"\x0a\x7fabc")
STATUS_DETAILS_KEY = "grpc-status-details-bin"
# google.rpc.Code numbers a RocketMQ answer's `common.status` must not carry for bad input.
RPC_UNKNOWN, RPC_INTERNAL = 2, 13


def weir_error_info(trailing: tuple[tuple[str, str | bytes], ...]) -> error_details_pb2.ErrorInfo | None:
    """The google.rpc.ErrorInfo a Weir service put in the status details, if any."""
    for key, value in trailing:
        if key != STATUS_DETAILS_KEY or not isinstance(value, bytes):
            continue
        for detail in status_pb2.Status.FromString(value).details:
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info):
                return info
    return None


def asks_to_wait(message: Message) -> bool:
    """Whether the request (at any depth) asks the server to wait: a nonzero long-poll or
    replication timeout, or a RocketMQ await_time."""
    for field_descriptor, value in message.ListFields():
        if field_descriptor.name in WAIT_FIELDS and value:
            return True
        if field_descriptor.name in WAIT_DURATIONS:
            return True
        if field_descriptor.message_type is not None and not _is_map(field_descriptor):
            items = value if field_descriptor.is_repeated else [value]
            if any(asks_to_wait(item) for item in items):
                return True
    return False


def decoded(cls: type[Message], body: bytes) -> Message | None:
    try:
        return cls.FromString(body)
    except (DecodeError, RuntimeError, ValueError):
        return None


def rocketmq_statuses(endpoint: Endpoint, outcome: Outcome) -> list[status_pb2.Status]:
    """The `common.status` of each RocketMQ answer (an empty status for one that does not decode)."""
    if "common" not in endpoint.method.output_type.fields_by_name:
        return []
    statuses = []
    for raw in outcome.responses:
        response = decoded(endpoint.response_class, raw)
        statuses.append(status_pb2.Status() if response is None else response.common.status)  # type: ignore[attr-defined]
    return statuses


def _rocketmq_status_problems(endpoint: Endpoint, outcome: Outcome) -> Iterator[str]:
    """A RocketMQ answer carries its outcome in `common.status` with gRPC OK: the same rules there."""
    for raw in outcome.responses:
        if decoded(endpoint.response_class, raw) is None:
            yield "the answer does not decode as its response message"
    for status in rocketmq_statuses(endpoint, outcome):
        if status.code in (RPC_UNKNOWN, RPC_INTERNAL):
            yield f"common.status code {status.code} ({status.message!r})"
        elif status.code and not status.message:
            yield f"common.status code {status.code} without a message"


def _seed_result_problems(endpoint: Endpoint, outcome: Outcome) -> Iterator[str]:
    """A waymaker.streams answer carries its outcome in `result_code` with gRPC OK: a failure there
    must name what was wrong, never "internal"."""
    for raw in outcome.responses:
        response = decoded(endpoint.response_class, raw)
        if response is None:
            yield "the answer does not decode as its response message"
        elif getattr(response, "result_code", "") == "internal":
            yield f"result_code internal ({getattr(response, 'message', '')!r})"
        elif getattr(response, "success", True) is False and not getattr(response, "message", ""):
            yield f"result_code {getattr(response, 'result_code', '')!r} without a message"


def problems(endpoint: Endpoint, body: bytes, outcome: Outcome) -> list[str]:
    """Everything wrong with `outcome` as the answer to `body` (empty: a clear answer)."""
    found: list[str] = []
    code = outcome.code
    if code == grpc.StatusCode.UNIMPLEMENTED and endpoint.method.containing_service.full_name in FOREIGN_SERVICES:
        pass
    elif code == grpc.StatusCode.DEADLINE_EXCEEDED:
        request = decoded(endpoint.request_class, body)
        if not outcome.left_open and not (request is not None and asks_to_wait(request)):
            found.append(f"no answer within {UNARY_TIMEOUT_S}s (hang)")
    elif endpoint.port in GATEWAY_PORTS:
        if code not in GATEWAY_CODES:
            found.append(f"status {code.name}")
    elif code == grpc.StatusCode.UNAVAILABLE:
        info = weir_error_info(outcome.trailing)
        if info is None or info.metadata.get("retryable") != "true":
            found.append(f"UNAVAILABLE not marked retryable (error info {info})")
    elif code not in CLEAR_CODES:
        found.append(f"status {code.name}")
    if code != grpc.StatusCode.OK and not outcome.details.strip():
        found.append(f"status {code.name} without a message")
    if endpoint.port == ROCKETMQ_PORT and code == grpc.StatusCode.OK:
        found.extend(_rocketmq_status_problems(endpoint, outcome))
    if endpoint.port == WAYMAKER_STREAMS_PORT and code == grpc.StatusCode.OK:
        found.extend(_seed_result_problems(endpoint, outcome))
    return found


def describe(endpoint: Endpoint, body: bytes, outcome: Outcome, found: list[str]) -> str:
    request = decoded(endpoint.request_class, body)
    shown = repr(body[:200]) if request is None else f"{body[:200]!r} = {type(request).__name__}({request})"
    return (
        f"{endpoint.id} ({endpoint.path}): {'; '.join(found)}\n"
        f"  status {outcome.code.name}: {outcome.details[:500]!r}\n  request {shown[:1500]}"
    )
