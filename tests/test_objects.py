"""The object store (weir.objects and objects.proto) on a real cluster: objects put from bytes and
from streams, read back whole, by range (loading only the chunks the range needs, counted), listed
and with their revisions; content-addressed chunks stored once; a cut-off upload's chunks reclaimed
by the garbage collection while a live object's stay; bad requests refused."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator

import pytest
from weir import Client, ObjectStore
from weir.errors import InvalidArgumentError, NoSuchBucketError, NoSuchObjectError, ShaMismatchError
from weir.objects import bucket_stream, chunk_range, chunk_subject

from tests.conftest import ClusterAddresses


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
