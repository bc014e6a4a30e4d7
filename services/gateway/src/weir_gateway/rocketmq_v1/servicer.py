"""The /apache.rocketmq.v1.MessagingService/* gRPC methods: decode, call `RocketMQCore`, encode.

Errors: every response of this service except MultiplexingResponse carries a `ResponseCommon`, and
RocketMQ's v1 Java client reads the outcome from `common.status` (a google.rpc.Status with a
google.rpc.Code), not from the gRPC status. So every RPC answers gRPC OK with the outcome in
`common.status` (the code service.proto's comments name: NOT_FOUND for an unknown topic,
INVALID_ARGUMENT for empty endpoints, INTERNAL for an unexpected failure, ...) and, on failure,
`common.error_info` (reason = Weir's result code, domain "weir.io", metadata = the error's context).
MultiplexingCall answers with a GenericPollingResponse, whose `common` carries its status the same way.

Metadata: `x-mq-namespace` (the namespace of a Resource that has none; older v1 Java clients sent it
as `x-mq-arn`, honoured as well), `x-mq-client-id` (when a request has no client_id field) and
`x-mq-language` (Heartbeat refuses a language RocketMQ does not know) are read; `x-mq-protocol`,
`x-mq-client-version`, `x-mq-request-id`, `x-mq-date-time`, `x-mq-tenant-id`, `x-mq-session-token` and
`authorization` (the MQv2-HMAC-SHA1 signature) are accepted and ignored: this gateway does not
authenticate RocketMQ clients yet.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import grpc
from google.rpc import code_pb2, error_details_pb2, status_pb2
from weir.errors import InvalidArgumentError, WeirError

from weir_gateway import metrics
from weir_gateway.rocketmq_v1 import mapping
from weir_gateway.rocketmq_v1.core import OutgoingMessage, RocketMQCore, RoutePartition
from weir_gateway.rocketmq_v1.encoding import duration_of, message_of, timestamp_of
from weir_gateway.rocketmq_v1.errors import GatewayStatusError
from weir_gateway.rocketmq_v1.offsets import PullRequest
from weir_gateway.rocketmq_v1.pb import definition_pb2, service_pb2, service_pb2_grpc
from weir_gateway.rocketmq_v1.receiving import GroupTraits, ReceiveRequest, SettleRequest, filter_of

logger = logging.getLogger(__name__)
PROTOCOL = "rocketmq_v1"
ERROR_DOMAIN = "weir.io"
BROKER_NAME = "weir-gateway"  # every partition's broker: the gateway tier (any instance serves any partition)
NAMESPACE_KEYS = ("x-mq-namespace", "x-mq-arn")
CLIENT_ID_KEY = "x-mq-client-id"
LANGUAGE_KEY = "x-mq-language"
Request = TypeVar("Request")
Handler = Callable[[Any, Request, grpc.aio.ServicerContext], Awaitable[Any]]


def ok_common() -> service_pb2.ResponseCommon:
    return service_pb2.ResponseCommon(status=status_pb2.Status(code=code_pb2.OK))


def error_common(code: int, message: str, reason: str, context: Mapping[str, str]) -> service_pb2.ResponseCommon:
    """A failed outcome: google.rpc `code` and `message` in status, `reason` in error_info."""
    return service_pb2.ResponseCommon(
        status=status_pb2.Status(code=code, message=message),
        error_info=error_details_pb2.ErrorInfo(reason=reason, domain=ERROR_DOMAIN, metadata=dict(context)),
    )


def rocketmq_rpc(
    response_type: type[Any], method_name: str | None = None
) -> Callable[[Handler[Request]], Handler[Request]]:
    """Times the method and turns a failure into `response_type(common=...)`: a Weir error keeps
    its gRPC status as the google.rpc code (NoSuchStreamError -> NOT_FOUND, InvalidArgumentError ->
    INVALID_ARGUMENT, ...), a GatewayStatusError its own code (a stale receipt handle or an offset
    that is not pending INVALID_ARGUMENT, ...), anything else INTERNAL (service.proto's header comment)."""

    def decorate(handler: Handler[Request]) -> Handler[Request]:
        method = method_name or handler.__name__
        histogram = metrics.RPC_SECONDS.labels(PROTOCOL, method)

        @functools.wraps(handler)
        async def wrapper(self: Any, request: Request, context: grpc.aio.ServicerContext) -> Any:
            started = time.perf_counter()
            try:
                return await handler(self, request, context)
            except GatewayStatusError as error:
                metrics.RPC_ERRORS.labels(PROTOCOL, method, error.reason).inc()
                return response_type(common=error_common(error.code, str(error), error.reason, {}))
            except WeirError as error:
                metrics.RPC_ERRORS.labels(PROTOCOL, method, error.result_code.value).inc()
                code = error.status_code.value[0]
                return response_type(common=error_common(code, error.message, error.result_code.value, error.metadata))
            except Exception as error:
                metrics.RPC_ERRORS.labels(PROTOCOL, method, "internal").inc()
                logger.exception("rocketmq %s failed", method)
                message = f"{type(error).__name__}: {error}"
                return response_type(common=error_common(code_pb2.INTERNAL, message, "internal", {}))
            finally:
                histogram.observe(time.perf_counter() - started)

        return wrapper

    return decorate


# Timestamps a Timestamp message may hold (years 0001-9999, as google.protobuf.Timestamp says).
_MIN_TIMESTAMP_S, _MAX_TIMESTAMP_S = -62_135_596_800, 253_402_300_799


def milliseconds_of(timestamp: Any, what: str) -> int:
    """A google.protobuf.Timestamp in ms since the epoch. Errors: InvalidArgumentError outside the
    range the type defines (years 1-9999) or with nanos outside [0, 1e9)."""
    if not _MIN_TIMESTAMP_S <= timestamp.seconds <= _MAX_TIMESTAMP_S or not 0 <= timestamp.nanos < 1_000_000_000:
        raise InvalidArgumentError(
            f"{what}: not a valid timestamp (seconds {timestamp.seconds}, nanos {timestamp.nanos}; years 1-9999)"
        )
    return int(timestamp.ToMilliseconds())


def metadata_of(context: grpc.aio.ServicerContext) -> dict[str, str]:
    """The call's text metadata, keys lower-cased (binary `-bin` entries left out)."""
    return {str(key).lower(): value for key, value in (context.invocation_metadata() or ()) if isinstance(value, str)}


def namespace_of(resource: definition_pb2.Resource, metadata: Mapping[str, str]) -> str:
    """The resource's namespace: `resource_namespace` when set, else the x-mq-namespace (x-mq-arn)
    metadata, else the empty namespace."""
    if resource.resource_namespace:
        return resource.resource_namespace
    return next((metadata[key] for key in NAMESPACE_KEYS if metadata.get(key)), "")


def client_id_of(client_id: str, metadata: Mapping[str, str]) -> str:
    return client_id or metadata.get(CLIENT_ID_KEY, "")


def check_endpoints(endpoints: definition_pb2.Endpoints) -> None:
    """service.proto: "If the specific endpoints is emtpy, returns INVALID_ARGUMENT"."""
    if not endpoints.addresses or not any(address.host for address in endpoints.addresses):
        raise InvalidArgumentError("endpoints: the access point the client used is required (at least one address)")


def partition_of(
    namespace: str, topic: str, entry: RoutePartition, endpoints: definition_pb2.Endpoints
) -> definition_pb2.Partition:
    """A route entry: id = the Weir partition index, broker id 0 (the leader) whose endpoints are the
    ones the client reached this gateway at, as RocketMQ 5's proxy answers in cluster mode."""
    return definition_pb2.Partition(
        topic=definition_pb2.Resource(resource_namespace=namespace, name=topic),
        id=entry.index,
        permission=definition_pb2.READ_WRITE if entry.writable else definition_pb2.NONE,
        broker=definition_pb2.Broker(name=BROKER_NAME, id=0, endpoints=endpoints),
    )


def enum_name(enum: Any, value: int, field: str) -> str:
    try:
        return str(enum.Name(value))
    except ValueError:
        raise InvalidArgumentError(f"{field}: unknown value {value}") from None


def outgoing_of(request: service_pb2.SendMessageRequest, metadata: Mapping[str, str]) -> OutgoingMessage:
    """The SendMessageRequest's message, decoded (no checks beyond enum values: the core checks)."""
    message = request.message
    system = message.system_attribute
    producer_group = None
    if system.HasField("producer_group") and system.producer_group.name:
        producer_group = (namespace_of(system.producer_group, metadata), system.producer_group.name)
    timed = system.WhichOneof("timed_delivery")
    recovery_period_ms = None
    if system.HasField("orphaned_transaction_recovery_period"):
        recovery_period_ms = max(0, system.orphaned_transaction_recovery_period.ToMilliseconds())
    return OutgoingMessage(
        namespace=namespace_of(message.topic, metadata),
        topic=message.topic.name,
        message_id=system.message_id,
        message_type=enum_name(definition_pb2.MessageType, system.message_type, "message_type"),
        body=message.body,
        body_encoding=enum_name(definition_pb2.Encoding, system.body_encoding, "body_encoding"),
        digest_type=enum_name(definition_pb2.DigestType, system.body_digest.type, "body_digest.type"),
        checksum=system.body_digest.checksum,
        tag=system.tag,
        keys=list(system.keys),
        user_attributes=dict(message.user_attribute),
        partition=request.partition.id if request.HasField("partition") else None,
        delivery_timestamp_ms=milliseconds_of(system.delivery_timestamp, "delivery_timestamp")
        if timed == "delivery_timestamp"
        else None,
        delay_level=system.delay_level if timed == "delay_level" else None,
        born_timestamp_ms=milliseconds_of(system.born_timestamp, "born_timestamp")
        if system.HasField("born_timestamp")
        else 0,
        born_host=system.born_host,
        producer_group=producer_group,
        trace_context=system.trace_context,
        message_group=system.message_group,
        recovery_period_ms=recovery_period_ms,
    )


class RocketMQServicer(service_pb2_grpc.MessagingServiceServicer):
    def __init__(self, core: RocketMQCore) -> None:
        self.core = core

    @rocketmq_rpc(service_pb2.QueryRouteResponse)
    async def QueryRoute(self, request: service_pb2.QueryRouteRequest, context: Any) -> Any:
        check_endpoints(request.endpoints)
        namespace = namespace_of(request.topic, metadata_of(context))
        _, partitions = await self.core.query_route(namespace, request.topic.name)
        return service_pb2.QueryRouteResponse(
            common=ok_common(),
            partitions=[partition_of(namespace, request.topic.name, entry, request.endpoints) for entry in partitions],
        )

    @rocketmq_rpc(service_pb2.QueryAssignmentResponse)
    async def QueryAssignment(self, request: service_pb2.QueryAssignmentRequest, context: Any) -> Any:
        check_endpoints(request.endpoints)
        metadata = metadata_of(context)
        namespace = namespace_of(request.topic, metadata)
        group_namespace = namespace_of(request.group, metadata)
        if group_namespace != namespace:
            raise InvalidArgumentError(
                f"group namespace {group_namespace!r} differs from topic namespace {namespace!r}"
            )
        partitions = await self.core.query_assignment(
            namespace, request.topic.name, request.group.name, client_id_of(request.client_id, metadata)
        )
        response = service_pb2.QueryAssignmentResponse(common=ok_common())
        for entry in partitions:
            response.assignments.add(Partition=partition_of(namespace, request.topic.name, entry, request.endpoints))
        return response

    @rocketmq_rpc(service_pb2.HeartbeatResponse)
    async def Heartbeat(self, request: service_pb2.HeartbeatRequest, context: Any) -> Any:
        metadata = metadata_of(context)
        language = metadata.get(LANGUAGE_KEY, "")
        if language and language.upper() not in mapping.KNOWN_LANGUAGES:
            raise InvalidArgumentError(f"{LANGUAGE_KEY} {language!r} is not a language RocketMQ knows")
        if request.WhichOneof("client_data") == "consumer_data":
            client_id = client_id_of(request.client_id, metadata)
            await self._keep_membership(request.consumer_data, client_id, request.fifo_flag, metadata)
        return service_pb2.HeartbeatResponse(common=ok_common())

    async def _keep_membership(
        self, consumer: definition_pb2.ConsumerData, client_id: str, fifo: bool, metadata: Mapping[str, str]
    ) -> None:
        """A clustering consumer's heartbeat is its group membership's heartbeat on every subscribed
        topic (a broadcasting consumer belongs to no group), and announces the group's traits (FIFO,
        DeadLetterPolicy, ConsumePolicy) for when its consumer is created. Errors: those of
        QueryAssignment; InvalidArgumentError for a subscription's bad filter expression (TAG or
        SQL92), before anything is remembered or created."""
        for entry in consumer.subscriptions:  # a bad filter expression changes nothing
            expression = entry.expression
            filter_of(enum_name(definition_pb2.FilterType, expression.type, "expression.type"), expression.expression)
        if consumer.consume_model != definition_pb2.CLUSTERING:
            return
        group_namespace = namespace_of(consumer.group, metadata)
        weir_group = mapping.weir_name_of(group_namespace, consumer.group.name, "group")
        traits = GroupTraits(
            fifo=fifo,
            max_attempts=consumer.dead_letter_policy.max_delivery_attempts,
            consume_policy=enum_name(definition_pb2.ConsumePolicy, consumer.consume_policy, "consume_policy"),
        )
        self.core.receiver.groups.remember(weir_group, traits)
        for entry in consumer.subscriptions:
            namespace = namespace_of(entry.topic, metadata)
            if namespace != group_namespace:
                raise InvalidArgumentError(
                    f"subscription to {entry.topic.name!r}: namespace {namespace!r} differs from the group's "
                    f"{group_namespace!r}"
                )
            await self.core.query_assignment(namespace, entry.topic.name, consumer.group.name, client_id)

    @rocketmq_rpc(service_pb2.HealthCheckResponse)
    async def HealthCheck(self, request: service_pb2.HealthCheckRequest, context: Any) -> Any:
        await self.core.health_check()
        return service_pb2.HealthCheckResponse(common=ok_common())

    @rocketmq_rpc(service_pb2.NotifyClientTerminationResponse)
    async def NotifyClientTermination(self, request: service_pb2.NotifyClientTerminationRequest, context: Any) -> Any:
        metadata = metadata_of(context)
        if request.WhichOneof("group") == "consumer_group" and request.consumer_group.name:
            group = request.consumer_group
            await self.core.leave(namespace_of(group, metadata), group.name, client_id_of(request.client_id, metadata))
        return service_pb2.NotifyClientTerminationResponse(common=ok_common())

    @rocketmq_rpc(service_pb2.SendMessageResponse)
    async def SendMessage(self, request: service_pb2.SendMessageRequest, context: Any) -> Any:
        message = outgoing_of(request, metadata_of(context))
        stored = await self.core.send(message)
        return service_pb2.SendMessageResponse(
            common=ok_common(), message_id=message.message_id, transaction_id=stored.transaction_id
        )

    # -- receiving ----------------------------------------------------------------------------------

    @rocketmq_rpc(service_pb2.ReceiveMessageResponse)
    async def ReceiveMessage(self, request: service_pb2.ReceiveMessageRequest, context: Any) -> Any:
        received = await self.core.receiver.receive(receive_request_of(request, metadata_of(context)))
        response = service_pb2.ReceiveMessageResponse(
            common=ok_common(),
            delivery_timestamp=timestamp_of(received.delivered_at_ms),
            invisible_duration=duration_of(received.invisible_ms),
        )
        for delivered in received.messages:
            message = message_of(
                delivered.message.subject,
                delivered.message,
                receipt_handle=delivered.receipt_handle,
                invisible_ms=received.invisible_ms,
            )
            response.messages.append(message)
        return response

    @rocketmq_rpc(service_pb2.AckMessageResponse)
    async def AckMessage(self, request: service_pb2.AckMessageRequest, context: Any) -> Any:
        if request.WhichOneof("handle") == "offset":
            await self.core.receiver.ack_offset(settle_request_of(request, metadata_of(context), offset=request.offset))
        else:
            await self.core.receiver.ack(settle_request_of(request, metadata_of(context)))
        return service_pb2.AckMessageResponse(common=ok_common())

    @rocketmq_rpc(service_pb2.NackMessageResponse)
    async def NackMessage(self, request: service_pb2.NackMessageRequest, context: Any) -> Any:
        settle = settle_request_of(request, metadata_of(context), request.max_delivery_attempts)
        await self.core.receiver.nack(settle)
        return service_pb2.NackMessageResponse(common=ok_common())

    @rocketmq_rpc(service_pb2.ForwardMessageToDeadLetterQueueResponse)
    async def ForwardMessageToDeadLetterQueue(
        self, request: service_pb2.ForwardMessageToDeadLetterQueueRequest, context: Any
    ) -> Any:
        await self.core.receiver.forward_to_dead_letter_queue(settle_request_of(request, metadata_of(context)))
        return service_pb2.ForwardMessageToDeadLetterQueueResponse(common=ok_common())

    # -- transactions -------------------------------------------------------------------------------

    @rocketmq_rpc(service_pb2.EndTransactionResponse)
    async def EndTransaction(self, request: service_pb2.EndTransactionRequest, context: Any) -> Any:
        resolution = enum_name(
            service_pb2.EndTransactionRequest.TransactionResolution, request.resolution, "resolution"
        )
        source = enum_name(service_pb2.EndTransactionRequest.Source, request.source, "source")
        await self.core.transactions.end(request.transaction_id, request.message_id, resolution == "COMMIT", source)
        return service_pb2.EndTransactionResponse(common=ok_common())

    async def MultiplexingCall(self, request: service_pb2.MultiplexingRequest, context: Any) -> Any:
        """A producer's long poll (GenericPollingRequest): answered with a RecoverOrphanedTransaction
        request when one of its group's transactions is orphaned, else with an empty OK
        GenericPollingResponse after WEIR_GATEWAY_ROCKETMQ_MULTIPLEXING_POLL_TIMEOUT_MS (poll again).
        The other request types answer the gateway's own commands, which it never sends: an empty OK
        GenericPollingResponse. Errors go in the GenericPollingResponse's common."""
        return await self._multiplexing(request, context)

    @rocketmq_rpc(service_pb2.GenericPollingResponse, "MultiplexingCall")
    async def _poll(self, request: service_pb2.MultiplexingRequest, context: Any) -> Any:
        if request.WhichOneof("type") != "polling_request":
            return service_pb2.GenericPollingResponse(common=ok_common())
        polling = request.polling_request
        metadata = metadata_of(context)
        group = ""
        if polling.WhichOneof("group") == "producer_group" and polling.producer_group.name:
            group_resource = polling.producer_group
            group = mapping.weir_name_of(namespace_of(group_resource, metadata), group_resource.name, "producer_group")
            streams = [mapping.weir_name_of(namespace_of(topic, metadata), topic.name) for topic in polling.topics]
        else:  # a consumer's poll: nothing to check with it
            streams = []
        orphan = await self.core.transactions.poll(group, streams)
        if orphan is None:
            return service_pb2.GenericPollingResponse(common=ok_common())
        message = message_of(orphan.stream, orphan.record)
        message.system_attribute.partition_id = orphan.partition
        return service_pb2.RecoverOrphanedTransactionRequest(
            orphaned_transactional_message=message, transaction_id=orphan.transaction_id
        )

    async def _multiplexing(self, request: service_pb2.MultiplexingRequest, context: Any) -> Any:
        answer = await self._poll(request, context)
        if isinstance(answer, service_pb2.RecoverOrphanedTransactionRequest):
            return service_pb2.MultiplexingResponse(recover_orphaned_transaction_request=answer)
        return service_pb2.MultiplexingResponse(polling_response=answer)

    # -- offsets --------------------------------------------------------------------------------------

    @rocketmq_rpc(service_pb2.QueryOffsetResponse)
    async def QueryOffset(self, request: service_pb2.QueryOffsetRequest, context: Any) -> Any:
        partition = request.partition
        policy = enum_name(definition_pb2.QueryOffsetPolicy, request.policy, "policy")
        time_ms = milliseconds_of(request.time_point, "time_point") if request.HasField("time_point") else None
        namespace = namespace_of(partition.topic, metadata_of(context))
        offset = await self.core.offsets.query_offset(namespace, partition.topic.name, partition.id, policy, time_ms)
        return service_pb2.QueryOffsetResponse(common=ok_common(), offset=offset)

    @rocketmq_rpc(service_pb2.PullMessageResponse)
    async def PullMessage(self, request: service_pb2.PullMessageRequest, context: Any) -> Any:
        partition = request.partition
        pulled = await self.core.offsets.pull(
            PullRequest(
                namespace=namespace_of(partition.topic, metadata_of(context)),
                topic=partition.topic.name,
                partition=partition.id,
                offset=request.offset,
                batch_size=request.batch_size,
                await_ms=request.await_time.ToMilliseconds(),
                filter_type=enum_name(definition_pb2.FilterType, request.filter_expression.type, "filter_expression"),
                filter_expression=request.filter_expression.expression,
            )
        )
        return service_pb2.PullMessageResponse(
            common=ok_common(),
            min_offset=pulled.min_offset,
            next_offset=pulled.next_offset,
            max_offset=pulled.max_offset,
            messages=[message_of(message.subject, message) for message in pulled.messages],
        )


def receive_request_of(request: service_pb2.ReceiveMessageRequest, metadata: Mapping[str, str]) -> ReceiveRequest:
    """The ReceiveMessageRequest, decoded; the group and the partition's topic must share a namespace."""
    namespace = namespace_of(request.partition.topic, metadata)
    group_namespace = namespace_of(request.group, metadata)
    if group_namespace != namespace:
        raise InvalidArgumentError(f"group namespace {group_namespace!r} differs from topic namespace {namespace!r}")
    initialization_ms = None
    if request.HasField("initialization_timestamp"):
        initialization_ms = milliseconds_of(request.initialization_timestamp, "initialization_timestamp")
    return ReceiveRequest(
        namespace=namespace,
        topic=request.partition.topic.name,
        group=request.group.name,
        partition=request.partition.id,
        filter_type=enum_name(definition_pb2.FilterType, request.filter_expression.type, "filter_expression.type"),
        filter_expression=request.filter_expression.expression,
        consume_policy=enum_name(definition_pb2.ConsumePolicy, request.consume_policy, "consume_policy"),
        initialization_timestamp_ms=initialization_ms,
        batch_size=request.batch_size,
        invisible_ms=request.invisible_duration.ToMilliseconds(),
        await_ms=request.await_time.ToMilliseconds(),
        fifo=request.fifo_flag,
    )


def settle_request_of(
    request: Any, metadata: Mapping[str, str], max_delivery_attempts: int = 0, offset: int | None = None
) -> SettleRequest:
    """An Ack/Nack/ForwardMessageToDeadLetterQueue request's handle (`offset`: AckMessage's offset
    arm), group, topic and message_id, decoded."""
    namespace = namespace_of(request.group, metadata)
    if request.topic.name and namespace_of(request.topic, metadata) != namespace:
        raise InvalidArgumentError("group and topic are in different namespaces")
    return SettleRequest(
        namespace=namespace,
        topic=request.topic.name,
        group=request.group.name,
        receipt_handle=request.receipt_handle,
        max_delivery_attempts=max(0, max_delivery_attempts),
        offset=offset,
        message_id=request.message_id,
    )
