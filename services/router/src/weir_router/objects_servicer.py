"""weir.v1.ObjectStore servicer (objects.proto): a thin adapter over the SDK's
`weir.objects.ObjectStore`, on the router's own cluster client (as KeyValue). Streams flow chunk by
chunk: a put or get of any size holds a few chunks in memory."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from weir.errors import InvalidArgumentError
from weir.objects import GC_GRACE_MS, ObjectMeta, ObjectStore, revision_fields, upload_data
from weir.v1 import objects_pb2 as pb
from weir.v1 import objects_pb2_grpc, types_pb2

from weir_router.kv_servicer import server_stream
from weir_router.servicer import unary

MAX_UNARY_BYTES = 4 * 1024 * 1024  # grpc's default message limit: beyond it, the streaming calls


def object_info(meta: ObjectMeta) -> pb.ObjectInfo:
    headers = [types_pb2.Header(key=key, value=value) for key, value in meta.headers.items()]
    return pb.ObjectInfo(**meta.info_fields(), headers=headers)


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
            upload_data(first, frames),
            chunk_size=start.chunk_size,
            headers={header.key: header.value for header in start.headers},
            sha256=start.sha256,
            dedupe=start.dedupe,
        )
        return pb.PutObjectResponse(info=object_info(meta))

    @unary
    async def GetObject(self, request: pb.GetObjectRequest, context: Any) -> Any:
        meta, payload = await self.objects.read(request.bucket, request.name, MAX_UNARY_BYTES)
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
        revisions = await self.objects.revisions(request.bucket, request.name, request.from_seq, request.limit)
        return pb.ListObjectRevisionsResponse(
            revisions=[pb.ObjectRevisionEntry(**revision_fields(revision)) for revision in revisions]
        )

    @unary
    async def GetObjectRange(self, request: pb.GetObjectRangeRequest, context: Any) -> Any:
        if request.len > MAX_UNARY_BYTES:
            raise InvalidArgumentError(f"len: at most {MAX_UNARY_BYTES} in one answer, got {request.len}")
        meta, payload = await self.objects.get_range(
            request.bucket, request.name, request.offset, request.len, MAX_UNARY_BYTES
        )
        return pb.GetObjectRangeResponse(
            info=object_info(meta), actual_offset=min(request.offset, meta.total_bytes), payload=payload
        )

    @unary
    async def CollectGarbage(self, request: pb.CollectGarbageRequest, context: Any) -> Any:
        removed = await self.objects.collect_garbage(request.bucket, request.grace_ms or GC_GRACE_MS)
        return pb.CollectGarbageResponse(removed=removed)
