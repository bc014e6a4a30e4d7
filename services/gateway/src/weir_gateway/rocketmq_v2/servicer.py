"""The /apache.rocketmq.v2.MessagingService/* gRPC methods (RocketMQ 5's protocol, service.proto of
apache.rocketmq.v2) over the v1 door's `RocketMQCore`: the same topics, groups, headers, receipt
handles, transaction ids and orphan checks, so a message sent through either door is received,
acknowledged or resolved through the other. This module decodes, calls the core, encodes.

Served: QueryRoute, Heartbeat, SendMessage, QueryAssignment, ReceiveMessage (server-streaming: the
delivery timestamp, each message, then the status), AckMessage, ChangeInvisibleDuration,
ForwardMessageToDeadLetterQueue, EndTransaction, RecallMessage, NotifyClientTermination and Telemetry
(`telemetry.py`). PullMessage, UpdateOffset, GetOffset, QueryOffset and SyncLiteSubscription answer
NOT_IMPLEMENTED in their status.

Recall: SendMessage answers each DELAY message's entry a `recall_handle` (none for other types, as
RocketMQ), a token signed as transaction ids are (`handles.Signer`) naming the message's schedule
record (stream, partition, seq) and its message_id. RecallMessage(topic, recall_handle) discards that
record before its delivery time (`core.recall`, ReleaseScheduled with discard) and answers OK with
the message_id. A handle that does not verify (malformed, forged, another kind of token) or is of
another topic is BAD_REQUEST; a message no longer scheduled is NOT_FOUND, whether it was delivered
already or recalled already (the core keeps no record of a DELAY message's discard, so the two are
not told apart; RocketMQ's broker answers a repeated recall before the delivery time OK and a recall
after it an error). Neither failure changes anything; the official clients raise BadRequestException
and NotFoundException for them.

Errors: every response carries a v2 `Status` (definition.proto's Code: OK = 20000, BAD_REQUEST,
TOPIC_NOT_FOUND, INVALID_RECEIPT_HANDLE, ...; `encoding.status_of_error`), as RocketMQ 5's clients
read the outcome from it and not from the gRPC status, which is OK. A request that does not parse
changes nothing. SendMessage and AckMessage answer one entry per message or receipt handle; the
response's status is OK when all are, the one entry's status for one, else MULTIPLE_RESULTS.

Metadata: `x-mq-client-id` (the client, a member of its consumer group) is read; a resource's
namespace is its `resource_namespace` (RocketMQ 5's clients set it in every Resource), the
`x-mq-namespace` metadata is not read (permissions are checked on the resources); `x-mq-language`,
`x-mq-namespace`, `x-mq-protocol`,
`x-mq-client-version`, `x-mq-request-id`, `x-mq-date-time` and `authorization` (the MQv2-HMAC-SHA1
signature) are accepted as the v1 door accepts them.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc
from weir.errors import InvalidArgumentError

from weir_gateway import metrics
from weir_gateway.rocketmq_v1 import mapping
from weir_gateway.rocketmq_v1.core import RocketMQCore, RoutePartition
from weir_gateway.rocketmq_v1.encoding import timestamp_of
from weir_gateway.rocketmq_v1.receiving import ReceiveRequest, SettleRequest
from weir_gateway.rocketmq_v2.encoding import (
    enum_name,
    message_of,
    ok_status,
    outgoing_of,
    status_of_error,
)
from weir_gateway.rocketmq_v2.pb import definition_pb2, service_pb2, service_pb2_grpc
from weir_gateway.rocketmq_v2.telemetry import TelemetrySession, resource_namespace

logger = logging.getLogger(__name__)
PROTOCOL = "rocketmq_v2"
BROKER_NAME = "weir-gateway"  # every queue's broker: the gateway tier (any instance serves any partition)
CLIENT_ID_KEY = "x-mq-client-id"
MAX_ENTRIES = 1_024  # messages one SendMessage, receipt handles one AckMessage may carry
Request = TypeVar("Request")
Handler = Callable[[Any, Request, grpc.aio.ServicerContext], Awaitable[Any]]


def v2_rpc(response_type: type[Any]) -> Callable[[Handler[Request]], Handler[Request]]:
    """Times the method and turns a failure into `response_type(status=...)` (status_of_error)."""

    def decorate(handler: Handler[Request]) -> Handler[Request]:
        method = handler.__name__
        histogram = metrics.RPC_SECONDS.labels(PROTOCOL, method)

        @functools.wraps(handler)
        async def wrapper(self: Any, request: Request, context: grpc.aio.ServicerContext) -> Any:
            started = time.perf_counter()
            try:
                return await handler(self, request, context)
            except Exception as error:
                status = status_of_error(error)
                metrics.RPC_ERRORS.labels(PROTOCOL, method, definition_pb2.Code.Name(status.code).lower()).inc()
                if status.code == definition_pb2.INTERNAL_SERVER_ERROR:
                    logger.exception("rocketmq v2 %s failed", method)
                return response_type(status=status)
            finally:
                histogram.observe(time.perf_counter() - started)

        return wrapper

    return decorate


def metadata_of(context: grpc.aio.ServicerContext) -> dict[str, str]:
    """The call's text metadata, keys lower-cased (binary `-bin` entries left out)."""
    return {str(key).lower(): value for key, value in (context.invocation_metadata() or ()) if isinstance(value, str)}


def same_namespace(group: definition_pb2.Resource, topic: definition_pb2.Resource) -> str:
    """The namespace a group and a topic share. Errors: InvalidArgumentError when they differ."""
    namespace = resource_namespace(topic)
    group_namespace = resource_namespace(group)
    if group_namespace != namespace:
        raise InvalidArgumentError(f"group namespace {group_namespace!r} differs from topic namespace {namespace!r}")
    return namespace


def check_endpoints(endpoints: definition_pb2.Endpoints) -> None:
    """QueryRoute and QueryAssignment name the access point the client reached: it is the answer."""
    if not endpoints.addresses or not any(address.host for address in endpoints.addresses):
        raise InvalidArgumentError("endpoints: the access point the client used is required (at least one address)")


def queue_of(
    topic: definition_pb2.Resource,
    entry: RoutePartition,
    endpoints: definition_pb2.Endpoints,
    accepted: list[definition_pb2.MessageType],
) -> definition_pb2.MessageQueue:
    """A route entry: id = the Weir partition, broker id 0 (the master: the clients send to and
    receive from it only) at the endpoints the client reached this gateway at (the door's own
    address, as RocketMQ 5's proxy answers in cluster mode)."""
    return definition_pb2.MessageQueue(
        topic=topic,
        id=entry.index,
        permission=definition_pb2.READ_WRITE if entry.writable else definition_pb2.NONE,
        broker=definition_pb2.Broker(name=BROKER_NAME, id=0, endpoints=endpoints),
        accept_message_types=accepted,
    )


def entries_status(statuses: list[definition_pb2.Status]) -> definition_pb2.Status:
    """The response status of per-entry statuses (see the module docstring)."""
    if all(status.code == definition_pb2.OK for status in statuses):
        return ok_status()
    if len(statuses) == 1:
        return statuses[0]
    return definition_pb2.Status(
        code=definition_pb2.MULTIPLE_RESULTS, message="entries differ: see each entry's status"
    )


def check_entries(count: int, what: str) -> None:
    if not 0 < count <= MAX_ENTRIES:
        raise InvalidArgumentError(f"{what}: from 1 to {MAX_ENTRIES} per request, got {count}")


def settle_request_of(request: Any, receipt_handle: str) -> SettleRequest:
    """An AckMessage entry's, ChangeInvisibleDuration's or ForwardMessageToDeadLetterQueue's handle,
    group and topic (required: permissions are checked on it, and the handle must be of it; the
    two must share a namespace)."""
    if not request.topic.name:
        raise InvalidArgumentError("topic: required (the topic of the received message)")
    return SettleRequest(
        namespace=same_namespace(request.group, request.topic),
        topic=request.topic.name,
        group=request.group.name,
        receipt_handle=receipt_handle,
        max_delivery_attempts=max(0, getattr(request, "max_delivery_attempts", 0)),
    )


def receive_request_of(request: service_pb2.ReceiveMessageRequest) -> ReceiveRequest:
    """A ReceiveMessageRequest as the core receives it: the queue's partition for the group, its
    filter (TAG when unspecified), batch_size, invisible_duration (30 s when absent) and
    long_polling_timeout (the wait; 0 when absent)."""
    queue = request.message_queue
    filter_type = enum_name(definition_pb2.FilterType, request.filter_expression.type, "filter_expression.type")
    return ReceiveRequest(
        namespace=same_namespace(request.group, queue.topic),
        topic=queue.topic.name,
        group=request.group.name,
        partition=queue.id,
        filter_type="TAG" if filter_type == "FILTER_TYPE_UNSPECIFIED" else filter_type,
        filter_expression=request.filter_expression.expression,
        batch_size=request.batch_size,
        invisible_ms=request.invisible_duration.ToMilliseconds() if request.HasField("invisible_duration") else 0,
        await_ms=request.long_polling_timeout.ToMilliseconds() if request.HasField("long_polling_timeout") else 0,
    )


class RocketMQV2Servicer(service_pb2_grpc.MessagingServiceServicer):
    """apache.rocketmq.v2.MessagingService over `core` (shared with the v1 door)."""

    def __init__(self, core: RocketMQCore) -> None:
        self.core = core

    @v2_rpc(service_pb2.QueryRouteResponse)
    async def QueryRoute(self, request: service_pb2.QueryRouteRequest, context: Any) -> Any:
        check_endpoints(request.endpoints)
        namespace = resource_namespace(request.topic)
        stream, partitions = await self.core.query_route(namespace, request.topic.name)
        accepted = [definition_pb2.NORMAL, definition_pb2.FIFO]
        if (await self.core.client.stream_info(stream)).config.allow_scheduled_messages:
            accepted += [definition_pb2.DELAY, definition_pb2.TRANSACTION]
        topic = definition_pb2.Resource(resource_namespace=namespace, name=request.topic.name)
        queues = [queue_of(topic, entry, request.endpoints, accepted) for entry in partitions]
        return service_pb2.QueryRouteResponse(status=ok_status(), message_queues=queues)

    @v2_rpc(service_pb2.HeartbeatResponse)
    async def Heartbeat(self, request: service_pb2.HeartbeatRequest, context: Any) -> Any:
        client_type = enum_name(definition_pb2.ClientType, request.client_type, "client_type")
        if client_type == "CLIENT_TYPE_UNSPECIFIED":
            return service_pb2.HeartbeatResponse(
                status=definition_pb2.Status(
                    code=definition_pb2.UNRECOGNIZED_CLIENT_TYPE, message="client_type: required"
                )
            )
        return service_pb2.HeartbeatResponse(status=ok_status())

    @v2_rpc(service_pb2.SendMessageResponse)
    async def SendMessage(self, request: service_pb2.SendMessageRequest, context: Any) -> Any:
        check_entries(len(request.messages), "messages")
        if len({(message.topic.resource_namespace, message.topic.name) for message in request.messages}) != 1:
            raise InvalidArgumentError("messages: all of one request must be of one topic")
        outgoing = [outgoing_of(message, resource_namespace(message.topic)) for message in request.messages]
        response = service_pb2.SendMessageResponse()
        for message in outgoing:
            entry = response.entries.add(message_id=message.message_id)
            try:
                stored = await self.core.send(message)
            except Exception as error:
                entry.status.CopyFrom(status_of_error(error))
                continue
            entry.status.CopyFrom(ok_status())
            entry.transaction_id = stored.transaction_id
            entry.recall_handle = stored.recall_handle
            entry.offset = mapping.offset_of(stored.seq)
        response.status.CopyFrom(entries_status([entry.status for entry in response.entries]))
        return response

    @v2_rpc(service_pb2.QueryAssignmentResponse)
    async def QueryAssignment(self, request: service_pb2.QueryAssignmentRequest, context: Any) -> Any:
        check_endpoints(request.endpoints)
        metadata = metadata_of(context)
        namespace = same_namespace(request.group, request.topic)
        client_id = metadata.get(CLIENT_ID_KEY, "")
        partitions = await self.core.query_assignment(namespace, request.topic.name, request.group.name, client_id)
        accepted = [definition_pb2.NORMAL, definition_pb2.FIFO, definition_pb2.DELAY, definition_pb2.TRANSACTION]
        topic = definition_pb2.Resource(resource_namespace=namespace, name=request.topic.name)
        response = service_pb2.QueryAssignmentResponse(status=ok_status())
        for entry in partitions:
            response.assignments.add(message_queue=queue_of(topic, entry, request.endpoints, accepted))
        return response

    async def ReceiveMessage(
        self, request: service_pb2.ReceiveMessageRequest, context: Any
    ) -> AsyncIterator[service_pb2.ReceiveMessageResponse]:
        """The delivery timestamp, then each received message (its receipt handle, invisible
        duration and delivery attempt set), then the status: OK, or MESSAGE_NOT_FOUND when none
        came within the long polling timeout; on failure only the status."""
        started = time.perf_counter()
        try:
            received = await self.core.receiver.receive(receive_request_of(request))
        except Exception as error:
            status = status_of_error(error)
            metrics.RPC_ERRORS.labels(PROTOCOL, "ReceiveMessage", definition_pb2.Code.Name(status.code).lower()).inc()
            if status.code == definition_pb2.INTERNAL_SERVER_ERROR:
                logger.exception("rocketmq v2 ReceiveMessage failed")
            yield service_pb2.ReceiveMessageResponse(status=status)
            return
        finally:
            metrics.RPC_SECONDS.labels(PROTOCOL, "ReceiveMessage").observe(time.perf_counter() - started)
        yield service_pb2.ReceiveMessageResponse(delivery_timestamp=timestamp_of(received.delivered_at_ms))
        for delivered in received.messages:
            message = message_of(
                delivered.message.subject,
                delivered.message,
                receipt_handle=delivered.receipt_handle,
                invisible_ms=received.invisible_ms,
            )
            yield service_pb2.ReceiveMessageResponse(message=message)
        if received.messages:
            yield service_pb2.ReceiveMessageResponse(status=ok_status())
        else:
            none = definition_pb2.Status(code=definition_pb2.MESSAGE_NOT_FOUND, message="no new message")
            yield service_pb2.ReceiveMessageResponse(status=none)

    @v2_rpc(service_pb2.AckMessageResponse)
    async def AckMessage(self, request: service_pb2.AckMessageRequest, context: Any) -> Any:
        check_entries(len(request.entries), "entries")
        settles = [settle_request_of(request, entry.receipt_handle) for entry in request.entries]
        response = service_pb2.AckMessageResponse()
        for entry, settle in zip(request.entries, settles, strict=True):
            result = response.entries.add(message_id=entry.message_id, receipt_handle=entry.receipt_handle)
            try:
                await self.core.receiver.ack(settle)
            except Exception as error:
                result.status.CopyFrom(status_of_error(error))
                continue
            result.status.CopyFrom(ok_status())
        response.status.CopyFrom(entries_status([entry.status for entry in response.entries]))
        return response

    @v2_rpc(service_pb2.ChangeInvisibleDurationResponse)
    async def ChangeInvisibleDuration(self, request: service_pb2.ChangeInvisibleDurationRequest, context: Any) -> Any:
        settle = settle_request_of(request, request.receipt_handle)
        if not request.HasField("invisible_duration"):
            raise InvalidArgumentError("invisible_duration: required")
        handle = await self.core.receiver.change_invisible_duration(settle, request.invisible_duration.ToMilliseconds())
        return service_pb2.ChangeInvisibleDurationResponse(status=ok_status(), receipt_handle=handle)

    @v2_rpc(service_pb2.ForwardMessageToDeadLetterQueueResponse)
    async def ForwardMessageToDeadLetterQueue(
        self, request: service_pb2.ForwardMessageToDeadLetterQueueRequest, context: Any
    ) -> Any:
        settle = settle_request_of(request, request.receipt_handle)
        await self.core.receiver.forward_to_dead_letter_queue(settle)
        return service_pb2.ForwardMessageToDeadLetterQueueResponse(status=ok_status())

    @v2_rpc(service_pb2.EndTransactionResponse)
    async def EndTransaction(self, request: service_pb2.EndTransactionRequest, context: Any) -> Any:
        resolution = enum_name(definition_pb2.TransactionResolution, request.resolution, "resolution")
        if resolution not in ("COMMIT", "ROLLBACK"):
            raise InvalidArgumentError("resolution: COMMIT or ROLLBACK")
        source = enum_name(definition_pb2.TransactionSource, request.source, "source")
        source = "SERVER_CHECK" if source == "SOURCE_SERVER_CHECK" else "CLIENT"
        await self.core.transactions.end(request.transaction_id, request.message_id, resolution == "COMMIT", source)
        return service_pb2.EndTransactionResponse(status=ok_status())

    @v2_rpc(service_pb2.NotifyClientTerminationResponse)
    async def NotifyClientTermination(self, request: service_pb2.NotifyClientTerminationRequest, context: Any) -> Any:
        metadata = metadata_of(context)
        if request.HasField("group") and request.group.name:
            namespace = resource_namespace(request.group)
            await self.core.leave(namespace, request.group.name, metadata.get(CLIENT_ID_KEY, ""))
        return service_pb2.NotifyClientTerminationResponse(status=ok_status())

    @v2_rpc(service_pb2.RecallMessageResponse)
    async def RecallMessage(self, request: service_pb2.RecallMessageRequest, context: Any) -> Any:
        """Discard the DELAY message `recall_handle` names before its delivery time; OK answers its
        message_id. BAD_REQUEST for a malformed, forged or other topic's handle, NOT_FOUND when it is
        no longer scheduled (delivered or recalled already); neither changes anything (`core.recall`)."""
        if not request.topic.name:
            raise InvalidArgumentError("topic: required (the topic the scheduled message was sent to)")
        namespace = resource_namespace(request.topic)
        message_id = await self.core.recall(namespace, request.topic.name, request.recall_handle)
        return service_pb2.RecallMessageResponse(status=ok_status(), message_id=message_id)

    async def Telemetry(self, request_iterator: Any, context: Any) -> AsyncIterator[service_pb2.TelemetryCommand]:
        """The client's settings answered with the server's, and orphaned transaction checks for a
        producer (`telemetry.TelemetrySession`)."""
        async for command in TelemetrySession(self.core).run(request_iterator):
            yield command

    # -- not served: a NOT_IMPLEMENTED status the clients turn into an error that says so --------------

    async def _not_implemented(self, response_type: type[Any], method: str) -> Any:
        metrics.RPC_ERRORS.labels(PROTOCOL, method, "not_implemented").inc()
        status = definition_pb2.Status(
            code=definition_pb2.NOT_IMPLEMENTED, message=f"{method} is not served by Weir's RocketMQ v2 door"
        )
        return response_type(status=status)

    async def UpdateOffset(self, request: Any, context: Any) -> Any:
        return await self._not_implemented(service_pb2.UpdateOffsetResponse, "UpdateOffset")

    async def GetOffset(self, request: Any, context: Any) -> Any:
        return await self._not_implemented(service_pb2.GetOffsetResponse, "GetOffset")

    async def QueryOffset(self, request: Any, context: Any) -> Any:
        return await self._not_implemented(service_pb2.QueryOffsetResponse, "QueryOffset")

    async def SyncLiteSubscription(self, request: Any, context: Any) -> Any:
        return await self._not_implemented(service_pb2.SyncLiteSubscriptionResponse, "SyncLiteSubscription")

    async def PullMessage(self, request: Any, context: Any) -> AsyncIterator[service_pb2.PullMessageResponse]:
        yield await self._not_implemented(service_pb2.PullMessageResponse, "PullMessage")
