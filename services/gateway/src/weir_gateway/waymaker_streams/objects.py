"""The streams seed's object store calls (its "Phase 4 — Object Store": PutObject, GetObject,
DeleteObject, GetObjectInfo, ListObjects, PutObjectStream, GetObjectStream, ListObjectRevisions,
GetObjectRange) over the SDK's `weir.objects.ObjectStore`: decode, call, encode. Source: the seed's
comments on those RPCs and messages (proto/gateway/.../waymaker_streams.proto).

The seed's bucket `B` is the one-partition stream `obj:B`, as is Weir's (CreateStream of that name
makes one; see `mapping.object_bucket_from_seed`). Results are in the response bodies as the seed
defines them (`mapping.seed_result_code`): no_such_bucket, no_such_object, sha_mismatch,
incomplete (a chunk of the revision being read is gone: it was replaced or deleted meanwhile),
invalid_argument for a bad bucket name, object name (1..512 bytes of UTF-8), header list or bound.
GetObjectStream has no result fields: its errors end the call with their gRPC status (sha_mismatch
and incomplete ABORTED, no_such_* NOT_FOUND), as the seed says.

Bounds: a unary answer is at most 4 MiB (`MAX_UNARY_BYTES`, gRPC's default message limit, which a
seed client receives by default and which bounds a unary PutObject too): a GetObject or
GetObjectRange of more content is refused before any chunk is read, and one whose answer with its
info would not fit is refused too (invalid_argument, naming GetObjectStream and smaller ranges).
PutObjectStream and GetObjectStream flow chunk by chunk (a few chunks in memory, whatever the
object's size).

Where Weir's store differs, said honestly:
- Chunks: every chunk but the last has `chunk_size` bytes (streamed data is re-chunked as it comes,
  so a range read loads only the chunks it overlaps); the seed stores a PutObjectStream's frames as
  its chunks. With chunk_size 0 a PutObjectStream takes its first data frame's size, so equal frames
  are one chunk each as in the seed. Above Weir's largest chunk (960 KiB) a chunk_size is stored as
  that (`mapping.chunk_size_from_seed`); 0 on PutObject is Weir's default, 256 KiB.
- GetObjectRange `len` 0 reads to the end, as GetObjectRangeRequest.len says (the RPC's comment
  says an empty payload; the two disagree, and the field's is the specific one).
- GetObjectInfo of a name never put answers no_such_object; of a deleted one ok with `deleted`
  and no `info` (the seed lists both and says `info` is unset for each).
- Header keys: one value per key (a key given twice is invalid_argument).
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any, TypeVar

import grpc
from weir.errors import InvalidArgumentError, NoSuchObjectError, WeirError
from weir.objects import ObjectStore, upload_data

from weir_gateway import metrics
from weir_gateway.waymaker_streams import mapping
from weir_gateway.waymaker_streams.pb import waymaker_streams_pb2 as seed
from weir_gateway.waymaker_streams.rpc import OK, PROTOCOL, seed_rpc

MAX_UNARY_BYTES = 4 * 1024 * 1024  # gRPC's default message limit: beyond it, the streaming calls
ResponseT = TypeVar("ResponseT", seed.GetObjectResponse, seed.GetObjectRangeResponse)


def _fitting(answer: ResponseT) -> ResponseT:
    """`answer` when it fits one gRPC message a client receives by default. Errors:
    InvalidArgumentError (the content with its info is too large for one answer)."""
    size = answer.ByteSize()
    if size > MAX_UNARY_BYTES:
        raise InvalidArgumentError(
            f"the answer would be {size} bytes, above the {MAX_UNARY_BYTES} a gRPC client receives by default: "
            "read it streamed (GetObjectStream) or in smaller ranges (GetObjectRange)"
        )
    return answer


async def _prepended(head: bytes, rest: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    if head:
        yield head
    async for piece in rest:
        yield piece


class ObjectCalls:
    """The seed's 9 object calls (a part of `WaymakerStreamsServicer`, on its `objects`)."""

    objects: ObjectStore

    @seed_rpc(seed.PutObjectResponse)
    async def PutObject(self, request: seed.PutObjectRequest, context: Any) -> seed.PutObjectResponse:
        """Store `payload` (at most 4 MiB: gRPC's message limit) as object `name`; a `sha256` that does
        not match stores nothing (sha_mismatch)."""
        meta = await self.objects.put(
            request.bucket,
            request.name,
            request.payload,
            chunk_size=mapping.chunk_size_from_seed(request.chunk_size),
            headers=mapping.object_headers_from_seed(request.headers),
            sha256=request.sha256,
            dedupe=request.dedupe,
        )
        return seed.PutObjectResponse(**OK, info=mapping.object_info_to_seed(meta))

    @seed_rpc(seed.PutObjectResponse)
    async def PutObjectStream(
        self, request_iterator: AsyncIterator[seed.PutObjectStreamFrame], context: Any
    ) -> seed.PutObjectResponse:
        """The first frame sets `start`, later ones carry `data`, the last sets `finish`; the data is
        stored as it comes (a few chunks in memory). A stream that ends before `finish`, a later
        frame with `start` or a `sha256` that does not match stores no object."""
        frames = aiter(request_iterator)
        first = await anext(frames, None)
        if first is None or not first.HasField("start"):
            raise InvalidArgumentError("the first frame must set start (bucket, name, chunk_size, headers, sha256)")
        start = first.start
        headers = mapping.object_headers_from_seed(start.headers)
        data = upload_data(first, frames)
        chunk_size = start.chunk_size
        if not chunk_size:  # the seed's chunks are the client's frames: take the first one's size
            head = await anext(data, b"")
            chunk_size, data = len(head), _prepended(head, data)
        meta = await self.objects.put(
            start.bucket,
            start.name,
            data,
            chunk_size=mapping.chunk_size_from_seed(chunk_size),
            headers=headers,
            sha256=start.sha256,
            dedupe=start.dedupe,
        )
        return seed.PutObjectResponse(**OK, info=mapping.object_info_to_seed(meta))

    @seed_rpc(seed.GetObjectResponse)
    async def GetObject(self, request: seed.GetObjectRequest, context: Any) -> seed.GetObjectResponse:
        """The whole object, checked against its sha256; one whose answer would be above 4 MiB is
        invalid_argument (GetObjectStream or GetObjectRange read it)."""
        meta, payload = await self.objects.read(request.bucket, request.name, MAX_UNARY_BYTES)
        return _fitting(seed.GetObjectResponse(**OK, info=mapping.object_info_to_seed(meta), payload=payload))

    async def GetObjectStream(
        self, request: seed.GetObjectRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[seed.GetObjectStreamFrame]:
        """A frame with `info`, one with `data` per chunk, a last with `done`. An error ends the call
        with its status (sha_mismatch, incomplete: ABORTED; no_such_bucket, no_such_object: NOT_FOUND)."""
        started = time.perf_counter()
        try:
            meta, chunks = await self.objects.get(request.bucket, request.name)
            yield seed.GetObjectStreamFrame(info=mapping.object_info_to_seed(meta))
            async for chunk in chunks:
                yield seed.GetObjectStreamFrame(data=chunk)
            yield seed.GetObjectStreamFrame(done=True)
        except WeirError as error:
            metrics.RPC_ERRORS.labels(
                PROTOCOL, "GetObjectStream", mapping.seed_result_code("GetObjectStream", error)
            ).inc()
            await context.abort(error.status_code, error.message)
        finally:
            metrics.RPC_SECONDS.labels(PROTOCOL, "GetObjectStream").observe(time.perf_counter() - started)

    @seed_rpc(seed.DeleteObjectResponse)
    async def DeleteObject(self, request: seed.DeleteObjectRequest, context: Any) -> seed.DeleteObjectResponse:
        """Store a tombstone (a name never put gets one too) and remove the object's chunks."""
        tombstone = await self.objects.delete(request.bucket, request.name)
        return seed.DeleteObjectResponse(**OK, tombstone_seq=tombstone)

    @seed_rpc(seed.GetObjectInfoResponse)
    async def GetObjectInfo(self, request: seed.GetObjectInfoRequest, context: Any) -> seed.GetObjectInfoResponse:
        """The live object's info; a deleted one: ok, `deleted`, no info; a name never put: no_such_object."""
        meta = await self.objects.info(request.bucket, request.name)
        if meta is not None:
            return seed.GetObjectInfoResponse(**OK, info=mapping.object_info_to_seed(meta))
        if not await self.objects.is_deleted(request.bucket, request.name):
            raise NoSuchObjectError(
                f"bucket {request.bucket!r} has no object {request.name!r} (it was never put)",
                bucket=request.bucket,
                name=request.name,
            )
        return seed.GetObjectInfoResponse(**OK, deleted=True)

    @seed_rpc(seed.ListObjectsResponse)
    async def ListObjects(self, request: seed.ListObjectsRequest, context: Any) -> seed.ListObjectsResponse:
        """Each object whose name starts with `name_prefix` (at most 10,000), sorted by name; the
        deleted ones too with `include_deleted`."""
        listed = await self.objects.list_objects(request.bucket, request.name_prefix, request.include_deleted)
        entries = [seed.ObjectListEntry(name=name, total_bytes=size, deleted=deleted) for name, size, deleted in listed]
        return seed.ListObjectsResponse(**OK, entries=entries)

    @seed_rpc(seed.ListObjectRevisionsResponse)
    async def ListObjectRevisions(
        self, request: seed.ListObjectRevisionsRequest, context: Any
    ) -> seed.ListObjectRevisionsResponse:
        """The kept metadata revisions of `name` with seq >= `from_seq`, oldest first, at most
        `limit` (0 = 100, at most 10,000); a tombstone is `deleted` with the rest 0 / empty."""
        found = await self.objects.revisions(request.bucket, request.name, request.from_seq, request.limit)
        return seed.ListObjectRevisionsResponse(**OK, revisions=[mapping.revision_to_seed(entry) for entry in found])

    @seed_rpc(seed.GetObjectRangeResponse)
    async def GetObjectRange(self, request: seed.GetObjectRangeRequest, context: Any) -> seed.GetObjectRangeResponse:
        """Bytes [offset, offset + len) (len 0: to the end), loading only the chunks they overlap;
        shorter past the end, empty beyond it; a len above 4 MiB, or an answer that would be, is
        invalid_argument."""
        if request.len > MAX_UNARY_BYTES:
            raise InvalidArgumentError(f"len: at most {MAX_UNARY_BYTES} in one answer, got {request.len}")
        meta, payload = await self.objects.get_range(
            request.bucket, request.name, request.offset, request.len, MAX_UNARY_BYTES
        )
        return _fitting(
            seed.GetObjectRangeResponse(
                **OK,
                info=mapping.object_info_to_seed(meta),
                actual_offset=min(request.offset, meta.total_bytes),
                payload=payload,
            )
        )
