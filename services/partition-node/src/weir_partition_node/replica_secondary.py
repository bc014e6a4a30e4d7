"""A secondary's side of the Replication service (DESIGN §5): the pushes that change its copy of a
partition. ReplicateMessage appends the primary's records (record batches, checked by CRC32C and
log matching, or a list of records); ReplicateTruncate, ReplicateWorkQueueAck and
ReplicateConsumerState apply the primary's retention, removals and consumer state.

Every call names the leader epoch it was sent under: a replica refuses an older epoch (`fenced`),
asks to be retried at a newer one it has not adopted yet (`stale_epoch`, after refreshing the
stream's record), and refuses while it leads the partition itself (`not_follower`). Every answer
carries the replica's first and last seq and its epoch (`ReplicateResponse`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from weir.errors import (
    InvalidArgumentError,
    NoSuchConsumerError,
    NoSuchPartitionError,
    NoSuchStreamError,
    ResultCode,
    WeirError,
)
from weir.v1 import internal_pb2
from weir_server.replication import ReplicationResult

from weir_partition_node import delivery_horizon, metrics
from weir_partition_node.commit_items import RemoveSeqs, ReplaceConsumerState, TruncatePrefix, TruncateTail
from weir_partition_node.consumers import pending_problem
from weir_partition_node.delivery_horizon import DeliveryHorizon
from weir_partition_node.node import Node
from weir_partition_node.partition import Partition
from weir_partition_node.replication_batches import records_of_batches, records_of_list

logger = logging.getLogger(__name__)

# A refusal of a replication call at an epoch: (result code, message), None = the epoch is this
# replica's (ReplicaManager.check_epoch).
EpochCheck = Callable[[Partition, int], tuple[ReplicationResult, str] | None]

# Most pushes (partitions) in one ReplicateSession request.
MAX_SESSION_PUSHES = 10_000
# Most checksums one GetRecordChecksums answers.
MAX_CHECKSUMS = 1000


class SecondaryReplication:
    """See the module docstring. `refresh_stream` adopts a stream's current record from Redis (a
    call at a newer epoch than this replica's); `check_epoch` is the refusal rule every
    replication call shares with the primary's side."""

    def __init__(
        self, node: Node, *, refresh_stream: Callable[[str], Awaitable[None]], check_epoch: EpochCheck
    ) -> None:
        self._node = node
        self._refresh_stream = refresh_stream
        self._check_epoch = check_epoch
        # Diverged tails cut since the node started (its heartbeat carries it to `weir doctor`).
        self.diverged_tails_cut = 0

    async def _follower(
        self, stream: str, index: int, epoch: int
    ) -> tuple[Partition | None, internal_pb2.ReplicateResponse]:
        """The hosted secondary partition for a Replicate* call at `epoch`, or the refusal."""
        response = internal_pb2.ReplicateResponse()
        try:
            partition = self._node.hosted_partition(stream, index)
        except (NoSuchStreamError, NoSuchPartitionError) as error:
            response.result_code, response.message = error.result_code.value, error.message
            return None, response
        if epoch > partition.leader_epoch:
            await self._refresh_stream(stream)
        refusal = self._check_epoch(partition, epoch)
        if refusal is None and partition.leading:
            refusal = (
                ReplicationResult.NOT_FOLLOWER,
                f"node {self._node.node_id} leads this partition under epoch {epoch}",
            )
        if refusal is None and partition.replica_epoch != epoch:
            refusal = ReplicationResult.STALE_EPOCH, f"this replica has not adopted leader epoch {epoch} yet; retry"
        response.leader_epoch = partition.leader_epoch
        if refusal is not None:
            response.result_code, response.message = refusal
            self._fill(response, partition)
            return None, response
        return partition, response

    @staticmethod
    def _fill(response: internal_pb2.ReplicateResponse, partition: Partition) -> internal_pb2.ReplicateResponse:
        response.first_seq = partition.first_seq
        response.last_seq = partition.last_seq
        response.leader_epoch = partition.leader_epoch
        response.success = response.result_code == ReplicationResult.OK
        return response

    async def replicate_message(self, request: internal_pb2.ReplicateMessageRequest) -> internal_pb2.ReplicateResponse:
        partition, response = await self._follower(request.stream, request.partition, request.leader_epoch)
        if partition is None:
            return response
        if request.record_batches:
            if request.records:
                raise InvalidArgumentError("records and record_batches: give one of them, not both")
            records, after_crc32 = records_of_batches(
                request.record_batches, after_seq=request.after_seq, leader_epoch=request.leader_epoch
            )
        else:
            records = records_of_list(request.after_seq, request.records, request.record_crc32s)
            after_crc32 = request.after_crc32 if request.HasField("after_crc32") else None
        code, message = await partition.replicate(
            request.after_seq, records, sum(len(record[3]) for record in records), after_crc32
        )
        if code == ReplicationResult.DIVERGENCE:
            metrics.REPLICATION_DIVERGENCES.labels(request.stream, str(request.partition)).inc()
            logger.error("%s/%d: %s", request.stream, request.partition, message)
        if code == ReplicationResult.OK:
            partition.replication.learn(request.high_watermark, partition.last_seq)
            if partition.finish_rebuild(max(request.primary_last_seq, request.high_watermark)):
                logger.warning(
                    "%s/%d: rebuilt from the primary through seq %d; a replica like any other again",
                    request.stream,
                    request.partition,
                    partition.last_seq,
                )
                await self._node.record_storage_finding(
                    request.stream, request.partition, "file_rebuilt", detail=f"through seq {partition.last_seq}"
                )
        response.result_code, response.message = code, message
        return self._fill(response, partition)

    async def replicate_session(
        self, request: internal_pb2.ReplicateSessionRequest
    ) -> internal_pb2.ReplicateSessionResponse:
        """ReplicateSession (issue 53): every push applied as `replicate_message` applies it, all at
        once (each partition's commit runs on its own storage thread, so their writes and fsyncs
        overlap), answered in order. An entry's error (a malformed batch, an unknown stream) is its
        result_code; the others are applied. Errors (the whole call, nothing applied):
        InvalidArgumentError for more than MAX_SESSION_PUSHES entries or two for one partition."""
        if len(request.pushes) > MAX_SESSION_PUSHES:
            raise InvalidArgumentError(f"pushes: at most {MAX_SESSION_PUSHES}, got {len(request.pushes)}")
        partitions = {(push.stream, push.partition) for push in request.pushes}
        if len(partitions) != len(request.pushes):
            raise InvalidArgumentError("pushes: at most one per partition")
        outcomes = await asyncio.gather(
            *(self.replicate_message(push) for push in request.pushes), return_exceptions=True
        )
        response = internal_pb2.ReplicateSessionResponse()
        for outcome in outcomes:
            if isinstance(outcome, WeirError):
                response.replies.add(result_code=outcome.result_code.value, message=outcome.message)
            elif isinstance(outcome, BaseException):
                raise outcome
            else:
                response.replies.append(outcome)
        return response

    async def replicate_truncate(
        self, request: internal_pb2.ReplicateTruncateRequest
    ) -> internal_pb2.ReplicateResponse:
        """ReplicateTruncate: drop every message below `first_seq` (the primary's retention)."""
        edit = TruncatePrefix(request.first_seq)
        return await self._remove(request.stream, request.partition, request.leader_epoch, edit)

    async def replicate_truncate_tail(
        self, request: internal_pb2.ReplicateTruncateTailRequest
    ) -> internal_pb2.ReplicateResponse:
        """ReplicateTruncateTail (issue 54): keep seqs <= `last_seq`, drop the diverged tail above it
        (counted in weir_partition_divergent_truncated_total); the answer counts what it dropped. A
        `last_seq` below the log's start empties the log there (its end stays first_seq - 1)."""
        partition, response = await self._follower(request.stream, request.partition, request.leader_epoch)
        if partition is None:
            return response
        dropped = 0
        keep = max(request.last_seq, partition.first_seq - 1)
        if keep < partition.last_seq:
            dropped = await partition.replica_edit(TruncateTail(keep))
            partition.replication.clamp(partition.last_seq)
            metrics.DIVERGENT_TRUNCATED.labels(request.stream, str(request.partition)).inc(dropped)
            self.diverged_tails_cut += 1
            logger.warning(
                "%s/%d: cut a diverged tail of %d message(s) after seq %d, to be copied again from the primary",
                request.stream,
                request.partition,
                dropped,
                keep,
            )
            await self._node.record_storage_finding(
                request.stream, request.partition, "diverged_tail_cut", detail=f"{dropped} after seq {keep}"
            )
        response.result_code = ReplicationResult.OK
        response.dropped = dropped
        return self._fill(response, partition)

    def record_checksums(
        self, request: internal_pb2.GetRecordChecksumsRequest
    ) -> internal_pb2.GetRecordChecksumsResponse:
        """GetRecordChecksums, on any replica: the stored CRC-32s from `from_seq`, at most
        MAX_CHECKSUMS. Errors: InvalidArgumentError (max_count), NoSuchStreamError,
        NoSuchPartitionError."""
        if request.max_count > MAX_CHECKSUMS:
            raise InvalidArgumentError(f"max_count: at most {MAX_CHECKSUMS}, got {request.max_count}")
        partition = self._node.hosted_partition(request.stream, request.partition)
        limit = min(request.max_count or MAX_CHECKSUMS, MAX_CHECKSUMS)
        rows = [row for row in partition.log.checksums(request.from_seq, limit) if row[0] < request.from_seq + limit]
        return internal_pb2.GetRecordChecksumsResponse(
            seqs=[seq for seq, _ in rows],
            crc32s=[crc for _, crc in rows],
            first_seq=partition.first_seq,
            last_seq=partition.last_seq,
        )

    async def replicate_removals(
        self, request: internal_pb2.ReplicateWorkQueueAckRequest
    ) -> internal_pb2.ReplicateResponse:
        """ReplicateWorkQueueAck: remove the given seqs (work-queue acks, or `reason`'s removals)."""
        edit = RemoveSeqs(list(request.seqs), request.reason or "work_queue_ack")
        return await self._remove(request.stream, request.partition, request.leader_epoch, edit)

    async def _remove(
        self, stream: str, index: int, epoch: int, edit: TruncatePrefix | RemoveSeqs
    ) -> internal_pb2.ReplicateResponse:
        """Apply a removal at `epoch`; the answer counts the messages it dropped."""
        partition, response = await self._follower(stream, index, epoch)
        if partition is None:
            return response
        before = partition.msg_count
        await partition.replica_edit(edit)
        response.result_code = ReplicationResult.OK
        response.dropped = max(0, before - partition.msg_count)
        return self._fill(response, partition)

    async def replicate_consumer_state(
        self, request: internal_pb2.ReplicateConsumerStateRequest
    ) -> internal_pb2.ReplicateResponse:
        snapshot = request.snapshot
        partition, response = await self._follower(request.stream, snapshot.partition, request.leader_epoch)
        if partition is None:
            return response
        stream = self._node.hosted_stream(request.stream)
        consumer = stream.consumers.get(snapshot.consumer) if stream is not None else None
        if consumer is None and not snapshot.tombstone:
            error = NoSuchConsumerError(
                f"stream {request.stream!r} has no consumer {snapshot.consumer!r} on node {self._node.node_id}",
                stream=request.stream,
                consumer=snapshot.consumer,
            )
            response.result_code, response.message = error.result_code.value, error.message
            return self._fill(response, partition)
        horizon = DeliveryHorizon(snapshot.delivery_horizon, request.leader_epoch, snapshot.horizon_since_ms)
        if request.horizon_only:  # raised in memory only: no commit, no disk (delivery_horizon.py)
            cursor = partition.consumers.get(snapshot.consumer)
            if cursor is not None:
                cursor.horizon = delivery_horizon.merged(cursor.horizon, horizon)
            response.result_code = ReplicationResult.OK if cursor is not None else ResultCode.NO_SUCH_CONSUMER.value
            return self._fill(response, partition)
        problem = (
            None if snapshot.tombstone else pending_problem(snapshot.last_delivered, (e.seq for e in snapshot.pending))
        )
        if problem is not None:  # a torn or damaged snapshot: refused before it reaches the commit loop
            raise InvalidArgumentError(f"snapshot of consumer {snapshot.consumer!r}: {problem}; nothing stored")
        await partition.replica_edit(
            ReplaceConsumerState(
                snapshot, consumer.spec if consumer is not None else None, request.defer_sync, horizon=horizon
            )
        )
        response.result_code = ReplicationResult.OK
        return self._fill(response, partition)
