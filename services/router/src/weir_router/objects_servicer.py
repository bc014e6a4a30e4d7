"""weir.v1.ObjectStore servicer (objects.proto): a thin adapter over the SDK's
`weir.objects.ObjectStore`, on the router's own cluster client (as KeyValue). Streams flow chunk by
chunk: a put or get of any size holds a few chunks in memory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from weir.errors import InvalidArgumentError
from weir.objects import GC_GRACE_MS, ObjectMeta, ObjectStore
from weir.v1 import objects_pb2 as pb
from weir.v1 import objects_pb2_grpc, types_pb2

from weir_router.kv_servicer import server_stream
from weir_router.servicer import unary

MAX_UNARY_BYTES = 4 * 1024 * 1024  # grpc's default message limit: beyond it, the streaming calls


def object_info(meta: ObjectMeta) -> pb.ObjectInfo:
    return pb.ObjectInfo(
        name=meta.name,
        total_bytes=meta.total_bytes,
        chunk_size=meta.chunk_size,
        chunk_count=meta.chunk_count,
        sha256=meta.sha256,
        ts_ms=meta.ts_ms,
        headers=[types_pb2.Header(key=key, value=value) for key, value in meta.headers.items()],
        metadata_seq=meta.revision,
        deduped=meta.deduped,
    )


async def _data_frames(
    first: pb.PutObjectStreamFrame, frames: AsyncIterator[pb.PutObjectStreamFrame]
) -> AsyncIterator[bytes]:
    """The data of a PutObjectStream up to its `finish` frame; a stream that ends before it fails
    (the put then stores no object)."""
    frame = first
    while True:
        if frame.data:
            yield frame.data
        if frame.finish:
            return
        try:
            frame = await anext(frames)
        except StopAsyncIteration:
            raise InvalidArgumentError("the stream ended without a frame with finish: no object stored") from None
        if frame.HasField("start"):
            raise InvalidArgumentError("only the first frame may set start")


class ObjectStoreServicer(objects_pb2_grpc.ObjectStoreServicer):
    def __init__(self, objects: ObjectStore) -> None:
        self.objects = objects

    @unary
    async def CreateObjectBucket(self, request: pb.CreateObjectBucketRequest, context: Any) -> Any:
        await self.objects.create_bucket(
            request.bucket,
            history=request.history,
            replicas=request.replicas,
            max_bytes=request.max_bytes,
            ephemeral=request.ephemeral,
        )
        return pb.CreateObjectBucketResponse()

    @unary
    async def DeleteObjectBucket(self, request: pb.DeleteObjectBucketRequest, context: Any) -> Any:
        await self.objects.delete_bucket(request.bucket)
        return pb.DeleteObjectBucketResponse()

    @unary
    async def PutObject(self, request: pb.PutObjectRequest, context: Any) -> Any:
        meta = await self.objects.put(
            request.bucket,
            request.name,
            request.payload,
            chunk_size=request.chunk_size,
            headers={header.key: header.value for header in request.headers},
            sha256=request.sha256,
            dedupe=request.dedupe,
        )
        return pb.PutObjectResponse(info=object_info(meta))

    @unary
    async def PutObjectStream(self, request_iterator: AsyncIterator[pb.PutObjectStreamFrame], context: Any) -> Any:
        frames = aiter(request_iterator)
        first = await anext(frames, None)
        if first is None or not first.HasField("start"):
            raise InvalidArgumentError("the first frame must set start (bucket, name, ...)")
        start = first.start
        meta = await self.objects.put(
            start.bucket,
            start.name,
            _data_frames(first, frames),
            chunk_size=start.chunk_size,
            headers={header.key: header.value for header in start.headers},
            sha256=start.sha256,
            dedupe=start.dedupe,
        )
        return pb.PutObjectResponse(info=object_info(meta))

    @unary
    async def GetObject(self, request: pb.GetObjectRequest, context: Any) -> Any:
        meta = await self.objects.info(request.bucket, request.name)
        if meta is not None and meta.total_bytes > MAX_UNARY_BYTES:
            raise InvalidArgumentError(
                f"object {request.name!r} is {meta.total_bytes} bytes, above GetObject's {MAX_UNARY_BYTES}: "
                "use GetObjectStream or GetObjectRange"
            )
        meta, chunks = await self.objects.get(request.bucket, request.name)
        payload = b"".join([chunk async for chunk in chunks])
        return pb.GetObjectResponse(info=object_info(meta), payload=payload)

    @server_stream
    async def GetObjectStream(self, request: pb.GetObjectRequest, context: Any) -> AsyncIterator[Any]:
        meta, chunks = await self.objects.get(request.bucket, request.name)
        yield pb.GetObjectStreamFrame(info=object_info(meta))
        async for chunk in chunks:
            yield pb.GetObjectStreamFrame(data=chunk)
        yield pb.GetObjectStreamFrame(done=True)

    @unary
    async def DeleteObject(self, request: pb.DeleteObjectRequest, context: Any) -> Any:
        return pb.DeleteObjectResponse(tombstone_seq=await self.objects.delete(request.bucket, request.name))

    @unary
    async def GetObjectInfo(self, request: pb.GetObjectInfoRequest, context: Any) -> Any:
        meta = await self.objects.info(request.bucket, request.name)
        if meta is not None:
            return pb.GetObjectInfoResponse(info=object_info(meta))
        return pb.GetObjectInfoResponse(deleted=await self.objects.is_deleted(request.bucket, request.name))

    @unary
    async def ListObjects(self, request: pb.ListObjectsRequest, context: Any) -> Any:
        entries = await self.objects.list_objects(request.bucket, request.name_prefix, request.include_deleted)
        return pb.ListObjectsResponse(
            entries=[
                pb.ObjectListEntry(name=name, total_bytes=size, deleted=deleted) for name, size, deleted in entries
            ]
        )

    @unary
    async def ListObjectRevisions(self, request: pb.ListObjectRevisionsRequest, context: Any) -> Any:
        if request.limit > 10_000:
            raise InvalidArgumentError(f"limit: at most 10000, got {request.limit}")
        revisions = await self.objects.revisions(request.bucket, request.name, request.from_seq, request.limit)
        entries = []
        for revision in revisions:
            if isinstance(revision, int):
                entries.append(pb.ObjectRevisionEntry(metadata_seq=revision, deleted=True))
            else:
                entries.append(
                    pb.ObjectRevisionEntry(
                        metadata_seq=revision.revision,
                        total_bytes=revision.total_bytes,
                        chunk_count=revision.chunk_count,
                        sha256=revision.sha256,
                        ts_ms=revision.ts_ms,
                    )
                )
        return pb.ListObjectRevisionsResponse(revisions=entries)

    @unary
    async def GetObjectRange(self, request: pb.GetObjectRangeRequest, context: Any) -> Any:
        if request.len > MAX_UNARY_BYTES:
            raise InvalidArgumentError(f"len: at most {MAX_UNARY_BYTES} in one answer, got {request.len}")
        meta = await self.objects.info(request.bucket, request.name)
        length = request.len or (max(0, meta.total_bytes - request.offset) if meta is not None else 0)
        if length > MAX_UNARY_BYTES:
            raise InvalidArgumentError(f"the range to the end is {length} bytes, above {MAX_UNARY_BYTES}: give len")
        meta, payload = await self.objects.get_range(request.bucket, request.name, request.offset, length)
        return pb.GetObjectRangeResponse(
            info=object_info(meta), actual_offset=min(request.offset, meta.total_bytes), payload=payload
        )

    @unary
    async def CollectGarbage(self, request: pb.CollectGarbageRequest, context: Any) -> Any:
        removed = await self.objects.collect_garbage(request.bucket, request.grace_ms or GC_GRACE_MS)
        return pb.CollectGarbageResponse(removed=removed)
