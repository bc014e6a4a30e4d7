"""`weir demo`'s streams-seed round trip: through the gateway's waymaker.streams door, as a client
generated from the seed would: CreateStream, Publish with an optimistic-concurrency check,
CreateConsumer, Fetch + Ack until every message came back once, ReadLatestAtSubject, a Publish
with a stale `expected_last_seq` answered `wrong_revision` in the response body; then the cluster
admin calls: GetClusterStreamStats, SetStreamPinned (a pinned stream's MigrateStream is
`source_busy`), ClearStreamAuthority, MigrateStream (the stream's copy moves to another node, its
messages with it) and RebalanceStreams (back to its first node); last the object store: the bucket
`obj:demo-waymaker` made with CreateStream, as the seed names buckets, a PutObjectStream of a
multi-chunk object with its sha256, GetObjectStream back (digest checked) and GetObjectInfo."""

from __future__ import annotations

import hashlib
import time
from typing import Any

from weir import tls as weir_tls

from weir_cli.output import progress

STREAM = "demo-waymaker"
OBJECT = "demo/payload.bin"  # in the bucket obj:demo-waymaker


async def waymaker_round_trip(address: str, messages: int = 20) -> dict[str, Any]:
    """Returns the counts and `verified` (every published message fetched and acknowledged once,
    the latest value read back, the stale revision refused)."""
    from weir_gateway.waymaker_streams.pb import waymaker_streams_pb2 as seed
    from weir_gateway.waymaker_streams.pb import waymaker_streams_pb2_grpc as seed_grpc

    def checked(rpc: str, response: Any) -> Any:
        if not response.success:
            raise RuntimeError(f"waymaker.streams {rpc}: {response.result_code}: {response.message}")
        return response

    async with weir_tls.aio_channel(address) as channel:
        stub = seed_grpc.WaymakerStreamsServiceStub(channel)
        config = seed.StreamConfigPb(name=STREAM, subjects_filter=["demo.>"])
        config.retention.limits.max_msgs = 10_000
        checked("CreateStream", await stub.CreateStream(seed.CreateStreamRequest(config=config), timeout=30))
        published: dict[int, bytes] = {}
        last_seq = 0
        for number in range(messages):
            request = seed.PublishRequest(stream=STREAM, subject="demo.counter", payload=b"%d" % number)
            request.expected_last_seq = last_seq  # each publish names the revision it follows
            last_seq = checked("Publish", await stub.Publish(request, timeout=30)).seq
            published[last_seq] = request.payload
        stale = seed.PublishRequest(stream=STREAM, subject="demo.counter", payload=b"stale", expected_last_seq=1)
        refused = await stub.Publish(stale, timeout=30)
        consumer = seed.ConsumerConfigPb(name="demo-seed", ack_wait_ms=30_000)
        checked("CreateConsumer", await stub.CreateConsumer(seed.CreateConsumerRequest(stream=STREAM, config=consumer)))
        progress(f"waymaker.streams: published {messages} revisions of demo.counter; fetching ...")
        received: dict[int, bytes] = {}
        deadline = time.monotonic() + 30
        while len(received) < messages and time.monotonic() < deadline:
            fetched = checked(
                "Fetch", await stub.Fetch(seed.FetchRequest(stream=STREAM, consumer="demo-seed", batch_size=8))
            )
            for message in fetched.messages:
                received.setdefault(message.seq, message.payload)
                ack = seed.AckRequest(stream=STREAM, consumer="demo-seed", seq=message.seq)
                checked("Ack", await stub.Ack(ack, timeout=30))
        latest = checked(
            "ReadLatestAtSubject",
            await stub.ReadLatestAtSubject(seed.ReadLatestAtSubjectRequest(stream=STREAM, subject="demo.counter")),
        ).latest
        progress(f"waymaker.streams: fetched and acknowledged {len(received)}, latest revision seq {latest.seq}")
        moves = await _admin_tour(stub, seed, checked, last_seq)
        stored = await _object_tour(stub, seed, checked)
    verified = (
        received == published
        and latest.seq == last_seq
        and (refused.success, refused.result_code, refused.seq) == (False, "wrong_revision", last_seq)
        and moves["verified"]
        and stored["verified"]
    )
    return {
        "published": len(published),
        "received": len(received),
        "moves": moves,
        "object": stored,
        "verified": verified,
    }


async def _object_tour(stub: Any, seed: Any, checked: Any) -> dict[str, Any]:
    """One object in and out of the bucket `obj:demo-waymaker`: 1 MiB in 64 KiB frames (one chunk
    each, as the seed's streamed put stores them), read back streamed and checked by its sha256."""
    content = b"".join(hashlib.sha256(b"%d" % n).digest() * 2048 for n in range(16))  # 16 x 64 KiB
    digest = hashlib.sha256(content).hexdigest()
    bucket_config = seed.StreamConfigPb(name=f"obj:{STREAM}")
    checked("CreateStream", await stub.CreateStream(seed.CreateStreamRequest(config=bucket_config), timeout=30))
    start = seed.PutObjectStart(bucket=STREAM, name=OBJECT, sha256=digest)
    frames = [seed.PutObjectStreamFrame(start=start)]
    frames += [seed.PutObjectStreamFrame(data=content[at : at + 65_536]) for at in range(0, len(content), 65_536)]
    frames.append(seed.PutObjectStreamFrame(finish=True))
    put = checked("PutObjectStream", await stub.PutObjectStream(iter(frames), timeout=60))
    request = seed.GetObjectRequest(bucket=STREAM, name=OBJECT)
    received = [frame async for frame in stub.GetObjectStream(request, timeout=60)]
    back = b"".join(frame.data for frame in received)
    info = checked("GetObjectInfo", await stub.GetObjectInfo(seed.GetObjectInfoRequest(bucket=STREAM, name=OBJECT)))
    progress(
        f"waymaker.streams: object {OBJECT} put in {put.info.chunk_count} chunks and read back "
        f"({len(back)} bytes, sha256 {digest[:12]}...)"
    )
    verified = (
        back == content
        and hashlib.sha256(back).hexdigest() == put.info.sha256 == digest
        and received[-1].done
        and info.info.metadata_seq == put.info.metadata_seq
    )
    return {"bytes": len(back), "chunks": put.info.chunk_count, "sha256": digest, "verified": verified}


async def _admin_tour(stub: Any, seed: Any, checked: Any, last_seq: int) -> dict[str, Any]:
    """The stream moves to another node and back, pinning refusing a move in between."""
    stats = checked("GetClusterStreamStats", await stub.GetClusterStreamStats(seed.GetClusterStreamStatsRequest()))
    owner = checked(
        "GetStreamInfo", await stub.GetStreamInfo(seed.GetStreamInfoRequest(name=STREAM))
    ).ring_owner_node_id
    checked("SetStreamPinned", await stub.SetStreamPinned(seed.SetStreamPinnedRequest(stream=STREAM, pinned=True)))
    pinned = await stub.MigrateStream(seed.MigrateStreamRequest(name=STREAM, source_node_id=owner), timeout=60)
    checked("ClearStreamAuthority", await stub.ClearStreamAuthority(seed.ClearStreamAuthorityRequest(stream=STREAM)))
    migrated = checked(
        "MigrateStream",
        await stub.MigrateStream(seed.MigrateStreamRequest(name=STREAM, source_node_id=owner), timeout=60),
    )
    moved_to = checked(
        "GetStreamInfo", await stub.GetStreamInfo(seed.GetStreamInfoRequest(name=STREAM))
    ).ring_owner_node_id
    plan = [seed.RebalancePlanEntry(name=STREAM, target_node_id=owner)]
    back = checked("RebalanceStreams", await stub.RebalanceStreams(seed.RebalanceStreamsRequest(plan=plan), timeout=60))
    home = checked("GetStreamInfo", await stub.GetStreamInfo(seed.GetStreamInfoRequest(name=STREAM)))
    progress(
        f"waymaker.streams: {len(stats.nodes)} node(s); moved from node {owner} to node {moved_to} and back "
        f"({home.stats.msg_count} messages, last seq {home.stats.last_seq})"
    )
    verified = (
        pinned.result_code == "source_busy"
        and migrated.stream_last_seq == last_seq
        and moved_to not in (0, owner)
        and back.steps[0].result_code == "ok"
        and (home.ring_owner_node_id, home.stats.last_seq) == (owner, last_seq)
    )
    return {"from_node": owner, "to_node": moved_to, "verified": verified}
