"""Fuzzing every RPC's decoder and handler on every port of a running local cluster (the security
issue's "no crash, no hang, a clear status, no state change").

One cluster of this module's own (redis-server, a router, two nodes, a replicator, a gateway, an
invoker) is fuzzed through every gRPC method of every port: a node's client and internal ports, the
router's, the gateway's kafka-pixy, RocketMQ v1 and streams seed ports, the invoker's (but
RegisterDeployment, which dials the URL it is given: `fuzz_support.NOT_FUZZED`). The methods come
from the generated service descriptors (`tests.fuzz_support.endpoints`), checked against each port's
server reflection. Each
hypothesis example sends a method two requests as raw bytes: random bytes (or a valid encoding cut
short or with junk appended), and a random well-typed message built by walking the request's
descriptor. Every call must answer within a bound (a server stream may stay open), with a status a
client can act on (never UNKNOWN or INTERNAL; UNAVAILABLE only marked retryable) and a message; a
RocketMQ answer's `common.status` follows the same rules. On the node's client port a rejected call
must leave the node's observable state (streams, their infos, the change-feed horizon) as it was.
At the end every process is alive and the cluster serves a new stream end to end.

The fuzzer may draw the victim stream's names (`fuzz_support.TOKENS`), so it reaches past "not
found"; destructive calls (DeleteStream, PurgePartition, ApplyPlacement, Replicate*) may legitimately
wreck the victim, so nothing checked afterwards relies on it: the final round trip uses a stream
created after the fuzzing, under a name the fuzzer cannot produce.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import timestamp_pb2
from google.protobuf.message import Message
from google.rpc import code_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from weir import Client, consumer_config, stream_config
from weir.client import NodeClient
from weir.v1 import streams_pb2
from weir_cli.launcher import LocalCluster
from weir_gateway.rocketmq_v1.pb import definition_pb2 as rocketmq_definition_pb2
from weir_gateway.rocketmq_v1.pb import service_pb2 as rocketmq_service_pb2
from weir_server.internal_clients import ChangeFeedClient

from tests import fuzz_support as fuzz
from tests.conftest import CLUSTER_NODE_ENV, CLUSTER_REPLICATOR_ENV, CLUSTER_ROUTER_ENV, needs_own_processes

EXAMPLES_PER_METHOD = 12
PAST_HORIZON = 1 << 62  # ReadChanges from here answers only `last_change_seq`
# Long polls of the gateway end quickly, so that an example costs little.
GATEWAY_ENV = {
    "WEIR_GATEWAY_KAFKA_PIXY_LONG_POLLING_TIMEOUT_MS": "300",
    "WEIR_GATEWAY_ROCKETMQ_MULTIPLEXING_POLL_TIMEOUT_MS": "300",
}
UNKNOWN_SERVICE = "no-such-service"


# -- the fuzzed cluster --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Snapshot:
    """What a client can observe of a node's state (as tests/test_bad_input.py's take_snapshot)."""

    names: list[str]
    infos: dict[str, streams_pb2.GetStreamInfoResponse]
    horizon: int


@dataclass
class FuzzedCluster:
    """The cluster, the event loop its gRPC channels live on, one channel per fuzzed port, and the
    clients that snapshot the fuzzed node."""

    local: LocalCluster
    runner: asyncio.Runner
    addresses: dict[str, str]
    channels: dict[str, grpc.aio.Channel]
    node_client: NodeClient
    feed: ChangeFeedClient

    async def snapshot(self) -> Snapshot:
        names = await self.node_client.list_streams()
        infos = {name: await self.node_client.stream_info(name) for name in names}
        horizon = (await self.feed.read_changes(PAST_HORIZON, 1)).last_change_seq
        return Snapshot(names, infos, horizon)

    async def close(self) -> None:
        for channel in self.channels.values():
            await channel.close()
        await self.node_client.close()
        await self.feed.close()


def port_addresses(local: LocalCluster) -> dict[str, str]:
    """Where each fuzzed port is: the first node's two ports, the router's, the gateway's three, the
    invoker's."""
    node, gateway = local.nodes[0], local.gateways[0]
    return {
        fuzz.NODE_CLIENT: node.client_address,
        fuzz.NODE_INTERNAL: node.internal_address,
        fuzz.ROUTER_PORT: local.routers[0].address,
        fuzz.KAFKA_PIXY_PORT: gateway.kafka_pixy_address,
        fuzz.ROCKETMQ_PORT: gateway.rocketmq_address,
        fuzz.WAYMAKER_STREAMS_PORT: gateway.waymaker_streams_address,
        fuzz.INVOKER_PORT: local.invokers[0].address,
    }


async def create_victim(local: LocalCluster) -> None:
    """The stream, consumer and messages the fuzzer can name (and may destroy)."""
    async with Client(local.router_addresses) as client:
        subjects = [fuzz.VICTIM_STREAM, f"{fuzz.VICTIM_STREAM}.>"]
        await client.create_stream(stream_config(fuzz.VICTIM_STREAM, subjects=subjects, partitions=2))
        await client.create_consumer(fuzz.VICTIM_STREAM, consumer_config(fuzz.VICTIM_CONSUMER))
        for number in range(4):
            await client.publish(fuzz.VICTIM_STREAM, f"{fuzz.VICTIM_STREAM}.a", f"victim {number}".encode())


async def connect(local: LocalCluster, runner: asyncio.Runner) -> FuzzedCluster:
    addresses = port_addresses(local)
    channels = {port: grpc.aio.insecure_channel(address) for port, address in addresses.items()}
    node = local.nodes[0]
    return FuzzedCluster(
        local, runner, addresses, channels, NodeClient(node.client_address), ChangeFeedClient(node.internal_address)
    )


@pytest.fixture(scope="module")
def fuzzed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FuzzedCluster]:
    """A plaintext cluster of this module's own with a gateway and the victim stream, and a loop
    (not pytest-asyncio's: grpc.aio channels are bound to the loop that made them) to call it on."""
    needs_own_processes()
    local = LocalCluster.start(
        Path(tmp_path_factory.mktemp("fuzz-cluster")),
        nodes=2,
        routers=1,
        node_env=CLUSTER_NODE_ENV,
        router_env=CLUSTER_ROUTER_ENV,
        replicator_env=CLUSTER_REPLICATOR_ENV,
        gateways=1,
        gateway_env=GATEWAY_ENV,
        invokers=1,
    )
    try:
        with asyncio.Runner(loop_factory=asyncio.new_event_loop) as runner:
            runner.run(create_victim(local))
            cluster = runner.run(connect(local, runner))
            yield cluster
            runner.run(cluster.close())
    finally:
        local.stop()


# -- every port serves what is fuzzed ------------------------------------------------------------------


async def reflected_services(channel: grpc.aio.Channel) -> set[str]:
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    request = reflection_pb2.ServerReflectionRequest(list_services="")
    async for response in stub.ServerReflectionInfo(iter([request]), timeout=10):
        return {entry.name for entry in response.list_services_response.service}
    raise AssertionError("server reflection ended without answering")


def test_each_port_serves_exactly_the_fuzzed_services(fuzzed: FuzzedCluster) -> None:
    """Server reflection on every port lists exactly the services `fuzz_support.PORT_SERVICES`
    fuzzes there, so the enumeration of methods (from those services' descriptors) misses none."""
    for port, channel in fuzzed.channels.items():
        served = fuzzed.runner.run(reflected_services(channel))
        assert served == set(fuzz.PORT_SERVICES[port]), f"{port} ({fuzzed.addresses[port]}) serves {served}"
    fuzzed_services = {(e.port, e.method.containing_service.full_name) for e in fuzz.endpoints()}
    listed = {(port, name) for port, names in fuzz.PORT_SERVICES.items() for name in names}
    assert fuzzed_services == listed  # every method of every listed service is a case of the tests below


# -- the fuzzing ---------------------------------------------------------------------------------------


def _cases() -> list[Any]:
    """Every endpoint as a case."""
    return [pytest.param(endpoint, id=endpoint.id) for endpoint in fuzz.endpoints()]


async def send(cluster: FuzzedCluster, endpoint: fuzz.Endpoint, body: bytes) -> tuple[str, list[str]]:
    """Send `body` to `endpoint`: the status, and what is wrong with the answer and on the node's
    client port with the node's state after a rejection."""
    checks_state = endpoint.port == fuzz.NODE_CLIENT
    before = await cluster.snapshot() if checks_state else None
    outcome = await fuzz.invoke(cluster.channels[endpoint.port], endpoint, body)
    found = fuzz.problems(endpoint, body, outcome)
    if checks_state and outcome.code != grpc.StatusCode.OK and not outcome.left_open:
        after = await cluster.snapshot()
        if after != before:
            found.append("the rejected call changed the node's state")
    status = f"{outcome.code.name}{' (left open)' if outcome.left_open else ''}"
    return status, [fuzz.describe(endpoint, body, outcome, found)] if found else []


FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES_PER_METHOD,
    deadline=None,
    database=None,  # no .hypothesis directory in the repository
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@pytest.mark.parametrize("endpoint", _cases())
def test_undecodable_request_is_invalid_argument(fuzzed: FuzzedCluster, endpoint: fuzz.Endpoint) -> None:
    """A body that is no protobuf message at all is INVALID_ARGUMENT with a message (UNIMPLEMENTED
    for a foreign protocol's method Weir does not serve), never UNKNOWN, and changes nothing."""
    found: list[str] = []
    for body in fuzz.UNDECODABLE_BODIES:
        assert fuzz.decoded(endpoint.request_class, body) is None, f"{body!r} decodes"
        before = fuzzed.runner.run(fuzzed.snapshot()) if endpoint.port == fuzz.NODE_CLIENT else None
        outcome = fuzzed.runner.run(fuzz.invoke(fuzzed.channels[endpoint.port], endpoint, body))
        problems = fuzz.problems(endpoint, body, outcome)
        expected = {grpc.StatusCode.INVALID_ARGUMENT}
        if endpoint.method.containing_service.full_name in fuzz.FOREIGN_SERVICES:
            expected.add(grpc.StatusCode.UNIMPLEMENTED)
        if outcome.code not in expected:
            problems.append(f"{outcome.code.name}, not {' or '.join(sorted(code.name for code in expected))}")
        if before is not None and fuzzed.runner.run(fuzzed.snapshot()) != before:
            problems.append("the rejected call changed the node's state")
        if problems:
            found.append(fuzz.describe(endpoint, body, outcome, problems))
    assert not found, "\n".join(found)


@pytest.mark.parametrize("endpoint", _cases())
@FUZZ_SETTINGS
@given(data=st.data())
def test_random_bytes_get_a_clear_answer(fuzzed: FuzzedCluster, endpoint: fuzz.Endpoint, data: st.DataObject) -> None:
    """Random bytes as the raw request (any bytes, or a valid encoding cut short or with junk
    appended) are answered in bounded time with a clear status and a message, never UNKNOWN or
    INTERNAL, and on the node's client port a rejected one changes no state."""
    body = data.draw(fuzz.bodies(endpoint.method.input_type), label="random bytes")
    status, found = fuzzed.runner.run(send(fuzzed, endpoint, body))
    event(status)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("endpoint", _cases())
@FUZZ_SETTINGS
@given(data=st.data())
def test_well_typed_message_gets_a_clear_answer(
    fuzzed: FuzzedCluster, endpoint: fuzz.Endpoint, data: st.DataObject
) -> None:
    """A random well-typed request (every field of its type: ints at and within their range's
    edges, odd unicode, bytes, unknown enum numbers, nested messages, a few repeated items, the
    victim's names) is answered in bounded time with a clear status and a message, never UNKNOWN
    or INTERNAL (nor in a RocketMQ answer's common.status), and on the node's client port a
    rejected one changes no state."""
    request: Message = data.draw(fuzz.messages(endpoint.method.input_type), label="well-typed message")
    status, found = fuzzed.runner.run(send(fuzzed, endpoint, request.SerializeToString()))
    event(status)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("port", fuzz.PORT_SERVICES)
def test_health_check_of_an_unknown_service_says_why(fuzzed: FuzzedCluster, port: str) -> None:
    """grpc.health.v1 Check of a service the port does not serve is NOT_FOUND with a message."""
    stub = health_pb2_grpc.HealthStub(fuzzed.channels[port])
    request = health_pb2.HealthCheckRequest(service=UNKNOWN_SERVICE)

    async def check() -> None:
        await stub.Check(request, timeout=10)

    with pytest.raises(grpc.aio.AioRpcError) as raised:
        fuzzed.runner.run(check())
    assert raised.value.code() == grpc.StatusCode.NOT_FOUND
    assert raised.value.details(), f"{port}: NOT_FOUND without a message"


def _out_of_range_timestamps() -> dict[str, tuple[str, Message]]:
    """Per case: a RocketMQ method and a request whose only fault is a Timestamp out of range."""
    too_early = timestamp_pb2.Timestamp(seconds=-(2**63))
    topic = rocketmq_definition_pb2.Resource(name=fuzz.VICTIM_STREAM)
    delay = rocketmq_definition_pb2.SystemAttribute(
        message_id="m-1", message_type=rocketmq_definition_pb2.DELAY, delivery_timestamp=too_early
    )
    born = rocketmq_definition_pb2.SystemAttribute(message_id="m-2", born_timestamp=too_early)
    return {
        "SendMessage.born_timestamp": (
            "SendMessage",
            rocketmq_service_pb2.SendMessageRequest(
                message=rocketmq_definition_pb2.Message(topic=topic, body=b"x", system_attribute=born)
            ),
        ),
        "SendMessage.delivery_timestamp": (
            "SendMessage",
            rocketmq_service_pb2.SendMessageRequest(
                message=rocketmq_definition_pb2.Message(topic=topic, body=b"x", system_attribute=delay)
            ),
        ),
        "QueryOffset.time_point": ("QueryOffset", rocketmq_service_pb2.QueryOffsetRequest(time_point=too_early)),
        "ReceiveMessage.initialization_timestamp": (
            "ReceiveMessage",
            rocketmq_service_pb2.ReceiveMessageRequest(initialization_timestamp=too_early),
        ),
    }


@pytest.mark.parametrize("case", _out_of_range_timestamps())
def test_rocketmq_out_of_range_timestamp_is_invalid_argument(fuzzed: FuzzedCluster, case: str) -> None:
    """A RocketMQ request with a Timestamp no calendar holds is INVALID_ARGUMENT with a message."""
    method, request = _out_of_range_timestamps()[case]
    endpoint = next(e for e in fuzz.endpoints() if e.port == fuzz.ROCKETMQ_PORT and e.method.name == method)
    outcome = fuzzed.runner.run(fuzz.invoke(fuzzed.channels[fuzz.ROCKETMQ_PORT], endpoint, request.SerializeToString()))
    assert outcome.code == grpc.StatusCode.OK, outcome
    [status] = fuzz.rocketmq_statuses(endpoint, outcome)
    assert status.code == code_pb2.INVALID_ARGUMENT and status.message, f"{case}: {status}"


# -- after the fuzzing ---------------------------------------------------------------------------------


async def health_of(channel: grpc.aio.Channel) -> int:
    stub = health_pb2_grpc.HealthStub(channel)
    response = await stub.Check(health_pb2.HealthCheckRequest(service=""), timeout=10)
    return int(response.status)


async def round_trip(local: LocalCluster) -> None:
    """A new stream (a name the fuzzer cannot draw) takes a publish through the router and
    returns it from its partition's primary."""
    name = f"after-fuzz-{uuid.uuid4().hex}"
    async with Client(local.router_addresses) as client:
        await client.create_stream(stream_config(name, partitions=2))
        ack = await client.publish(name, name, b"still serving", key=b"k")
        leader = await client.leader(name, ack.partition)
        stored = await leader.read_messages(name, ack.partition, ack.seq, max_messages=1)
        assert [message.payload for message in stored.messages] == [b"still serving"]
        await client.delete_stream(name)


def test_every_process_is_alive_and_serving_after_the_fuzzing(fuzzed: FuzzedCluster) -> None:
    """Runs after the fuzzing (module order): no process exited, every fuzzed port answers its
    health check SERVING, and a stream created now takes a publish and a read."""
    local = fuzzed.local
    handles = [*local.routers, *local.nodes, *local.replicators, *local.gateways]
    exited = {
        handle.name: handle.process.poll() for handle in handles if handle.process and handle.process.poll() is not None
    }
    assert not exited, f"processes exited during the fuzzing: {exited}"
    assert local.redis.process is not None and local.redis.process.poll() is None
    for port, channel in fuzzed.channels.items():
        status = fuzzed.runner.run(health_of(channel))
        assert status == health_pb2.HealthCheckResponse.SERVING, f"{port}: health {status}"
    fuzzed.runner.run(round_trip(local))
