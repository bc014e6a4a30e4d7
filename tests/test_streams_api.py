"""The weir.v1.Streams and weir.v1.ChangeFeed services through a real node over real gRPC."""

from __future__ import annotations

import asyncio
import re
import urllib.request

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from weir.client import NodeClient, consumer_config, stream_config
from weir.errors import InvalidArgumentError, NoSuchConsumerError, NoSuchStreamError, SubjectRejectedError
from weir.partitioning import partition_for_key
from weir.v1 import streams_pb2, types_pb2
from weir_cli.launcher import NodeHandle
from weir_server.internal_clients import ChangeFeedClient

PAYLOAD = b"p" * 1024


async def test_stream_lifecycle(client: NodeClient, stream_name: str) -> None:
    config = await client.create_stream(stream_config(stream_name, subjects=["a.>"], partitions=3, max_msgs=100))
    assert (config.partitions, config.replicas, config.limits.max_msgs) == (3, 1, 100)
    assert config.max_msg_bytes == 1024 * 1024  # node default filled in
    assert (
        await client.create_stream(stream_config(stream_name, subjects=["a.>"], partitions=3, max_msgs=100)) == config
    )
    assert stream_name in await client.list_streams()
    info = await client.stream_info(stream_name)
    assert [p.partition for p in info.stats.partitions] == [0, 1, 2]
    assert info.created_at_ms > 0
    await client.delete_stream(stream_name)
    assert stream_name not in await client.list_streams()


async def test_batch_publish_per_partition_results_and_reads(client: NodeClient, stream_name: str) -> None:
    await client.create_stream(stream_config(stream_name, partitions=4))
    keys = [f"k{i}".encode() for i in range(40)]
    entries = [streams_pb2.PublishEntry(subject=f"s.{i}", payload=PAYLOAD, key=key) for i, key in enumerate(keys)]
    results = await client.publish_batch(stream_name, entries)
    assert [r.result_code for r in results] == ["ok"] * 40
    assert [r.partition for r in results] == [partition_for_key(key, 4) for key in keys]
    for partition in range(4):
        mine = [r.seq for r in results if r.partition == partition]
        assert mine == list(range(1, len(mine) + 1))  # gap-free per partition
        read = [m async for m in client.read_all(stream_name, partition)]
        assert [m.seq for m in read] == mine
        assert all(m.partition == partition and m.payload == PAYLOAD for m in read)


async def test_read_messages_pages_with_next_seq(client: NodeClient, stream_name: str) -> None:
    await client.create_stream(stream_config(stream_name))
    await client.publish_batch(stream_name, [streams_pb2.PublishEntry(subject="s", payload=PAYLOAD) for _ in range(25)])
    page = await client.read_messages(stream_name, 0, 1, max_messages=10)
    assert ([m.seq for m in page.messages], page.next_seq, page.last_seq) == (list(range(1, 11)), 11, 25)
    page = await client.read_messages(stream_name, 0, 20, max_bytes=2 * 1100)
    assert [m.seq for m in page.messages] == [20, 21]
    page = await client.read_messages(stream_name, 0, 26)
    assert (list(page.messages), page.next_seq) == ([], 26)


async def test_subject_reads(client: NodeClient, stream_name: str) -> None:
    await client.create_stream(stream_config(stream_name, subjects=["kv.>"]))
    for value in (b"1", b"2", b"3"):
        await client.publish(stream_name, "kv.config.a", value)
    await client.publish(stream_name, "kv.config.b", b"b")
    await client.publish(stream_name, "kv.other", b"o")
    latest = await client.latest_at_subject(stream_name, "kv.config.a")
    assert latest is not None
    assert (latest.seq, latest.payload) == (3, b"3")
    assert await client.latest_at_subject(stream_name, "kv.none") is None
    assert await client.list_subjects(stream_name, "kv.config.") == ["kv.config.a", "kv.config.b"]
    assert [m.payload for m in await client.scan_subject(stream_name, "kv.config.a", from_seq=2)] == [
        b"2",
        b"3",
    ]


async def test_expected_last_seq_over_grpc(client: NodeClient, stream_name: str) -> None:
    await client.create_stream(stream_config(stream_name))
    first = await client.publish(stream_name, "kv.k", b"v1", expected_last_seq=0)
    second = await client.publish(stream_name, "kv.k", b"v2", expected_last_seq=first.seq)
    assert (first.seq, second.seq) == (1, 2)


async def test_ack_level_none_is_fire_and_forget(client: NodeClient, stream_name: str) -> None:
    await client.create_stream(stream_config(stream_name))
    acks = [await client.publish(stream_name, "s", b"x", ack_level="none") for _ in range(20)]
    assert all(ack.seq == 0 for ack in acks)
    for _ in range(200):  # bounded wait for the queued commits
        if (await client.stream_info(stream_name)).stats.msg_count == 20:
            break
        await asyncio.sleep(0.01)
    assert (await client.stream_info(stream_name)).stats.msg_count == 20


async def test_update_stream_prunes_over_grpc(client: NodeClient, stream_name: str) -> None:
    await client.create_stream(stream_config(stream_name, partitions=2))
    await client.publish_batch(
        stream_name, [streams_pb2.PublishEntry(subject="s", payload=b"x", partition=i % 2) for i in range(20)]
    )
    response = await client.update_stream(streams_pb2.UpdateStreamRequest(name=stream_name, max_msgs=3))
    assert (response.pruned, response.config.limits.max_msgs) == (14, 3)
    info = await client.stream_info(stream_name)
    assert [(p.first_seq, p.last_seq, p.msg_count) for p in info.stats.partitions] == [(8, 10, 3), (8, 10, 3)]


async def test_watch_streams_sees_lifecycle(
    client: NodeClient, feed_client: ChangeFeedClient, stream_name: str
) -> None:
    events: list[streams_pb2.WatchEvent] = []
    start = (await feed_client.read_changes(0, 1)).last_change_seq + 1

    async def watch() -> None:
        async for event in client.watch_streams(start):
            if event.stream == stream_name:
                events.append(event)
                if len(events) == 3:
                    return

    watcher = asyncio.create_task(watch())  # starts at `start`, so it cannot miss what follows
    await client.create_stream(stream_config(stream_name))
    await client.update_stream(streams_pb2.UpdateStreamRequest(name=stream_name, max_msgs=5))
    await client.delete_stream(stream_name)
    await asyncio.wait_for(watcher, 10)
    assert [e.type for e in events] == [
        streams_pb2.WATCH_EVENT_TYPE_STREAM_CREATED,
        streams_pb2.WATCH_EVENT_TYPE_STREAM_UPDATED,
        streams_pb2.WATCH_EVENT_TYPE_STREAM_DELETED,
    ]
    assert events[0].node_id == "shared"


async def test_tail_changes_is_live(client: NodeClient, feed_client: ChangeFeedClient, stream_name: str) -> None:
    start = (await feed_client.read_changes(0, 1)).last_change_seq + 1
    seen: list[tuple[str, str]] = []

    async def tail() -> None:
        async for batch in feed_client.tail_changes(start):
            for change in batch.changes:
                if change.stream == stream_name:
                    seen.append((change.WhichOneof("kind") or "", str(change.append.last_seq)))
            if len(seen) >= 3:
                return

    tailer = asyncio.create_task(tail())
    await client.create_stream(stream_config(stream_name))
    await client.publish(stream_name, "s", b"1")
    await client.publish(stream_name, "s", b"2")
    await asyncio.wait_for(tailer, 10)
    assert seen == [("stream_created", "0"), ("append", "1"), ("append", "2")]


async def test_a_filtered_tail_gets_only_its_partitions_changes_without_appends(
    client: NodeClient, feed_client: ChangeFeedClient, stream_name: str
) -> None:
    """TailChanges with stream, partition and exclude_appends (what the replicator asks for): the
    node sends the stream's lifecycle changes and partition 1's consumer changes, never an append,
    another partition's change or another stream's; through_change_seq covers what was skipped."""
    start = (await feed_client.read_changes(0, 1)).last_change_seq + 1
    seen: list[types_pb2.Change] = []
    through: list[int] = []

    async def tail() -> None:
        async for batch in feed_client.tail_changes(start, stream=stream_name, partition=1, exclude_appends=True):
            seen.extend(batch.changes)
            through.append(batch.through_change_seq)
            if any(change.WhichOneof("kind") == "stream_deleted" for change in batch.changes):
                return

    tailer = asyncio.create_task(tail())
    await client.create_stream(stream_config(f"{stream_name}-other"))
    await client.publish(f"{stream_name}-other", "s", b"x")
    await client.create_stream(stream_config(stream_name, partitions=2))
    await client.create_consumer(stream_name, consumer_config("reader"))
    for partition in (0, 1):
        await client.publish_batch(
            stream_name, [streams_pb2.PublishEntry(subject="s", payload=b"x", partition=partition)] * 3
        )
        fetched = await client.fetch(stream_name, "reader", partition, batch_size=10)
        await client.ack_batch(stream_name, "reader", partition, [message.seq for message in fetched])
    await client.delete_stream(f"{stream_name}-other")
    await client.delete_stream(stream_name)
    await asyncio.wait_for(tailer, 10)

    everything = (await feed_client.read_changes(start, 10_000)).changes
    expected = [
        change
        for change in everything
        if change.stream == stream_name
        and change.WhichOneof("kind") != "append"
        and (change.WhichOneof("kind") != "consumer_state" or change.partition == 1)
    ]
    assert seen == expected
    assert [change.WhichOneof("kind") for change in seen] == [
        "stream_created",
        "consumer_created",
        "consumer_state",  # the fetch
        "consumer_state",  # the ack
        "stream_deleted",
    ]
    assert through == sorted(through)
    assert through[-1] == seen[-1].change_seq


async def test_deleted_stream_changes_stay_in_the_feed(
    client: NodeClient, feed_client: ChangeFeedClient, stream_name: str
) -> None:
    start = (await feed_client.read_changes(0, 1)).last_change_seq + 1
    await client.create_stream(stream_config(stream_name))
    await client.publish(stream_name, "s", b"1")
    await client.delete_stream(stream_name)
    response = await feed_client.read_changes(start, 10_000)
    kinds = [c.WhichOneof("kind") for c in response.changes if c.stream == stream_name]
    assert kinds == ["stream_created", "append", "stream_deleted"]


async def test_health_reflection_and_metrics(node: NodeHandle, client: NodeClient, stream_name: str) -> None:
    await client.create_stream(stream_config(stream_name))
    await client.publish(stream_name, "s", b"x")
    async with grpc.aio.insecure_channel(node.client_address) as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "weir.v1.Streams"):
            response = await health.Check(health_pb2.HealthCheckRequest(service=service))
            assert response.status == health_pb2.HealthCheckResponse.SERVING
        reflection = reflection_pb2_grpc.ServerReflectionStub(channel)
        call = reflection.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
        services = [s.name async for r in call for s in r.list_services_response.service]
        assert "weir.v1.Streams" in services
    async with grpc.aio.insecure_channel(node.internal_address) as channel:
        response = await health_pb2_grpc.HealthStub(channel).Check(
            health_pb2.HealthCheckRequest(service="weir.v1.ChangeFeed")
        )
        assert response.status == health_pb2.HealthCheckResponse.SERVING
    body = await asyncio.to_thread(
        lambda: urllib.request.urlopen(f"http://127.0.0.1:{node.metrics_port}/metrics", timeout=5).read().decode()
    )
    assert f'weir_published_messages_total{{partition="0",stream="{stream_name}"}} 1.0' in body
    assert 'weir_rpc_duration_seconds_count{method="Publish"}' in body
    assert "weir_group_commit_duration_seconds_bucket" in body


def _rpc_counts(node: NodeHandle) -> dict[str, float]:
    """The node's served calls (and lockstep exchanges) so far, by method."""
    body = urllib.request.urlopen(f"http://127.0.0.1:{node.metrics_port}/metrics", timeout=5).read().decode()
    return {
        method: float(count)
        for method, count in re.findall(r'^weir_rpc_duration_seconds_count\{method="([^"]+)"\} (\S+)$', body, re.M)
    }


async def test_sdk_hot_calls_are_lockstep_exchanges_with_the_unary_calls_answers_and_errors(
    node: NodeHandle, client: NodeClient, stream_name: str
) -> None:
    """NodeClient.publish_batch / fetch / ack_batch run as exchanges on PublishBatchStream /
    FetchStream / AckBatchStream (pooled, one exchange per call at a time): concurrent callers get
    gap-free seqs, errors are the unary calls' typed errors, and after an error the next exchange
    works (a new call)."""
    await client.create_stream(stream_config(stream_name, subjects=["s.>"]))
    await client.create_consumer(stream_name, consumer_config("reader"))
    before = await asyncio.to_thread(_rpc_counts, node)

    batches = await asyncio.gather(
        *(
            client.publish_batch(stream_name, [streams_pb2.PublishEntry(subject="s.x", payload=PAYLOAD)] * 10)
            for _ in range(12)
        )
    )
    seqs = sorted(result.seq for results in batches for result in results)
    assert seqs == list(range(1, 121))
    assert all(result.result_code == "ok" for results in batches for result in results)
    fetched = await client.fetch(stream_name, "reader", batch_size=50)
    assert [message.seq for message in fetched] == list(range(1, 51))
    acked = await client.ack_batch(stream_name, "reader", 0, [message.seq for message in fetched] + [999])
    assert [result.result_code for result in acked] == ["ok"] * 50 + ["not_pending"]

    # The unary calls' errors, typed the same; nothing stored; the next exchange succeeds.
    with pytest.raises(NoSuchStreamError):
        await client.publish_batch(f"{stream_name}-missing", [streams_pb2.PublishEntry(subject="s.x", payload=b"")])
    with pytest.raises(SubjectRejectedError):
        await client.publish_batch(stream_name, [streams_pb2.PublishEntry(subject="elsewhere", payload=b"")])
    with pytest.raises(InvalidArgumentError, match="batch_size"):
        await client.fetch(stream_name, "reader", batch_size=10_001)
    with pytest.raises(NoSuchConsumerError):
        await client.ack_batch(stream_name, "nobody", 0, [1])
    (after_errors,) = await client.publish_batch(stream_name, [streams_pb2.PublishEntry(subject="s.y", payload=b"")])
    assert (after_errors.result_code, after_errors.seq) == ("ok", 121)

    after = await asyncio.to_thread(_rpc_counts, node)
    moved = {method: after[method] - before.get(method, 0.0) for method in after}
    assert moved.get("PublishBatchStream", 0) == 15 and moved.get("PublishBatch", 0) == 0, moved
    assert moved.get("FetchStream", 0) == 2 and moved.get("AckBatchStream", 0) == 2, moved
