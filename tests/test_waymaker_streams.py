"""The gateway's waymaker.streams front door (`/waymaker.streams.WaymakerStreamsService/*`, the streams
seed's API verbatim), driven by a client built at test time from the seed file itself
(../shared/seeds/003 without its six header lines, compiled by protoc into a private descriptor pool:
the client shares no code, and no generated module, with the gateway). A real cluster, a real
gateway process, real gRPC; what the seed client stores is read back through the Weir SDK."""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
from grpc_tools import protoc  # type: ignore[import-untyped]
from weir import Client, ObjectStore, stream_config
from weir.client import NodeClient
from weir.cluster import WeirClient
from weir.v1 import streams_pb2, types_pb2
from weir_cli.launcher import GatewayHandle, LocalCluster
from weir_gateway.waymaker_streams import mapping, permissions
from weir_gateway.waymaker_streams.pb import waymaker_streams_pb2 as kept
from weir_gateway.waymaker_streams.watch import LaggingBuffer, event_to_seed
from weir_server.permissions import Requirement

from tests.conftest import eventually, needs_own_processes
from tests.test_partition_moves import IdempotentPublisher

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT.parent / "shared" / "seeds"
KEPT = ROOT / "proto" / "gateway" / "weir_gateway" / "waymaker_streams" / "pb" / "waymaker_streams.proto"
SERVICE = "waymaker.streams.WaymakerStreamsService"
HEADER_LINES = 6


def seed_text() -> str:
    """The seed proto: ../shared/seeds/003 without its header lines, or, in a checkout without
    it, the gateway's kept copy (checked against the seed wherever the seed is present)."""
    found = sorted(SEEDS.glob("003_*.txt")) if SEEDS.exists() else []
    if not found:
        return KEPT.read_text()
    return "".join(found[0].read_text().splitlines(keepends=True)[HEADER_LINES:])


def test_the_served_proto_is_the_seed_verbatim() -> None:
    assert KEPT.read_text() == seed_text()


@pytest.fixture(scope="module")
def seed_pool(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("seed-protos")
    (root / "waymaker_streams.proto").write_text(seed_text())
    descriptor_set = root / "set.pb"
    arguments = ["protoc", f"-I{root}", f"--descriptor_set_out={descriptor_set}", str(root / "waymaker_streams.proto")]
    assert protoc.main(arguments) == 0
    pool = descriptor_pool.DescriptorPool()
    for file in descriptor_pb2.FileDescriptorSet.FromString(descriptor_set.read_bytes()).file:
        pool.Add(file)
    return pool


class SeedClient:
    """Calls /waymaker.streams.WaymakerStreamsService/<Rpc> with the seed's own messages."""

    def __init__(self, pool: Any, address: str) -> None:
        file = pool.FindFileByName("waymaker_streams.proto")
        self.classes = {name: message_factory.GetMessageClass(d) for name, d in file.message_types_by_name.items()}
        self.enums = file.enum_types_by_name
        self.service = file.services_by_name["WaymakerStreamsService"]
        self.channel = grpc.aio.insecure_channel(address)

    def new(self, name: str, /, **fields: Any) -> Any:
        return self.classes[name](**fields)

    def enum(self, enum_name: str, value_name: str) -> int:
        return int(self.enums[enum_name].values_by_name[value_name].number)

    async def call(self, rpc: str, **fields: Any) -> Any:
        method = self.service.methods_by_name[rpc]
        call = self.channel.unary_unary(
            f"/{SERVICE}/{rpc}",
            request_serializer=lambda message: message.SerializeToString(),
            response_deserializer=self.classes[method.output_type.name].FromString,
        )
        return await call(self.classes[method.input_type.name](**fields), timeout=15)

    async def events(self, rpc: str, **fields: Any) -> list[Any]:
        """Every message of a server-streaming call, until the server ends it."""
        method = self.service.methods_by_name[rpc]
        call = self.channel.unary_stream(
            f"/{SERVICE}/{rpc}",
            request_serializer=lambda message: message.SerializeToString(),
            response_deserializer=self.classes[method.output_type.name].FromString,
        )
        return [event async for event in call(self.classes[method.input_type.name](**fields), timeout=15)]

    async def upload(self, rpc: str, frames: list[Any]) -> Any:
        """A client-streaming call: each of `frames`, then the request side closes."""
        method = self.service.methods_by_name[rpc]
        call = self.channel.stream_unary(
            f"/{SERVICE}/{rpc}",
            request_serializer=lambda message: message.SerializeToString(),
            response_deserializer=self.classes[method.output_type.name].FromString,
        )
        return await call(iter(frames), timeout=30)

    async def ok(self, rpc: str, **fields: Any) -> Any:
        response = await self.call(rpc, **fields)
        assert (response.success, response.result_code) == (True, "ok"), (rpc, response)
        return response

    async def refused(self, rpc: str, result_code: str, **fields: Any) -> str:
        response = await self.call(rpc, **fields)
        assert (response.success, response.result_code) == (False, result_code), (rpc, response)
        assert response.message, (rpc, response)
        return str(response.message)


@pytest.fixture(scope="module")
def gateway(cluster: LocalCluster) -> Iterator[GatewayHandle]:
    needs_own_processes()
    handle = cluster.start_gateway("waymaker-gateway")
    yield handle
    handle.stop()


@pytest.fixture
async def seed(seed_pool: Any, gateway: GatewayHandle) -> AsyncIterator[SeedClient]:
    client = SeedClient(seed_pool, gateway.waymaker_streams_address)
    yield client
    await client.channel.close()


def limits_config(client: SeedClient, name: str, **limits: int) -> Any:
    config = client.new("StreamConfigPb", name=name, subjects_filter=["orders.>", "dlq.>"])
    config.retention.limits.SetInParent()
    for field, value in limits.items():
        setattr(config.retention.limits, field, value)
    return config


async def test_stream_lifecycle_and_bad_configs(seed: SeedClient, stream_name: str) -> None:
    await seed.ok("CreateStream", config=limits_config(seed, stream_name, max_msgs=100))
    info = await seed.ok("GetStreamInfo", name=stream_name)
    assert list(info.config.subjects_filter) == ["orders.>", "dlq.>"]
    assert (info.config.retention.limits.max_msgs, info.config.retention.limits.strict_limits) == (100, True)
    assert not info.config.retention.limits.HasField("max_age_ms")
    assert (info.stats.last_seq, info.stats.msg_count) == (0, 0)
    assert stream_name in (await seed.call("ListStreams")).names
    await seed.ok("CreateStream", config=limits_config(seed, stream_name, max_msgs=100))  # a retried create
    other = limits_config(seed, stream_name, max_msgs=5)
    assert "exists" in await seed.refused("CreateStream", "already_exists", config=other)
    await seed.refused("CreateStream", "invalid_config", config=seed.new("StreamConfigPb", name="bad name!"))
    sourcing = seed.new("StreamConfigPb", name=f"{stream_name}-src")
    sourcing.sources.add(source_stream=stream_name, start_time_ms=1)
    assert "start_time_ms" in await seed.refused("CreateStream", "invalid_config", config=sourcing)
    sourcing.sources[0].start_time_ms = 0
    sourcing.sources.add(source_stream=stream_name)
    assert "listed twice" in await seed.refused("CreateStream", "invalid_config", config=sourcing)
    updated = await seed.ok("UpdateStream", name=stream_name, max_msgs=50, max_age_ms=3_600_000)
    assert (updated.config.retention.limits.max_msgs, updated.config.retention.limits.max_age_ms) == (50, 3_600_000)
    await seed.refused("UpdateStream", "no_such_stream", name=f"{stream_name}-missing", max_msgs=1)
    assert all(entry.sourcing_stream != stream_name for entry in (await seed.ok("GetStreamSources")).entries)
    await seed.ok("DeleteStream", name=stream_name)
    await seed.refused("DeleteStream", "no_such_stream", name=stream_name)
    await seed.refused("GetStreamInfo", "no_such_stream", name=stream_name)


async def test_a_stream_sources_others_with_a_filter_and_a_transform(seed: SeedClient, stream_name: str) -> None:
    """The seed's cross-stream sources: provenance headers, the filter, the transform, on_drop,
    sources_status in GetStreamInfo and the tail in GetStreamSources."""
    orders, refunds, audit = f"{stream_name}-o", f"{stream_name}-r", f"{stream_name}-a"
    await seed.ok("CreateStream", config=limits_config(seed, orders))
    await seed.ok("CreateStream", config=seed.new("StreamConfigPb", name=refunds))
    for n in range(6):
        await seed.ok("Publish", stream=orders, subject=f"orders.{'eu' if n % 2 else 'us'}.{n}", payload=b"o%d" % n)
        await seed.ok("Publish", stream=refunds, subject=f"refund.{n}", payload=b"r%d" % n)
    config = seed.new("StreamConfigPb", name=audit)
    config.sources.add(
        source_stream=orders,
        filter_subject="orders.eu.*",
        subject_transform=seed.new(
            "SubjectTransformPb", source_pattern="orders.*.*", destination="audit.{{wildcard(2)}}"
        ),
    )
    config.sources.add(
        source_stream=refunds, start_seq=4, on_drop=seed.enum("OnDropPolicy", "ON_DROP_SKIP_TO_FIRST_AVAILABLE")
    )
    await seed.ok("CreateStream", config=config)
    consumer = seed.new("ConsumerConfigPb", name="reader", ack_wait_ms=30_000)
    await seed.ok("CreateConsumer", stream=audit, config=consumer)
    fetched: list[Any] = []

    async def all_sourced() -> bool:
        fetched.extend((await seed.ok("Fetch", stream=audit, consumer="reader", batch_size=100)).messages)
        return len(fetched) >= 6

    await eventually(all_sourced, 20, "3 orders and 3 refunds sourced")
    provenance = [
        ({header.key: header.value for header in message.headers}["waymaker-source-stream"], message.subject)
        for message in fetched
    ]
    assert sorted(provenance) == sorted(
        [
            (orders, "audit.1"),
            (orders, "audit.3"),
            (orders, "audit.5"),
            (refunds, "refund.3"),
            (refunds, "refund.4"),
            (refunds, "refund.5"),
        ]
    )
    info = await seed.ok("GetStreamInfo", name=audit)
    assert [source.source_stream for source in info.config.sources] == [orders, refunds]
    assert info.config.sources[0].subject_transform.destination == "audit.{{wildcard(2)}}"
    assert {(status.source_stream, status.last_sourced_seq) for status in info.sources_status} == {
        (orders, 6),
        (refunds, 6),
    }
    entries = [entry for entry in (await seed.ok("GetStreamSources")).entries if entry.sourcing_stream == audit]
    assert {(entry.source_stream, entry.pulled_total) for entry in entries} == {(orders, 3), (refunds, 3)}


async def test_a_sourced_stream_shows_no_internal_record_through_any_api(
    seed: SeedClient, stream_name: str, router_addresses: list[str]
) -> None:
    """Issue 55: a stream with a source holds only what it sourced and what was published to it: the
    source positions are kept beside its log, so no API (the door's subject listing, latest-at-
    subject, stats and consumers; the SDK's reads, subjects and info) shows a `$weir.source` record,
    the counts are the messages' and the seqs run 1..N with no gap."""
    orders, mirror = f"{stream_name}-o", f"{stream_name}-m"
    await seed.ok("CreateStream", config=limits_config(seed, orders))
    for n in range(7):
        await seed.ok("Publish", stream=orders, subject=f"orders.{n}", payload=b"o%d" % n)
    config = seed.new("StreamConfigPb", name=mirror, subjects_filter=["orders.>", "direct.>"])
    config.sources.add(source_stream=orders)
    await seed.ok("CreateStream", config=config)

    async def settled() -> bool:
        info = await seed.ok("GetStreamInfo", name=mirror)
        return [status.last_sourced_seq for status in info.sources_status] == [7]

    await eventually(settled, 20, "7 orders sourced")
    assert (await seed.ok("Publish", stream=mirror, subject="direct.x", payload=b"d")).seq == 8  # no gap before it
    marker = f"$weir.source.{orders}.0"
    subjects = (await seed.ok("ListSubjectsByPrefix", stream=mirror, prefix="")).subjects
    assert sorted(subjects) == sorted([*(f"orders.{n}" for n in range(7)), "direct.x"])
    assert not (await seed.ok("ListSubjectsByPrefix", stream=mirror, prefix="$weir.")).subjects
    assert not (await seed.ok("ReadLatestAtSubject", stream=mirror, subject=marker)).HasField("latest")
    await seed.ok("CreateConsumer", stream=mirror, config=seed.new("ConsumerConfigPb", name="all", ack_wait_ms=30_000))
    fetched = (await seed.ok("Fetch", stream=mirror, consumer="all", batch_size=100)).messages
    assert [message.seq for message in fetched] == list(range(1, 9))
    stats = (await seed.ok("GetStreamInfo", name=mirror)).stats
    async with Client(router_addresses) as weir:
        read = await weir.on_leader(mirror, 0, lambda node: node.read_messages(mirror, 0, 0, max_messages=100))
        assert [message.seq for message in read.messages] == list(range(1, 9))
        assert not await weir.on_leader(mirror, 0, lambda node: node.list_subjects(mirror, prefix="$weir."))
        assert await weir.on_leader(mirror, 0, lambda node: node.latest_at_subject(mirror, marker)) is None
        info = await weir.stream_info(mirror)
    assert (stats.last_seq, stats.msg_count) == (8, 8) == (info.partitions[0].last_seq, info.msg_count)
    assert stats.bytes == info.bytes == sum(message.ByteSize() for message in read.messages)


async def test_cluster_admin_through_the_seed(seed: SeedClient, stream_name: str) -> None:
    """GetClusterStreamStats, GetStreamInfo's routing view, SetStreamPinned, ClearStreamAuthority,
    MigrateStream, RebalanceStreams and ListStreamAuthorityOverrides, with their result codes; a
    seed node id is the number the cluster gave the node."""
    await seed.ok("CreateStream", config=limits_config(seed, stream_name))
    for n in range(5):
        await seed.ok("Publish", stream=stream_name, subject=f"orders.{n}", payload=b"%d" % n)
    stats = await seed.ok("GetClusterStreamStats", include_per_stream=True)
    numbers = [node.node_id for node in stats.nodes]
    assert all(numbers) and len(set(numbers)) == len(numbers) and stats.total_stream_count >= 1
    (mine,) = [stream for stream in stats.streams if stream.name == stream_name]
    assert mine.msg_count == 5 and mine.last_seq == 5 and mine.owner_node_id in numbers
    assert "local_only" in await seed.refused("GetClusterStreamStats", "invalid_argument", local_only=True)
    owner = mine.owner_node_id
    info = await seed.ok("GetStreamInfo", name=stream_name)
    assert (info.ring_owner_node_id, info.pinned, info.HasField("authority_override")) == (owner, False, False)

    await seed.ok("SetStreamPinned", stream=stream_name, pinned=True)
    assert (await seed.ok("GetStreamInfo", name=stream_name)).pinned
    busy = await seed.call("MigrateStream", name=stream_name, source_node_id=owner)
    assert (busy.success, busy.result_code) == (False, "source_busy") and "pinned" in busy.message
    await seed.ok("ClearStreamAuthority", stream=stream_name)  # unpins: moves may touch it again
    elsewhere = next(number for number in numbers if number != owner)
    wrong = await seed.call("MigrateStream", name=stream_name, source_node_id=elsewhere)
    assert (wrong.success, wrong.result_code) == (False, "source_unreachable")
    migrated = await seed.ok("MigrateStream", name=stream_name, source_node_id=owner)
    assert migrated.stream_last_seq == 5
    moved_to = (await seed.ok("GetStreamInfo", name=stream_name)).ring_owner_node_id
    assert moved_to not in (0, owner)

    plan = [
        seed.new("RebalancePlanEntry", name=stream_name, target_node_id=owner),
        seed.new("RebalancePlanEntry", name=f"{stream_name}-missing", target_node_id=owner),
        seed.new("RebalancePlanEntry", name=stream_name, target_node_id=10_000),
    ]
    outcome = await seed.call("RebalanceStreams", plan=plan)
    assert (outcome.success, outcome.result_code) == (False, "partial")
    assert [step.result_code for step in outcome.steps] == ["ok", "no_such_stream", "invalid_argument"]
    again = await seed.ok("RebalanceStreams", plan=plan[:1])
    assert again.steps[0].result_code == "skipped_same_node"
    await seed.refused("RebalanceStreams", "no_plan")
    assert (await seed.ok("GetStreamInfo", name=stream_name)).ring_owner_node_id == owner
    await seed.ok("CreateConsumer", stream=stream_name, config=seed.new("ConsumerConfigPb", name="after"))
    fetched = await seed.ok("Fetch", stream=stream_name, consumer="after", batch_size=10)
    assert [message.payload for message in fetched.messages] == [b"%d" % n for n in range(5)]  # moved twice, intact
    overrides = await seed.ok("ListStreamAuthorityOverrides")
    assert all(entry.stream != stream_name for entry in overrides.entries)
    for name, pinned, code, says in (
        (f"{stream_name}-missing", False, grpc.StatusCode.NOT_FOUND, "missing"),
        ("", False, grpc.StatusCode.INVALID_ARGUMENT, "name"),
        (stream_name, True, grpc.StatusCode.FAILED_PRECONDITION, "pinned"),
    ):
        await seed.ok("SetStreamPinned", stream=stream_name, pinned=pinned)
        with pytest.raises(grpc.aio.AioRpcError) as transfer:
            await seed.events("TransferStream", name=name)
        assert transfer.value.code() == code and says in str(transfer.value.details())
        assert (await seed.ok("GetStreamInfo", name=stream_name)).ring_owner_node_id == owner  # nothing changed
    await seed.ok("SetStreamPinned", stream=stream_name, pinned=False)
    (summary,) = await seed.events("TransferStream", name=stream_name)  # one copy: it moves, leadership with it
    assert (summary.WhichOneof("body"), summary.summary.total_bytes) == ("summary", 0)
    assert summary.summary.stream_last_seq == 5
    transferred = await seed.ok("GetStreamInfo", name=stream_name)
    assert transferred.ring_owner_node_id not in (0, owner) and not transferred.HasField("authority_override")
    assert (transferred.stats.msg_count, transferred.stats.last_seq) == (5, 5)


async def test_watch_streams_merges_the_nodes_watches(seed: SeedClient, stream_name: str) -> None:
    """WatchStreams: each node's stream and consumer events, tagged with its number."""
    method = seed.service.methods_by_name["WatchStreams"]
    call = seed.channel.unary_stream(
        f"/{SERVICE}/WatchStreams",
        request_serializer=lambda message: message.SerializeToString(),
        response_deserializer=seed.classes[method.output_type.name].FromString,
    )(seed.new("WatchStreamsRequest"), timeout=30)
    stream_created, consumer_created = (
        seed.enum("WatchEventType", "WATCH_STREAM_CREATED"),
        seed.enum("WatchEventType", "WATCH_CONSUMER_CREATED"),
    )
    try:
        await asyncio.sleep(0.5)  # the watch is open on every node before anything happens
        await seed.ok("CreateStream", config=limits_config(seed, stream_name))
        await seed.ok("CreateConsumer", stream=stream_name, config=seed.new("ConsumerConfigPb", name="watched"))
        seen: list[Any] = []
        async with asyncio.timeout(20):
            async for event in call:
                if event.type == stream_created and event.stream.name == stream_name:
                    seen.append(event)
                if event.type == consumer_created and event.consumer.stream == stream_name:
                    seen.append(event)
                    break
        assert [event.type for event in seen] == [stream_created, consumer_created]
        assert all(event.node_id > 0 and event.ts_ms > 0 and event.lagged_count == 0 for event in seen)
        assert seen[1].consumer.consumer == "watched"
        # A move gives the stream a new primary: the seed's authority change, here a clear (the
        # preference moved with the copy, so no override is in force).
        owner = (await seed.ok("GetStreamInfo", name=stream_name)).ring_owner_node_id
        await seed.ok("MigrateStream", name=stream_name, source_node_id=owner)
        authority_changed = seed.enum("WatchEventType", "WATCH_STREAM_AUTHORITY_CHANGED")
        async with asyncio.timeout(20):
            async for event in call:
                if event.type == authority_changed and event.authority.stream == stream_name:
                    break
        assert (event.authority.claimant_node_id, event.authority.fence_epoch) == (0, 0)
        assert event.node_id not in (0, owner)
    finally:
        call.cancel()


async def test_a_slow_watcher_is_told_how_many_events_it_missed() -> None:
    """Pure: the oldest events go when the buffer is full; the next one read says how many."""
    buffer: LaggingBuffer[int] = LaggingBuffer(3)
    for item in range(5):
        buffer.offer(item)
    assert await buffer.take() == (2, 2)
    assert await buffer.take() == (3, 0)
    assert await buffer.take() == (4, 0)
    waiter = asyncio.ensure_future(buffer.take())
    await asyncio.sleep(0)
    assert not waiter.done()
    buffer.offer(5)
    assert await waiter == (5, 0)


def test_a_new_primary_that_is_not_the_preferred_leader_is_an_override() -> None:
    """Pure: a node's LEADER_CHANGED as the seed's WATCH_STREAM_AUTHORITY_CHANGED."""
    event = streams_pb2.WatchEvent(
        type=streams_pb2.WATCH_EVENT_TYPE_LEADER_CHANGED,
        ts_ms=5,
        node_id="node-2",
        stream="s",
        partition=0,
        leader_epoch=7,
        preferred_leader_node_id="node-1",
    )
    made = event_to_seed(event, {"node-1": 1, "node-2": 2}, 3)
    assert made is not None and made.type == kept.WATCH_STREAM_AUTHORITY_CHANGED and made.lagged_count == 3
    assert (made.node_id, made.authority.claimant_node_id, made.authority.fence_epoch) == (2, 2, 7)
    event.partition = 1
    assert event_to_seed(event, {}, 0) is None


def test_an_override_is_another_copy_leading() -> None:
    """Pure: the seed's routing view of a Weir placement."""
    info = streams_pb2.GetStreamInfoResponse()
    info.placement.partitions.add(
        partition=0,
        primary_node_id="node-2",
        secondary_node_ids=["node-1"],
        replica_node_ids=["node-1", "node-2"],
        leader_epoch=4,
    )
    info.pinned_partitions.append(0)
    authority = mapping.authority_of(info, {"node-1": 1, "node-2": 2})
    assert (authority.ring_owner_node_id, authority.pinned) == (1, True)
    assert authority.override is not None
    assert (authority.override.claimant_node_id, authority.override.fence_epoch) == (2, 4)
    info.placement.partitions[0].primary_node_id = "node-1"
    assert mapping.authority_of(info, {"node-1": 1}).override is None


async def test_publish_fetch_and_settle(seed: SeedClient, stream_name: str, router_addresses: list[str]) -> None:
    await seed.ok("CreateStream", config=limits_config(seed, stream_name))
    header = seed.new("MessageHeader", key="trace", value="t-1")
    seqs = [
        (await seed.ok("Publish", stream=stream_name, subject=f"orders.{n}", payload=b"p%d" % n, headers=[header])).seq
        for n in range(3)
    ]
    assert seqs == [1, 2, 3]
    stamped = await seed.ok("Publish", stream=stream_name, subject="orders.0", payload=b"late", ts_ms=1_700_000_000_000)
    assert stamped.seq == 4
    wrong = await seed.call("Publish", stream=stream_name, subject="orders.0", payload=b"x", expected_last_seq=1)
    assert (wrong.success, wrong.result_code, wrong.seq) == (False, "wrong_revision", 4)  # the subject's last seq
    await seed.refused("Publish", "subject_rejected", stream=stream_name, subject="payments.1", payload=b"x")
    await seed.refused("Publish", "no_such_stream", stream=f"{stream_name}-missing", subject="orders.1", payload=b"x")

    consumer = seed.new("ConsumerConfigPb", name="c", filter_subject="orders.>", ack_wait_ms=60_000)
    await seed.ok("CreateConsumer", stream=stream_name, config=consumer)
    by_seq = seed.new("ConsumerConfigPb", name="d")
    by_seq.delivery_policy.type = seed.enum("DeliveryPolicyType", "DELIVERY_BY_START_SEQ")  # without start_seq
    await seed.refused("CreateConsumer", "invalid_config", stream=stream_name, config=by_seq)
    await seed.refused("CreateConsumer", "no_such_stream", stream=f"{stream_name}-missing", config=consumer)

    fetched = (await seed.ok("Fetch", stream=stream_name, consumer="c", batch_size=2)).messages
    assert [(m.seq, m.subject, m.payload, m.deliver_count) for m in fetched] == [
        (1, "orders.0", b"p0", 1),
        (2, "orders.1", b"p1", 1),
    ]
    assert [(h.key, h.value) for h in fetched[0].headers] == [("trace", "t-1")]
    await seed.ok("Ack", stream=stream_name, consumer="c", seq=1)
    await seed.ok("Ack", stream=stream_name, consumer="c", seq=1)  # a second ack is ok (the seed has no not_pending)
    await seed.ok("Nak", stream=stream_name, consumer="c", seq=2)
    again = (await seed.ok("Fetch", stream=stream_name, consumer="c", batch_size=10)).messages
    assert [(m.seq, m.deliver_count) for m in again] == [(2, 2), (3, 1), (4, 1)]
    assert again[2].ts_ms == 1_700_000_000_000
    await seed.ok("Term", stream=stream_name, consumer="c", seq=2)
    await seed.ok("InProgress", stream=stream_name, consumer="c", seq=3)
    for seq in (3, 4):
        await seed.ok("Ack", stream=stream_name, consumer="c", seq=seq)
    await seed.refused("Fetch", "no_such_consumer", stream=stream_name, consumer="nobody", batch_size=1)

    state = (await seed.ok("GetConsumerInfo", stream=stream_name, consumer="c")).consumer
    assert (state.config.name, state.config.filter_subject, state.config.ack_wait_ms) == ("c", "orders.>", 60_000)
    assert (state.ack_floor, state.last_delivered) == (4, 4)
    assert [c.config.name for c in (await seed.ok("ListConsumers", stream=stream_name)).consumers] == ["c"]
    await seed.ok("DeleteConsumer", stream=stream_name, consumer="c")
    await seed.refused("GetConsumerInfo", "no_such_consumer", stream=stream_name, consumer="c")

    async with Client(router_addresses) as weir:  # the seed client's messages are Weir's
        stored = await weir.on_leader(stream_name, 0, lambda node: node.get_message(stream_name, 0, 2))
        assert (stored.subject, stored.payload) == ("orders.1", b"p1")


async def test_subject_lookups(seed: SeedClient, stream_name: str) -> None:
    await seed.ok("CreateStream", config=limits_config(seed, stream_name))
    for subject, payload in (("orders.a", b"1"), ("orders.b", b"2"), ("orders.a", b"3")):
        await seed.ok("Publish", stream=stream_name, subject=subject, payload=payload)
    latest = await seed.ok("ReadLatestAtSubject", stream=stream_name, subject="orders.a")
    assert (latest.latest.seq, latest.latest.payload) == (3, b"3")
    assert not (await seed.ok("ReadLatestAtSubject", stream=stream_name, subject="orders.z")).HasField("latest")
    subjects = await seed.ok("ListSubjectsByPrefix", stream=stream_name, prefix="orders.")
    assert sorted(subjects.subjects) == ["orders.a", "orders.b"]
    scanned = await seed.ok("ScanExactAtSubject", stream=stream_name, subject="orders.a", from_seq=2)
    assert [m.seq for m in scanned.messages] == [3]
    await seed.refused("ReadLatestAtSubject", "no_such_stream", stream=f"{stream_name}-missing", subject="orders.a")


async def test_subscribe_pushes_until_empty(seed: SeedClient, stream_name: str) -> None:
    await seed.ok("CreateStream", config=limits_config(seed, stream_name))
    for number in range(3):
        await seed.ok("Publish", stream=stream_name, subject="orders.x", payload=b"%d" % number)
    await seed.ok("CreateConsumer", stream=stream_name, config=seed.new("ConsumerConfigPb", name="push"))
    events = await seed.events("Subscribe", stream=stream_name, consumer="push", batch_size=2, stop_when_empty=True)
    assert [(e.message.seq, e.message.payload) for e in events[:-1]] == [(1, b"0"), (2, b"1"), (3, b"2")]
    assert events[-1].WhichOneof("event") == "stopped" and events[-1].stopped.reason == "empty"
    for seq in (1, 2, 3):
        await seed.ok("Ack", stream=stream_name, consumer="push", seq=seq)
    with pytest.raises(grpc.aio.AioRpcError) as missing:
        await seed.events("Subscribe", stream=stream_name, consumer="nobody", stop_when_empty=True)
    assert missing.value.code() == grpc.StatusCode.NOT_FOUND


async def test_multi_partition_streams_and_refused_rpcs(
    seed: SeedClient, stream_name: str, router_addresses: list[str]
) -> None:
    async with Client(router_addresses) as weir:
        await weir.create_stream(stream_config(stream_name, partitions=2))
    message = await seed.refused("Publish", "invalid_argument", stream=stream_name, subject="a", payload=b"x")
    assert "2 partitions" in message
    await seed.refused("Fetch", "invalid_argument", stream=stream_name, consumer="c", batch_size=1)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await seed.call("ReplicateMessage", stream=stream_name)
    assert refused.value.code() == grpc.StatusCode.PERMISSION_DENIED
    assert "internal replication" in str(refused.value.details())


def test_stream_config_round_trip() -> None:
    """Pure: a seed config through Weir's and back keeps every field Weir stores."""
    config = kept.StreamConfigPb(name="s", subjects_filter=["a.>"], max_msg_bytes=1024, ephemeral=True)
    config.retention.limits.max_age_ms = 60_000
    config.max_msgs_per_subject = 3
    weir = mapping.stream_config_from_seed(config)
    assert (weir.partitions, weir.storage, weir.limits.max_msgs_per_subject) == (1, types_pb2.STORAGE_KIND_MEMORY, 3)
    back = mapping.stream_config_to_seed(weir)
    config.retention.limits.strict_limits = True  # Weir always prunes per message
    assert back == config
    work_queue = kept.StreamConfigPb(name="w")
    work_queue.retention.work_queue.SetInParent()
    assert mapping.stream_config_from_seed(work_queue).retention == types_pb2.RETENTION_POLICY_WORK_QUEUE


# -- the object store (the seed's "Phase 4": bucket B is the stream obj:B) -------------------------------


@pytest.fixture
async def object_bucket(seed: SeedClient, stream_name: str) -> AsyncIterator[str]:
    """A bucket the seed's way: CreateStream of `obj:<bucket>` (Weir's object bucket)."""
    bucket = stream_name[-40:].lstrip("-_")
    await seed.ok("CreateStream", config=seed.new("StreamConfigPb", name=f"obj:{bucket}", max_msgs_per_subject=4))
    yield bucket
    await seed.ok("DeleteStream", name=f"obj:{bucket}")


def put_frames(seed: SeedClient, bucket: str, name: str, pieces: list[bytes], **start: Any) -> list[Any]:
    """A PutObjectStream: `start`, one frame of data per piece, `finish`."""
    frames = [seed.new("PutObjectStreamFrame", start=seed.new("PutObjectStart", bucket=bucket, name=name, **start))]
    frames += [seed.new("PutObjectStreamFrame", data=piece) for piece in pieces]
    return [*frames, seed.new("PutObjectStreamFrame", finish=True)]


async def test_objects_round_trip_through_the_seed(
    seed: SeedClient, object_bucket: str, router_addresses: list[str]
) -> None:
    """Each of the seed's 9 object calls: a unary object with headers, a streamed multi-chunk one
    with its sha256 (chunked as the client's frames), read whole, streamed and by range, listed,
    its revisions, deleted; what the seed client stored is Weir's object (read through the SDK)."""
    bucket = object_bucket
    small = b"0123456789" * 1000
    header = seed.new("MessageHeader", key="type", value="text")
    put = await seed.ok("PutObject", bucket=bucket, name="a.txt", payload=small, chunk_size=4096, headers=[header])
    assert (put.info.name, put.info.total_bytes, put.info.chunk_size, put.info.chunk_count) == (
        "a.txt",
        10_000,
        4096,
        3,
    )
    assert put.info.sha256 == hashlib.sha256(small).hexdigest() and put.info.metadata_seq > 0
    got = await seed.ok("GetObject", bucket=bucket, name="a.txt")
    assert got.payload == small and [(h.key, h.value) for h in got.info.headers] == [("type", "text")]

    big = bytes(range(256)) * 1200  # 307,200 bytes in 5 frames of 64 KiB and a short one
    pieces = [big[start : start + 65_536] for start in range(0, len(big), 65_536)]
    digest = hashlib.sha256(big).hexdigest()
    streamed = await seed.upload("PutObjectStream", put_frames(seed, bucket, "media/big.bin", pieces, sha256=digest))
    assert (streamed.success, streamed.result_code) == (True, "ok"), streamed
    assert (streamed.info.total_bytes, streamed.info.chunk_size, streamed.info.chunk_count) == (307_200, 65_536, 5)
    assert streamed.info.sha256 == digest
    frames = await seed.events("GetObjectStream", bucket=bucket, name="media/big.bin")
    assert frames[0].HasField("info") and frames[0].info.sha256 == digest and frames[-1].done
    data = [frame.data for frame in frames[1:-1]]
    assert len(data) == 5 and hashlib.sha256(b"".join(data)).hexdigest() == digest
    ranged = await seed.ok("GetObjectRange", bucket=bucket, name="media/big.bin", offset=65_000, len=1_000)
    assert (ranged.actual_offset, ranged.payload, ranged.info.total_bytes) == (65_000, big[65_000:66_000], 307_200)
    tail = await seed.ok("GetObjectRange", bucket=bucket, name="media/big.bin", offset=307_000)  # len 0: to the end
    assert tail.payload == big[307_000:]
    beyond = await seed.ok("GetObjectRange", bucket=bucket, name="media/big.bin", offset=400_000, len=10)
    assert (beyond.payload, beyond.actual_offset) == (b"", 307_200)

    info = await seed.ok("GetObjectInfo", bucket=bucket, name="media/big.bin")
    assert info.info.metadata_seq == streamed.info.metadata_seq and not info.deleted
    listed = await seed.ok("ListObjects", bucket=bucket)
    assert [(e.name, e.total_bytes, e.deleted) for e in listed.entries] == [
        ("a.txt", 10_000, False),
        ("media/big.bin", 307_200, False),
    ]
    assert [e.name for e in (await seed.ok("ListObjects", bucket=bucket, name_prefix="media/")).entries] == [
        "media/big.bin"
    ]
    second = await seed.ok("PutObject", bucket=bucket, name="a.txt", payload=b"second", dedupe=True)
    assert second.info.deduped and second.info.metadata_seq > put.info.metadata_seq
    deleted = await seed.ok("DeleteObject", bucket=bucket, name="a.txt")
    gone = await seed.ok("GetObjectInfo", bucket=bucket, name="a.txt")
    assert (gone.HasField("info"), gone.deleted) == (False, True)
    revisions = (await seed.ok("ListObjectRevisions", bucket=bucket, name="a.txt")).revisions
    assert [(r.metadata_seq, r.deleted, r.total_bytes, r.sha256) for r in revisions] == [
        (put.info.metadata_seq, False, 10_000, put.info.sha256),
        (second.info.metadata_seq, False, 6, hashlib.sha256(b"second").hexdigest()),
        (deleted.tombstone_seq, True, 0, ""),
    ]
    later = await seed.ok(
        "ListObjectRevisions", bucket=bucket, name="a.txt", from_seq=second.info.metadata_seq, limit=1
    )
    assert [r.metadata_seq for r in later.revisions] == [second.info.metadata_seq]
    with_deleted = await seed.ok("ListObjects", bucket=bucket, include_deleted=True)
    assert [(e.name, e.deleted) for e in with_deleted.entries] == [("a.txt", True), ("media/big.bin", False)]
    empty = (await seed.ok("PutObject", bucket=bucket, name="empty", payload=b"")).info
    assert (empty.total_bytes, empty.chunk_size, empty.chunk_count) == (0, 0, 0)  # "0 for empty objects"
    assert empty.sha256 == hashlib.sha256(b"").hexdigest()
    assert (await seed.ok("GetObject", bucket=bucket, name="empty")).payload == b""
    frames = await seed.events("GetObjectStream", bucket=bucket, name="empty")
    assert [(frame.HasField("info"), frame.data, frame.done) for frame in frames] == [
        (True, b"", False),
        (False, b"", True),
    ]

    async with Client(router_addresses) as weir:  # the seed client's object is Weir's
        meta, chunks = await ObjectStore(weir).get(bucket, "media/big.bin")
        assert meta.sha256 == digest and b"".join([chunk async for chunk in chunks]) == big


async def test_object_calls_answer_not_found_and_refuse_bad_input_changing_nothing(
    seed: SeedClient, object_bucket: str, router_addresses: list[str]
) -> None:
    """The seed's result codes: no_such_bucket, no_such_object, sha_mismatch; a bad name, header
    list, chunk-less stream or bound is invalid_argument; none of them stores anything."""
    bucket, missing = object_bucket, f"{object_bucket[:30]}-none"
    await seed.ok("PutObject", bucket=bucket, name="kept", payload=b"k" * 100)
    before = await seed.ok("GetStreamInfo", name=f"obj:{bucket}")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("PutObject", {"name": "x", "payload": b"x"}),
        ("GetObject", {"name": "kept"}),
        ("DeleteObject", {"name": "kept"}),
        ("GetObjectInfo", {"name": "kept"}),
        ("ListObjects", {}),
        ("ListObjectRevisions", {"name": "kept"}),
        ("GetObjectRange", {"name": "kept", "len": 1}),
    ]
    for rpc, fields in calls:
        assert "does not exist" in await seed.refused(rpc, "no_such_bucket", bucket=missing, **fields)
    for rpc in ("GetObject", "GetObjectInfo", "GetObjectRange"):
        await seed.refused(rpc, "no_such_object", bucket=bucket, name="never")
    with pytest.raises(grpc.aio.AioRpcError) as not_found:
        await seed.events("GetObjectStream", bucket=bucket, name="never")
    assert not_found.value.code() == grpc.StatusCode.NOT_FOUND

    wrong_sha = await seed.refused("PutObject", "sha_mismatch", bucket=bucket, name="x", payload=b"x", sha256="ab" * 32)
    assert "the request said" in wrong_sha
    assert "name: 1..512" in await seed.refused("PutObject", "invalid_argument", bucket=bucket, name="", payload=b"x")
    assert "invalid" in await seed.refused("PutObject", "invalid_argument", bucket="bad bucket!", name="x")
    twice = [seed.new("MessageHeader", key="k", value=value) for value in ("1", "2")]
    assert "given twice" in await seed.refused(
        "PutObject", "invalid_argument", bucket=bucket, name="x", payload=b"x", headers=twice
    )
    assert "at most 10000" in await seed.refused(
        "ListObjectRevisions", "invalid_argument", bucket=bucket, name="kept", limit=10_001
    )
    streams = {
        "no start": put_frames(seed, bucket, "x", [b"y" * 1000])[1:],
        "no finish": put_frames(seed, bucket, "x", [b"y" * 1000])[:-1],
        "start twice": [*put_frames(seed, bucket, "x", [b"y" * 1000])[:2], *put_frames(seed, bucket, "x", [b"z"])],
        "wrong sha256": put_frames(seed, bucket, "x", [b"y" * 1000], sha256="cd" * 32),
    }
    for why, frames in streams.items():
        answer = await seed.upload("PutObjectStream", frames)
        assert (answer.success, answer.message != "") == (False, True), why
        assert answer.result_code == ("sha_mismatch" if why == "wrong sha256" else "invalid_argument"), (why, answer)
    not_a_bucket = seed.new("StreamConfigPb", name=f"obj:{missing}", subjects_filter=["objm.>", "objc.>"])
    assert "subjects_filter" in await seed.refused("CreateStream", "invalid_config", config=not_a_bucket)

    after = await seed.ok("GetStreamInfo", name=f"obj:{bucket}")
    assert after.stats.msg_count == before.stats.msg_count  # nothing stored, nothing left behind
    assert [e.name for e in (await seed.ok("ListObjects", bucket=bucket, include_deleted=True)).entries] == ["kept"]
    await seed.refused("GetStreamInfo", "no_such_stream", name=f"obj:{missing}")
    async with Client(router_addresses) as weir:
        assert await ObjectStore(weir).list_objects(bucket) == [("kept", 100, False)]


async def test_object_reads_are_bounded_and_a_missing_chunk_is_incomplete(
    seed: SeedClient, object_bucket: str, router_addresses: list[str]
) -> None:
    """An object above 4 MiB (one answer's limit) streams in and out, but GetObject and an unbounded
    GetObjectRange refuse it before reading; a 1 MiB frame is stored as Weir's largest chunk
    (960 KiB); a chunk gone from under the metadata is the seed's `incomplete` (ABORTED streamed)."""
    bucket = object_bucket
    payload = b"".join(bytes([n]) * 1024 * 1024 for n in range(5))  # 5 frames of 1 MiB
    put = await seed.upload(
        "PutObjectStream", put_frames(seed, bucket, "big", [payload[n << 20 : (n + 1) << 20] for n in range(5)])
    )
    assert (put.result_code, put.info.chunk_size, put.info.chunk_count) == ("ok", 960 * 1024, 6)
    assert "(GetObjectStream)" in await seed.refused("GetObject", "invalid_argument", bucket=bucket, name="big")
    await seed.refused("GetObjectRange", "invalid_argument", bucket=bucket, name="big")
    await seed.refused("GetObjectRange", "invalid_argument", bucket=bucket, name="big", len=5 * 1024 * 1024)
    too_big = await seed.refused("GetObjectRange", "invalid_argument", bucket=bucket, name="big", len=4 << 20)
    assert "the answer would be" in too_big  # 4 MiB with the info: above what a client receives by default
    ranged = await seed.ok("GetObjectRange", bucket=bucket, name="big", offset=1 << 20, len=3 << 20)
    assert ranged.payload == payload[1 << 20 : 4 << 20]
    frames = await seed.events("GetObjectStream", bucket=bucket, name="big")
    assert b"".join(frame.data for frame in frames) == payload

    async with Client(router_addresses) as weir:  # a chunk goes from under the object's metadata
        meta = await ObjectStore(weir).info(bucket, "big")
        assert meta is not None
        await weir.delete_messages(f"obj:{bucket}", 0, [meta.seqs[2]])
    assert "chunk 2" in await seed.refused(
        "GetObjectRange", "incomplete", bucket=bucket, name="big", offset=2 << 20, len=10
    )
    with pytest.raises(grpc.aio.AioRpcError) as incomplete:
        await seed.events("GetObjectStream", bucket=bucket, name="big")
    assert incomplete.value.code() == grpc.StatusCode.ABORTED and "no longer stored" in str(incomplete.value.details())
    await seed.ok("PutObject", bucket=bucket, name="small", payload=b"s" * 3000, chunk_size=1000)
    async with Client(router_addresses) as weir:
        meta = await ObjectStore(weir).info(bucket, "small")
        assert meta is not None
        await weir.delete_messages(f"obj:{bucket}", 0, [meta.seqs[0]])
    await seed.refused("GetObject", "incomplete", bucket=bucket, name="small")


def test_object_calls_need_their_weir_namesakes_grants() -> None:
    """Pure: a seed object call needs what its weir.v1.ObjectStore namesake needs; a PutObjectStream
    is checked against its first frame's start, as weir.v1's."""
    path = f"/{SERVICE}/"
    assert permissions.requirement(path + "PutObject", kept.PutObjectRequest(bucket="media")) == Requirement(
        "publish", "obj:media"
    )
    assert permissions.requirement(path + "GetObjectRange", kept.GetObjectRangeRequest(bucket="media")) == Requirement(
        "read", "obj:media"
    )
    start = kept.PutObjectStreamFrame(start=kept.PutObjectStart(bucket="media", name="a"))
    assert permissions.requirement(path + "PutObjectStream", start) == Requirement("publish", "obj:media")
    assert permissions.first_item_names_it(path + "PutObjectStream")
    assert not permissions.first_item_names_it(path + "Publish")
    assert permissions.requirement(path + "ReplicateMessage", kept.ReplicateMessageRequest()) is None


# -- TransferStream: a fenced leadership transfer ------------------------------------------------------


@pytest.mark.timeout(240)
async def test_transfer_stream_hands_leadership_over_under_ack_all_load_losing_nothing(
    seed: SeedClient, stream_name: str, cluster: LocalCluster
) -> None:
    """TransferStream of a three-copy stream while four publishers publish with ack all (each retried
    until acknowledged, its msg_id its payload): leadership moves to another copy, the old primary
    keeps its copy, the summary names the log end the old primary fenced at, publishing goes on at
    the new primary, and afterwards every copy holds every acknowledged message once, at its seq."""
    async with WeirClient(cluster.router_addresses, retry_timeout_s=30) as client:
        await client.create_stream(stream_config(stream_name, replicas=3))
        publisher = IdempotentPublisher(client, stream_name).start()
        try:
            await publisher.wait_for(200, 60)
            before = (await client.route(stream_name, refresh=True)).partitions[0].primary.node_id
            (chunk,) = await seed.events("TransferStream", name=stream_name)
            acked_before = len(publisher.acked)
            await publisher.wait_for(acked_before + 200, 60)  # publishing goes on at the new primary
        finally:
            await publisher.stop()
        route = (await client.route(stream_name, refresh=True)).partitions[0]
        assert route.primary.node_id != before
        assert before in {broker.node_id for broker in route.secondaries}  # leadership only: the copy stays
        assert (chunk.WhichOneof("body"), chunk.summary.total_bytes) == ("summary", 0)
        fenced_at = chunk.summary.stream_last_seq
        seqs = sorted(publisher.acked.values())
        assert seqs[0] <= fenced_at < seqs[-1], (fenced_at, seqs[0], seqs[-1])  # acknowledged on both sides

        async def every_copy_holds_every_acknowledged_message() -> bool:
            for node in cluster.nodes:
                async with NodeClient(node.internal_address, timeout_s=10) as reader:
                    stored = [(message.seq, message.payload) async for message in reader.read_all(stream_name)]
                payloads = [payload for _, payload in stored]
                assert len(payloads) == len(set(payloads)), f"{node.name} stored a message twice"
                at = dict(stored)
                if any(at.get(seq) != payload for payload, seq in publisher.acked.items()):
                    return False
            return True

        await eventually(
            every_copy_holds_every_acknowledged_message, 30, "every copy holds every acknowledged message at its seq"
        )
        print(
            f"transferred {stream_name} {before} -> {route.primary.node_id} fenced at seq {fenced_at}; "
            f"acknowledged {len(publisher.acked)}, 0 lost; longest publish {publisher.longest_s * 1000:.0f} ms; "
            f"retries {dict(publisher.retries)}"
        )


# -- the client tour: every RPC of the seed's service ---------------------------------------------------

REPLICATE_RPCS = frozenset(
    {
        "ReplicateConsumerState",
        "ReplicateSourceTailState",
        "ReplicateStreamCreate",
        "ReplicateMessage",
        "ReplicateStreamDelete",
        "ReplicateTruncate",
        "ReplicateStreamUpdate",
        "ReplicateWorkQueueAck",
    }
)


async def tour_request(seed: SeedClient, rpc: str, stream: str, bucket: str) -> Any:
    """The request the tour sends to `rpc` (PutObjectStream: its frames); None for an RPC the
    tour does not know, which fails it (so a seed RPC added later cannot be missed)."""
    on_stream = {"stream": stream}
    owner = (await seed.call("GetStreamInfo", name=stream)).ring_owner_node_id  # 0 once deleted
    fields: dict[str, dict[str, Any]] = {
        "CreateStream": {"config": limits_config(seed, stream)},
        "DeleteStream": {"name": stream},
        "GetStreamInfo": {"name": stream},
        "ListStreams": {},
        "GetStreamSources": {},
        "UpdateStream": {"name": stream, "max_msgs": 1000},
        "Publish": {**on_stream, "subject": "orders.tour", "payload": b"tour"},
        "Fetch": {**on_stream, "consumer": "tour", "batch_size": 1},
        "Ack": {**on_stream, "consumer": "tour", "seq": 1},
        "Nak": {**on_stream, "consumer": "tour", "seq": 2},
        "Term": {**on_stream, "consumer": "tour", "seq": 3},
        "InProgress": {**on_stream, "consumer": "tour", "seq": 3},
        "Subscribe": {**on_stream, "consumer": "tour", "batch_size": 10, "stop_when_empty": True},
        "CreateConsumer": {**on_stream, "config": seed.new("ConsumerConfigPb", name="tour-2")},
        "DeleteConsumer": {**on_stream, "consumer": "tour-2"},
        "ListConsumers": on_stream,
        "GetConsumerInfo": {**on_stream, "consumer": "tour"},
        "TransferStream": {"name": stream},
        "MigrateStream": {"name": stream, "source_node_id": owner},
        "GetClusterStreamStats": {"include_per_stream": True},
        "WatchStreams": {},
        "ReadLatestAtSubject": {**on_stream, "subject": "orders.tour"},
        "ListSubjectsByPrefix": {**on_stream, "prefix": "orders."},
        "ScanExactAtSubject": {**on_stream, "subject": "orders.tour"},
        "ClearStreamAuthority": on_stream,
        "ListStreamAuthorityOverrides": {},
        "SetStreamPinned": {**on_stream, "pinned": False},
        "PutObject": {"bucket": bucket, "name": "tour", "payload": b"object"},
        "GetObject": {"bucket": bucket, "name": "tour"},
        "DeleteObject": {"bucket": bucket, "name": "tour"},
        "GetObjectInfo": {"bucket": bucket, "name": "tour"},
        "ListObjects": {"bucket": bucket},
        "GetObjectStream": {"bucket": bucket, "name": "tour"},
        "ListObjectRevisions": {"bucket": bucket, "name": "tour"},
        "GetObjectRange": {"bucket": bucket, "name": "tour", "offset": 1, "len": 2},
        "RebalanceStreams": {"plan": [seed.new("RebalancePlanEntry", name=stream, target_node_id=owner)]},
    }
    if rpc == "PutObjectStream":
        return put_frames(seed, bucket, "tour-streamed", [b"str", b"eamed"])
    if rpc in REPLICATE_RPCS:
        return seed.new(seed.service.methods_by_name[rpc].input_type.name)
    if rpc not in fields:
        return None
    return seed.new(seed.service.methods_by_name[rpc].input_type.name, **fields[rpc])


async def tour_call(seed: SeedClient, rpc: str, request: Any) -> tuple[grpc.StatusCode, str, list[Any]]:
    """Call `rpc` as its cardinality says: (status, details, the answers); a server stream is read
    to its end, WatchStreams (which never ends) to its first event."""
    method = seed.service.methods_by_name[rpc]
    path, out = f"/{SERVICE}/{rpc}", seed.classes[method.output_type.name].FromString
    serialize = lambda message: message.SerializeToString()  # noqa: E731
    try:
        if method.client_streaming:
            return (
                grpc.StatusCode.OK,
                "",
                [await seed.channel.stream_unary(path, serialize, out)(iter(request), timeout=30)],
            )
        if not method.server_streaming:
            return grpc.StatusCode.OK, "", [await seed.channel.unary_unary(path, serialize, out)(request, timeout=30)]
        call = seed.channel.unary_stream(path, serialize, out)(request, timeout=60)
        answers = []
        async for answer in call:
            answers.append(answer)
            if rpc == "WatchStreams":
                call.cancel()
                break
        return grpc.StatusCode.OK, "", answers
    except grpc.aio.AioRpcError as error:
        return error.code(), str(error.details()), []


async def update_later(seed: SeedClient, stream: str) -> None:
    """An UpdateStream half a second from now: an event for a watch opened meanwhile."""
    await asyncio.sleep(0.5)
    await seed.ok("UpdateStream", name=stream, max_msgs=2000)


async def test_the_client_tour_calls_every_rpc_of_the_seed(
    seed: SeedClient, stream_name: str, object_bucket: str
) -> None:
    """Every RPC of the seed's service, enumerated from the seed's own descriptor: 37 served (none
    UNIMPLEMENTED or refused), the 8 Replicate* refused with PERMISSION_DENIED saying why, and
    TransferStream moving the stream's leadership."""
    rpcs = [method.name for method in seed.service.methods]
    assert len(rpcs) == 45 and set(rpcs) >= REPLICATE_RPCS
    await seed.ok("CreateStream", config=limits_config(seed, stream_name))
    for n in range(3):
        await seed.ok("Publish", stream=stream_name, subject="orders.tour", payload=b"%d" % n)
    await seed.ok("CreateConsumer", stream=stream_name, config=seed.new("ConsumerConfigPb", name="tour"))
    await seed.ok("Fetch", stream=stream_name, consumer="tour", batch_size=3)
    ordered = sorted(rpcs, key=lambda rpc: rpc.startswith("Delete"))  # deletes last, else the seed's order
    served, refused = [], []
    for rpc in ordered:
        request = await tour_request(seed, rpc, stream_name, object_bucket)
        assert request is not None, f"the tour does not call {rpc}: add it"
        owner = (await seed.call("GetStreamInfo", name=stream_name)).ring_owner_node_id
        trigger = asyncio.create_task(update_later(seed, stream_name)) if rpc == "WatchStreams" else None
        code, details, answers = await tour_call(seed, rpc, request)
        if trigger is not None:  # (the watch reports the update)
            await trigger
        if rpc in REPLICATE_RPCS:
            assert code == grpc.StatusCode.PERMISSION_DENIED, (rpc, code, details)
            assert "internal" in details, (rpc, details)
            refused.append(rpc)
            continue
        assert code == grpc.StatusCode.OK and answers, (rpc, code, details)
        served.append(rpc)
        if rpc == "TransferStream":
            assert [answer.WhichOneof("body") for answer in answers] == ["summary"]
            moved_to = (await seed.ok("GetStreamInfo", name=stream_name)).ring_owner_node_id
            assert moved_to not in (0, owner), (owner, moved_to)
    assert (len(served), len(refused)) == (37, 8)
