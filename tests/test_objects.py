"""The object store (weir.objects and objects.proto) on a real cluster: objects put from bytes and
from streams, read back whole, by range (loading only the chunks the range needs, counted), listed
and with their revisions; content-addressed chunks stored once; a cut-off upload's chunks reclaimed
by the garbage collection while a live object's stay; bad requests refused."""

from __future__ import annotations

import asyncio
import hashlib
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest
from weir import Client, ObjectStore
from weir.errors import (
    IncompleteObjectError,
    InvalidArgumentError,
    NoSuchBucketError,
    NoSuchObjectError,
    ShaMismatchError,
)
from weir.objects import bucket_stream, chunk_range, chunk_subject, dedupe_subject
from weir.v1 import objects_pb2 as pb
from weir.v1 import objects_pb2_grpc, types_pb2
from weir_cli.launcher import LocalCluster

from tests.conftest import ClusterAddresses, eventually, reason_of


@pytest.fixture
async def store(cluster_addresses: ClusterAddresses) -> AsyncIterator[ObjectStore]:
    async with Client(cluster_addresses.router_addresses) as client:
        yield ObjectStore(client)


@pytest.fixture
async def bucket(store: ObjectStore, stream_name: str) -> AsyncIterator[str]:
    name = stream_name[-40:].lstrip("-_")
    await store.create_bucket(name, history=4)
    yield name
    await store.delete_bucket(name)


async def content(store: ObjectStore, bucket: str, name: str) -> bytes:
    _, chunks = await store.get(bucket, name)
    return b"".join([chunk async for chunk in chunks])


def test_chunk_range_covers_exactly_the_overlapped_chunks() -> None:
    assert list(chunk_range(0, 10, 4, 10)) == [0, 1, 2]
    assert list(chunk_range(4, 4, 4, 10)) == [1]
    assert list(chunk_range(5, 100, 4, 10)) == [1, 2]
    assert list(chunk_range(10, 5, 4, 10)) == []  # at the end
    assert list(chunk_range(3, 0, 4, 10)) == []


async def test_an_object_round_trips_whole_and_by_range(store: ObjectStore, bucket: str) -> None:
    payload = bytes(range(256)) * 40  # 10,240 bytes: 11 chunks of 1,000
    meta = await store.put(bucket, "reports/2026 Q4.pdf", payload, chunk_size=1000, headers={"type": "pdf"})
    assert (meta.total_bytes, meta.chunk_count, meta.sha256) == (10_240, 11, hashlib.sha256(payload).hexdigest())
    info = await store.info(bucket, "reports/2026 Q4.pdf")
    assert info is not None and (info.revision, info.headers) == (meta.revision, {"type": "pdf"})
    assert await content(store, bucket, "reports/2026 Q4.pdf") == payload
    before = store.chunks_read
    _, middle = await store.get_range(bucket, "reports/2026 Q4.pdf", 4_500, 1_000)
    assert middle == payload[4_500:5_500]
    assert store.chunks_read - before == 2  # chunks 4 and 5, nothing else
    _, tail = await store.get_range(bucket, "reports/2026 Q4.pdf", 10_000, 0)
    assert tail == payload[10_000:]
    assert (await store.get_range(bucket, "reports/2026 Q4.pdf", 20_000, 10))[1] == b""


async def test_a_1_mib_range_from_the_middle_of_an_8_mib_object_reads_only_its_chunks(
    store: ObjectStore, bucket: str
) -> None:
    payload = bytes(range(256)) * (8 * 4096)  # 8 MiB in 32 chunks of 256 KiB
    await store.put(bucket, "big", payload)
    before = store.chunks_read
    offset = 3 * 1024 * 1024 + 100  # not on a chunk boundary: 5 chunks overlap the range
    _, middle = await store.get_range(bucket, "big", offset, 1024 * 1024)
    assert middle == payload[offset : offset + 1024 * 1024]
    assert store.chunks_read - before == 5


async def test_a_streamed_put_replaces_the_revision_and_removes_its_chunks(store: ObjectStore, bucket: str) -> None:
    first = await store.put(bucket, "log", b"a" * 3000, chunk_size=1000)

    async def pieces() -> AsyncIterator[bytes]:
        for size in (700, 700, 700, 100):  # re-chunked to 1,000-byte chunks as they come
            yield b"b" * size

    second = await store.put(bucket, "log", pieces(), chunk_size=1000)
    assert (second.total_bytes, second.chunk_count) == (2200, 3)
    assert await content(store, bucket, "log") == b"b" * 2200
    revisions = await store.revisions(bucket, "log")
    assert [getattr(revision, "revision", revision) for revision in revisions] == [first.revision, second.revision]
    stream = bucket_stream(bucket)
    leader = await store.client.leader(stream, 0)
    stored = {message.seq async for message in leader.read_all(stream)}
    assert not set(first.seqs) & stored  # the replaced revision's chunks are gone
    assert set(second.seqs) <= stored
    await store.delete(bucket, "log")
    assert await store.info(bucket, "log") is None and await store.is_deleted(bucket, "log")
    assert await store.list_objects(bucket) == []
    assert await store.list_objects(bucket, include_deleted=True) == [("log", 0, True)]
    with pytest.raises(NoSuchObjectError):
        await store.get(bucket, "log")


async def test_deduped_chunks_are_stored_once_and_garbage_goes_but_live_chunks_stay(
    store: ObjectStore, bucket: str
) -> None:
    shared = b"s" * 2000
    one = await store.put(bucket, "one", shared + b"1" * 1000, chunk_size=1000, dedupe=True)
    two = await store.put(bucket, "two", shared + b"2" * 1000, chunk_size=1000, dedupe=True)
    assert one.deduped and one.hashes[:2] == two.hashes[:2]
    stream = bucket_stream(bucket)
    leader = await store.client.leader(stream, 0)
    subjects = [message.subject async for message in leader.read_all(stream)]
    assert sum(1 for subject in subjects if subject.startswith("d.")) == 3  # "s" * 1000 once, "1...", "2..."
    assert await content(store, bucket, "two") == shared + b"2" * 1000
    # A cut-off upload: chunks stored, no metadata (what a killed uploader leaves).
    for index in range(3):
        await store.client.publish(stream, chunk_subject("cut", "deadbeef", index), b"x" * 100)
    live = await store.put(bucket, "kept", b"k" * 2500, chunk_size=1000)
    await store.delete(bucket, "one")  # its unique chunk is now garbage; the shared ones are two's
    assert await store.collect_garbage(bucket, grace_ms=3_600_000) == 0  # all younger than the grace
    assert await store.collect_garbage(bucket, grace_ms=0) == 4  # the cut upload's 3, one's unique chunk
    assert await content(store, bucket, "two") == shared + b"2" * 1000
    assert await content(store, bucket, "kept") == b"k" * 2500
    assert live.chunk_count == 3


async def test_bad_requests_are_refused(store: ObjectStore, bucket: str) -> None:
    with pytest.raises(ShaMismatchError, match="the request said"):
        await store.put(bucket, "x", b"data", sha256="00" * 32)
    assert await store.info(bucket, "x") is None  # nothing stored
    with pytest.raises(InvalidArgumentError, match="chunk_size: at most"):
        await store.put(bucket, "x", b"data", chunk_size=2_000_000)
    with pytest.raises(InvalidArgumentError, match=r"name: 1\.\.512 bytes"):
        await store.put(bucket, "", b"data")
    with pytest.raises(NoSuchBucketError):
        await store.put("missing-bucket", "x", b"data")
    with pytest.raises(NoSuchObjectError):
        await store.get_range(bucket, "never", 0, 10)


async def test_a_chunk_gone_is_incomplete_and_whole_reads_are_bounded(store: ObjectStore, bucket: str) -> None:
    """The seed's `incomplete`: metadata naming a chunk no longer stored (a plain or a deduped one).
    `read` and `get_range` with a bound refuse a larger answer before reading any chunk."""
    stream = bucket_stream(bucket)
    plain = await store.put(bucket, "plain", b"p" * 3000, chunk_size=1000)
    await store.client.delete_messages(stream, 0, [plain.seqs[1]])
    with pytest.raises(IncompleteObjectError, match="chunk 1 of 'plain'"):
        await content(store, bucket, "plain")
    with pytest.raises(IncompleteObjectError):
        await store.get_range(bucket, "plain", 1500, 10)
    assert (await store.get_range(bucket, "plain", 2000, 0))[1] == b"p" * 1000  # the chunks still there read
    deduped = await store.put(bucket, "deduped", b"u" * 1000 + b"v" * 1000, chunk_size=1000, dedupe=True)
    gone = await store.client.on_leader(
        stream, 0, lambda node: node.latest_at_subject(stream, dedupe_subject(deduped.hashes[1]))
    )
    assert gone is not None
    await store.client.delete_messages(stream, 0, [gone.seq])
    with pytest.raises(IncompleteObjectError, match="chunk 1 of 'deduped'"):
        await content(store, bucket, "deduped")

    await store.put(bucket, "whole", b"w" * 3000, chunk_size=1000)
    before = store.chunks_read
    with pytest.raises(InvalidArgumentError, match="3000 bytes, above the 2999"):
        await store.read(bucket, "whole", 2999)
    with pytest.raises(InvalidArgumentError, match="holds 2500 bytes"):
        await store.get_range(bucket, "whole", 500, 0, max_bytes=2000)
    assert store.chunks_read == before  # refused before any chunk was read
    assert (await store.read(bucket, "whole", 3000))[1] == b"w" * 3000
    assert (await store.get_range(bucket, "whole", 2500, 5000, max_bytes=500))[1] == b"w" * 500  # 500 left
    with pytest.raises(InvalidArgumentError, match="limit: at most 10000"):
        await store.revisions(bucket, "whole", limit=10_001)


# -- through a router, with the stubs generated from objects.proto ------------------------------------


@pytest.fixture
async def stub(cluster_addresses: ClusterAddresses) -> AsyncIterator[objects_pb2_grpc.ObjectStoreStub]:
    async with grpc.aio.insecure_channel(
        cluster_addresses.router_addresses[0], options=[("grpc.max_receive_message_length", 8 * 1024 * 1024)]
    ) as channel:
        yield objects_pb2_grpc.ObjectStoreStub(channel)


async def test_the_object_store_service_answers_as_the_seed_says(
    stub: objects_pb2_grpc.ObjectStoreStub, stream_name: str
) -> None:
    bucket = "svc-" + stream_name[-30:].lstrip("-_")
    await stub.CreateObjectBucket(pb.CreateObjectBucketRequest(bucket=bucket, history=3))
    try:
        payload = b"0123456789" * 1000
        put = await stub.PutObject(
            pb.PutObjectRequest(
                bucket=bucket,
                name="a.txt",
                payload=payload,
                chunk_size=4096,
                headers=[types_pb2.Header(key="k", value="v")],
            )
        )
        assert (put.info.total_bytes, put.info.chunk_count, put.info.sha256) == (
            10_000,
            3,
            hashlib.sha256(payload).hexdigest(),
        )
        got = await stub.GetObject(pb.GetObjectRequest(bucket=bucket, name="a.txt"))
        assert got.payload == payload and [(h.key, h.value) for h in got.info.headers] == [("k", "v")]
        ranged = await stub.GetObjectRange(pb.GetObjectRangeRequest(bucket=bucket, name="a.txt", offset=9_995, len=100))
        assert (ranged.payload, ranged.actual_offset) == (payload[9_995:], 9_995)
        frames = [frame async for frame in stub.GetObjectStream(pb.GetObjectRequest(bucket=bucket, name="a.txt"))]
        assert frames[0].HasField("info") and frames[-1].done
        assert b"".join(frame.data for frame in frames) == payload
        listed = await stub.ListObjects(pb.ListObjectsRequest(bucket=bucket))
        assert [(e.name, e.total_bytes) for e in listed.entries] == [("a.txt", 10_000)]
        deleted = await stub.DeleteObject(pb.DeleteObjectRequest(bucket=bucket, name="a.txt"))
        info = await stub.GetObjectInfo(pb.GetObjectInfoRequest(bucket=bucket, name="a.txt"))
        assert not info.HasField("info") and info.deleted
        revisions = await stub.ListObjectRevisions(pb.ListObjectRevisionsRequest(bucket=bucket, name="a.txt"))
        assert [(r.metadata_seq, r.deleted) for r in revisions.revisions] == [
            (put.info.metadata_seq, False),
            (deleted.tombstone_seq, True),
        ]
        for call, expected in [
            (stub.GetObject(pb.GetObjectRequest(bucket=bucket, name="a.txt")), "no_such_object"),
            (stub.GetObject(pb.GetObjectRequest(bucket="nobody", name="a.txt")), "no_such_bucket"),
            (
                stub.PutObject(pb.PutObjectRequest(bucket=bucket, name="b", payload=b"x", sha256="ab" * 32)),
                "sha_mismatch",
            ),
            (stub.GetObjectRange(pb.GetObjectRangeRequest(bucket=bucket, name="a", len=5_000_000)), "invalid_argument"),
        ]:
            assert await reason_of(call) == expected
        assert (await stub.ListObjects(pb.ListObjectsRequest(bucket=bucket))).entries == []
    finally:
        await stub.DeleteObjectBucket(pb.DeleteObjectBucketRequest(bucket=bucket))


async def test_a_put_stream_that_ends_without_finish_stores_no_object(
    stub: objects_pb2_grpc.ObjectStoreStub, stream_name: str
) -> None:
    bucket = "cut-" + stream_name[-30:].lstrip("-_")
    await stub.CreateObjectBucket(pb.CreateObjectBucketRequest(bucket=bucket))
    try:

        async def frames() -> AsyncIterator[pb.PutObjectStreamFrame]:
            yield pb.PutObjectStreamFrame(start=pb.PutObjectStart(bucket=bucket, name="partial"))
            yield pb.PutObjectStreamFrame(data=b"x" * 300_000)  # no finish

        assert await reason_of(stub.PutObjectStream(frames())) == "invalid_argument"
        info = await stub.GetObjectInfo(pb.GetObjectInfoRequest(bucket=bucket, name="partial"))
        assert not info.HasField("info") and not info.deleted
        collected = await stub.CollectGarbage(pb.CollectGarbageRequest(bucket=bucket, grace_ms=1))
        assert collected.removed == 0  # the failed put removed its own chunks already
    finally:
        await stub.DeleteObjectBucket(pb.DeleteObjectBucketRequest(bucket=bucket))


@pytest.mark.slow
async def test_a_200_mib_object_streams_in_and_out_of_a_router_in_bounded_memory(
    cluster: LocalCluster, stream_name: str
) -> None:
    """PutObjectStream and GetObjectStream of 200 MiB through a router: its RSS grows by less than
    32 MiB (it holds a few chunks, not the object), and the content comes back intact."""
    router = cluster.routers[0]
    size = 200 * 1024 * 1024
    piece = bytes(range(256)) * 256  # 64 KiB frames
    bucket = "big-" + stream_name[-30:].lstrip("-_")
    async with grpc.aio.insecure_channel(router.address) as channel:
        big = objects_pb2_grpc.ObjectStoreStub(channel)
        await big.CreateObjectBucket(pb.CreateObjectBucketRequest(bucket=bucket))
        try:
            clear_refs = Path(f"/proc/{router.pid}/clear_refs")
            await asyncio.to_thread(clear_refs.write_text, "5")  # its peak RSS starts over at its size now
            baseline = router.peak_rss_bytes()
            expected = hashlib.sha256()

            async def frames() -> AsyncIterator[pb.PutObjectStreamFrame]:
                yield pb.PutObjectStreamFrame(start=pb.PutObjectStart(bucket=bucket, name="big.bin"))
                for _ in range(size // len(piece)):
                    expected.update(piece)
                    yield pb.PutObjectStreamFrame(data=piece)
                yield pb.PutObjectStreamFrame(finish=True)

            put = await big.PutObjectStream(frames(), timeout=600)
            assert (put.info.total_bytes, put.info.sha256) == (size, expected.hexdigest())
            received = hashlib.sha256()
            count = 0
            async for frame in big.GetObjectStream(pb.GetObjectRequest(bucket=bucket, name="big.bin"), timeout=600):
                received.update(frame.data)
                count += len(frame.data)
            assert (count, received.hexdigest()) == (size, expected.hexdigest())
            grown = router.peak_rss_bytes() - baseline
            assert grown < 32 * 1024 * 1024, f"the router's peak RSS grew by {grown / 2**20:.1f} MiB"
        finally:
            await big.DeleteObjectBucket(pb.DeleteObjectBucketRequest(bucket=bucket))


UPLOADER = """
import asyncio, sys
from weir import Client, ObjectStore

async def main():
    async with Client(sys.argv[1].split(",")) as client:
        async def endless():
            while True:
                yield b"u" * 65536
                await asyncio.sleep(0.001)
        await ObjectStore(client).put(sys.argv[2], "half", endless())

asyncio.run(main())
"""


@pytest.mark.slow
async def test_a_killed_upload_leaves_no_object_and_the_gc_reclaims_its_chunks(
    cluster: LocalCluster, store: ObjectStore, bucket: str
) -> None:
    """An uploader SIGKILLed mid-put: no object is visible, its chunks are garbage once past the
    grace period, and a live object's chunks stay."""
    await store.put(bucket, "kept", b"k" * 600_000)
    stream = bucket_stream(bucket)
    uploader = await asyncio.create_subprocess_exec(
        sys.executable, "-c", UPLOADER, ",".join(cluster.router_addresses), bucket
    )
    try:

        async def chunks_stored() -> bool:
            leader = await store.client.leader(stream, 0)
            subjects = [message.subject async for message in leader.read_all(stream)]
            return sum(1 for subject in subjects if subject.startswith("c.")) >= 3 + 10  # the kept object's 3

        await eventually(chunks_stored, 60, "the uploader storing chunks")
    finally:
        uploader.kill()
        await uploader.wait()
    assert await store.info(bucket, "half") is None and not await store.is_deleted(bucket, "half")
    assert await store.collect_garbage(bucket) == 0  # within the grace period: could still be running
    removed = await store.collect_garbage(bucket, grace_ms=0)
    assert removed >= 10
    leader = await store.client.leader(stream, 0)
    left = [message.subject async for message in leader.read_all(stream)]
    assert sum(1 for subject in left if subject.startswith("c.")) == 3  # the live object's three chunks
    assert await content(store, bucket, "kept") == b"k" * 600_000
