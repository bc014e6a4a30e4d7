"""`weir demo`'s key-value and collections round trips, through a router as clients generated from
kv.proto and collections.proto would call it: CreateBucket, a watcher started first, a chain of
compare-and-set Updates, a stale Update answered wrong_revision, Create, Delete, Keys, History, and
the watcher having seen every change once and in order; then a hash, a set and a queue; and an
object streamed in and out of the object store."""

from __future__ import annotations

import asyncio
import hashlib
from typing import Any

import grpc
from weir import tls as weir_tls
from weir.v1 import collections_pb2, collections_pb2_grpc, kv_pb2, kv_pb2_grpc, objects_pb2, objects_pb2_grpc

from weir_cli.output import progress

BUCKET = "demo-kv"
KEY = "demo.counter"


async def _watch(stub: kv_pb2_grpc.KeyValueStub, count: int) -> list[tuple[str, str, int]]:
    events: list[tuple[str, str, int]] = []
    call = stub.Watch(kv_pb2.KvWatchRequest(bucket=BUCKET, from_revision=1))  # every change, from the first
    try:
        async for event in call:
            kind = event.WhichOneof("event") or ""
            body = getattr(event, kind)
            events.append((kind, body.key, body.revision))
            if len(events) == count:
                break
    finally:
        call.cancel()
    return events


async def kv_round_trip(address: str, updates: int = 10) -> dict[str, Any]:
    """Returns the counts and `verified`."""
    async with weir_tls.aio_channel(address) as channel:
        stub = kv_pb2_grpc.KeyValueStub(channel)
        await stub.CreateBucket(kv_pb2.KvCreateBucketRequest(bucket=BUCKET, history=5), timeout=30)
        watcher = asyncio.create_task(_watch(stub, updates + 2))
        revision, written = 0, []
        for number in range(updates):
            request = kv_pb2.KvUpdateRequest(bucket=BUCKET, key=KEY, value=b"%d" % number, expected_revision=revision)
            revision = (await stub.Update(request, timeout=30)).revision
            written.append(("put", KEY, revision))
        try:
            stale = kv_pb2.KvUpdateRequest(bucket=BUCKET, key=KEY, value=b"stale", expected_revision=written[0][2])
            await stub.Update(stale, timeout=30)
            refused = ""
        except grpc.aio.AioRpcError as error:
            refused = error.code().name
        created = await stub.Create(kv_pb2.KvCreateRequest(bucket=BUCKET, key="demo.flag", value=b"on"), timeout=30)
        deleted = await stub.Delete(kv_pb2.KvDeleteRequest(bucket=BUCKET, key="demo.flag"), timeout=30)
        written += [("put", "demo.flag", created.revision), ("delete", "demo.flag", deleted.revision)]
        keys = await stub.Keys(kv_pb2.KvKeysRequest(bucket=BUCKET), timeout=30)
        history = await stub.History(kv_pb2.KvHistoryRequest(bucket=BUCKET, key=KEY), timeout=30)
        got = await stub.Get(kv_pb2.KvGetRequest(bucket=BUCKET, key=KEY), timeout=30)
        seen = await asyncio.wait_for(watcher, 30)
    progress(f"key-value: {updates} compare-and-set updates, history {len(history.entries)}, watched {len(seen)}")
    verified = (
        seen == written
        and refused == "FAILED_PRECONDITION"
        and got.entry.value == b"%d" % (updates - 1)
        and [entry.revision for entry in history.entries] == [item[2] for item in written[updates - 5 : updates]]
        and [(entry.key, entry.deleted) for entry in keys.entries] == [(KEY, False), ("demo.flag", True)]
    )
    return {"updates": updates, "watched": len(seen), "verified": verified}


async def collections_round_trip(address: str, elements: int = 20) -> dict[str, Any]:
    """Through a router's weir.v1.Collections service: a hash, a set and a queue whose elements two
    concurrent poppers take, each once. Returns the counts and `verified`."""
    async with weir_tls.aio_channel(address) as channel:
        stub = collections_pb2_grpc.CollectionsStub(channel)
        await stub.CreateHashStore(collections_pb2.CreateHashStoreRequest(name="demo-users"), timeout=30)
        await stub.CreateSetStore(collections_pb2.CreateSetStoreRequest(name="demo-tags"), timeout=30)
        await stub.CreateQueue(collections_pb2.CreateQueueRequest(name="demo-jobs"), timeout=30)
        for field, value in (("name", b"Ada"), ("lang", b"en"), ("name", b"Ada L.")):
            await stub.HashSet(
                collections_pb2.HashSetRequest(bucket="demo-users", hash_key="user:1", field=field, value=value)
            )
        for member in ("blue", "green", "blue"):
            await stub.SetAdd(collections_pb2.SetAddRequest(bucket="demo-tags", set_key="user:1", member=member))
        for number in range(elements):
            await stub.QueuePush(collections_pb2.QueuePushRequest(bucket="demo-jobs", value=b"job-%d" % number))
        popped: list[bytes] = []

        async def popper() -> None:
            while True:
                answer = await stub.QueuePop(collections_pb2.QueuePopRequest(bucket="demo-jobs"), timeout=30)
                if not answer.HasField("value"):
                    return
                popped.append(answer.value)

        await asyncio.gather(popper(), popper())
        fields = await stub.HashGetAll(
            collections_pb2.HashGetAllRequest(bucket="demo-users", hash_key="user:1"), timeout=30
        )
        members = await stub.SetMembers(
            collections_pb2.SetMembersRequest(bucket="demo-tags", set_key="user:1"), timeout=30
        )
    progress(f"collections: hash of {len(fields.entries)} fields, set of {len(members.members)}, popped {len(popped)}")
    verified = (
        [(entry.field, entry.value) for entry in fields.entries] == [("lang", b"en"), ("name", b"Ada L.")]
        and list(members.members) == ["blue", "green"]
        and sorted(popped) == sorted(b"job-%d" % number for number in range(elements))
    )
    return {"popped": len(popped), "verified": verified}


async def objects_round_trip(address: str, mib: int = 3) -> dict[str, Any]:
    """Through a router's weir.v1.ObjectStore service: an object streamed in and out (its sha256
    checked) and a range from its middle. Returns the size and `verified`."""
    content = hashlib.sha256(b"weir demo").digest() * (mib * 1024 * 1024 // 32)
    async with weir_tls.aio_channel(address) as channel:
        stub = objects_pb2_grpc.ObjectStoreStub(channel)
        await stub.CreateObjectBucket(objects_pb2.CreateObjectBucketRequest(bucket="demo-files"), timeout=30)

        async def frames() -> Any:
            yield objects_pb2.PutObjectStreamFrame(
                start=objects_pb2.PutObjectStart(bucket="demo-files", name="demo.bin")
            )
            for start in range(0, len(content), 64 * 1024):
                yield objects_pb2.PutObjectStreamFrame(data=content[start : start + 64 * 1024])
            yield objects_pb2.PutObjectStreamFrame(finish=True)

        put = await stub.PutObjectStream(frames(), timeout=120)
        back = bytearray()
        async for frame in stub.GetObjectStream(
            objects_pb2.GetObjectRequest(bucket="demo-files", name="demo.bin"), timeout=120
        ):
            back += frame.data
        middle = len(content) // 2
        ranged = await stub.GetObjectRange(
            objects_pb2.GetObjectRangeRequest(bucket="demo-files", name="demo.bin", offset=middle, len=1000), timeout=30
        )
    progress(f"object store: {len(content)} bytes streamed in and out, {put.info.chunk_count} chunks")
    verified = (
        bytes(back) == content
        and put.info.sha256 == hashlib.sha256(content).hexdigest()
        and ranged.payload == content[middle : middle + 1000]
    )
    return {"bytes": len(content), "verified": verified}
