"""kafka-pixy's operations over the public Weir SDK, transport-neutral (the servicer turns them into
/KafkaPixy/* RPCs). Source: kafka-pixy's grpc.proto comments (seed 001) and kafkapixy.proto
(the later superset: headers, offsets, topic metadata).

Mapping: a topic is a Weir stream (the message's subject is the topic's name, so a stream without
subjects, or one whose subjects accept the name, serves); a Kafka offset is the Weir seq - 1 (the
first message has offset 0); a consumer group is a Weir consumer group (its durable consumer is
named after the group); a committed offset is the group consumer's ack floor. Keys are stored with
the message: an empty key is a key (it hashes like any other, FNV-1a as sarama), `key_undefined`
publishes to a partition in turn and comes back as `key_undefined`. Header values are bytes in Kafka
and text in Weir: `headers.py` stores them losslessly (UTF-8 text as is, other bytes in base64 under
a marker header) and ConsumeNAck returns the bytes sent.

Errors are Weir's typed errors; the servicer chooses the status kafka-pixy documents per RPC.
"""

from __future__ import annotations

import logging
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

from weir import Client, Message, PartitionRoute, StreamConfig, StreamInfo
from weir.errors import InvalidArgumentError, WeirError
from weir.subjects import validate_name

from weir_gateway.kafka_pixy.feeds import FeedSettings, GroupFeeds
from weir_gateway.kafka_pixy.headers import stored_headers

logger = logging.getLogger(__name__)

PartitionMetadata = tuple[int, int, list[int], list[int]]  # partition, leader, replicas, in-sync replicas
MAX_OFFSET = 2**63 - 2  # an int64 offset whose seq (offset + 1) still fits
_TRAILING_NUMBER = re.compile(r"(\d+)$")


@dataclass(frozen=True, slots=True)
class Produced:
    partition: int
    offset: int  # -1 in async mode (not known yet)


@dataclass(frozen=True, slots=True)
class PartitionOffsets:
    """GetOffsets' answer for one partition (Kafka offsets: seq - 1)."""

    partition: int
    begin: int  # the first stored offset
    end: int  # the offset the next message will get
    count: int
    offset: int  # the group's committed offset: everything below it is acknowledged
    lag: int


def broker_id(node_id: str) -> int:
    """A Kafka-style int32 broker id for a Weir node id: its trailing number ("node-3" -> 3), else a
    stable CRC32 of the name (kafka-pixy's metadata has int32 leaders and replicas)."""
    match = _TRAILING_NUMBER.search(node_id)
    if match and len(match.group(1)) <= 9:
        return int(match.group(1))
    return zlib.crc32(node_id.encode()) & 0x7FFFFFFF


class KafkaPixyCore:
    """The operations of kafka-pixy's API on one Weir cluster (named `cluster_name`)."""

    def __init__(self, client: Client, cluster_name: str, feeds: FeedSettings, long_polling_timeout_s: float) -> None:
        self.client = client
        self.cluster_name = cluster_name
        self.feeds = GroupFeeds(client, feeds)
        self.long_polling_timeout_s = long_polling_timeout_s

    async def close(self) -> None:
        await self.feeds.close()

    # -- checks ------------------------------------------------------------------------------------

    def check_cluster(self, cluster: str) -> None:
        if cluster and cluster != self.cluster_name:
            raise InvalidArgumentError(f"cluster {cluster!r} is unknown: this gateway serves {self.cluster_name!r}")

    @staticmethod
    def check_topic(topic: str) -> None:
        if not topic:
            raise InvalidArgumentError("topic: a topic (Weir stream) name is required")
        validate_name(topic, "topic")

    @staticmethod
    def check_group(group: str) -> None:
        if not group:
            raise InvalidArgumentError("group: a consumer group name is required")
        validate_name(group, "group")

    @staticmethod
    def _seq_of(partition: int, offset: int) -> int:
        if partition < 0:
            raise InvalidArgumentError(f"partition: must be >= 0, got {partition}")
        if not 0 <= offset <= MAX_OFFSET:
            raise InvalidArgumentError(f"offset: must be in 0..{MAX_OFFSET}, got {offset}")
        return offset + 1

    # -- produce -----------------------------------------------------------------------------------

    async def produce(
        self,
        cluster: str,
        topic: str,
        message: bytes,
        *,
        key: bytes | None,
        headers: Sequence[tuple[str, bytes]],
        async_mode: bool,
    ) -> Produced:
        """Store one message (key None = key_undefined) with its headers (key, bytes value), in
        Weir's text headers as `headers.stored_headers` encodes them (any bytes; see headers.py).
        Synchronous mode answers once every in-sync replica stored it (ack level all) with its
        partition and offset; async mode once the gateway queued it (ack level none; offset -1).
        Concurrent calls share the SDK's per-partition batches. Errors: InvalidArgumentError (also
        for the reserved header `x-weir-base64-headers`), NoSuchStreamError, SubjectRejectedError,
        OversizeError, and the cluster's retryable errors after the SDK's retries."""
        self.check_cluster(cluster)
        self.check_topic(topic)
        ack = await self.client.publish(
            topic,
            topic,
            message,
            key=key,
            headers=stored_headers(headers),
            ack_level="none" if async_mode else "all",
        )
        return Produced(ack.partition, -1 if async_mode else ack.seq - 1)

    # -- consume and ack ---------------------------------------------------------------------------

    async def consume_n_ack(
        self,
        cluster: str,
        topic: str,
        group: str,
        *,
        no_ack: bool,
        auto_ack: bool,
        ack_partition: int,
        ack_offset: int,
    ) -> Message:
        """Acknowledge (ack_partition, ack_offset) unless `no_ack` or `auto_ack`, then return the
        group's next message from the partitions this instance holds, waiting up to the long-polling
        timeout (NoMessageError). With `auto_ack` the returned message is acknowledged first. The ack
        happens even when no message follows. Errors: NoMessageError, OverloadedError (too many
        waiting calls), InvalidArgumentError, NoSuchStreamError."""
        self.check_cluster(cluster)
        self.check_topic(topic)
        self.check_group(group)
        if not no_ack and not auto_ack:
            await self.ack(cluster, topic, group, ack_partition, ack_offset)
        feed = self.feeds.get(topic, group)
        try:
            message = await feed.next(self.long_polling_timeout_s)
        except WeirError as error:
            if not error.retryable:  # the membership ended (stream deleted, ...): join afresh next time
                await self.feeds.forget(topic, group)
            raise
        if auto_ack:
            await self._ack_seq(topic, group, message.partition, message.seq)
        return message

    async def ack(self, cluster: str, topic: str, group: str, partition: int, offset: int) -> None:
        """Acknowledge one consumed message. Acknowledging one that is no longer pending (acked
        already, or re-offered and acked elsewhere) succeeds, as a Kafka offset commit would.
        Errors: InvalidArgumentError, NoSuchStreamError, NoSuchConsumerError (the group never
        consumed)."""
        self.check_cluster(cluster)
        self.check_topic(topic)
        self.check_group(group)
        await self._ack_seq(topic, group, partition, self._seq_of(partition, offset))

    async def _ack_seq(self, topic: str, group: str, partition: int, seq: int) -> None:
        (result,) = await self.client.ack_batch(topic, group, partition, [seq])
        if result != "ok":
            logger.debug("ack of %s/%d/%d for %r: %s (ignored)", topic, partition, seq, group, result)

    # -- offsets -----------------------------------------------------------------------------------

    async def get_offsets(self, cluster: str, topic: str, group: str) -> list[PartitionOffsets]:
        """Per partition: begin/end offsets, count, the group's committed offset and its lag.
        Errors: NoSuchStreamError, NoSuchConsumerError (the group never consumed)."""
        self.check_cluster(cluster)
        self.check_topic(topic)
        self.check_group(group)
        info = await self.client.stream_info(topic)
        consumer = await self.client.consumer_info(topic, group)
        floors = {state.partition: state.ack_floor for state in consumer.partitions}
        answer = []
        for stats in sorted(info.partitions, key=lambda entry: entry.partition):
            committed = max(floors.get(stats.partition, 0), stats.first_seq - 1)
            answer.append(
                PartitionOffsets(
                    partition=stats.partition,
                    begin=stats.first_seq - 1,
                    end=stats.last_seq,
                    count=stats.msg_count,
                    offset=committed,
                    lag=max(0, stats.last_seq - committed),
                )
            )
        return answer

    async def set_offsets(self, cluster: str, topic: str, group: str, offsets: Sequence[tuple[int, int]]) -> None:
        """Move the group to (partition, offset) pairs: the next message it gets from a partition
        is the one at that offset (messages consumed and not acknowledged there are dropped). Works
        on an active group. Errors: InvalidArgumentError (bad or repeated partition, negative
        offset), PositionOutOfRangeError (beyond the end), NoSuchStreamError, NoSuchConsumerError."""
        self.check_cluster(cluster)
        self.check_topic(topic)
        self.check_group(group)
        partitions = [partition for partition, _ in offsets]
        if len(set(partitions)) != len(partitions):
            raise InvalidArgumentError(f"offsets: a partition is listed twice ({partitions})")
        seqs = [(partition, self._seq_of(partition, offset)) for partition, offset in offsets]
        await self.client.consumer_info(topic, group)  # NoSuchConsumerError before anything moves
        for partition, seq in seqs:
            await self.client.seek_consumer(topic, group, seq=seq, partition=partition)

    async def list_consumers(self, cluster: str, topic: str, group: str) -> dict[str, dict[str, list[int]]]:
        """{group: {member client id: partitions}} for the topic's consumer groups (every durable
        consumer of the stream; `group` keeps only that one). Errors: NoSuchStreamError."""
        self.check_cluster(cluster)
        self.check_topic(topic)
        if group:
            self.check_group(group)
        names = [info.config.name for info in await self.client.list_consumers(topic)]
        answer: dict[str, dict[str, list[int]]] = {}
        for name in names:
            if group and name != group:
                continue
            info = await self.client.group_info(topic, name)
            answer[name] = {member.client_id: list(member.partitions) for member in info.members}
        return answer

    # -- metadata ----------------------------------------------------------------------------------

    async def topic_metadata(
        self, cluster: str, topic: str, with_partitions: bool
    ) -> tuple[dict[str, str], list[PartitionMetadata]]:
        """(config as strings, partition metadata (partition, leader, replicas, isr) when asked).
        Errors: NoSuchStreamError."""
        self.check_cluster(cluster)
        self.check_topic(topic)
        info = await self.client.stream_info(topic)
        config = _config_strings(info.config)
        if not with_partitions:
            return config, []
        route = await self.client.route(topic, refresh=True)
        return config, [_partition_metadata(entry, info) for entry in route.partitions]

    async def list_topics(
        self, cluster: str, with_partitions: bool
    ) -> dict[str, tuple[dict[str, str], list[PartitionMetadata]]]:
        """Every topic's `topic_metadata`."""
        self.check_cluster(cluster)
        topics = {}
        for name in await self.client.list_streams():
            try:
                topics[name] = await self.topic_metadata(cluster, name, with_partitions)
            except WeirError as error:  # deleted meanwhile
                logger.debug("topic %r left out of ListTopics: %s", name, error)
        return topics


def _config_strings(config: StreamConfig) -> dict[str, str]:
    """The stream's config in Kafka's terms where one exists, else Weir's names."""
    values = {
        "partitions": str(config.partitions),
        "replication.factor": str(config.replicas),
        "min.insync.replicas": str(config.min_insync_replicas),
        "max.message.bytes": str(config.max_msg_bytes),
        "weir.subjects": ",".join(config.subjects),
    }
    if config.max_age_ms is not None:
        values["retention.ms"] = str(config.max_age_ms)
    if config.max_bytes is not None:
        values["retention.bytes"] = str(config.max_bytes)
    return values


def _partition_metadata(entry: PartitionRoute, info: StreamInfo) -> PartitionMetadata:
    stats = next((p for p in info.partitions if p.partition == entry.partition), None)
    leader = broker_id(entry.primary.node_id) if entry.primary.alive else -1
    replicas = [broker_id(entry.primary.node_id)] + [broker_id(s.node_id) for s in entry.secondaries]
    in_sync = [broker_id(node) for node in stats.in_sync_node_ids] if stats is not None else []
    return entry.partition, leader, replicas, in_sync or [leader]
