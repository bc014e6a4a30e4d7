"""weir.v1.Router servicer: a thin adapter over `RouterCore`.

Calls that change placement (CreateStream, DeleteStream, UpdateStream) run on the controller; a
router that does not hold the lease forwards them to the one that does (once: a forwarded call that
meets a non-controller fails with UNAVAILABLE, retryable, while the lease moves).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc
from weir import tls as weir_tls
from weir.client import CHANNEL_OPTIONS
from weir.errors import InternalError, InvalidArgumentError, UnavailableError, WeirError
from weir.v1 import router_pb2, router_pb2_grpc, streams_pb2

from weir_router import metrics
from weir_router.core import RouterCore

logger = logging.getLogger(__name__)
Request = TypeVar("Request")
Response = TypeVar("Response")
FORWARDED_KEY = "x-weir-forwarded-by"


def unary(
    handler: Callable[[Any, Request, grpc.aio.ServicerContext], Awaitable[Response]],
) -> Callable[[Any, Request, grpc.aio.ServicerContext], Awaitable[Response]]:
    method = handler.__name__
    histogram = metrics.RPC_SECONDS.labels(method)

    @functools.wraps(handler)
    async def wrapper(self: Any, request: Request, context: grpc.aio.ServicerContext) -> Response:
        started = time.perf_counter()
        try:
            return await handler(self, request, context)
        except Exception as raw:
            if isinstance(raw, WeirError):
                error = raw
            elif isinstance(raw, grpc.aio.AioRpcError):
                error = WeirError.from_rpc_error(raw)
            elif isinstance(raw, (OSError, ConnectionError)) or type(raw).__module__.startswith("redis"):
                metrics.REDIS_ERRORS.inc()
                error = UnavailableError(f"cluster metadata unreachable: {type(raw).__name__}: {raw}")
            else:
                logger.exception("%s failed unexpectedly", method)
                error = InternalError(f"{type(raw).__name__}: {raw}")
            metrics.RPC_ERRORS.labels(method, error.result_code.value).inc()
            await context.abort_with_status(error.to_status())
            raise AssertionError("unreachable: abort raises") from None
        finally:
            histogram.observe(time.perf_counter() - started)

    return wrapper


class RouterServicer(router_pb2_grpc.RouterServicer):
    def __init__(self, core: RouterCore) -> None:
        self.core = core
        self._peers: dict[str, tuple[grpc.aio.Channel, router_pb2_grpc.RouterStub]] = {}

    async def close(self) -> None:
        for channel, _ in self._peers.values():
            await channel.close()

    async def _on_controller(self, method: str, request: Any, context: grpc.aio.ServicerContext) -> Any | None:
        """None when this router is the controller (handle locally); else the controller's answer."""
        if self.core.controller.held:
            return None
        forwarded = dict(context.invocation_metadata() or ()).get(FORWARDED_KEY)
        controller_id, address = await self.core.controller.lease_holder()
        if forwarded or not address or address == self.core.address:
            raise UnavailableError(
                f"{method}: no router holds the controller lease right now (it moves within "
                f"{self.core.settings.lease_ms} ms); retry"
            )
        peer = self._peers.get(address)
        if peer is None:
            channel = weir_tls.aio_channel(address, CHANNEL_OPTIONS)
            peer = self._peers[address] = (channel, router_pb2_grpc.RouterStub(channel))
        call = getattr(peer[1], method)
        logger.debug("forwarding %s to controller %s at %s", method, controller_id, address)
        return await call(
            request,
            timeout=self.core.settings.node_timeout_ms / 1000 * 3,
            metadata=((FORWARDED_KEY, self.core.settings.router_id),),
        )

    @unary
    async def QueryRoute(self, request: router_pb2.QueryRouteRequest, context: Any) -> Any:
        return await self.core.routing.query_route(request.stream, request.endpoints)

    @unary
    async def QueryAssignment(self, request: router_pb2.QueryAssignmentRequest, context: Any) -> Any:
        return await self.core.groups.query_assignment(request)

    @unary
    async def LeaveGroup(self, request: router_pb2.LeaveGroupRequest, context: Any) -> Any:
        await self.core.groups.leave_group(request.stream, request.group, request.client_id)
        return router_pb2.LeaveGroupResponse()

    @unary
    async def GetGroupInfo(self, request: router_pb2.GetGroupInfoRequest, context: Any) -> Any:
        return await self.core.groups.group_info(request.stream, request.group)

    @unary
    async def CreateStream(self, request: streams_pb2.CreateStreamRequest, context: Any) -> Any:
        if request.HasField("placement"):
            raise InvalidArgumentError("placement: chosen by the router's controller; leave it unset")
        forwarded = await self._on_controller("CreateStream", request, context)
        if forwarded is not None:
            return forwarded
        return await self.core.admin.create_stream(request.config)

    @unary
    async def DeleteStream(self, request: streams_pb2.DeleteStreamRequest, context: Any) -> Any:
        forwarded = await self._on_controller("DeleteStream", request, context)
        if forwarded is not None:
            return forwarded
        await self.core.admin.delete_stream(request.name)
        return streams_pb2.DeleteStreamResponse()

    @unary
    async def UpdateStream(self, request: streams_pb2.UpdateStreamRequest, context: Any) -> Any:
        forwarded = await self._on_controller("UpdateStream", request, context)
        if forwarded is not None:
            return forwarded
        return await self.core.admin.update_stream(request)

    @unary
    async def GetStreamInfo(self, request: streams_pb2.GetStreamInfoRequest, context: Any) -> Any:
        return await self.core.admin.stream_info(request.name)

    @unary
    async def ListStreams(self, request: streams_pb2.ListStreamsRequest, context: Any) -> Any:
        return streams_pb2.ListStreamsResponse(names=await self.core.admin.list_streams())

    @unary
    async def CreateConsumer(self, request: streams_pb2.CreateConsumerRequest, context: Any) -> Any:
        return streams_pb2.CreateConsumerResponse(
            info=await self.core.admin.create_consumer(request.stream, request.config)
        )

    @unary
    async def DeleteConsumer(self, request: streams_pb2.DeleteConsumerRequest, context: Any) -> Any:
        await self.core.admin.delete_consumer(request.stream, request.consumer)
        return streams_pb2.DeleteConsumerResponse()

    @unary
    async def ListConsumers(self, request: streams_pb2.ListConsumersRequest, context: Any) -> Any:
        return streams_pb2.ListConsumersResponse(consumers=await self.core.admin.list_consumers(request.stream))

    @unary
    async def GetConsumerInfo(self, request: streams_pb2.GetConsumerInfoRequest, context: Any) -> Any:
        return streams_pb2.GetConsumerInfoResponse(
            info=await self.core.admin.consumer_info(request.stream, request.consumer)
        )

    @unary
    async def GetClusterStreamStats(self, request: router_pb2.GetClusterStreamStatsRequest, context: Any) -> Any:
        return await self.core.views.cluster_stats(request.include_per_stream)

    @unary
    async def GetClusterInfo(self, request: router_pb2.GetClusterInfoRequest, context: Any) -> Any:
        return await self.core.views.cluster_info()

    @unary
    async def StartScrub(self, request: router_pb2.StartScrubRequest, context: Any) -> Any:
        return await self.core.views.start_scrub()

    async def MovePartition(
        self, request: router_pb2.MovePartitionRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[router_pb2.MoveProgress]:
        """Runs on the router it reaches (each placement change is a compare-and-set in Redis);
        a failed step ends the stream with its error's status."""
        started = time.perf_counter()
        try:
            async for progress in self.core.move_partition(request):
                yield progress
        except WeirError as error:
            metrics.RPC_ERRORS.labels("MovePartition", error.result_code.value).inc()
            await context.abort_with_status(error.to_status())
        finally:
            metrics.RPC_SECONDS.labels("MovePartition").observe(time.perf_counter() - started)

    @unary
    async def PlanRebalance(self, request: router_pb2.PlanRebalanceRequest, context: Any) -> Any:
        return await self.core.plan_rebalance(request.max_moves)

    @unary
    async def SetPartitionPinned(self, request: router_pb2.SetPartitionPinnedRequest, context: Any) -> Any:
        pinned = await self.core.set_partition_pinned(request.stream, request.partition, request.pinned)
        return router_pb2.SetPartitionPinnedResponse(pinned_partitions=pinned)
