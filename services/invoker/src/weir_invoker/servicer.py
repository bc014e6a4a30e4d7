"""weir.v1.Invoker servicer (invoker.proto): a thin adapter over `Operations`; a failure ends the
call with its typed status (gRPC status, ErrorInfo with the result code)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc
from weir.errors import InternalError, WeirError
from weir.v1 import invoker_pb2, invoker_pb2_grpc

from weir_invoker.operations import Operations

logger = logging.getLogger(__name__)
Request = TypeVar("Request")
Response = TypeVar("Response")


def unary(
    handler: Callable[[Any, Request, grpc.aio.ServicerContext], Awaitable[Response]],
) -> Callable[[Any, Request, grpc.aio.ServicerContext], Awaitable[Response]]:
    method = handler.__name__

    @functools.wraps(handler)
    async def wrapper(self: Any, request: Request, context: grpc.aio.ServicerContext) -> Response:
        try:
            return await handler(self, request, context)
        except Exception as raw:
            if isinstance(raw, WeirError):
                error = raw
            else:
                logger.exception("%s failed unexpectedly", method)
                error = InternalError(f"{type(raw).__name__}: {raw}")
            await context.abort_with_status(error.to_status())
            raise AssertionError("unreachable: abort raises") from None

    return wrapper


def _url(deployment: invoker_pb2.Deployment) -> str:
    return deployment.url


def _id(subscription: invoker_pb2.Subscription) -> str:
    return subscription.id


class InvokerServicer(invoker_pb2_grpc.InvokerServicer):
    def __init__(self, operations: Operations) -> None:
        self.operations = operations

    @unary
    async def RegisterDeployment(self, request: invoker_pb2.RegisterDeploymentRequest, context: Any) -> Any:
        deployment = await self.operations.register_deployment(request.url)
        return invoker_pb2.RegisterDeploymentResponse(deployment=deployment)

    @unary
    async def ListDeployments(self, request: invoker_pb2.ListDeploymentsRequest, context: Any) -> Any:
        deployments = sorted(self.operations.invoker.registry.deployments.values(), key=_url)
        return invoker_pb2.ListDeploymentsResponse(deployments=deployments)

    @unary
    async def RemoveDeployment(self, request: invoker_pb2.RemoveDeploymentRequest, context: Any) -> Any:
        await self.operations.invoker.registry.remove_deployment(request.id)
        return invoker_pb2.RemoveDeploymentResponse()

    @unary
    async def CreateSubscription(self, request: invoker_pb2.CreateSubscriptionRequest, context: Any) -> Any:
        subscription = await self.operations.create_subscription(request.subscription)
        return invoker_pb2.CreateSubscriptionResponse(subscription=subscription)

    @unary
    async def ListSubscriptions(self, request: invoker_pb2.ListSubscriptionsRequest, context: Any) -> Any:
        subscriptions = sorted(self.operations.invoker.registry.subscriptions.values(), key=_id)
        return invoker_pb2.ListSubscriptionsResponse(subscriptions=subscriptions)

    @unary
    async def DeleteSubscription(self, request: invoker_pb2.DeleteSubscriptionRequest, context: Any) -> Any:
        await self.operations.delete_subscription(request.id)
        return invoker_pb2.DeleteSubscriptionResponse()

    @unary
    async def Invoke(self, request: invoker_pb2.InvokeRequest, context: Any) -> Any:
        return invoker_pb2.InvokeResponse(invocation=await self.operations.invoke(request))

    @unary
    async def ListInvocations(self, request: invoker_pb2.ListInvocationsRequest, context: Any) -> Any:
        invocations, truncated = await self.operations.list_invocations(request)
        return invoker_pb2.ListInvocationsResponse(invocations=invocations, truncated=truncated)

    @unary
    async def GetInvocation(self, request: invoker_pb2.GetInvocationRequest, context: Any) -> Any:
        invocation, journal = await self.operations.get_invocation(request.id)
        return invoker_pb2.GetInvocationResponse(invocation=invocation, journal=journal)

    @unary
    async def CancelInvocation(self, request: invoker_pb2.CancelInvocationRequest, context: Any) -> Any:
        return invoker_pb2.CancelInvocationResponse(invocation=await self.operations.cancel(request.id))

    @unary
    async def CompleteAwakeable(self, request: invoker_pb2.CompleteAwakeableRequest, context: Any) -> Any:
        await self.operations.complete_awakeable(request)
        return invoker_pb2.CompleteAwakeableResponse()
