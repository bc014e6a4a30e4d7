"""Cross-stream sources (StreamConfig.sources, issue 29): the pure rules (validation, subject
transforms, positions), then the real node over gRPC: filter, transform and provenance, the
position record surviving a SIGKILL, on_drop HALT and SKIP, the dead-letter stream, the status in
GetStreamInfo, and bad configs refused with INVALID_ARGUMENT before anything is stored."""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from weir import NodeClient, StreamSource, consumer_config, stream_config, stream_source
from weir.cluster import WeirClient
from weir.errors import (
    InvalidArgumentError,
    InvalidConfigError,
    InvalidNameError,
    InvalidSubjectError,
    NoSuchStreamError,
    WeirError,
)
from weir.options import SourceDropPolicy
from weir.v1 import streams_pb2, types_pb2
from weir_cli.launcher import NodeHandle, start_node
from weir_partition_node.commit_items import PreparedEntry, RemoveSeqs, TruncateTail
from weir_partition_node.node import Node
from weir_partition_node.record_batch import BatchRecord
from weir_partition_node.settings import NodeSettings
from weir_partition_node.storage.base import SourcePosition
from weir_server.internal_clients import ChangeFeedClient
from weir_server.sources import (
    SubjectRewrite,
    decode_position,
    encode_position,
    initial_position,
    parse_source_msg_id,
    position_subject,
    provenance,
    source_msg_id,
    validate_sources,
)
from weir_server.streamconfig import MAX_MESSAGE_BYTES, normalize_config

from tests.conftest import eventually, start_cluster

# -- pure rules ----------------------------------------------------------------------------------------


def transform(pattern: str, destination: str) -> types_pb2.SubjectTransform:
    return types_pb2.SubjectTransform(source_pattern=pattern, destination=destination)


def test_a_transform_substitutes_the_wildcards_it_matched() -> None:
    rewrite = SubjectRewrite.of(transform("events.*.>", "audit.{{wildcard(2)}}.from.{{ wildcard(1) }}"))
    assert rewrite.apply("events.eu.orders.created") == "audit.orders.created.from.eu"
    assert rewrite.apply("events.eu") is None
    assert rewrite.apply("other.eu.x") is None
    assert SubjectRewrite.of(transform("a.b", "c")).apply("a.b") == "c"


@pytest.mark.parametrize(
    ("pattern", "destination", "error"),
    [
        ("events.>", "audit.{{wildcard(2)}}", InvalidConfigError),
        ("events.>", "", InvalidConfigError),
        ("events..x", "audit", InvalidSubjectError),
        ("events.*", "audit.*", InvalidConfigError),
        ("events.*", "audit.{{partition(1)}}", InvalidConfigError),
    ],
)
def test_a_bad_transform_is_refused(pattern: str, destination: str, error: type[WeirError]) -> None:
    with pytest.raises(error):
        SubjectRewrite.of(transform(pattern, destination))


def sourcing(
    *sources: StreamSource | types_pb2.StreamSource, partitions: int = 1, name: str = "mirror"
) -> types_pb2.StreamConfig:
    config = stream_config(name, partitions=partitions).to_proto()
    config.sources.extend(source.to_proto() if isinstance(source, StreamSource) else source for source in sources)
    return config


@pytest.mark.parametrize(
    ("config", "error", "says"),
    [
        (sourcing(stream_source("a"), partitions=2), InvalidConfigError, "one partition"),
        (sourcing(stream_source("mirror")), InvalidConfigError, "cannot source itself"),
        (sourcing(stream_source("a"), stream_source("a")), InvalidConfigError, "listed twice"),
        (sourcing(stream_source("bad name")), InvalidNameError, "source_stream"),
        (sourcing(stream_source("a", filter_subject="x.>.y")), InvalidSubjectError, "'>'"),
        (sourcing(stream_source("a", dlq_stream="mirror")), InvalidConfigError, "dead-letter"),
        (sourcing(*(stream_source(f"s{index}") for index in range(17))), InvalidConfigError, "at most 16"),
        (sourcing(types_pb2.StreamSource(source_stream="a", on_drop=7)), InvalidConfigError, "on_drop"),  # type: ignore[arg-type]
    ],
)
def test_bad_sources_are_refused_with_what_was_wrong(config: types_pb2.StreamConfig, error: type, says: str) -> None:
    with pytest.raises(error, match=says):
        normalize_config(config, MAX_MESSAGE_BYTES)


def test_good_sources_pass_and_positions_round_trip() -> None:
    validate_sources(sourcing(stream_source("a", filter_subject="x.*", transform=("x.*", "y.{{wildcard(1)}}"))))
    assert decode_position(encode_position(41)) == 41  # an earlier version's position record
    assert decode_position(b"not json") == 0
    assert parse_source_msg_id(source_msg_id("orders", 2, 41)) == ("orders", 2, 41)
    others = ["", "order-7", "$weir.source/orders/2", "$weir.source/orders/x/1", "$weir.source//1/2"]
    others += ["$weir.source/o/1/\u00b2", f"$weir.source/o/1/{2**63}", "$weir.source/o/1/2/3"]
    for other in others:
        assert parse_source_msg_id(other) is None, other
    headers = [("waymaker-source-stream", "a"), ("waymaker-source-partition", "2"), ("waymaker-source-seq", "9")]
    assert provenance(headers) == ("a", 2, 9)
    assert provenance([("other", "1")]) is None


def test_the_initial_position_follows_start_seq_then_backfill_then_the_first_message() -> None:
    assert initial_position(stream_source("a", start_seq=10).to_proto(), 1, 100) == 9
    assert initial_position(stream_source("a", max_initial_backfill=30).to_proto(), 1, 100) == 70
    assert initial_position(stream_source("a", max_initial_backfill=300).to_proto(), 1, 100) == 0
    assert initial_position(stream_source("a").to_proto(), 5, 100) == 4


# -- the real node over gRPC ---------------------------------------------------------------------------


async def sourced(client: NodeClient, stream: str) -> list[types_pb2.Message]:
    """Every message a consumer of `stream` is delivered (position records are not among them)."""
    return [message async for message in client.read_all(stream) if not message.subject.startswith("$weir.")]


async def wait_for_count(
    client: NodeClient, stream: str, count: int, timeout_s: float = 20.0
) -> list[types_pb2.Message]:
    found: list[types_pb2.Message] = []

    async def enough() -> bool:
        nonlocal found
        found = await sourced(client, stream)
        return len(found) >= count

    await eventually(enough, timeout_s, f"{count} messages sourced into {stream}")
    return found


async def wait_settled(
    client: NodeClient | WeirClient, stream: str, positions: dict[str, int], timeout_s: float
) -> None:
    """Until each source's tails report `positions` (source stream -> last_sourced_seq, summed over
    its partitions). A position is committed with what it sourced: once it is reached, the log
    holds everything those seqs gave, and a tail that doubled anything would show it already."""

    async def settled() -> bool:
        reached: dict[str, int] = {}
        for status in (await client.stream_info(stream)).sources_status:
            reached[status.source_stream] = reached.get(status.source_stream, 0) + status.last_sourced_seq
        return reached == positions

    await eventually(settled, timeout_s, f"{stream}'s sources settled at {positions}")


def origin(message: types_pb2.Message) -> tuple[str, int, int] | None:
    return provenance([(header.key, header.value) for header in message.headers])


@pytest.fixture
def sources_node(tmp_path: Path) -> Iterator[NodeHandle]:
    handle = start_node(tmp_path / "data", node_id="sources")
    yield handle
    handle.kill()


async def test_a_stream_sources_two_others_with_a_filter_and_a_transform(sources_node: NodeHandle) -> None:
    async with NodeClient(sources_node.client_address) as client:
        await client.create_stream(stream_config("orders", partitions=2))
        await client.create_stream(stream_config("payments"))
        for index in range(40):
            await client.publish(
                "orders", f"orders.{'eu' if index % 2 else 'us'}.{index}", b"o%d" % index, key=b"%d" % index
            )
            await client.publish("payments", f"pay.{index}", b"p%d" % index, headers={"h": str(index)})
        await client.create_stream(
            stream_config(
                "audit",
                sources=[
                    stream_source(
                        "orders",
                        filter_subject="orders.eu.*",
                        transform=("orders.*.*", "audit.{{wildcard(1)}}.{{wildcard(2)}}"),
                    ),
                    stream_source("payments"),
                ],
            )
        )
        found = await wait_for_count(client, "audit", 20 + 40)
        per_origin: dict[tuple[str, int], list[int]] = {}
        for message in found:
            where = origin(message)
            assert where is not None
            per_origin.setdefault(where[:2], []).append(where[2])
            if where[0] == "orders":
                assert message.subject.startswith("audit.eu.")
            else:
                assert (
                    dict((header.key, header.value) for header in message.headers)["h"] == message.payload[1:].decode()
                )
        for (stream, partition), seqs in per_origin.items():
            assert seqs == sorted(seqs), f"{stream}/{partition} out of order"
        assert sum(len(seqs) for (stream, _), seqs in per_origin.items() if stream == "orders") == 20
        info = await client.stream_info("audit")
        statuses = {(status.source_stream, status.source_partition): status for status in info.sources_status}
        assert set(statuses) == {("orders", 0), ("orders", 1), ("payments", 0)}
        assert statuses[("payments", 0)].last_sourced_seq == 40 and statuses[("payments", 0)].pulled_total == 40
        assert not any(status.last_error for status in statuses.values())
        # Live: a new message flows through.
        await client.publish("payments", "pay.live", b"live")
        await wait_for_count(client, "audit", 61)
        await wait_settled(client, "audit", {"orders": 40, "payments": 41}, timeout_s=10)
        await assert_no_internal_record(client, "audit", 61)
        async with ChangeFeedClient(sources_node.internal_address) as feed:
            changes = (await feed.read_changes()).changes
        appended = [change.append for change in changes if change.stream == "audit" and change.HasField("append")]
        assert sum(append.message_count for append in appended) == 61  # the change feed has no position either


async def assert_no_internal_record(client: NodeClient, stream: str, count: int) -> None:
    """Issue 55: a sourcing stream holding `count` sourced or published messages shows nothing else
    through any read: seqs 1..count with no gap, no `$weir.` subject listed, read at a subject,
    counted, or delivered to a consumer (the source positions are kept beside the log)."""
    messages = [message async for message in client.read_all(stream)]
    assert [message.seq for message in messages] == list(range(1, count + 1))
    assert not any(message.subject.startswith("$weir.") for message in messages)
    subjects = await client.list_subjects(stream)
    assert subjects and not any(subject.startswith("$weir.") for subject in subjects)
    assert await client.list_subjects(stream, prefix="$weir.") == []
    statuses = (await client.stream_info(stream)).sources_status
    for status in statuses:
        marker = f"$weir.source.{status.source_stream}.{status.source_partition}"
        assert await client.latest_at_subject(stream, marker) is None
        assert await client.scan_subject(stream, marker) == []
    info = await client.stream_info(stream)
    stats = info.stats.partitions[0]
    assert (info.stats.msg_count, stats.first_seq, stats.last_seq, stats.msg_count) == (count, 1, count, count)
    assert info.stats.bytes == sum(message.ByteSize() for message in messages)
    consumer = f"every-api-{count}"
    await client.create_consumer(stream, consumer_config(consumer, ack_wait_ms=30_000))
    delivered = await client.fetch(stream, consumer, batch_size=1000, max_wait_ms=500)
    assert [message.seq for message in delivered] == list(range(1, count + 1))
    await client.delete_consumer(stream, consumer)


def source_seqs(messages: list[types_pb2.Message], stream: str) -> list[int]:
    return [where[2] for where in map(origin, messages) if where is not None and where[0] == stream]


async def test_a_sigkill_mid_backfill_resumes_after_the_stored_position(sources_node: NodeHandle) -> None:
    """The tail's position is in the sourcing stream's own log, committed with what it appended: a
    crash at any point neither skips nor doubles a sourced message."""
    async with NodeClient(sources_node.client_address) as client:
        await client.create_stream(stream_config("events"))
        for start in range(0, 6000, 500):
            entries = [
                streams_pb2.PublishEntry(subject=f"ev.{'keep' if index % 3 else 'drop'}", payload=b"%d" % index)
                for index in range(start, start + 500)
            ]
            await client.publish_batch("events", entries)
        await client.create_stream(stream_config("kept", sources=[stream_source("events", filter_subject="ev.keep")]))

        async def some_sourced() -> bool:
            return len(await sourced(client, "kept")) > 0

        await eventually(some_sourced, 20, "the backfill under way")
    sources_node.kill()
    sources_node.start(reuse_ports=True)
    async with NodeClient(sources_node.client_address) as client:
        await wait_settled(client, "kept", {"events": 6000}, timeout_s=60)
        found = await sourced(client, "kept")
        expected = [seq for seq in range(1, 6001) if (seq - 1) % 3]
        assert source_seqs(found, "events") == expected
        info = await client.stream_info("kept")
        assert info.sources_status[0].last_sourced_seq == 6000


async def dead_letters(client: NodeClient, stream: str) -> list[dict[str, object]]:
    return [json.loads(message.payload) async for message in client.read_all(stream)]


@pytest.mark.parametrize("on_drop", ["halt", "skip"])
async def test_messages_removed_before_they_were_read_halt_or_skip(
    sources_node: NodeHandle, on_drop: SourceDropPolicy
) -> None:
    async with NodeClient(sources_node.client_address) as client:
        await client.create_stream(stream_config("short", max_msgs=10))
        await client.create_stream(stream_config("errors"))
        for index in range(50):
            await client.publish("short", "s", b"%d" % index)
        await client.create_stream(
            stream_config("late", sources=[stream_source("short", start_seq=5, on_drop=on_drop, dlq_stream="errors")])
        )

        async def reported() -> bool:
            return len(await dead_letters(client, "errors")) >= 1

        await eventually(reported, 20, "the drop reported to the dead-letter stream")
        record = (await dead_letters(client, "errors"))[0]
        assert record["sourcing_stream"] == "late" and record["source_stream"] == "short"
        assert "5..40" in str(record["error"])
        status = (await client.stream_info("late")).sources_status[0]
        assert "5..40" in status.last_error and status.last_error_ts_ms > 0
        if on_drop == "halt":  # the tail stopped at its first read: nothing was or will be sourced
            assert status.halted and await sourced(client, "late") == []
        else:
            found = await wait_for_count(client, "late", 10)
            assert source_seqs(found, "short") == list(range(41, 51)) and not status.halted


async def test_a_transform_mismatch_is_reported_and_the_rest_is_sourced(sources_node: NodeHandle) -> None:
    async with NodeClient(sources_node.client_address) as client:
        await client.create_stream(stream_config("mixed"))
        await client.create_stream(stream_config("mixed-errors"))
        for subject in ("a.1", "b.2", "a.3"):
            await client.publish("mixed", subject, b"x")
        await client.create_stream(
            stream_config(
                "only-a",
                sources=[
                    stream_source("mixed", transform=("a.*", "renamed.{{wildcard(1)}}"), dlq_stream="mixed-errors")
                ],
            )
        )
        found = await wait_for_count(client, "only-a", 2)
        assert [message.subject for message in found] == ["renamed.1", "renamed.3"]

        async def reported() -> bool:
            return len(await dead_letters(client, "mixed-errors")) == 1

        await eventually(reported, 10, "the mismatch reported")
        record = (await dead_letters(client, "mixed-errors"))[0]
        assert record["source_seq"] == 2 and "does not match" in str(record["error"])
        status = (await client.stream_info("only-a")).sources_status[0]
        assert status.last_sourced_seq == 3 and status.pulled_total == 2


async def test_a_source_created_later_is_waited_for_and_direct_publishes_mix_in(sources_node: NodeHandle) -> None:
    async with NodeClient(sources_node.client_address) as client:
        await client.create_stream(stream_config("early", sources=[stream_source("not-yet")]))

        async def waiting() -> bool:
            statuses = (await client.stream_info("early")).sources_status
            return bool(statuses) and "does not exist" in statuses[0].last_error

        await eventually(waiting, 10, "the missing source reported")
        await client.publish("early", "direct", b"d")
        await client.create_stream(stream_config("not-yet"))
        await client.publish("not-yet", "x", b"1")
        found = await wait_for_count(client, "early", 2)
        assert [message.subject for message in found] == ["direct", "x"]
        assert not (await client.stream_info("early")).sources_status[0].last_error
        with pytest.raises(WeirError, match="Weir's own"):
            await client.publish("early", "$weir.source.not-yet.0", b"forged")
        # A sourced message's msg_id says the position it settles: a publisher cannot forge one.
        with pytest.raises(InvalidArgumentError, match="Weir's own"):
            await client.publish("early", "direct", b"forged", msg_id=source_msg_id("not-yet", 0, 1000))
        info = await client.stream_info("early")
        assert (info.stats.msg_count, info.sources_status[0].last_sourced_seq) == (2, 1)


async def test_a_bad_sources_config_is_refused_over_grpc_and_stores_nothing(sources_node: NodeHandle) -> None:
    async with NodeClient(sources_node.client_address) as client:
        with pytest.raises(InvalidConfigError, match="one partition"):
            await client.create_stream(stream_config("wide", partitions=3, sources=[stream_source("a")]))
        with pytest.raises(NoSuchStreamError):
            await client.stream_info("wide")


# -- a cluster: SIGKILL of the sourcing stream's primary mid-backfill ----------------------------------


async def cluster_messages(client: WeirClient, stream: str) -> list[types_pb2.Message]:
    """Every stored message of partition 0, read from its primary."""
    found: list[types_pb2.Message] = []
    position = 0

    async def read(node: NodeClient) -> streams_pb2.ReadMessagesResponse:
        return await node.read_messages(stream, 0, position, max_messages=1000)

    while True:
        response = await client.on_leader(stream, 0, read)
        found.extend(response.messages)
        if response.next_seq > response.last_seq:
            return found
        position = response.next_seq


async def publish_all(client: WeirClient, stream: str, entries: list[streams_pb2.PublishEntry]) -> None:
    async def publish(node: NodeClient) -> list[streams_pb2.PublishResult]:
        return await node.publish_batch(stream, entries, ack_level="all")

    await client.on_leader(stream, 0, publish)


@pytest.mark.slow
@pytest.mark.timeout(240)
async def test_a_failover_mid_backfill_neither_skips_nor_doubles(tmp_path: Path) -> None:
    """The issue's test: a stream sourcing two others with a filter and a transform holds exactly
    the matching messages, in order per source, after a SIGKILL of its primary mid-backfill."""
    cluster = start_cluster(tmp_path)
    try:
        async with WeirClient(cluster.router_addresses, retry_timeout_s=30) as client:
            await client.create_stream(stream_config("orders", replicas=3))
            await client.create_stream(stream_config("refunds", replicas=3))
            for start in range(0, 5000, 500):
                for stream, subject in (("orders", "order"), ("refunds", "refund")):
                    entries = [
                        streams_pb2.PublishEntry(
                            subject=f"{subject}.{'eu' if index % 2 else 'us'}.{index}", payload=b"%d" % index
                        )
                        for index in range(start, start + 500)
                    ]
                    await publish_all(client, stream, entries)
            await client.create_stream(
                stream_config(
                    "ledger",
                    replicas=3,
                    sources=[
                        stream_source(
                            "orders",
                            filter_subject="order.eu.*",
                            transform=("order.*.*", "ledger.order.{{wildcard(2)}}"),
                        ),
                        stream_source("refunds", filter_subject="refund.eu.*"),
                    ],
                )
            )

            async def under_way() -> bool:
                status = (await client.stream_info("ledger")).sources_status
                return any(entry.last_sourced_seq > 0 for entry in status)

            await eventually(under_way, 30, "the backfill under way")
            route = await client.route("ledger")
            victim = next(node for node in cluster.nodes if node.name == route.partitions[0].primary.node_id)
            settled = sum(entry.last_sourced_seq for entry in (await client.stream_info("ledger")).sources_status)
            victim.kill()
            assert settled < 10_000, "the kill must land mid-backfill"

            await wait_settled(client, "ledger", {"orders": 5000, "refunds": 5000}, timeout_s=90)
            found = await cluster_messages(client, "ledger")
            expected = [seq for seq in range(1, 5001) if (seq - 1) % 2]
            assert source_seqs(found, "orders") == expected
            assert source_seqs(found, "refunds") == expected
            assert all(
                message.subject.startswith("ledger.order.")
                for message in found
                if origin(message)[0] == "orders"  # type: ignore[index]
            )
            assert (await client.route("ledger", refresh=True)).partitions[0].primary.node_id != victim.name
            info = await client.stream_info("ledger")
            assert sorted((entry.source_stream, entry.last_sourced_seq) for entry in info.sources_status) == [
                ("orders", 5000),
                ("refunds", 5000),
            ]
            # Issue 55: the new primary resumed from the positions its copy stored beside the log;
            # nothing else is in it: seqs 1..5000 with no gap, counted, listed and read as such.
            assert [message.seq for message in found] == list(range(1, 5001))
            assert (info.msg_count, info.partitions[0].last_seq) == (5000, 5000)
            subjects = await client.on_leader("ledger", 0, lambda node: node.list_subjects("ledger"))
            assert subjects and not any(subject.startswith("$weir.") for subject in subjects)
    finally:
        cluster.stop()


async def test_an_idle_tail_keeps_its_position_whatever_retention_removes(sources_node: NodeHandle) -> None:
    """The position is beside the log, not a record retention could take: direct publishes push the
    sourced message out, and after a restart it is not sourced again."""
    async with NodeClient(sources_node.client_address) as client:
        await client.create_stream(stream_config("quiet"))
        await client.publish("quiet", "q", b"1")
        await client.create_stream(stream_config("busy", max_msgs=20, sources=[stream_source("quiet")]))
        await wait_for_count(client, "busy", 1)
        for index in range(100):  # direct publishes: they push the sourced message (seq 1) out
            await client.publish("busy", "direct", b"%d" % index)
        stats = (await client.stream_info("busy")).stats.partitions[0]
        assert (stats.first_seq, stats.last_seq, stats.msg_count) == (82, 101, 20)  # no record of the position
    sources_node.kill()
    sources_node.start(reuse_ports=True)
    async with NodeClient(sources_node.client_address) as client:
        await client.publish("quiet", "q", b"2")

        await wait_settled(client, "busy", {"quiet": 2}, timeout_s=15)
        # Seq 1 was pushed out by the direct publishes, and is not sourced again.
        assert source_seqs(await sourced(client, "busy"), "quiet") == [2]


async def test_last_error_is_cleared_once_the_tail_appends_again(sources_node: NodeHandle) -> None:
    """issue 55: a source that failed and recovered shows no error (the seed: empty when healthy)."""
    async with NodeClient(sources_node.client_address) as client:
        await client.create_stream(stream_config("comes-back"))
        await client.create_stream(stream_config("follows-it", sources=[stream_source("comes-back")]))
        await client.publish("comes-back", "x", b"1")
        await wait_for_count(client, "follows-it", 1)
        await client.delete_stream("comes-back")

        async def failing() -> bool:
            statuses = (await client.stream_info("follows-it")).sources_status
            return bool(statuses) and bool(statuses[0].last_error)

        await eventually(failing, 15, "the vanished source reported")
        await client.create_stream(stream_config("comes-back"))
        for index in range(3):  # seqs 1..3: the tail, at position 1, appends 2 and 3
            await client.publish("comes-back", "x", b"again %d" % index)
        await wait_for_count(client, "follows-it", 3)

        async def healthy() -> bool:
            return not (await client.stream_info("follows-it")).sources_status[0].last_error

        await eventually(healthy, 10, "the error cleared once the tail appended again")
        status = (await client.stream_info("follows-it")).sources_status[0]
        assert (status.last_error_ts_ms, status.last_sourced_seq) == (0, 3)


async def test_a_stream_of_an_earlier_version_resumes_from_its_position_record_once(tmp_path: Path) -> None:
    """The upgrade path: a sourcing stream an earlier version wrote keeps its position as a record at
    `$weir.source.<source>.<partition>`. With no position stored beside the log, the tail reads that
    record once and resumes after it (here past two messages the earlier version had filtered out,
    which no scan of the sourced messages could tell), removes it after its first commit, and keeps
    the position beside the log from then on: a restart resumes from there, with no record."""
    data_dir = tmp_path / "data"
    core = await Node.open(NodeSettings(node_id="upgraded", data_dir=data_dir))
    try:
        await core.admin.create_stream(stream_config("orders").to_proto())
        await core.publisher.publish(
            "orders",
            [streams_pb2.PublishEntry(subject="order", payload=b"%d" % n) for n in range(1, 11)],
            streams_pb2.ACK_LEVEL_LEADER,
            batch=True,
        )
        await core.admin.create_stream(stream_config("audit", sources=[stream_source("orders")]).to_proto())
        partition = core.hosted_stream("audit").partitions[0]  # type: ignore[union-attr]
        earlier = [  # what an earlier version's tail stored: orders 1..4, then its position record at 6
            PreparedEntry(
                "order",
                b"%d" % n,
                [
                    types_pb2.Header(key=key, value=value)
                    for key, value in (
                        ("waymaker-source-stream", "orders"),
                        ("waymaker-source-partition", "0"),
                        ("waymaker-source-seq", str(n)),
                    )
                ],
                0,
                None,
            )
            for n in range(1, 5)
        ]
        earlier.append(PreparedEntry(position_subject("orders", 0), encode_position(6), (), 0, None))
        await partition.append(earlier, 100)
        assert partition.log.source_positions() == {}
    finally:
        await core.close()
    handle = start_node(data_dir, node_id="upgraded")
    try:
        async with NodeClient(handle.client_address) as client:
            await wait_settled(client, "audit", {"orders": 10}, timeout_s=20)
            found = await sourced(client, "audit")
            assert source_seqs(found, "orders") == [1, 2, 3, 4, 7, 8, 9, 10]  # 5 and 6: settled before

            async def record_removed() -> bool:
                return await client.latest_at_subject("audit", position_subject("orders", 0)) is None

            await eventually(record_removed, 10, "the earlier version's position record removed")
            handle.kill()
            handle.start(reuse_ports=True)
            await client.publish("orders", "order", b"11")
            await wait_settled(client, "audit", {"orders": 11}, timeout_s=20)
            found = await sourced(client, "audit")
            assert source_seqs(found, "orders") == [1, 2, 3, 4, 7, 8, 9, 10, 11]
            info = await client.stream_info("audit")
            assert info.stats.msg_count == 9 and not await client.list_subjects("audit", prefix="$weir.")
    finally:
        handle.kill()


def replicated(seq: int, source_seq: int) -> BatchRecord:
    """A sourced message of `orders`/0 as a secondary gets it from its primary."""
    msg_id = source_msg_id("orders", 0, source_seq)
    encoded = types_pb2.Message(seq=seq, ts_ms=1, subject="o", msg_id=msg_id).SerializeToString()
    return BatchRecord(seq, 1, "o", encoded, zlib.crc32(encoded), msg_id=msg_id)


async def test_a_copy_stores_the_position_its_sourced_records_settle(tmp_path: Path) -> None:
    """A secondary learns the position from the msg_ids of the records it copies, in the commit
    that stores them: it outlives their removal (a work-queue ack) and goes with a divergent tail."""
    core = await Node.open(NodeSettings(node_id="copy", data_dir=tmp_path / "data"))
    try:
        await core.admin.create_stream(stream_config("mirror", sources=[stream_source("orders")]).to_proto())
        partition = core.hosted_partition("mirror", 0)
        partition.set_role(leading=False, leader_epoch=2, tracker=None, min_insync=1)
        assert await partition.replicate(0, [replicated(1, 3), replicated(2, 5)], 10) == ("ok", "")
        assert partition.log.source_positions() == {("orders", 0): SourcePosition(5, 2)}
        assert await partition.replica_edit(RemoveSeqs([1, 2], "work_queue")) == 0
        assert partition.msg_count == 0
        assert partition.log.source_positions() == {("orders", 0): SourcePosition(5, 2)}
        assert await partition.replicate(2, [replicated(3, 9)], 10) == ("ok", "")
        assert partition.log.source_positions() == {("orders", 0): SourcePosition(9, 3)}
        await partition.replica_edit(TruncateTail(2))  # seq 3 was a deposed primary's: what it settled goes
        assert partition.log.source_positions() == {("orders", 0): SourcePosition(5, 2)}
    finally:
        await core.close()
