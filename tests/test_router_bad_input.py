"""Bad input to the routers (weir.v1.Router) and to clustered nodes, over real gRPC on the shared
local cluster (or an external one, WEIR_TEST_ROUTERS: see tests/conftest.py): every rejected request
gets the right status, the right typed error and a message naming what was wrong, and changes no
cluster metadata.

Each rejection is checked on the wire (the raw status code of the call, the ErrorInfo reason in
the status details) and as the typed error `WeirError.from_rpc_error` rebuilds (class, status code,
`retryable`, a fragment of the message). Most calls go to both routers: the controller handles
stream admin itself, the other router forwards it there, and both must answer alike.

"Unchanged" means an identical snapshot before and after: ListStreams, every node's own stream
list (its client port), and QueryRoute / GetStreamInfo / ListConsumers of an existing stream; for
consumer groups also a QueryAssignment of an existing member (same generation, members and
assignment).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, cast

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from weir.client import consumer_config, stream_config
from weir.cluster import WeirClient
from weir.errors import (
    AlreadyExistsError,
    InvalidArgumentError,
    InvalidConfigError,
    InvalidNameError,
    InvalidSubjectError,
    ManagedByRouterError,
    NoSuchConsumerError,
    NoSuchStreamError,
    NotEnoughNodesError,
    NotLeaderError,
    WeirError,
)
from weir.info import StreamConfig
from weir.v1 import router_pb2, router_pb2_grpc, streams_pb2, streams_pb2_grpc, types_pb2

from tests.conftest import ClusterAddresses

TIMEOUT_S = 10.0
INVALID = grpc.StatusCode.INVALID_ARGUMENT
NOT_FOUND = grpc.StatusCode.NOT_FOUND
PRECONDITION = grpc.StatusCode.FAILED_PRECONDITION
ALREADY = grpc.StatusCode.ALREADY_EXISTS
NAME_FRAGMENT = "is invalid: use 1..128 characters"
BAD_NAMES = {"space": "a b", "empty": "", "200_chars": "x" * 200, "dot": "a.b", "slash": "a/b"}


# -- helpers -----------------------------------------------------------------------------------------


@dataclass
class Routers:
    """A RouterStub per router of the shared cluster (cluster order) and which one is the controller."""

    stubs: list[Any]
    addresses: list[str]
    controller: int

    @property
    def follower(self) -> int:
        return 1 - self.controller

    def ordered(self) -> list[tuple[str, Any, str]]:
        """(role, stub, address): the controller first, then the router that forwards to it."""
        return [
            ("controller", self.stubs[self.controller], self.addresses[self.controller]),
            ("follower", self.stubs[self.follower], self.addresses[self.follower]),
        ]


def endpoints_of(address: str) -> router_pb2.Endpoints:
    host, _, port = address.rpartition(":")
    return router_pb2.Endpoints(scheme="ipv4", addresses=[router_pb2.Address(host=host, port=int(port))])


def error_reason(raw: Any) -> str | None:
    """The ErrorInfo reason (domain "weir") in the call's status details, None when there is none."""
    for key, value in raw.trailing_metadata() or ():
        if key != "grpc-status-details-bin":
            continue
        status = status_pb2.Status.FromString(value)
        for detail in status.details:
            info = error_details_pb2.ErrorInfo()
            if detail.Unpack(info) and info.domain == "weir":
                return str(info.reason)
    return None


async def expect_error(
    call: Awaitable[Any],
    code: grpc.StatusCode,
    error_class: type[WeirError],
    fragment: str,
    *,
    retryable: bool = False,
) -> WeirError:
    """Await a raw gRPC call that must fail; check wire status, ErrorInfo, typed error and message."""
    with pytest.raises(grpc.aio.AioRpcError) as caught:
        await call
    raw = caught.value
    assert raw.code() == code, f"{raw.code()}: {raw.details()}"
    assert error_reason(raw) == error_class.result_code.value, raw.trailing_metadata()
    error = WeirError.from_rpc_error(raw)
    assert type(error) is error_class, repr(error)
    assert error.status_code == code
    assert error.retryable is retryable
    assert fragment in error.message, error.message
    assert raw.details() == error.message
    return error


@dataclass(frozen=True)
class Snapshot:
    """What clients can observe of the cluster metadata around one existing stream."""

    names: tuple[str, ...]
    node_streams: tuple[tuple[str, ...], ...]
    route: router_pb2.QueryRouteResponse
    info: streams_pb2.GetStreamInfoResponse
    consumers: tuple[str, ...]


async def snapshot(routers: Routers, nodes: list[Any], stream: str) -> Snapshot:
    stub = routers.stubs[0]
    listing = await stub.ListStreams(streams_pb2.ListStreamsRequest(), timeout=TIMEOUT_S)
    node_streams = []
    for node_stub in nodes:
        answer = await node_stub.ListStreams(streams_pb2.ListStreamsRequest(), timeout=TIMEOUT_S)
        node_streams.append(tuple(sorted(answer.names)))
    route = await stub.QueryRoute(
        router_pb2.QueryRouteRequest(stream=stream, endpoints=endpoints_of(routers.addresses[0])), timeout=TIMEOUT_S
    )
    info = await stub.GetStreamInfo(streams_pb2.GetStreamInfoRequest(name=stream), timeout=TIMEOUT_S)
    consumers = await stub.ListConsumers(streams_pb2.ListConsumersRequest(stream=stream), timeout=TIMEOUT_S)
    return Snapshot(
        names=tuple(sorted(listing.names)),
        node_streams=tuple(node_streams),
        route=route,
        info=info,
        consumers=tuple(sorted(consumer.config.name for consumer in consumers.consumers)),
    )


async def assert_nowhere(routers: Routers, nodes: list[Any], name: str) -> None:
    """No router lists `name` and no node hosts it."""
    for stub in routers.stubs:
        listing = await stub.ListStreams(streams_pb2.ListStreamsRequest(), timeout=TIMEOUT_S)
        assert name not in listing.names
    for node_stub in nodes:
        answer = await node_stub.ListStreams(streams_pb2.ListStreamsRequest(), timeout=TIMEOUT_S)
        assert name not in answer.names


# -- fixtures ----------------------------------------------------------------------------------------


@pytest.fixture
async def routers(cluster_addresses: ClusterAddresses) -> AsyncIterator[Routers]:
    """Stubs of both routers, once a controller holds the lease and all three nodes are alive."""
    cluster = cluster_addresses
    channels = [grpc.aio.insecure_channel(router.address) for router in cluster.routers]
    try:
        stubs = [router_pb2_grpc.RouterStub(channel) for channel in channels]
        deadline = time.monotonic() + 20
        while True:
            info = await stubs[0].GetClusterInfo(router_pb2.GetClusterInfoRequest(), timeout=TIMEOUT_S)
            alive = [node for node in info.nodes if node.alive]
            if info.controller_id and len(alive) == len(cluster.nodes):
                break
            assert time.monotonic() < deadline, f"cluster not settled: {info}"
            await asyncio.sleep(0.1)
        ids = [router.router_id for router in cluster.routers]
        assert len(ids) == 2
        yield Routers(stubs, cluster.router_addresses, ids.index(info.controller_id))
    finally:
        for channel in channels:
            await channel.close()


@pytest.fixture
async def node_stubs(cluster_addresses: ClusterAddresses) -> AsyncIterator[list[Any]]:
    """A Streams stub on each node's client port (cluster order)."""
    channels = [grpc.aio.insecure_channel(node.client_address) for node in cluster_addresses.nodes]
    try:
        yield [streams_pb2_grpc.StreamsStub(channel) for channel in channels]
    finally:
        for channel in channels:
            await channel.close()


@dataclass
class Ctx:
    """Everything a test here talks to: both routers, each node's client port, the SDK client."""

    routers: Routers
    nodes: list[Any]
    client: WeirClient
    cluster: ClusterAddresses

    def router(self, role: str) -> Any:
        return self.routers.stubs[self.routers.controller if role == "controller" else self.routers.follower]

    async def snapshot(self, stream: str) -> Snapshot:
        return await snapshot(self.routers, self.nodes, stream)

    async def assert_nowhere(self, name: str) -> None:
        await assert_nowhere(self.routers, self.nodes, name)

    def node_stub(self, node_id: str) -> Any:
        return self.nodes[[node.node_id for node in self.cluster.nodes].index(node_id)]


@pytest.fixture
def ctx(routers: Routers, node_stubs: list[Any], weir_client: WeirClient, cluster_addresses: ClusterAddresses) -> Ctx:
    return Ctx(routers, node_stubs, weir_client, cluster_addresses)


# -- QueryRoute --------------------------------------------------------------------------------------


RouteCase = Callable[[str, str], router_pb2.QueryRouteRequest]


def _route(stream: str, endpoints: router_pb2.Endpoints | None) -> router_pb2.QueryRouteRequest:
    request = router_pb2.QueryRouteRequest(stream=stream)
    if endpoints is not None:
        request.endpoints.CopyFrom(endpoints)
    return request


def _addresses(*pairs: tuple[str, int]) -> router_pb2.Endpoints:
    return router_pb2.Endpoints(
        scheme="ipv4", addresses=[router_pb2.Address(host=host, port=port) for host, port in pairs]
    )


def _route_named(name: str) -> RouteCase:
    return lambda stream, address: _route(name, endpoints_of(address))


ROUTE_CASES: dict[str, tuple[RouteCase, grpc.StatusCode, type[WeirError], str]] = {
    "unknown_stream": (
        lambda stream, address: _route(f"{stream}-nope", endpoints_of(address)),
        NOT_FOUND,
        NoSuchStreamError,
        "does not exist",
    ),
    "endpoints_unset": (lambda stream, address: _route(stream, None), INVALID, InvalidArgumentError, "endpoints"),
    "endpoints_without_addresses": (
        lambda stream, address: _route(stream, router_pb2.Endpoints(scheme="ipv4")),
        INVALID,
        InvalidArgumentError,
        "endpoints",
    ),
    "port_0": (
        lambda stream, address: _route(stream, _addresses(("127.0.0.1", 0))),
        INVALID,
        InvalidArgumentError,
        "port > 0",
    ),
    "negative_port": (
        lambda stream, address: _route(stream, _addresses(("127.0.0.1", -1))),
        INVALID,
        InvalidArgumentError,
        "port > 0",
    ),
    "empty_host": (
        lambda stream, address: _route(stream, _addresses(("", int(address.rpartition(":")[2])))),
        INVALID,
        InvalidArgumentError,
        "host",
    ),
    "one_good_one_bad_address": (
        lambda stream, address: _route(
            stream, _addresses((address.rpartition(":")[0], int(address.rpartition(":")[2])), ("", 0))
        ),
        INVALID,
        InvalidArgumentError,
        "endpoints",
    ),
    **{
        f"name_{label}": (
            _route_named(bad),
            INVALID,
            InvalidNameError,
            NAME_FRAGMENT,
        )
        for label, bad in BAD_NAMES.items()
    },
}


@pytest.mark.parametrize("case", sorted(ROUTE_CASES))
async def test_query_route_rejects_bad_input(case: str, ctx: Ctx, stream_name: str) -> None:
    build, code, error_class, fragment = ROUTE_CASES[case]
    await ctx.client.create_stream(stream_config(stream_name, partitions=3))
    before = await ctx.snapshot(stream_name)

    for role, stub, address in ctx.routers.ordered():
        request = build(stream_name, address)
        error = await expect_error(stub.QueryRoute(request, timeout=TIMEOUT_S), code, error_class, fragment)
        if error_class is NoSuchStreamError:
            assert error.metadata["stream"] == request.stream, role
            assert request.stream in error.message

    assert await ctx.snapshot(stream_name) == before


async def test_query_route_of_an_existing_stream_is_answered_by_both_routers(ctx: Ctx, stream_name: str) -> None:
    """The positive control for the cases above: a well-formed request is answered alike by both."""
    await ctx.client.create_stream(stream_config(stream_name, partitions=3))
    answers = [
        await stub.QueryRoute(_route(stream_name, endpoints_of(address)), timeout=TIMEOUT_S)
        for _, stub, address in ctx.routers.ordered()
    ]
    assert answers[0] == answers[1]
    assert [entry.partition for entry in answers[0].partitions] == [0, 1, 2]
    assert all(entry.permission == router_pb2.PERMISSION_READ_WRITE for entry in answers[0].partitions)


# -- QueryAssignment / LeaveGroup ----------------------------------------------------------------------


def _assignment(
    stream: str,
    address: str,
    *,
    group: str = "g1",
    client_id: str = "m2",
    owned: tuple[int, ...] = (),
    endpoints: router_pb2.Endpoints | None = None,
    consumer: types_pb2.ConsumerConfig | None = None,
) -> router_pb2.QueryAssignmentRequest:
    return router_pb2.QueryAssignmentRequest(
        stream=stream,
        group=group,
        client_id=client_id,
        endpoints=endpoints if endpoints is not None else endpoints_of(address),
        owned_partitions=owned,
        consumer=consumer,
    )


AssignmentCase = Callable[[str, str], router_pb2.QueryAssignmentRequest]
# The stream has 4 partitions; group "g1" has one member, "m1". Cases that could create a group (a new
# group name with otherwise valid fields) use "g-new", which must not appear as a consumer afterwards.
ASSIGNMENT_CASES: dict[str, tuple[AssignmentCase, grpc.StatusCode, type[WeirError], str]] = {
    "unknown_stream": (
        lambda stream, address: _assignment(f"{stream}-nope", address),
        NOT_FOUND,
        NoSuchStreamError,
        "does not exist",
    ),
    "invalid_stream_name": (
        lambda stream, address: _assignment("a b", address),
        INVALID,
        InvalidNameError,
        NAME_FRAGMENT,
    ),
    "endpoints_without_addresses": (
        lambda stream, address: _assignment(stream, address, group="g-new", endpoints=router_pb2.Endpoints()),
        INVALID,
        InvalidArgumentError,
        "endpoints",
    ),
    "endpoints_port_0": (
        lambda stream, address: _assignment(stream, address, group="g-new", endpoints=_addresses(("127.0.0.1", 0))),
        INVALID,
        InvalidArgumentError,
        "endpoints",
    ),
    "empty_group": (
        lambda stream, address: _assignment(stream, address, group=""),
        INVALID,
        InvalidArgumentError,
        "group",
    ),
    "group_with_space": (
        lambda stream, address: _assignment(stream, address, group="a b"),
        INVALID,
        InvalidNameError,
        "group 'a b' is invalid",
    ),
    "group_200_chars": (
        lambda stream, address: _assignment(stream, address, group="g" * 200),
        INVALID,
        InvalidNameError,
        "group",
    ),
    "empty_client_id": (
        lambda stream, address: _assignment(stream, address, group="g-new", client_id=""),
        INVALID,
        InvalidArgumentError,
        "client_id",
    ),
    "client_id_257_chars": (
        lambda stream, address: _assignment(stream, address, group="g-new", client_id="c" * 257),
        INVALID,
        InvalidArgumentError,
        "client_id: at most 256",
    ),
    "owned_partition_equal_to_count": (
        lambda stream, address: _assignment(stream, address, owned=(4,)),
        INVALID,
        InvalidArgumentError,
        "owned_partitions: [4] out of range",
    ),
    "owned_partitions_mixed": (
        lambda stream, address: _assignment(stream, address, owned=(0, 99)),
        INVALID,
        InvalidArgumentError,
        "owned_partitions: [99] out of range",
    ),
    "owned_partition_out_of_range_new_group": (
        lambda stream, address: _assignment(stream, address, group="g-new", owned=(7,)),
        INVALID,
        InvalidArgumentError,
        "owned_partitions",
    ),
    # A new group's durable consumer is created from `consumer`: a bad config fails the call and
    # neither the consumer nor the group membership is created.
    "new_group_bad_consumer_filter": (
        lambda stream, address: _assignment(
            stream, address, group="g-new", consumer=types_pb2.ConsumerConfig(filter_subject="a..b")
        ),
        INVALID,
        InvalidSubjectError,
        "'a..b' has an empty token",
    ),
    "new_group_bad_deliver_policy": (
        lambda stream, address: _assignment(
            stream,
            address,
            group="g-new",
            consumer=types_pb2.ConsumerConfig(deliver_policy=cast("types_pb2.DeliverPolicy", 99)),
        ),
        INVALID,
        InvalidConfigError,
        "deliver_policy: unknown value 99",
    ),
}


@pytest.mark.parametrize("case", sorted(ASSIGNMENT_CASES))
async def test_query_assignment_rejects_bad_input(case: str, ctx: Ctx, stream_name: str) -> None:
    build, code, error_class, fragment = ASSIGNMENT_CASES[case]
    await ctx.client.create_stream(stream_config(stream_name, partitions=4))
    address = ctx.routers.addresses[0]
    joined = await ctx.routers.stubs[0].QueryAssignment(
        _assignment(stream_name, address, client_id="m1"), timeout=TIMEOUT_S
    )
    assert list(joined.members) == ["m1"]
    owned = tuple(assignment.route.partition for assignment in joined.assignments)
    assert owned == (0, 1, 2, 3)
    before = await ctx.snapshot(stream_name)
    assert before.consumers == ("g1",)

    for _, stub, router_address in ctx.routers.ordered():
        await expect_error(
            stub.QueryAssignment(build(stream_name, router_address), timeout=TIMEOUT_S), code, error_class, fragment
        )

    assert await ctx.snapshot(stream_name) == before
    again = await ctx.routers.stubs[1].QueryAssignment(
        _assignment(stream_name, ctx.routers.addresses[1], client_id="m1", owned=owned), timeout=TIMEOUT_S
    )
    assert again.generation == joined.generation
    assert list(again.members) == ["m1"]
    assert list(again.assignments) == list(joined.assignments)
    assert list(again.awaiting_partitions) == []


LEAVE_CASES: dict[str, tuple[Callable[[str], router_pb2.LeaveGroupRequest], grpc.StatusCode, type[WeirError], str]] = {
    "unknown_stream": (
        lambda stream: router_pb2.LeaveGroupRequest(stream=f"{stream}-nope", group="g1", client_id="m1"),
        NOT_FOUND,
        NoSuchStreamError,
        "does not exist",
    ),
    "empty_group": (
        lambda stream: router_pb2.LeaveGroupRequest(stream=stream, group="", client_id="m1"),
        INVALID,
        InvalidArgumentError,
        "group: a consumer group name is required",
    ),
    "group_with_a_space": (
        lambda stream: router_pb2.LeaveGroupRequest(stream=stream, group="g 1", client_id="m1"),
        INVALID,
        InvalidNameError,
        NAME_FRAGMENT,
    ),
    "group_of_200_chars": (
        lambda stream: router_pb2.LeaveGroupRequest(stream=stream, group="g" * 200, client_id="m1"),
        INVALID,
        InvalidNameError,
        NAME_FRAGMENT,
    ),
    "empty_client_id": (
        lambda stream: router_pb2.LeaveGroupRequest(stream=stream, group="g1", client_id=""),
        INVALID,
        InvalidArgumentError,
        "client_id: required",
    ),
    "client_id_of_10k_chars": (
        lambda stream: router_pb2.LeaveGroupRequest(stream=stream, group="g1", client_id="m" * 10_000),
        INVALID,
        InvalidArgumentError,
        "client_id: at most 256 characters, got 10000",
    ),
    "invalid_stream_name": (
        lambda stream: router_pb2.LeaveGroupRequest(stream=f"{stream} x", group="g1", client_id="m1"),
        INVALID,
        InvalidNameError,
        NAME_FRAGMENT,
    ),
}


@pytest.mark.parametrize("case", sorted(LEAVE_CASES))
async def test_leave_group_rejects_bad_input(case: str, ctx: Ctx, stream_name: str) -> None:
    build, code, error_class, fragment = LEAVE_CASES[case]
    await ctx.client.create_stream(stream_config(stream_name, partitions=2))
    joined = await ctx.routers.stubs[0].QueryAssignment(
        _assignment(stream_name, ctx.routers.addresses[0], client_id="m1"), timeout=TIMEOUT_S
    )
    before = await ctx.snapshot(stream_name)

    for _, stub, _address in ctx.routers.ordered():
        await expect_error(stub.LeaveGroup(build(stream_name), timeout=TIMEOUT_S), code, error_class, fragment)

    assert await ctx.snapshot(stream_name) == before
    owned = [assignment.route.partition for assignment in joined.assignments]
    again = await ctx.routers.stubs[0].QueryAssignment(
        _assignment(stream_name, ctx.routers.addresses[0], client_id="m1", owned=tuple(owned)), timeout=TIMEOUT_S
    )
    assert (again.generation, list(again.members)) == (joined.generation, ["m1"])


# -- CreateStream ------------------------------------------------------------------------------------


def _config(name: str, **changes: Any) -> types_pb2.StreamConfig:
    config = stream_config(name, partitions=2).to_proto()
    for field, value in changes.items():
        if field == "subjects":
            config.subjects[:] = value
        else:
            setattr(config, field, value)
    return config


CREATE_CASES: dict[str, tuple[dict[str, Any], grpc.StatusCode, type[WeirError], str]] = {
    "partitions_2000": ({"partitions": 2000}, INVALID, InvalidConfigError, "partitions: at most 1024, got 2000"),
    # Issue 22: the controller placed 4 billion partitions before any node validated (23 GiB, OOM).
    "partitions_max_uint32": (
        {"partitions": 4294967295},
        INVALID,
        InvalidConfigError,
        "partitions: at most 1024, got 4294967295",
    ),
    "duplicate_window_beyond_a_day": (
        {"duplicate_window_ms": 86_400_001},
        INVALID,
        InvalidConfigError,
        "duplicate_window_ms: at most 86400000",
    ),
    "subject_pattern_empty_token": ({"subjects": ["a..b"]}, INVALID, InvalidSubjectError, "'a..b' has an empty token"),
    "subject_pattern_inner_gt": ({"subjects": ["a.>.b"]}, INVALID, InvalidSubjectError, "'>' must be the last"),
    "retention_99": ({"retention": 99}, INVALID, InvalidConfigError, "retention: unknown policy 99"),
    "storage_99": ({"storage": 99}, INVALID, InvalidConfigError, "storage: unknown kind 99"),
    "max_msg_bytes_10": ({"max_msg_bytes": 10}, INVALID, InvalidConfigError, "max_msg_bytes"),
    "replicas_4_of_3_nodes": (
        {"replicas": 4},
        PRECONDITION,
        NotEnoughNodesError,
        "replicas: 4 requested, but only 3 partition node(s) are alive",
    ),
    "replicas_4_and_bad_config": (  # the config is checked before placement looks at the nodes
        {"replicas": 4, "partitions": 2000},
        INVALID,
        InvalidConfigError,
        "partitions: at most 1024, got 2000",
    ),
}


@pytest.mark.parametrize("role", ["controller", "follower"])
@pytest.mark.parametrize("case", sorted(CREATE_CASES))
async def test_create_stream_rejects_bad_config_and_creates_nothing(
    case: str, role: str, ctx: Ctx, stream_name: str
) -> None:
    changes, code, error_class, fragment = CREATE_CASES[case]
    reference = f"{stream_name}-ref"
    await ctx.client.create_stream(stream_config(reference, partitions=3))
    before = await ctx.snapshot(reference)
    stub = ctx.router(role)
    request = streams_pb2.CreateStreamRequest(config=_config(stream_name, **changes))

    error = await expect_error(stub.CreateStream(request, timeout=TIMEOUT_S), code, error_class, fragment)
    if error_class is NotEnoughNodesError:
        assert error.metadata["alive_nodes"] == "3"

    await ctx.assert_nowhere(stream_name)
    assert await ctx.snapshot(reference) == before


@pytest.mark.parametrize("role", ["controller", "follower"])
@pytest.mark.parametrize("label", sorted(BAD_NAMES))
async def test_create_stream_with_an_invalid_name_is_rejected(
    label: str, role: str, ctx: Ctx, stream_name: str
) -> None:
    await ctx.client.create_stream(stream_config(stream_name, partitions=2))
    before = await ctx.snapshot(stream_name)
    stub = ctx.router(role)
    bad = BAD_NAMES[label]

    request = streams_pb2.CreateStreamRequest(config=stream_config(bad, partitions=2).to_proto())
    await expect_error(stub.CreateStream(request, timeout=TIMEOUT_S), INVALID, InvalidNameError, NAME_FRAGMENT)

    await ctx.assert_nowhere(bad)
    assert await ctx.snapshot(stream_name) == before


@pytest.mark.parametrize("role", ["controller", "follower"])
async def test_create_stream_with_a_placement_is_rejected(role: str, ctx: Ctx, stream_name: str) -> None:
    reference = f"{stream_name}-ref"
    await ctx.client.create_stream(stream_config(reference, partitions=2))
    before = await ctx.snapshot(reference)
    stub = ctx.router(role)
    node_id = ctx.cluster.nodes[0].node_id
    placement = types_pb2.StreamPlacement()
    placement.partitions.add(
        partition=0, primary_node_id=node_id, leader_epoch=1, in_sync_node_ids=[node_id], secondary_node_ids=[]
    )
    request = streams_pb2.CreateStreamRequest(
        config=stream_config(stream_name, partitions=1).to_proto(), placement=placement
    )

    await expect_error(stub.CreateStream(request, timeout=TIMEOUT_S), INVALID, InvalidArgumentError, "placement")
    # An empty placement message is still "set" (has presence) and equally refused.
    request.placement.Clear()
    request.placement.SetInParent()
    await expect_error(stub.CreateStream(request, timeout=TIMEOUT_S), INVALID, InvalidArgumentError, "placement")

    await ctx.assert_nowhere(stream_name)
    assert await ctx.snapshot(reference) == before


def existing_config(name: str) -> StreamConfig:
    return stream_config(name, subjects=["orders.>"], partitions=3, max_msgs=1000)


# Regression: another partition/replica count was once checked against the old placement (invalid_config).


def _set(field: str, value: Any) -> Callable[[types_pb2.StreamConfig], None]:
    return lambda config: setattr(config, field, value)


def _set_subjects(config: types_pb2.StreamConfig) -> None:
    config.subjects[:] = ["other.>"]


def _set_max_msgs(config: types_pb2.StreamConfig) -> None:
    config.limits.max_msgs = 5


ALREADY_CASES: dict[str, Callable[[types_pb2.StreamConfig], None]] = {
    "other_partitions": _set("partitions", 4),
    "other_replicas": _set("replicas", 2),
    "other_subjects": _set_subjects,
    "other_max_msg_bytes": _set("max_msg_bytes", 4096),
    "other_max_msgs": _set_max_msgs,
    "other_storage": _set("storage", types_pb2.STORAGE_KIND_MEMORY),
}


@pytest.mark.parametrize(
    "case",
    [case for case in sorted(ALREADY_CASES)],
)
async def test_create_stream_with_another_config_already_exists(case: str, ctx: Ctx, stream_name: str) -> None:
    config = existing_config(stream_name)
    await ctx.client.create_stream(config)
    before = await ctx.snapshot(stream_name)
    changed = types_pb2.StreamConfig()
    changed.CopyFrom(config.to_proto())
    ALREADY_CASES[case](changed)

    for role, stub, _ in ctx.routers.ordered():
        error = await expect_error(
            stub.CreateStream(streams_pb2.CreateStreamRequest(config=changed), timeout=TIMEOUT_S),
            ALREADY,
            AlreadyExistsError,
            "already exists with a different config",
        )
        assert stream_name in error.message, role

    assert await ctx.snapshot(stream_name) == before


async def test_create_stream_again_with_the_same_config_is_idempotent(ctx: Ctx, stream_name: str) -> None:
    config = existing_config(stream_name)
    created = await ctx.client.create_stream(config)
    before = await ctx.snapshot(stream_name)
    assert StreamConfig.from_proto(before.info.config) == created

    for role, stub, _ in ctx.routers.ordered():  # the follower forwards to the controller
        for _ in range(2):
            again = await stub.CreateStream(
                streams_pb2.CreateStreamRequest(config=config.to_proto()), timeout=TIMEOUT_S
            )
            assert StreamConfig.from_proto(again.config) == created, role
            assert again.created_at_ms == before.info.created_at_ms, role

    assert await ctx.snapshot(stream_name) == before


# -- UpdateStream / CreateConsumer with bad config -----------------------------------------------------


UPDATE_CASES: dict[str, tuple[Callable[[str], streams_pb2.UpdateStreamRequest], type[WeirError], str]] = {
    "max_msg_bytes_10": (
        lambda s: streams_pb2.UpdateStreamRequest(name=s, max_msg_bytes=10),
        InvalidConfigError,
        "max_msg_bytes",
    ),
    "max_age_over_100_years": (
        lambda s: streams_pb2.UpdateStreamRequest(name=s, max_age_ms=101 * 366 * 24 * 3600 * 1000),
        InvalidConfigError,
        "max_age_ms",
    ),
    "max_msgs_over_maximum": (
        lambda s: streams_pb2.UpdateStreamRequest(name=s, max_msgs=1 << 63),
        InvalidConfigError,
        "max_msgs",
    ),
    "invalid_name": (
        lambda s: streams_pb2.UpdateStreamRequest(name="a b", max_msgs=5),
        InvalidNameError,
        NAME_FRAGMENT,
    ),
}


@pytest.mark.parametrize("case", sorted(UPDATE_CASES))
async def test_update_stream_rejects_bad_config_and_changes_nothing(case: str, ctx: Ctx, stream_name: str) -> None:
    build, error_class, fragment = UPDATE_CASES[case]
    await ctx.client.create_stream(stream_config(stream_name, partitions=3, max_msgs=1000))
    before = await ctx.snapshot(stream_name)

    for _, stub, _ in ctx.routers.ordered():
        await expect_error(stub.UpdateStream(build(stream_name), timeout=TIMEOUT_S), INVALID, error_class, fragment)

    assert await ctx.snapshot(stream_name) == before


CONSUMER_CASES: dict[str, tuple[types_pb2.ConsumerConfig, type[WeirError], str]] = {
    "name_with_space": (types_pb2.ConsumerConfig(name="a b"), InvalidNameError, "consumer name 'a b' is invalid"),
    "empty_name": (types_pb2.ConsumerConfig(name=""), InvalidNameError, "consumer name '' is invalid"),
    "filter_empty_token": (
        types_pb2.ConsumerConfig(name="c2", filter_subject="a..b"),
        InvalidSubjectError,
        "'a..b' has an empty token",
    ),
    "filter_outside_stream_subjects": (
        types_pb2.ConsumerConfig(name="c2", filter_subject="other.>"),
        InvalidConfigError,
        "matches none of stream",
    ),
    "deliver_policy_99": (
        types_pb2.ConsumerConfig(name="c2", deliver_policy=cast("types_pb2.DeliverPolicy", 99)),
        InvalidConfigError,
        "deliver_policy: unknown value 99",
    ),
    "start_seq_without_policy": (
        types_pb2.ConsumerConfig(name="c2", start_seq=5),
        InvalidConfigError,
        "start_seq: only valid",
    ),
}


@pytest.mark.parametrize("case", sorted(CONSUMER_CASES))
async def test_create_consumer_rejects_bad_config_and_creates_nothing(case: str, ctx: Ctx, stream_name: str) -> None:
    config, error_class, fragment = CONSUMER_CASES[case]
    await ctx.client.create_stream(stream_config(stream_name, subjects=["orders.>"], partitions=3))
    await ctx.client.create_consumer(stream_name, consumer_config("c1"))
    before = await ctx.snapshot(stream_name)
    hosted_before = await consumers_on_nodes(ctx, stream_name)

    for _, stub, _ in ctx.routers.ordered():
        request = streams_pb2.CreateConsumerRequest(stream=stream_name, config=config)
        await expect_error(stub.CreateConsumer(request, timeout=TIMEOUT_S), INVALID, error_class, fragment)

    assert await ctx.snapshot(stream_name) == before
    assert await consumers_on_nodes(ctx, stream_name) == hosted_before
    assert set(hosted_before.values()) == {("c1",)}


async def consumers_on_nodes(ctx: Ctx, stream: str) -> dict[str, tuple[str, ...]]:
    """node id -> consumer names it keeps for `stream` (nodes hosting no partition of it are left out)."""
    found: dict[str, tuple[str, ...]] = {}
    for node, stub in zip(ctx.cluster.nodes, ctx.nodes, strict=True):
        try:
            answer = await stub.ListConsumers(streams_pb2.ListConsumersRequest(stream=stream), timeout=TIMEOUT_S)
        except grpc.aio.AioRpcError as raw:
            assert isinstance(WeirError.from_rpc_error(raw), NotLeaderError | NoSuchStreamError), raw
            continue
        found[node.node_id] = tuple(sorted(info.config.name for info in answer.consumers))
    assert found, "no node hosts the stream"
    return found


# -- unknown streams and consumers ---------------------------------------------------------------------


UNKNOWN_CASES: dict[str, tuple[str, Callable[[str], Any], type[WeirError]]] = {
    "delete_stream": ("DeleteStream", lambda s: streams_pb2.DeleteStreamRequest(name=f"{s}-nope"), NoSuchStreamError),
    "stream_info": ("GetStreamInfo", lambda s: streams_pb2.GetStreamInfoRequest(name=f"{s}-nope"), NoSuchStreamError),
    "update_stream": (
        "UpdateStream",
        lambda s: streams_pb2.UpdateStreamRequest(name=f"{s}-nope"),
        NoSuchStreamError,
    ),
    "list_consumers": (
        "ListConsumers",
        lambda s: streams_pb2.ListConsumersRequest(stream=f"{s}-nope"),
        NoSuchStreamError,
    ),
    "create_consumer_unknown_stream": (
        "CreateConsumer",
        lambda s: streams_pb2.CreateConsumerRequest(stream=f"{s}-nope", config=consumer_config("c9").to_proto()),
        NoSuchStreamError,
    ),
    "consumer_info_unknown_stream": (
        "GetConsumerInfo",
        lambda s: streams_pb2.GetConsumerInfoRequest(stream=f"{s}-nope", consumer="c1"),
        NoSuchStreamError,
    ),
    "consumer_info_unknown_consumer": (
        "GetConsumerInfo",
        lambda s: streams_pb2.GetConsumerInfoRequest(stream=s, consumer="c-nope"),
        NoSuchConsumerError,
    ),
    "delete_consumer_unknown_stream": (
        "DeleteConsumer",
        lambda s: streams_pb2.DeleteConsumerRequest(stream=f"{s}-nope", consumer="c1"),
        NoSuchStreamError,
    ),
    "delete_consumer_unknown_consumer": (
        "DeleteConsumer",
        lambda s: streams_pb2.DeleteConsumerRequest(stream=s, consumer="c-nope"),
        NoSuchConsumerError,
    ),
}


@pytest.mark.parametrize("case", sorted(UNKNOWN_CASES))
async def test_unknown_stream_or_consumer_is_not_found(case: str, ctx: Ctx, stream_name: str) -> None:
    method, build, error_class = UNKNOWN_CASES[case]
    await ctx.client.create_stream(stream_config(stream_name, partitions=3))
    await ctx.client.create_consumer(stream_name, consumer_config("c1"))
    before = await ctx.snapshot(stream_name)
    assert before.consumers == ("c1",)

    for _, stub, _ in ctx.routers.ordered():
        request = build(stream_name)
        missing = "c-nope" if error_class is NoSuchConsumerError else f"{stream_name}-nope"
        await expect_error(getattr(stub, method)(request, timeout=TIMEOUT_S), NOT_FOUND, error_class, missing)

    assert await ctx.snapshot(stream_name) == before


# -- clustered nodes' client ports -------------------------------------------------------------------


ADMIN_CASES: dict[str, tuple[str, Callable[[str, str], Any]]] = {
    "create_stream": (
        "CreateStream",
        lambda existing, new: streams_pb2.CreateStreamRequest(config=stream_config(new, partitions=1).to_proto()),
    ),
    "create_existing_stream": (
        "CreateStream",
        lambda existing, new: streams_pb2.CreateStreamRequest(config=stream_config(existing, partitions=3).to_proto()),
    ),
    "delete_stream": ("DeleteStream", lambda existing, new: streams_pb2.DeleteStreamRequest(name=existing)),
    "update_stream": ("UpdateStream", lambda existing, new: streams_pb2.UpdateStreamRequest(name=existing, max_msgs=1)),
    "create_consumer": (
        "CreateConsumer",
        lambda existing, new: streams_pb2.CreateConsumerRequest(
            stream=existing, config=consumer_config("c2").to_proto()
        ),
    ),
    "delete_consumer": (
        "DeleteConsumer",
        lambda existing, new: streams_pb2.DeleteConsumerRequest(stream=existing, consumer="c1"),
    ),
}


@pytest.mark.parametrize("case", sorted(ADMIN_CASES))
async def test_clustered_node_client_port_refuses_admin(case: str, ctx: Ctx, stream_name: str) -> None:
    method, build = ADMIN_CASES[case]
    existing = f"{stream_name}-ref"
    await ctx.client.create_stream(stream_config(existing, partitions=3))
    await ctx.client.create_consumer(existing, consumer_config("c1"))
    before = await ctx.snapshot(existing)

    for node, stub in zip(ctx.cluster.nodes, ctx.nodes, strict=True):
        error = await expect_error(
            getattr(stub, method)(build(existing, stream_name), timeout=TIMEOUT_S),
            PRECONDITION,
            ManagedByRouterError,
            "manage streams and consumers through a router",
        )
        assert error.result_code.value == "managed_by_router"
        assert node.node_id in error.message and method in error.message

    await ctx.assert_nowhere(stream_name)
    assert await ctx.snapshot(existing) == before


# -- redirects from nodes that do not lead a partition -----------------------------------------------


async def _route_of(routers: Routers, stream: str) -> router_pb2.QueryRouteResponse:
    route: router_pb2.QueryRouteResponse = await routers.stubs[0].QueryRoute(
        _route(stream, endpoints_of(routers.addresses[0])), timeout=TIMEOUT_S
    )
    return route


def _check_redirect(error: WeirError, entry: router_pb2.PartitionRoute, stream: str) -> None:
    assert isinstance(error, NotLeaderError)
    assert error.refresh_routing is True
    assert error.metadata["leader_node_id"] == entry.primary.node_id
    assert error.metadata["leader_address"] == entry.primary.address
    assert error.metadata["leader_epoch"] == str(entry.leader_epoch)
    assert error.metadata["partition"] == str(entry.partition)
    assert error.metadata["stream"] == stream


@pytest.mark.parametrize("partitions", [1, 4], ids=["hosted_nowhere_else", "hosted_but_not_led"])
async def test_publish_to_a_node_that_does_not_lead_the_partition_redirects(
    partitions: int, ctx: Ctx, stream_name: str
) -> None:
    """partitions=1: two nodes host no partition of the stream at all; partitions=4 over 3 nodes:
    every node leads some partition, so the others are refused by a node that hosts the stream."""
    await ctx.client.create_stream(stream_config(stream_name, partitions=partitions))
    route = await _route_of(ctx.routers, stream_name)
    addresses = {node.node_id: node.client_address for node in ctx.cluster.nodes}
    before = await ctx.snapshot(stream_name)

    refused = 0
    for entry in route.partitions:
        assert entry.primary.address == addresses[entry.primary.node_id]
        for node, stub in zip(ctx.cluster.nodes, ctx.nodes, strict=True):
            if node.node_id == entry.primary.node_id:
                continue
            request = streams_pb2.PublishRequest(
                stream=stream_name, subject="t.x", payload=b"must not be stored", partition=entry.partition
            )
            error = await expect_error(
                stub.Publish(request, timeout=TIMEOUT_S),
                PRECONDITION,
                NotLeaderError,
                f"partition {entry.partition}",
                retryable=True,
            )
            _check_redirect(error, entry, stream_name)
            batch = streams_pb2.PublishBatchRequest(
                stream=stream_name,
                entries=[streams_pb2.PublishEntry(subject="t.x", payload=b"nor this", partition=entry.partition)],
            )
            error = await expect_error(
                stub.PublishBatch(batch, timeout=TIMEOUT_S),
                PRECONDITION,
                NotLeaderError,
                f"partition {entry.partition}",
                retryable=True,
            )
            _check_redirect(error, entry, stream_name)
            refused += 1
    assert refused == partitions * (len(ctx.cluster.nodes) - 1)

    after = await ctx.snapshot(stream_name)
    assert after == before
    assert after.info.stats.msg_count == 0
    # The control: the same publish on each primary is stored (the snapshot would have seen it).
    for entry in route.partitions:
        stub = ctx.node_stub(entry.primary.node_id)
        request = streams_pb2.PublishRequest(
            stream=stream_name, subject="t.x", payload=b"ok", partition=entry.partition
        )
        stored = await stub.Publish(request, timeout=TIMEOUT_S)
        assert (stored.partition, stored.seq) == (entry.partition, 1)
    info = await ctx.routers.stubs[0].GetStreamInfo(
        streams_pb2.GetStreamInfoRequest(name=stream_name), timeout=TIMEOUT_S
    )
    assert info.stats.msg_count == partitions


@pytest.mark.parametrize("partitions", [1, 4], ids=["hosted_nowhere_else", "hosted_but_not_led"])
async def test_fetch_from_a_node_that_does_not_lead_the_partition_redirects(
    partitions: int, ctx: Ctx, stream_name: str
) -> None:
    await ctx.client.create_stream(stream_config(stream_name, partitions=partitions))
    await ctx.client.create_consumer(stream_name, consumer_config("c1"))
    for partition in range(partitions):
        await ctx.client.publish(stream_name, "t.x", f"m{partition}".encode(), partition=partition)
    route = await _route_of(ctx.routers, stream_name)
    consumer_request = streams_pb2.GetConsumerInfoRequest(stream=stream_name, consumer="c1")
    consumer_before = await ctx.routers.stubs[0].GetConsumerInfo(consumer_request, timeout=TIMEOUT_S)
    assert consumer_before.info.num_pending == partitions
    before = await ctx.snapshot(stream_name)

    refused = 0
    for entry in route.partitions:
        for node, stub in zip(ctx.cluster.nodes, ctx.nodes, strict=True):
            if node.node_id == entry.primary.node_id:
                continue
            request = streams_pb2.FetchRequest(stream=stream_name, consumer="c1", partition=entry.partition)
            error = await expect_error(
                stub.Fetch(request, timeout=TIMEOUT_S),
                PRECONDITION,
                NotLeaderError,
                f"partition {entry.partition}",
                retryable=True,
            )
            _check_redirect(error, entry, stream_name)
            refused += 1
    assert refused == partitions * (len(ctx.cluster.nodes) - 1)

    assert await ctx.snapshot(stream_name) == before
    consumer_after = await ctx.routers.stubs[1].GetConsumerInfo(consumer_request, timeout=TIMEOUT_S)
    assert consumer_after == consumer_before
    assert consumer_after.info.delivered_total == 0
    # The control: the primary delivers each message for the first time.
    for entry in route.partitions:
        stub = ctx.node_stub(entry.primary.node_id)
        fetched = await stub.Fetch(
            streams_pb2.FetchRequest(stream=stream_name, consumer="c1", partition=entry.partition), timeout=TIMEOUT_S
        )
        assert [(m.payload, m.deliver_count) for m in fetched.messages] == [(f"m{entry.partition}".encode(), 1)]
