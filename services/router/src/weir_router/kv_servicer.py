"""weir.v1.KeyValue servicer (kv.proto): a thin adapter over the SDK's `weir.kv.KeyValue`, which
runs on a cluster client of this router's own (routes, retries, idempotent writes). The caller's
permissions were checked by the access interceptor against the bucket's stream `kv:<bucket>`
(weir_server.permissions); the client acts with the services' identity."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import grpc
from weir.errors import InternalError, WeirError
from weir.kv import KeyValue
from weir.v1 import kv_pb2, kv_pb2_grpc

from weir_router import metrics
from weir_router.servicer import unary

logger = logging.getLogger(__name__)


def server_stream(
    handler: Callable[[Any, Any, grpc.aio.ServicerContext], AsyncIterator[Any]],
) -> Callable[[Any, Any, grpc.aio.ServicerContext], AsyncIterator[Any]]:
    """A streaming handler whose failure ends the call with its typed status (as `unary`)."""
    method = handler.__name__

    @functools.wraps(handler)
    async def wrapper(self: Any, request: Any, context: grpc.aio.ServicerContext) -> AsyncIterator[Any]:
        started = time.perf_counter()
        try:
            async for item in handler(self, request, context):
                yield item
        except Exception as raw:
            if isinstance(raw, WeirError):
                error = raw
            else:
                logger.exception("%s failed unexpectedly", method)
                error = InternalError(f"{type(raw).__name__}: {raw}")
            metrics.RPC_ERRORS.labels(method, error.result_code.value).inc()
            await context.abort_with_status(error.to_status())
        finally:
            metrics.RPC_SECONDS.labels(method).observe(time.perf_counter() - started)

    return wrapper


class KeyValueServicer(kv_pb2_grpc.KeyValueServicer):
    def __init__(self, kv: KeyValue) -> None:
        self.kv = kv

    @unary
    async def CreateBucket(self, request: kv_pb2.KvCreateBucketRequest, context: Any) -> Any:
        await self.kv.create_bucket(request)
        return kv_pb2.KvCreateBucketResponse()

    @unary
    async def DeleteBucket(self, request: kv_pb2.KvDeleteBucketRequest, context: Any) -> Any:
        await self.kv.delete_bucket(request.bucket)
        return kv_pb2.KvDeleteBucketResponse()

    @unary
    async def Put(self, request: kv_pb2.KvPutRequest, context: Any) -> Any:
        revision = await self.kv.put(request.bucket, request.key, request.value, request.ttl_ms)
        return kv_pb2.KvPutResponse(revision=revision)

    @unary
    async def Create(self, request: kv_pb2.KvCreateRequest, context: Any) -> Any:
        revision = await self.kv.create(request.bucket, request.key, request.value, request.ttl_ms)
        return kv_pb2.KvPutResponse(revision=revision)

    @unary
    async def Update(self, request: kv_pb2.KvUpdateRequest, context: Any) -> Any:
        revision = await self.kv.update(
            request.bucket, request.key, request.value, request.expected_revision, request.ttl_ms
        )
        return kv_pb2.KvPutResponse(revision=revision)

    @unary
    async def Get(self, request: kv_pb2.KvGetRequest, context: Any) -> Any:
        entry = await self.kv.get(request.bucket, request.key)
        return kv_pb2.KvGetResponse(entry=entry) if entry is not None else kv_pb2.KvGetResponse()

    @unary
    async def Delete(self, request: kv_pb2.KvDeleteRequest, context: Any) -> Any:
        return kv_pb2.KvDeleteResponse(revision=await self.kv.delete(request.bucket, request.key))

    @unary
    async def Touch(self, request: kv_pb2.KvTouchRequest, context: Any) -> Any:
        return kv_pb2.KvPutResponse(revision=await self.kv.touch(request.bucket, request.key, request.ttl_ms))

    @unary
    async def Purge(self, request: kv_pb2.KvPurgeRequest, context: Any) -> Any:
        return kv_pb2.KvDeleteResponse(revision=await self.kv.purge(request.bucket, request.key))

    @unary
    async def Keys(self, request: kv_pb2.KvKeysRequest, context: Any) -> Any:
        entries, truncated = await self.kv.keys(request.bucket)
        return kv_pb2.KvKeysResponse(entries=entries, truncated=truncated)

    @unary
    async def History(self, request: kv_pb2.KvHistoryRequest, context: Any) -> Any:
        entries = await self.kv.history(request.bucket, request.key, request.from_revision, request.limit)
        return kv_pb2.KvHistoryResponse(entries=entries)

    @server_stream
    async def Watch(self, request: kv_pb2.KvWatchRequest, context: Any) -> AsyncIterator[Any]:
        async for event in self.kv.watch(request.bucket, request.key, request.from_revision):
            yield event
