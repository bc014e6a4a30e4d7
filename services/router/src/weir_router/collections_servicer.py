"""weir.v1.Collections servicer (collections.proto): a thin adapter over the SDK's
`weir.collections.Collections`, on the router's own cluster client (as KeyValue). The caller's
permissions were checked by the access interceptor against the store's stream."""

from __future__ import annotations

from typing import Any

from weir.collections import Collections
from weir.v1 import collections_pb2 as pb
from weir.v1 import collections_pb2_grpc

from weir_router.servicer import unary


class CollectionsServicer(collections_pb2_grpc.CollectionsServicer):
    def __init__(self, collections: Collections) -> None:
        self.collections = collections

    # -- hash ------------------------------------------------------------------------------------------

    @unary
    async def CreateHashStore(self, request: pb.CreateHashStoreRequest, context: Any) -> Any:
        await self.collections.create_hash_store(request)
        return pb.CreateHashStoreResponse()

    @unary
    async def DeleteHashStore(self, request: pb.DeleteHashStoreRequest, context: Any) -> Any:
        await self.collections.delete_hash_store(request.name)
        return pb.DeleteHashStoreResponse()

    @unary
    async def HashSet(self, request: pb.HashSetRequest, context: Any) -> Any:
        revision = await self.collections.hash_set(request.bucket, request.hash_key, request.field, request.value)
        return pb.HashSetResponse(revision=revision)

    @unary
    async def HashGet(self, request: pb.HashGetRequest, context: Any) -> Any:
        message = await self.collections.hash_get(request.bucket, request.hash_key, request.field)
        if message is None:
            return pb.HashGetResponse()
        return pb.HashGetResponse(value=message.payload, revision=message.seq)

    @unary
    async def HashExists(self, request: pb.HashExistsRequest, context: Any) -> Any:
        message = await self.collections.hash_get(request.bucket, request.hash_key, request.field)
        return pb.HashExistsResponse(exists=message is not None)

    @unary
    async def HashDelete(self, request: pb.HashDeleteRequest, context: Any) -> Any:
        await self.collections.hash_delete(request.bucket, request.hash_key, request.field)
        return pb.HashDeleteResponse()

    @unary
    async def HashGetAll(self, request: pb.HashGetAllRequest, context: Any) -> Any:
        return pb.HashGetAllResponse(entries=await self.collections.hash_get_all(request.bucket, request.hash_key))

    @unary
    async def HashFields(self, request: pb.HashFieldsRequest, context: Any) -> Any:
        entries = await self.collections.hash_get_all(request.bucket, request.hash_key)
        return pb.HashFieldsResponse(fields=[entry.field for entry in entries])

    @unary
    async def HashLen(self, request: pb.HashLenRequest, context: Any) -> Any:
        entries = await self.collections.hash_get_all(request.bucket, request.hash_key)
        return pb.HashLenResponse(count=len(entries))

    # -- set -------------------------------------------------------------------------------------------

    @unary
    async def CreateSetStore(self, request: pb.CreateSetStoreRequest, context: Any) -> Any:
        await self.collections.create_set_store(request)
        return pb.CreateSetStoreResponse()

    @unary
    async def DeleteSetStore(self, request: pb.DeleteSetStoreRequest, context: Any) -> Any:
        await self.collections.delete_set_store(request.name)
        return pb.DeleteSetStoreResponse()

    @unary
    async def SetAdd(self, request: pb.SetAddRequest, context: Any) -> Any:
        await self.collections.set_add(request.bucket, request.set_key, request.member)
        return pb.SetAddResponse()

    @unary
    async def SetRemove(self, request: pb.SetRemoveRequest, context: Any) -> Any:
        await self.collections.set_remove(request.bucket, request.set_key, request.member)
        return pb.SetRemoveResponse()

    @unary
    async def SetIsMember(self, request: pb.SetIsMemberRequest, context: Any) -> Any:
        member = await self.collections.set_is_member(request.bucket, request.set_key, request.member)
        return pb.SetIsMemberResponse(is_member=member)

    @unary
    async def SetMembers(self, request: pb.SetMembersRequest, context: Any) -> Any:
        return pb.SetMembersResponse(members=await self.collections.set_members(request.bucket, request.set_key))

    @unary
    async def SetLen(self, request: pb.SetLenRequest, context: Any) -> Any:
        members = await self.collections.set_members(request.bucket, request.set_key)
        return pb.SetLenResponse(count=len(members))

    # -- queue -----------------------------------------------------------------------------------------

    @unary
    async def CreateQueue(self, request: pb.CreateQueueRequest, context: Any) -> Any:
        await self.collections.create_queue(request)
        return pb.CreateQueueResponse()

    @unary
    async def DeleteQueue(self, request: pb.DeleteQueueRequest, context: Any) -> Any:
        await self.collections.delete_queue(request.name)
        return pb.DeleteQueueResponse()

    @unary
    async def QueuePush(self, request: pb.QueuePushRequest, context: Any) -> Any:
        return pb.QueuePushResponse(sequence=await self.collections.queue_push(request.bucket, request.value))

    @unary
    async def QueuePop(self, request: pb.QueuePopRequest, context: Any) -> Any:
        value = await self.collections.queue_pop(request.bucket)
        return pb.QueuePopResponse() if value is None else pb.QueuePopResponse(value=value)

    @unary
    async def QueueRange(self, request: pb.QueueRangeRequest, context: Any) -> Any:
        values = await self.collections.queue_range(request.bucket, request.from_sequence, request.limit)
        return pb.QueueRangeResponse(values=values)

    @unary
    async def QueueLen(self, request: pb.QueueLenRequest, context: Any) -> Any:
        return pb.QueueLenResponse(count=await self.collections.queue_len(request.bucket))
