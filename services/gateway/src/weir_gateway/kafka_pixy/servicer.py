"""The /KafkaPixy/* gRPC methods: decode, call `KafkaPixyCore`, encode; errors become the status
codes kafka-pixy documents for each method (an unknown topic is INVALID_ARGUMENT where a client
produces or consumes, NOT_FOUND where it asks about offsets or metadata)."""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import grpc
from weir.errors import NoSuchConsumerError, NoSuchStreamError, WeirError

from weir_gateway import metrics
from weir_gateway.kafka_pixy.core import KafkaPixyCore, PartitionMetadata
from weir_gateway.kafka_pixy.headers import record_headers
from weir_gateway.kafka_pixy.pb import kafkapixy_pb2, kafkapixy_pb2_grpc

logger = logging.getLogger(__name__)
Request = TypeVar("Request")
Response = TypeVar("Response")
Handler = Callable[[Any, Request, grpc.aio.ServicerContext], Awaitable[Response]]


def kafka_pixy_rpc(missing_is_not_found: bool) -> Callable[[Handler[Request, Response]], Handler[Request, Response]]:
    """Times the method and turns failures into kafka-pixy's status codes: a missing topic or
    group is NOT_FOUND (`missing_is_not_found`) or INVALID_ARGUMENT; other Weir errors keep their
    status; anything else is INTERNAL."""

    def decorate(handler: Handler[Request, Response]) -> Handler[Request, Response]:
        method = handler.__name__
        histogram = metrics.RPC_SECONDS.labels("kafka_pixy", method)

        @functools.wraps(handler)
        async def wrapper(self: Any, request: Request, context: grpc.aio.ServicerContext) -> Response:
            started = time.perf_counter()
            try:
                return await handler(self, request, context)
            except WeirError as error:
                metrics.RPC_ERRORS.labels("kafka_pixy", method, error.result_code.value).inc()
                code = error.status_code
                if isinstance(error, NoSuchStreamError | NoSuchConsumerError):
                    code = grpc.StatusCode.NOT_FOUND if missing_is_not_found else grpc.StatusCode.INVALID_ARGUMENT
                await context.abort(code, error.message)
            except Exception as error:
                metrics.RPC_ERRORS.labels("kafka_pixy", method, "internal").inc()
                logger.exception("kafka-pixy %s failed", method)
                await context.abort(grpc.StatusCode.INTERNAL, f"{type(error).__name__}: {error}")
            finally:
                histogram.observe(time.perf_counter() - started)
            raise AssertionError("unreachable: abort raises")

        return wrapper

    return decorate


def _metadata(config: dict[str, str], partitions: list[PartitionMetadata]) -> kafkapixy_pb2.GetTopicMetadataRs:
    response = kafkapixy_pb2.GetTopicMetadataRs(version=1, config=config)
    for partition, leader, replicas, in_sync in partitions:
        response.partitions.add(partition=partition, leader=leader, replicas=replicas, isr=in_sync)
    return response


class KafkaPixyServicer(kafkapixy_pb2_grpc.KafkaPixyServicer):
    def __init__(self, core: KafkaPixyCore) -> None:
        self.core = core

    @kafka_pixy_rpc(missing_is_not_found=False)
    async def Produce(self, request: kafkapixy_pb2.ProdRq, context: Any) -> Any:
        produced = await self.core.produce(
            request.cluster,
            request.topic,
            request.message,
            key=None if request.key_undefined else request.key_value,
            headers=[(header.key, header.value) for header in request.headers],
            async_mode=request.async_mode,
        )
        return kafkapixy_pb2.ProdRs(partition=produced.partition, offset=produced.offset)

    @kafka_pixy_rpc(missing_is_not_found=False)
    async def ConsumeNAck(self, request: kafkapixy_pb2.ConsNAckRq, context: Any) -> Any:
        message = await self.core.consume_n_ack(
            request.cluster,
            request.topic,
            request.group,
            no_ack=request.no_ack,
            auto_ack=request.auto_ack,
            ack_partition=request.ack_partition,
            ack_offset=request.ack_offset,
        )
        return kafkapixy_pb2.ConsRs(
            partition=message.partition,
            offset=message.seq - 1,
            key_value=message.key or b"",
            key_undefined=message.key is None,
            message=message.payload,
            headers=[kafkapixy_pb2.RecordHeader(key=k, value=v) for k, v in record_headers(message.headers.items())],
        )

    @kafka_pixy_rpc(missing_is_not_found=False)
    async def Ack(self, request: kafkapixy_pb2.AckRq, context: Any) -> Any:
        await self.core.ack(request.cluster, request.topic, request.group, request.partition, request.offset)
        return kafkapixy_pb2.AckRs()

    @kafka_pixy_rpc(missing_is_not_found=True)
    async def GetOffsets(self, request: kafkapixy_pb2.GetOffsetsRq, context: Any) -> Any:
        offsets = await self.core.get_offsets(request.cluster, request.topic, request.group)
        response = kafkapixy_pb2.GetOffsetsRs()
        for entry in offsets:
            response.offsets.add(
                partition=entry.partition,
                begin=entry.begin,
                end=entry.end,
                count=entry.count,
                offset=entry.offset,
                lag=entry.lag,
            )
        return response

    @kafka_pixy_rpc(missing_is_not_found=True)
    async def SetOffsets(self, request: kafkapixy_pb2.SetOffsetsRq, context: Any) -> Any:
        pairs = [(entry.partition, entry.offset) for entry in request.offsets]
        await self.core.set_offsets(request.cluster, request.topic, request.group, pairs)
        return kafkapixy_pb2.SetOffsetsRs()

    @kafka_pixy_rpc(missing_is_not_found=True)
    async def GetTopicMetadata(self, request: kafkapixy_pb2.GetTopicMetadataRq, context: Any) -> Any:
        config, partitions = await self.core.topic_metadata(request.cluster, request.topic, request.with_partitions)
        return _metadata(config, partitions)

    @kafka_pixy_rpc(missing_is_not_found=True)
    async def ListTopics(self, request: kafkapixy_pb2.ListTopicRq, context: Any) -> Any:
        topics = await self.core.list_topics(request.cluster, request.with_partitions)
        response = kafkapixy_pb2.ListTopicRs()
        for name, (config, partitions) in topics.items():
            response.topics[name].CopyFrom(_metadata(config, partitions))
        return response

    @kafka_pixy_rpc(missing_is_not_found=True)
    async def ListConsumers(self, request: kafkapixy_pb2.ListConsumersRq, context: Any) -> Any:
        groups = await self.core.list_consumers(request.cluster, request.topic, request.group)
        response = kafkapixy_pb2.ListConsumersRs()
        for name, members in groups.items():
            entry = response.groups[name]
            for client_id, partitions in members.items():
                entry.consumers[client_id].partitions.extend(partitions)
        return response
