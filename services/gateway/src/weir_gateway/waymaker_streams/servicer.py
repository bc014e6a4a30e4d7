"""`/waymaker.streams.WaymakerStreamsService/*`, the streams seed's API verbatim, over the Weir SDK:
decode, call the cluster through `weir.Client`, encode. Results are in the response bodies as the
seed defines them (`success`, `result_code`, `message`, gRPC status OK); the seed's internal
replication RPCs (Replicate*) are refused with PERMISSION_DENIED. The cluster admin calls (TransferStream
a fenced leadership transfer among them) are in `cluster_admin`, the object store's in `objects`.
Translations are in `mapping`."""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, TypeVar

import grpc
from weir import Client
from weir.client import NodeClient
from weir.errors import WeirError
from weir.info import ConsumerConfig, StreamConfig
from weir.objects import ObjectStore

from weir_gateway import metrics
from weir_gateway.acks import AckCoalescer
from weir_gateway.waymaker_streams import mapping
from weir_gateway.waymaker_streams.cluster_admin import ClusterAdmin
from weir_gateway.waymaker_streams.mapping import MultiPartitionError
from weir_gateway.waymaker_streams.objects import ObjectCalls
from weir_gateway.waymaker_streams.pb import waymaker_streams_pb2 as seed
from weir_gateway.waymaker_streams.pb import waymaker_streams_pb2_grpc as seed_grpc
from weir_gateway.waymaker_streams.rpc import OK, PROTOCOL, refusal, seed_rpc
from weir_gateway.waymaker_streams.watch import watch_cluster

logger = logging.getLogger(__name__)
Response = TypeVar("Response")

REPLICATION_METHODS = (
    "ReplicateConsumerState",
    "ReplicateSourceTailState",
    "ReplicateStreamCreate",
    "ReplicateMessage",
    "ReplicateStreamDelete",
    "ReplicateTruncate",
    "ReplicateStreamUpdate",
    "ReplicateWorkQueueAck",
)


class WaymakerStreamsServicer(ClusterAdmin, ObjectCalls, seed_grpc.WaymakerStreamsServiceServicer):
    """The seed's client RPCs over `client` (a stream of the seed is a one-partition Weir stream)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.objects = ObjectStore(client)
        self.acks = AckCoalescer(client)  # concurrent Acks of a partition share AckBatch calls

    async def _single_partition(self, stream: str) -> None:
        """Raises MultiPartitionError for a stream of more than one partition (NoSuchStreamError
        when there is none)."""
        route = await self.client.route(stream)
        if len(route.partitions) != 1:
            raise MultiPartitionError(
                f"stream {stream!r} has {len(route.partitions)} partitions; the waymaker.streams API "
                "addresses one-partition streams (use weir.v1 for this one)"
            )

    async def _on_primary(self, stream: str, call: Callable[[NodeClient], Awaitable[Response]]) -> Response:
        await self._single_partition(stream)
        return await self.client.on_leader(stream, 0, call)

    # -- stream lifecycle --------------------------------------------------------------------------

    @seed_rpc(seed.CreateStreamResponse)
    async def CreateStream(self, request: seed.CreateStreamRequest, context: Any) -> seed.CreateStreamResponse:
        """A stream; `obj:<bucket>` is the seed's object bucket, made as Weir's (`weir object` reads it)."""
        bucket = mapping.object_bucket_from_seed(request.config)
        if bucket is not None:
            await self.objects.create_bucket(**bucket)
            return seed.CreateStreamResponse(**OK)
        await self.client.create_stream(StreamConfig.from_proto(mapping.stream_config_from_seed(request.config)))
        return seed.CreateStreamResponse(**OK)

    @seed_rpc(seed.DeleteStreamResponse)
    async def DeleteStream(self, request: seed.DeleteStreamRequest, context: Any) -> seed.DeleteStreamResponse:
        await self.client.delete_stream(request.name)
        return seed.DeleteStreamResponse(**OK)

    @seed_rpc(seed.GetStreamInfoResponse)
    async def GetStreamInfo(self, request: seed.GetStreamInfoRequest, context: Any) -> seed.GetStreamInfoResponse:
        info = (await self.client.stream_info(request.name)).to_proto()
        authority = mapping.authority_of(info, (await self.numbers()).number)
        answer = seed.GetStreamInfoResponse(
            **OK,
            config=mapping.stream_config_to_seed(info.config),
            stats=mapping.stream_stats_to_seed(info.stats),
            sources_status=[mapping.source_status_to_seed(status) for status in info.sources_status],
            ring_owner_node_id=authority.ring_owner_node_id,
            pinned=authority.pinned,
        )
        if authority.override is not None:
            answer.authority_override.CopyFrom(authority.override)
        return answer

    async def ListStreams(self, request: seed.ListStreamsRequest, context: grpc.aio.ServicerContext) -> Any:
        started = time.perf_counter()
        try:  # the seed's ListStreamsResponse has no result fields: a failure is a status
            return seed.ListStreamsResponse(names=await self.client.list_streams())
        except WeirError as error:
            metrics.RPC_ERRORS.labels(PROTOCOL, "ListStreams", error.result_code.value).inc()
            await context.abort(error.status_code, error.message)
        finally:
            metrics.RPC_SECONDS.labels(PROTOCOL, "ListStreams").observe(time.perf_counter() - started)
        raise AssertionError("unreachable: abort raises")

    @seed_rpc(seed.GetStreamSourcesResponse)
    async def GetStreamSources(
        self, request: seed.GetStreamSourcesRequest, context: Any
    ) -> seed.GetStreamSourcesResponse:
        """Every (sourcing, source) tail of the cluster (the gateway is no node of its own): the
        status of each stream with sources, from its primary (`ClusterAdmin.stream_infos`)."""
        entries = [
            seed.GetStreamSourcesEntry(
                sourcing_stream=found.config.name,
                source_stream=status.source_stream,
                last_sourced_seq=status.last_sourced_seq,
                pulled_total=status.pulled_total,
                last_error=status.last_error,
                last_error_ts_ms=status.last_error_ts_ms,
            )
            for found in await self.stream_infos()
            if found.config.sources
            for status in found.sources_status
        ]
        return seed.GetStreamSourcesResponse(**OK, entries=entries)

    @seed_rpc(seed.UpdateStreamResponse)
    async def UpdateStream(self, request: seed.UpdateStreamRequest, context: Any) -> seed.UpdateStreamResponse:
        updated = await self.client.update_stream(request.name, **mapping.update_from_seed(request))
        return seed.UpdateStreamResponse(
            **OK, config=mapping.stream_config_to_seed(updated.config.to_proto()), pruned=updated.pruned
        )

    async def WatchStreams(
        self, request: seed.WatchStreamsRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[seed.WatchEvent]:
        """Every alive node's stream and consumer events, merged (see `watch`); a failure to start
        ends the call with its error's status."""
        try:
            async for event in watch_cluster(self.client):
                yield event
        except WeirError as error:
            metrics.RPC_ERRORS.labels(PROTOCOL, "WatchStreams", error.result_code.value).inc()
            await context.abort(error.status_code, error.message)

    # -- messages ------------------------------------------------------------------------------------

    @seed_rpc(seed.PublishResponse)
    async def Publish(self, request: seed.PublishRequest, context: Any) -> seed.PublishResponse:
        expected = request.expected_last_seq if request.HasField("expected_last_seq") else None
        headers = [(header.key, header.value) for header in request.headers]
        await self._single_partition(request.stream)
        ack = await self.client.publish(  # batched with concurrent publishes of the partition
            request.stream,
            request.subject,
            request.payload,
            headers=headers,
            partition=0,
            expected_last_seq=expected,
            ts_ms=request.ts_ms,
            msg_id=f"waymaker.{secrets.token_urlsafe(12)}",  # the gateway's own retries store it once
        )
        return seed.PublishResponse(**OK, seq=ack.seq)

    @seed_rpc(seed.FetchResponse)
    async def Fetch(self, request: seed.FetchRequest, context: Any) -> seed.FetchResponse:
        await self._single_partition(request.stream)
        messages = await self._on_primary(
            request.stream, lambda node: node.fetch(request.stream, request.consumer, 0, batch_size=request.batch_size)
        )
        return seed.FetchResponse(**OK, messages=[mapping.message_to_seed(message) for message in messages])

    @seed_rpc(seed.AckResponse)
    async def Ack(self, request: seed.AckRequest, context: Any) -> seed.AckResponse:
        await self._single_partition(request.stream)
        # The seed's AckResponse codes are ok | no_such_stream | no_such_consumer | internal: an ack
        # of a seq that is not pending (acknowledged already, terminated) is "ok", as JetStream
        # treats a second ack (issue 55). Nothing changes for it.
        await self.acks.ack(request.stream, request.consumer, 0, request.seq, 0)
        return seed.AckResponse(**OK)

    @seed_rpc(seed.NakResponse)
    async def Nak(self, request: seed.NakRequest, context: Any) -> seed.NakResponse:
        await self._single_partition(request.stream)
        await self.client.nak(request.stream, request.consumer, 0, request.seq, request.delay_ms)
        return seed.NakResponse(**OK)

    @seed_rpc(seed.TermResponse)
    async def Term(self, request: seed.TermRequest, context: Any) -> seed.TermResponse:
        await self._single_partition(request.stream)
        await self.client.term(request.stream, request.consumer, 0, request.seq)
        return seed.TermResponse(**OK)

    @seed_rpc(seed.InProgressResponse)
    async def InProgress(self, request: seed.InProgressRequest, context: Any) -> seed.InProgressResponse:
        await self._single_partition(request.stream)
        await self.client.in_progress(request.stream, request.consumer, 0, request.seq)
        return seed.InProgressResponse(**OK)

    async def Subscribe(
        self, request: seed.SubscribeRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[seed.SubscribeEvent]:
        """Push delivery from the partition's primary: a `message` event per delivered message and
        a final `stopped` (stop_when_empty, consumer or stream deleted, node shutting down). A
        failure ends the call with the error's status (the seed's event has no result fields);
        what was delivered and not acknowledged is delivered again after the ack wait."""
        started = time.perf_counter()
        try:
            await self._single_partition(request.stream)
            node = await self.client.leader(request.stream, 0)
            events = node.subscribe(
                request.stream,
                request.consumer,
                partitions=[0],
                batch_size=request.batch_size,
                stop_when_empty=request.stop_when_empty,
            )
            async for event in events:
                if event.WhichOneof("event") == "stopped":
                    yield seed.SubscribeEvent(stopped=seed.SubscribeStopped(reason=event.stopped.reason))
                    return
                yield seed.SubscribeEvent(message=mapping.message_to_seed(event.message))
        except WeirError as error:
            metrics.RPC_ERRORS.labels(PROTOCOL, "Subscribe", error.result_code.value).inc()
            await context.abort(error.status_code, error.message)
        finally:
            metrics.RPC_SECONDS.labels(PROTOCOL, "Subscribe").observe(time.perf_counter() - started)

    # -- consumers -------------------------------------------------------------------------------------

    @seed_rpc(seed.CreateConsumerResponse)
    async def CreateConsumer(self, request: seed.CreateConsumerRequest, context: Any) -> seed.CreateConsumerResponse:
        config = mapping.consumer_config_from_seed(request.config)
        await self._single_partition(request.stream)
        await self.client.create_consumer(request.stream, ConsumerConfig.from_proto(config))
        return seed.CreateConsumerResponse(**OK)

    @seed_rpc(seed.DeleteConsumerResponse)
    async def DeleteConsumer(self, request: seed.DeleteConsumerRequest, context: Any) -> seed.DeleteConsumerResponse:
        await self.client.delete_consumer(request.stream, request.consumer)
        return seed.DeleteConsumerResponse(**OK)

    @seed_rpc(seed.ListConsumersResponse)
    async def ListConsumers(self, request: seed.ListConsumersRequest, context: Any) -> seed.ListConsumersResponse:
        await self._single_partition(request.stream)
        infos = await self.client.list_consumers(request.stream)
        return seed.ListConsumersResponse(
            **OK, consumers=[mapping.consumer_state_to_seed(info.to_proto()) for info in infos]
        )

    @seed_rpc(seed.GetConsumerInfoResponse)
    async def GetConsumerInfo(self, request: seed.GetConsumerInfoRequest, context: Any) -> seed.GetConsumerInfoResponse:
        await self._single_partition(request.stream)
        info = await self.client.consumer_info(request.stream, request.consumer)
        return seed.GetConsumerInfoResponse(**OK, consumer=mapping.consumer_state_to_seed(info.to_proto()))

    # -- subject lookups -------------------------------------------------------------------------------

    @seed_rpc(seed.ReadLatestAtSubjectResponse)
    async def ReadLatestAtSubject(
        self, request: seed.ReadLatestAtSubjectRequest, context: Any
    ) -> seed.ReadLatestAtSubjectResponse:
        latest = await self._on_primary(
            request.stream, lambda node: node.latest_at_subject(request.stream, request.subject)
        )
        answer = seed.ReadLatestAtSubjectResponse(**OK)
        if latest is not None:
            answer.latest.CopyFrom(mapping.message_to_seed(latest))
        return answer

    @seed_rpc(seed.ListSubjectsByPrefixResponse)
    async def ListSubjectsByPrefix(
        self, request: seed.ListSubjectsByPrefixRequest, context: Any
    ) -> seed.ListSubjectsByPrefixResponse:
        stream = request.stream
        subjects = await self._on_primary(stream, lambda node: node.list_subjects(stream, request.prefix))
        return seed.ListSubjectsByPrefixResponse(**OK, subjects=subjects)

    @seed_rpc(seed.ScanExactAtSubjectResponse)
    async def ScanExactAtSubject(
        self, request: seed.ScanExactAtSubjectRequest, context: Any
    ) -> seed.ScanExactAtSubjectResponse:
        limit = request.limit or mapping.SCAN_DEFAULT_LIMIT
        messages = await self._on_primary(
            request.stream,
            lambda node: node.scan_subject(request.stream, request.subject, from_seq=request.from_seq, limit=limit),
        )
        return seed.ScanExactAtSubjectResponse(**OK, messages=[mapping.message_to_seed(m) for m in messages])


for _method in REPLICATION_METHODS:
    setattr(
        WaymakerStreamsServicer,
        _method,
        refusal(
            _method,
            grpc.StatusCode.PERMISSION_DENIED,
            f"{_method} is the seed cluster's internal replication; this broker replicates through its own "
            "internal API and does not accept it from clients",
        ),
    )
