"""gRPC servicers: thin adapters from weir.v1 requests to the `Node` core.

Each handler decodes nothing by hand, calls the core, and turns a `WeirError` into an aborted call
whose status carries the result code (`WeirError.to_status`). Unexpected exceptions become
INTERNAL with the exception text, and are logged.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc
from redis.exceptions import RedisError
from weir.errors import (
    InternalError,
    InvalidArgumentError,
    ManagedByRouterError,
    NoSuchStreamError,
    NotLeaderError,
    StillPlacedError,
    UnavailableError,
    WeirError,
    WrongRevisionError,
)
from weir.subjects import validate_name
from weir.v1 import internal_pb2, internal_pb2_grpc, streams_pb2, streams_pb2_grpc, types_pb2

from weir_partition_node import metrics
from weir_partition_node.changefeed import ChangeFilter
from weir_partition_node.clock import ManualClock
from weir_partition_node.commit_items import Delivery
from weir_partition_node.handover import LeadershipHandover, ShipConsumers
from weir_partition_node.membership import Membership
from weir_partition_node.node import Node
from weir_partition_node.replica import ReplicaManager

logger = logging.getLogger(__name__)
Request = TypeVar("Request")
Response = TypeVar("Response")

_WATCH_TYPES = {
    "stream_created": streams_pb2.WATCH_EVENT_TYPE_STREAM_CREATED,
    "stream_updated": streams_pb2.WATCH_EVENT_TYPE_STREAM_UPDATED,
    "stream_deleted": streams_pb2.WATCH_EVENT_TYPE_STREAM_DELETED,
    "consumer_created": streams_pb2.WATCH_EVENT_TYPE_CONSUMER_CREATED,
    "consumer_deleted": streams_pb2.WATCH_EVENT_TYPE_CONSUMER_DELETED,
    "leader_changed": streams_pb2.WATCH_EVENT_TYPE_LEADER_CHANGED,
}


def _fill(message: types_pb2.Message, delivery: Delivery) -> types_pb2.Message:
    message.MergeFromString(delivery.record)  # the stored encoding already carries seq and partition
    message.deliver_count = delivery.deliver_count
    return message


def _as_weir_error(method: str, error: Exception) -> WeirError:
    if isinstance(error, WeirError):
        return error
    logger.exception("%s failed unexpectedly", method)
    return InternalError(f"{type(error).__name__}: {error}")


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
            await _abort(self, context, method, request, raw)
            raise AssertionError("unreachable: abort raises") from None
        finally:
            histogram.observe(time.perf_counter() - started)

    return wrapper


def server_stream(
    handler: Callable[[Any, Request, grpc.aio.ServicerContext], AsyncIterator[Response]],
) -> Callable[[Any, Request, grpc.aio.ServicerContext], AsyncIterator[Response]]:
    method = handler.__name__

    @functools.wraps(handler)
    async def wrapper(self: Any, request: Request, context: grpc.aio.ServicerContext) -> AsyncIterator[Response]:
        try:
            async for item in handler(self, request, context):
                yield item
        except Exception as raw:
            await _abort(self, context, method, request, raw)

    return wrapper


def lockstep(
    handler: Callable[[Any, Request], Awaitable[Response]],
) -> Callable[[Any, AsyncIterator[Request], grpc.aio.ServicerContext], AsyncIterator[Response]]:
    """A bidirectional method that answers each request with exactly one response, in order, as the
    unary method would (`handler(self, request)`). Each exchange is timed and counted under the
    method's name like a unary call; an error ends the stream with the status the unary call would
    have returned."""
    method = handler.__name__
    histogram = metrics.RPC_SECONDS.labels(method)

    @functools.wraps(handler)
    async def wrapper(
        self: Any, requests: AsyncIterator[Request], context: grpc.aio.ServicerContext
    ) -> AsyncIterator[Response]:
        async for request in requests:
            started = time.perf_counter()
            try:
                response = await handler(self, request)
            except Exception as raw:
                await _abort(self, context, method, request, raw)
                return
            finally:
                histogram.observe(time.perf_counter() - started)
            yield response

    return wrapper


async def _abort(servicer: Any, context: grpc.aio.ServicerContext, method: str, request: Any, raw: Exception) -> None:
    """End the call with the status of `raw` as a WeirError (redirects completed, counted)."""
    error = await _redirect(servicer, request, _as_weir_error(method, raw))
    metrics.RPC_ERRORS.labels(method, error.result_code.value).inc()
    await context.abort_with_status(error.to_status())


async def _redirect(servicer: Any, request: Any, error: WeirError) -> WeirError:
    """In a cluster, complete a redirect: add the leader's registered address to a NotLeaderError,
    and turn no_such_stream for a stream placed on other nodes into NotLeaderError (DESIGN §4)."""
    membership: Membership | None = getattr(servicer, "membership", None)
    if membership is None:
        return error
    if isinstance(error, NotLeaderError) and not error.metadata.get("leader_address"):
        error.metadata["leader_address"] = await membership.leader_address(error.metadata.get("leader_node_id", ""))
        return error
    stream = getattr(request, "stream", "")
    if isinstance(error, NoSuchStreamError) and isinstance(stream, str) and stream:
        record = await membership.placement_of(stream)
        index = getattr(request, "partition", 0)
        if record is not None and isinstance(index, int) and index < len(record.placement.partitions):
            entry = record.placement.partitions[index]
            return NotLeaderError(
                f"this node hosts no partition of stream {stream!r}; partition {index} is led by "
                f"{entry.primary_node_id} (refresh routes with QueryRoute)",
                stream=stream,
                partition=index,
                leader_node_id=entry.primary_node_id,
                leader_epoch=entry.leader_epoch,
                leader_address=await membership.leader_address(entry.primary_node_id),
            )
    return error


MAX_PUBLISH_TIMEOUT_MS = 300_000
# Taken off a caller's gRPC deadline so that replication_timeout reaches it before the deadline does.
DEADLINE_MARGIN_MS = 50


def replication_timeout_ms(timeout_ms: int, context: grpc.aio.ServicerContext | None) -> int:
    """How long an ack_level ALL publish may wait for its in-sync replicas: the request's
    `timeout_ms`, else the call's deadline less a margin, else 0 (the node's setting). Errors:
    InvalidArgumentError (timeout_ms above MAX_PUBLISH_TIMEOUT_MS)."""
    if timeout_ms > MAX_PUBLISH_TIMEOUT_MS:
        raise InvalidArgumentError(f"timeout_ms: at most {MAX_PUBLISH_TIMEOUT_MS}, got {timeout_ms}")
    if timeout_ms:
        return timeout_ms
    remaining_s = context.time_remaining() if context is not None else None
    if remaining_s is None:
        return 0
    return max(1, min(MAX_PUBLISH_TIMEOUT_MS, int(remaining_s * 1000) - DEADLINE_MARGIN_MS))


class StreamsServicer(streams_pb2_grpc.StreamsServicer):
    """weir.v1.Streams. On a standalone node the client port serves every call. On a clustered node
    (`membership` set) the client port refuses stream and consumer admin (managed_by_router) and
    the internal port, where the router sends them, serves them (`admin=True`)."""

    def __init__(self, node: Node, *, membership: Membership | None = None, admin: bool = True) -> None:
        self.node = node
        self.membership = membership
        self.admin = admin

    def _check_admin(self, call: str) -> None:
        if not self.admin:
            raise ManagedByRouterError(
                f"{call}: node {self.node.node_id} belongs to a cluster; manage streams and consumers through "
                "a router (weir --router ...)"
            )

    @unary
    async def CreateStream(self, request: streams_pb2.CreateStreamRequest, context: Any) -> Any:
        self._check_admin("CreateStream")
        placement = request.placement if request.HasField("placement") else None
        if placement is not None and self.membership is None:
            raise InvalidArgumentError("placement: only a clustered node takes a placement (set by the router)")
        config, created_at_ms = await self.node.admin.create_stream(request.config, placement)
        return streams_pb2.CreateStreamResponse(config=config, created_at_ms=created_at_ms)

    @unary
    async def DeleteStream(self, request: streams_pb2.DeleteStreamRequest, context: Any) -> Any:
        self._check_admin("DeleteStream")
        if self.membership is not None:
            await self._check_controller_deletes(request.name)
        await self.node.admin.delete_stream(request.name)
        return streams_pb2.DeleteStreamResponse()

    async def _check_controller_deletes(self, name: str) -> None:
        """A clustered node deletes a stream only on the controller's word: when the cluster metadata
        has no record of it (a copy left behind) or the controller marked the record deleting.
        Errors: InvalidNameError, StillPlacedError, UnavailableError (Redis unreachable: nothing is
        deleted on a guess)."""
        assert self.membership is not None
        validate_name(name)
        try:
            record = (await self.membership.stream_records([name])).get(name)
        except (RedisError, OSError) as error:
            raise UnavailableError(
                f"DeleteStream {name!r}: the cluster metadata is unreachable ({error}); nothing was deleted, try again"
            ) from error
        if record is not None and not record.deleting:
            raise StillPlacedError(
                f"DeleteStream {name!r}: the cluster still places this stream; delete it through a router, "
                "whose controller marks it deleting first",
                stream=name,
            )

    @unary
    async def GetStreamInfo(self, request: streams_pb2.GetStreamInfoRequest, context: Any) -> Any:
        return self.node.stream_info(request.name)

    @unary
    async def ListStreams(self, request: streams_pb2.ListStreamsRequest, context: Any) -> Any:
        return streams_pb2.ListStreamsResponse(names=self.node.list_streams())

    @unary
    async def UpdateStream(self, request: streams_pb2.UpdateStreamRequest, context: Any) -> Any:
        self._check_admin("UpdateStream")
        config, pruned = await self.node.admin.update_stream(request)
        return streams_pb2.UpdateStreamResponse(config=config, pruned=pruned)

    @unary
    async def PurgePartition(self, request: streams_pb2.PurgePartitionRequest, context: Any) -> Any:
        keep_from_seq = request.keep_from_seq if request.HasField("keep_from_seq") else None
        purged, first_seq = await self.node.admin.purge_partition(
            request.stream, request.partition, keep_from_seq, list(request.seqs)
        )
        return streams_pb2.PurgePartitionResponse(purged=purged, first_seq=first_seq)

    @unary
    async def Publish(self, request: streams_pb2.PublishRequest, context: Any) -> Any:
        (outcome,) = await self.node.publisher.publish(
            request.stream,
            [request],
            request.ack_level,
            batch=False,
            replication_timeout_ms=replication_timeout_ms(request.timeout_ms, context),
        )
        if outcome.result_code == "wrong_revision":
            raise WrongRevisionError(
                outcome.message, stream=request.stream, partition=outcome.partition, last_seq=outcome.seq
            )
        if outcome.result_code != "ok":
            raise WeirError.for_code(outcome.result_code, outcome.message)
        return streams_pb2.PublishResponse(
            partition=outcome.partition, seq=outcome.seq, duplicate=outcome.duplicate, scheduled=outcome.scheduled
        )

    @unary
    async def PublishBatch(self, request: streams_pb2.PublishBatchRequest, context: Any) -> Any:
        return await self._publish_batch(request, context)

    @lockstep
    async def PublishBatchStream(self, request: streams_pb2.PublishBatchRequest) -> Any:
        return await self._publish_batch(request, None)  # one call carries many: only timeout_ms applies

    async def _publish_batch(
        self, request: streams_pb2.PublishBatchRequest, context: grpc.aio.ServicerContext | None
    ) -> streams_pb2.PublishBatchResponse:
        outcomes = await self.node.publisher.publish(
            request.stream,
            request.entries,
            request.ack_level,
            batch=True,
            replication_timeout_ms=replication_timeout_ms(request.timeout_ms, context),
        )
        response = streams_pb2.PublishBatchResponse()
        add = response.results.add
        for outcome in outcomes:
            if outcome.message or outcome.duplicate or outcome.scheduled:
                add(
                    partition=outcome.partition,
                    seq=outcome.seq,
                    result_code=outcome.result_code,
                    message=outcome.message,
                    duplicate=outcome.duplicate,
                    scheduled=outcome.scheduled,
                )
            else:  # the common case; unset fields cost nothing to encode (~0.4 us a result saved)
                add(partition=outcome.partition, seq=outcome.seq, result_code=outcome.result_code)
        return response

    @unary
    async def GetMessage(self, request: streams_pb2.GetMessageRequest, context: Any) -> Any:
        record = self.node.reads.get_message(request.stream, request.partition, request.seq)
        response = streams_pb2.GetMessageResponse()
        response.message.MergeFromString(record)
        return response

    @unary
    async def SeqAtTime(self, request: streams_pb2.SeqAtTimeRequest, context: Any) -> Any:
        seq, last_seq = self.node.reads.seq_at_time(request.stream, request.partition, request.time_ms)
        return streams_pb2.SeqAtTimeResponse(seq=seq, last_seq=last_seq)

    @unary
    async def ReadMessages(self, request: streams_pb2.ReadMessagesRequest, context: Any) -> Any:
        records, next_seq, last_seq = await self.node.reads.read_messages_waiting(
            request.stream,
            request.partition,
            request.from_seq,
            request.max_messages,
            request.max_bytes,
            any_replica=self.admin and self.membership is not None,  # internal port: secondaries' copies too
            filter_subject=request.filter_subject,
            last_per_subject_until=request.last_per_subject_until,
            max_wait_ms=request.max_wait_ms,
        )
        # No await since the read: the first seq is the one the read saw (last seq + 1 when empty).
        first_seq = self.node.reads.first_seq(
            request.stream, request.partition, self.admin and self.membership is not None
        )
        response = streams_pb2.ReadMessagesResponse(next_seq=next_seq, last_seq=last_seq, first_seq=first_seq)
        add = response.messages.add
        for _, record in records:
            add().MergeFromString(record)
        return response

    @unary
    async def ReadLatestAtSubject(self, request: streams_pb2.ReadLatestAtSubjectRequest, context: Any) -> Any:
        record = self.node.reads.latest_at_subject(request.stream, request.partition, request.subject)
        response = streams_pb2.ReadLatestAtSubjectResponse()
        if record is not None:
            response.latest.MergeFromString(record)
        return response

    @unary
    async def ListSubjectsByPrefix(self, request: streams_pb2.ListSubjectsByPrefixRequest, context: Any) -> Any:
        if not request.include_latest:
            subjects, truncated = self.node.reads.subjects_with_prefix(
                request.stream, request.partition, request.prefix, request.limit
            )
            return streams_pb2.ListSubjectsByPrefixResponse(subjects=subjects, truncated=truncated)
        subjects, records, truncated = self.node.reads.latest_by_prefix(
            request.stream, request.partition, request.prefix, request.limit
        )
        response = streams_pb2.ListSubjectsByPrefixResponse(subjects=subjects, truncated=truncated)
        add = response.latest.add
        for record in records:
            add().MergeFromString(record)
        return response

    @unary
    async def ScanExactAtSubject(self, request: streams_pb2.ScanExactAtSubjectRequest, context: Any) -> Any:
        records = self.node.reads.scan_subject(
            request.stream, request.partition, request.subject, request.from_seq, request.limit
        )
        response = streams_pb2.ScanExactAtSubjectResponse()
        add = response.messages.add
        for record in records:
            add().MergeFromString(record)
        return response

    @server_stream
    async def WatchStreams(self, request: streams_pb2.WatchStreamsRequest, context: Any) -> AsyncIterator[Any]:
        async for change in self.node.changes.watch_lifecycle(request.from_change_seq):
            kind = change.WhichOneof("kind") or ""
            consumer = ""
            if kind == "consumer_created":
                consumer = change.consumer_created.config.name
            elif kind == "consumer_deleted":
                consumer = change.consumer_deleted.consumer
            event = streams_pb2.WatchEvent(
                type=_WATCH_TYPES[kind],
                ts_ms=change.ts_ms,
                node_id=self.node.node_id,
                stream=change.stream,
                change_seq=change.change_seq,
                consumer=consumer,
            )
            if kind == "leader_changed":
                event.partition = change.partition
                event.leader_epoch = change.leader_changed.leader_epoch
                event.preferred_leader_node_id = change.leader_changed.preferred_leader_node_id
            yield event

    # -- consumers ---------------------------------------------------------------------------------

    @unary
    async def CreateConsumer(self, request: streams_pb2.CreateConsumerRequest, context: Any) -> Any:
        self._check_admin("CreateConsumer")
        info = await self.node.consumers.create_consumer(request.stream, request.config)
        return streams_pb2.CreateConsumerResponse(info=info)

    @unary
    async def DeleteConsumer(self, request: streams_pb2.DeleteConsumerRequest, context: Any) -> Any:
        self._check_admin("DeleteConsumer")
        await self.node.consumers.delete_consumer(request.stream, request.consumer)
        return streams_pb2.DeleteConsumerResponse()

    @unary
    async def ListConsumers(self, request: streams_pb2.ListConsumersRequest, context: Any) -> Any:
        return streams_pb2.ListConsumersResponse(consumers=self.node.consumers.list_consumers(request.stream))

    @unary
    async def GetConsumerInfo(self, request: streams_pb2.GetConsumerInfoRequest, context: Any) -> Any:
        return streams_pb2.GetConsumerInfoResponse(
            info=self.node.consumers.consumer_info(request.stream, request.consumer)
        )

    @unary
    async def Fetch(self, request: streams_pb2.FetchRequest, context: Any) -> Any:
        return await self._fetch(request)

    @lockstep
    async def FetchStream(self, request: streams_pb2.FetchRequest) -> Any:
        return await self._fetch(request)

    async def _fetch(self, request: streams_pb2.FetchRequest) -> streams_pb2.FetchResponse:
        deliveries = await self.node.consumers.fetch(
            request.stream,
            request.consumer,
            request.partition,
            batch_size=request.batch_size,
            max_wait_ms=request.max_wait_ms,
            max_bytes=request.max_bytes,
            ack_wait_ms=request.ack_wait_ms,
        )
        response = streams_pb2.FetchResponse()
        add = response.messages.add
        for delivery in deliveries:
            _fill(add(), delivery)
        return response

    @unary
    async def Ack(self, request: streams_pb2.AckRequest, context: Any) -> Any:
        await self.node.consumers.ack(
            request.stream, request.consumer, request.partition, request.seq, request.deliver_count
        )
        return streams_pb2.AckResponse()

    @unary
    async def AckBatch(self, request: streams_pb2.AckBatchRequest, context: Any) -> Any:
        return await self._ack_batch(request)

    @lockstep
    async def AckBatchStream(self, request: streams_pb2.AckBatchRequest) -> Any:
        return await self._ack_batch(request)

    async def _ack_batch(self, request: streams_pb2.AckBatchRequest) -> streams_pb2.AckBatchResponse:
        results = await self.node.consumers.ack_batch(
            request.stream, request.consumer, request.partition, request.seqs, request.deliver_counts
        )
        response = streams_pb2.AckBatchResponse()
        add = response.results.add
        for seq, code, message in results:
            add(seq=seq, result_code=code, message=message)
        return response

    @unary
    async def Nak(self, request: streams_pb2.NakRequest, context: Any) -> Any:
        await self.node.consumers.nak(
            request.stream,
            request.consumer,
            request.partition,
            request.seq,
            request.delay_ms,
            deliver_count=request.deliver_count,
        )
        return streams_pb2.NakResponse()

    @unary
    async def Term(self, request: streams_pb2.TermRequest, context: Any) -> Any:
        await self.node.consumers.term(
            request.stream,
            request.consumer,
            request.partition,
            request.seq,
            request.deliver_count,
            dead_letter=request.dead_letter,
        )
        return streams_pb2.TermResponse()

    @unary
    async def ReleaseScheduled(self, request: streams_pb2.ReleaseScheduledRequest, context: Any) -> Any:
        delivered_seq = await self.node.admin.release_scheduled(
            request.stream, request.partition, request.seq, discard=request.discard
        )
        return streams_pb2.ReleaseScheduledResponse(delivered_seq=delivered_seq)

    @unary
    async def ListScheduled(self, request: streams_pb2.ListScheduledRequest, context: Any) -> Any:
        records, next_seq = self.node.admin.list_scheduled(
            request.stream, request.partition, request.from_seq, request.max_messages, held_only=request.held_only
        )
        response = streams_pb2.ListScheduledResponse(next_seq=next_seq)
        for record in records:
            response.messages.add().MergeFromString(record)
        return response

    @unary
    async def SeekConsumer(self, request: streams_pb2.SeekConsumerRequest, context: Any) -> Any:
        position = request.WhichOneof("position")
        if position is None:
            raise InvalidArgumentError("position: give seq, time_ms or end")
        if position == "seq" and request.seq == 0:
            raise InvalidArgumentError("seq: seqs start at 1 (use end for only new messages)")
        if position == "end" and not request.end:
            raise InvalidArgumentError("end: set it to true (or give seq or time_ms)")
        next_seq, dropped = await self.node.consumers.seek_consumer(
            request.stream,
            request.consumer,
            request.partition,
            seq=request.seq,
            time_ms=request.time_ms if position == "time_ms" else None,
        )
        return streams_pb2.SeekConsumerResponse(next_seq=next_seq, dropped_pending=dropped)

    @unary
    async def InProgress(self, request: streams_pb2.InProgressRequest, context: Any) -> Any:
        redeliver_at_ms = await self.node.consumers.in_progress(
            request.stream, request.consumer, request.partition, request.seq
        )
        return streams_pb2.InProgressResponse(redeliver_at_ms=redeliver_at_ms)

    @server_stream
    async def Subscribe(self, request: streams_pb2.SubscribeRequest, context: Any) -> AsyncIterator[Any]:
        batches = self.node.subscriptions.subscribe_batches(
            request.stream,
            request.consumer,
            partitions=request.partitions,
            batch_size=request.batch_size,
            stop_when_empty=request.stop_when_empty,
            deliver_group=request.deliver_group,
        )
        async with contextlib.aclosing(batches):  # a cancelled call unbinds the consumer at once
            async for item in batches:
                if isinstance(item, str):
                    yield streams_pb2.SubscribeEvent(stopped=streams_pb2.SubscribeStopped(reason=item))
                    return
                if request.batch_events:
                    event = streams_pb2.SubscribeEvent()
                    add = event.batch.messages.add
                    for delivery in item:
                        _fill(add(), delivery)
                    yield event
                    continue
                for delivery in item:
                    event = streams_pb2.SubscribeEvent()
                    _fill(event.message, delivery)
                    yield event


def _change_batch(message: Any, records: list[bytes]) -> None:
    add = message.changes.add
    for record in records:
        add().MergeFromString(record)


class ChangeFeedServicer(internal_pb2_grpc.ChangeFeedServicer):
    """weir.v1.ChangeFeed on the internal port."""

    def __init__(self, node: Node) -> None:
        self.node = node

    @unary
    async def ReadChanges(self, request: internal_pb2.ReadChangesRequest, context: Any) -> Any:
        watermark_ms = self.node.changes.feed_watermark_ms()  # before the horizon is read: valid for it
        records, next_seq, horizon = await self.node.changes.read_changes(request.from_change_seq, request.max_changes)
        response = internal_pb2.ReadChangesResponse(
            next_change_seq=next_seq, last_change_seq=horizon, node_id=self.node.node_id, watermark_ms=watermark_ms
        )
        _change_batch(response, records)
        return response

    @server_stream
    async def TailChanges(self, request: internal_pb2.TailChangesRequest, context: Any) -> AsyncIterator[Any]:
        if request.HasField("partition") and not request.stream:
            raise InvalidArgumentError(f"partition {request.partition}: a partition filter needs a stream")
        feed_filter = ChangeFilter(
            stream=request.stream,
            partition=request.partition if request.HasField("partition") else None,
            exclude_appends=request.exclude_appends,
        )
        async for records, through, horizon in self.node.changes.tail_changes(
            request.from_change_seq, request.max_changes_per_batch, feed_filter
        ):
            batch = internal_pb2.ChangeBatch(
                last_change_seq=horizon, through_change_seq=through, node_id=self.node.node_id
            )
            _change_batch(batch, records)
            yield batch


class ReplicationServicer(internal_pb2_grpc.ReplicationServicer):
    """weir.v1.Replication on a clustered node's internal port (never the client port)."""

    def __init__(
        self,
        replicas: ReplicaManager,
        start_scrub: Callable[[], int | None] = lambda: None,
        ship_consumers: ShipConsumers | None = None,
    ) -> None:
        self.replicas = replicas
        self.handover = LeadershipHandover(replicas, ship_consumers)
        self.start_scrub = start_scrub  # the scrub's passes so far, or None when the scrub is off

    @unary
    async def FetchReplication(self, request: internal_pb2.FetchReplicationRequest, context: Any) -> Any:
        return await self.replicas.primary.fetch_replication(request)

    @lockstep
    async def FetchReplicationStream(self, request: internal_pb2.FetchReplicationRequest) -> Any:
        return await self.replicas.primary.fetch_replication(request)

    @lockstep
    async def FetchReplicationSession(self, request: internal_pb2.FetchSessionRequest) -> Any:
        return await self.replicas.primary.fetch_session(request)

    @unary
    async def GetConsumerSnapshots(self, request: internal_pb2.GetConsumerSnapshotsRequest, context: Any) -> Any:
        return self.replicas.primary.consumer_snapshots(request)

    @unary
    async def ReplicateStreamCreate(self, request: internal_pb2.ReplicateStreamCreateRequest, context: Any) -> Any:
        return await self.replicas.replicate_stream_create(request)

    @unary
    async def ReplicateMessage(self, request: internal_pb2.ReplicateMessageRequest, context: Any) -> Any:
        return await self.replicas.secondary.replicate_message(request)

    @lockstep
    async def ReplicateMessageStream(self, request: internal_pb2.ReplicateMessageRequest) -> Any:
        return await self.replicas.secondary.replicate_message(request)

    @lockstep
    async def ReplicateSession(self, request: internal_pb2.ReplicateSessionRequest) -> Any:
        return await self.replicas.secondary.replicate_session(request)

    @unary
    async def ReplicateTruncate(self, request: internal_pb2.ReplicateTruncateRequest, context: Any) -> Any:
        return await self.replicas.secondary.replicate_truncate(request)

    @unary
    async def ReplicateStreamUpdate(self, request: internal_pb2.ReplicateStreamUpdateRequest, context: Any) -> Any:
        return await self.replicas.replicate_stream_update(request)

    @unary
    async def ReplicateWorkQueueAck(self, request: internal_pb2.ReplicateWorkQueueAckRequest, context: Any) -> Any:
        return await self.replicas.secondary.replicate_removals(request)

    @unary
    async def ReplicateConsumerState(self, request: internal_pb2.ReplicateConsumerStateRequest, context: Any) -> Any:
        return await self.replicas.secondary.replicate_consumer_state(request)

    @unary
    async def ReplicateStreamDelete(self, request: internal_pb2.ReplicateStreamDeleteRequest, context: Any) -> Any:
        return await self.replicas.replicate_stream_delete(request)

    @unary
    async def ReplicateTruncateTail(self, request: internal_pb2.ReplicateTruncateTailRequest, context: Any) -> Any:
        return await self.replicas.secondary.replicate_truncate_tail(request)

    @unary
    async def GetRecordChecksums(self, request: internal_pb2.GetRecordChecksumsRequest, context: Any) -> Any:
        return self.replicas.secondary.record_checksums(request)

    @unary
    async def GetReplicaState(self, request: internal_pb2.GetReplicaStateRequest, context: Any) -> Any:
        return self.replicas.replica_state(request)

    @unary
    async def TransferLeadership(self, request: internal_pb2.TransferLeadershipRequest, context: Any) -> Any:
        return await self.handover.transfer(request)

    @unary
    async def ApplyPlacement(self, request: internal_pb2.ApplyPlacementRequest, context: Any) -> Any:
        return internal_pb2.ApplyPlacementResponse(partitions=await self.replicas.apply_pushed(request.record))

    @unary
    async def StartScrub(self, request: internal_pb2.NodeStartScrubRequest, context: Any) -> Any:
        passes = self.start_scrub()
        return internal_pb2.NodeStartScrubResponse(passes=passes or 0, enabled=passes is not None)


class TestClockServicer(internal_pb2_grpc.TestClockServicer):
    """weir.v1.TestClock on the internal port; registered only with WEIR_NODE_TEST_CLOCK=true."""

    def __init__(self, clock: ManualClock) -> None:
        self.clock = clock

    @unary
    async def AdvanceClock(self, request: internal_pb2.AdvanceClockRequest, context: Any) -> Any:
        self.clock.advance(request.delta_ms)
        return internal_pb2.AdvanceClockResponse(now_ms=self.clock.now_ms())


__all__ = ["ChangeFeedServicer", "StreamsServicer", "TestClockServicer", "types_pb2"]
