"""The SDK's per-partition admin calls (`Client` inherits them): positions by time, scheduled and
held messages, moving a consumer, purging and deleting messages. Each is asked of the partition's
primary through `Client.on_leader`, with its route refresh and retries; a call over every
partition asks each primary in turn.

Source: weir.v1 Streams' SeqAtTime, ReleaseScheduled, ListScheduled, SeekConsumer and
PurgePartition (the last also JetStream's DeleteMsg and Kafka's DeleteRecords).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TypeVar

from weir.client import NodeClient
from weir.cluster_info import ScheduledPage
from weir.errors import InvalidArgumentError
from weir.v1 import router_pb2, streams_pb2

T = TypeVar("T")


class PartitionAdmin:
    """The per-partition admin calls of `Client`, over its `on_leader` and `_route`."""

    async def on_leader(self, stream: str, partition: int, call: Callable[[NodeClient], Awaitable[T]]) -> T:
        raise NotImplementedError

    async def _route(self, stream: str, *, refresh: bool = False) -> router_pb2.QueryRouteResponse:
        raise NotImplementedError

    async def seq_at_time(self, stream: str, partition: int, time_ms: int) -> int:
        """The first seq of `partition` stored at or after `time_ms`, or its next seq when none is
        (asked of the partition's primary)."""
        return await self.on_leader(stream, partition, lambda client: client.seq_at_time(stream, partition, time_ms))

    async def release_scheduled(self, stream: str, partition: int, seq: int, *, discard: bool = False) -> int:
        """Deliver now (or discard) a scheduled or held message on its partition's primary; returns
        the delivered seq (0 when discarded); a held message's resolution repeated answers as the
        first did. Errors: as NodeClient.release_scheduled (AlreadyResolvedError for a resolution
        that contradicts the first)."""
        return await self.on_leader(
            stream, partition, lambda client: client.release_scheduled(stream, partition, seq, discard=discard)
        )

    async def list_scheduled(
        self, stream: str, partition: int, *, held_only: bool = False, from_seq: int = 0, max_messages: int = 0
    ) -> ScheduledPage:
        """One page of the scheduled (or, with `held_only`, only held) messages a partition's
        primary still holds, in seq order from `from_seq` (0 = the oldest), at most `max_messages`
        (0 = 100; at most 10,000): weir.ScheduledPage, whose `next_seq` starts the next page (0
        after the last). Errors: NoSuchStreamError, InvalidArgumentError (no such partition)."""
        page = await self.on_leader(
            stream,
            partition,
            lambda client: client.list_scheduled(
                stream, partition, held_only=held_only, from_seq=from_seq, max_messages=max_messages
            ),
        )
        return ScheduledPage.from_proto(page)

    async def seek_consumer(
        self,
        stream: str,
        consumer: str,
        *,
        seq: int | None = None,
        time_ms: int | None = None,
        end: bool = False,
        partition: int | None = None,
    ) -> dict[int, int]:
        """Move a durable consumer (or a group's consumer: its name is the group's) in `partition`,
        or in every partition when None: exactly one of `seq` (deliver from it on; 1 = the start),
        `time_ms` (from the first message stored at or after it, ms since the Unix epoch) or `end`
        (only messages published from now on). Messages pending in those partitions are dropped
        (not redelivered). Returns {partition: next_seq}. Errors: PositionOutOfRangeError (seq
        beyond a partition's next seq), NoSuchConsumerError, NoSuchStreamError,
        InvalidArgumentError."""
        if sum((seq is not None, time_ms is not None, end)) != 1:
            raise InvalidArgumentError("give exactly one of seq, time_ms or end")
        partitions = [partition] if partition is not None else range(len((await self._route(stream)).partitions))
        moved: dict[int, int] = {}
        for index in partitions:

            async def seek(client: NodeClient, index: int = index) -> streams_pb2.SeekConsumerResponse:
                return await client.seek_consumer(stream, consumer, index, seq=seq, time_ms=time_ms, end=end)

            moved[index] = (await self.on_leader(stream, index, seek)).next_seq
        return moved

    async def purge_stream(self, stream: str, *, partition: int | None = None, keep_from_seq: int | None = None) -> int:
        """Remove the messages of `partition` (every partition when None) below `keep_from_seq`
        (None: all of them); seqs keep counting. Returns how many were removed. Errors:
        NoSuchStreamError, InvalidArgumentError (no such partition)."""
        partitions = [partition] if partition is not None else range(len((await self._route(stream)).partitions))
        purged = 0
        for index in partitions:

            async def purge(client: NodeClient, index: int = index) -> streams_pb2.PurgePartitionResponse:
                return await client.purge_partition(stream, index, keep_from_seq=keep_from_seq)

            purged += (await self.on_leader(stream, index, purge)).purged
        return purged

    async def delete_messages(self, stream: str, partition: int, seqs: Sequence[int]) -> int:
        """Remove exactly these messages of one partition (PurgePartition with seqs; JetStream's
        DeleteMsg); returns how many were stored and went."""

        async def delete(client: NodeClient) -> streams_pb2.PurgePartitionResponse:
            return await client.purge_partition(stream, partition, seqs=seqs)

        return int((await self.on_leader(stream, partition, delete)).purged)
