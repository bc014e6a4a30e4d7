"""Leadership handover, the primary's side of the controller's preferred-leader rebalance
(TransferLeadership; Kafka's preferred replica election, JetStream's leader step-down).

A failover promotes whichever in-sync replica holds the most, and a message acknowledged with
`ack_level=leader` that had not reached it is lost. A planned move need not lose anything, so the
primary hands over in steps: it stops leading the partition for clients (publishes, fetches and
acks get `not_leader`, retryable: the SDK retries them, and idempotent publishes are stored once),
lets its commit queue drain, and waits until the target's reported log end reaches its own and the
high watermark covers it too (so every ack-all publish in flight is acknowledged here, not failed
and retried). It then hands the target every consumer's committed state itself
(`ConsumerStateShipper`). The replicator ships snapshots at most every snapshot_interval_ms, and the
target refuses the old epoch's once it leads, so the acks of the last moments would otherwise be
delivered again after their ack wait. Only then does it answer `ok` with that end; the controller writes the next epoch
starting after it, so neither copy has a tail to truncate. The primary stays fenced until it adopts
that record, or until the fence's time runs out (the controller died in between), when it leads
again under its epoch.

A transfer to the primary itself is a fenced epoch change with the same leader: a partition move
(issue 29) adds or removes a copy under a new epoch, which must start after everything the primary
wrote under the old one; the primary stops, drains, waits for its in-sync replicas and answers its
log end, as for a real handover.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from weir import tls as sdk_tls
from weir.errors import InvalidArgumentError, ResultCode, WeirError
from weir.v1 import internal_pb2
from weir_server.internal_clients import ReplicationClient
from weir_server.replication import ReplicationResult

from weir_partition_node import delivery_horizon
from weir_partition_node.clock import monotonic_ms
from weir_partition_node.delivery_horizon import DeliveryHorizon
from weir_partition_node.hosted import Stream
from weir_partition_node.membership import Membership
from weir_partition_node.partition import Partition
from weir_partition_node.replica import ReplicaManager

logger = logging.getLogger(__name__)

DEFAULT_TRANSFER_TIMEOUT_MS = 5000
MAX_TRANSFER_TIMEOUT_MS = 30_000


# Hands (stream, leader epoch, target node id, snapshots) to the target; raises when it could not.
ShipConsumers = Callable[[str, int, str, list[internal_pb2.ConsumerSnapshot]], Awaitable[None]]


class ConsumerStateShipper:
    """Pushes consumer snapshots to another node's Replication service (ReplicateConsumerState, as
    the replicator does), on its registered internal address with this node's service identity."""

    def __init__(self, membership: Membership, *, security: sdk_tls.Security, timeout_s: float = 5.0) -> None:
        self.membership = membership
        self.security = security
        self.timeout_s = timeout_s

    async def __call__(
        self, stream: str, leader_epoch: int, node_id: str, snapshots: list[internal_pb2.ConsumerSnapshot]
    ) -> None:
        """Errors: ConnectionError (no known address, or a refusal), WeirError (the call failed)."""
        address = await self.membership.internal_address(node_id)
        if not address:
            raise ConnectionError(f"{node_id} has no known internal address")
        async with ReplicationClient(address, timeout_s=self.timeout_s, tls=self.security) as target:
            for snapshot in snapshots:
                request = internal_pb2.ReplicateConsumerStateRequest(
                    stream=stream, leader_epoch=leader_epoch, snapshot=snapshot
                )
                reply = await target.replicate("ReplicateConsumerState", request)
                # (a consumer the target does not have yet is skipped, as the replicator does)
                if reply.result_code not in (ReplicationResult.OK, ResultCode.NO_SUCH_CONSUMER):
                    raise ConnectionError(
                        f"{node_id} refused consumer {snapshot.consumer!r}: {reply.result_code} {reply.message}"
                    )


class LeadershipHandover:
    """TransferLeadership's core; shares the ReplicaManager's per-stream lock, so no placement is
    adopted halfway through a handover. `ship_consumers`: how the target gets the consumers'
    state before the answer (None: left to the replicator)."""

    def __init__(self, replicas: ReplicaManager, ship_consumers: ShipConsumers | None = None) -> None:
        self.replicas = replicas
        self.node = replicas.node
        self.ship_consumers = ship_consumers
        self._unfence: dict[tuple[str, int], asyncio.TimerHandle] = {}

    async def transfer(
        self, request: internal_pb2.TransferLeadershipRequest
    ) -> internal_pb2.TransferLeadershipResponse:
        """See the module docstring. Errors: InvalidArgumentError (timeout_ms, to_node_id),
        NoSuchStreamError, NoSuchPartitionError; refusals come as result codes."""
        timeout_ms = request.timeout_ms or DEFAULT_TRANSFER_TIMEOUT_MS
        if timeout_ms > MAX_TRANSFER_TIMEOUT_MS:
            raise InvalidArgumentError(f"timeout_ms: at most {MAX_TRANSFER_TIMEOUT_MS}, got {request.timeout_ms}")
        if not request.to_node_id:
            raise InvalidArgumentError("to_node_id: required")
        response = internal_pb2.TransferLeadershipResponse()
        partition = self.node.hosted_partition(request.stream, request.partition)
        stream = self.node.hosted_stream(request.stream)
        assert stream is not None  # hosted_partition found it
        async with self.replicas.stream_lock(request.stream):
            to_self = request.to_node_id == self.node.node_id
            refusal = self._refusal(request, partition, stream, to_self=to_self)
            tracker = partition.tracker
            response.leader_epoch = partition.leader_epoch
            if refusal is not None:
                response.result_code, response.message = refusal
                return response
            assert to_self or tracker is not None  # refused above otherwise
            stream.fence(request.partition, True)  # clients now get not_leader
            epoch = partition.leader_epoch
            deadline_ms = monotonic_ms() + timeout_ms
            await partition.drain()
            target = None if to_self or tracker is None else tracker.followers[request.to_node_id]

            def caught_up() -> bool:  # the target holds everything, and so does every in-sync replica
                held = partition.last_seq if target is None else target.last_seq
                return held >= partition.last_seq and partition.high_watermark >= partition.last_seq

            while not caught_up() and monotonic_ms() < deadline_ms:
                await partition.wait_for_progress((deadline_ms - monotonic_ms()) / 1000)
            if not caught_up():
                self._lead_again(request.stream, request.partition, epoch)
                response.result_code = ReplicationResult.TIMEOUT
                held = partition.high_watermark if target is None else target.last_seq
                response.message = (
                    f"{request.to_node_id} held seq {held} of {partition.last_seq} after {timeout_ms} ms; "
                    "this node leads again"
                )
                return response
            not_handed = await self._hand_consumers(request, epoch, to_self, deadline_ms)
            if not_handed is not None:
                self._lead_again(request.stream, request.partition, epoch)
                response.result_code = ReplicationResult.TIMEOUT
                response.message = f"{not_handed}; this node leads again"
                return response
            self._lead_again_at(deadline_ms, request.stream, request.partition, epoch)
            response.result_code = ReplicationResult.OK
            response.last_seq = partition.last_seq
            logger.info(
                "%s/%d: handing leadership to %s at seq %d (epoch %d)",
                request.stream,
                request.partition,
                request.to_node_id,
                partition.last_seq,
                epoch,
            )
            return response

    def _refusal(
        self, request: internal_pb2.TransferLeadershipRequest, partition: Partition, stream: Stream, *, to_self: bool
    ) -> tuple[ReplicationResult, str] | None:
        """Why this node must not hand the partition over now, else None: another leader epoch, it
        does not lead the partition, or the target is not an in-sync replica (or this node)."""
        refusal = self.replicas.check_epoch(partition, request.leader_epoch)
        tracker = partition.tracker
        if refusal is None and (not partition.leading or request.partition not in stream.led_set):
            refusal = ReplicationResult.NOT_LEADER, f"node {self.node.node_id} does not lead this partition now"
        if refusal is None and not to_self and (tracker is None or request.to_node_id not in tracker.in_sync):
            refusal = (
                ReplicationResult.NOT_IN_SYNC,
                f"{request.to_node_id} is not an in-sync replica of this partition",
            )
        return refusal

    def _lead_again_at(self, deadline_ms: int, stream: str, partition: int, epoch: int) -> None:
        """Unfence the partition at `deadline_ms` (monotonic) if no new epoch came by then; replaces
        an earlier handover's timer of the same partition."""
        key = (stream, partition)
        previous = self._unfence.pop(key, None)
        if previous is not None:
            previous.cancel()
        delay_s = max(0.0, (deadline_ms - monotonic_ms()) / 1000)
        self._unfence[key] = asyncio.get_running_loop().call_later(delay_s, self._lead_again, stream, partition, epoch)

    async def _hand_consumers(
        self, request: internal_pb2.TransferLeadershipRequest, epoch: int, to_self: bool, deadline_ms: int
    ) -> str | None:
        """Give the target the consumers' committed state (the partition is fenced and drained: it
        changes no more). None when done or nothing to do, else what went wrong."""
        if to_self or self.ship_consumers is None:
            return None
        snapshots = self.replicas.primary.consumer_snapshots(
            internal_pb2.GetConsumerSnapshotsRequest(
                stream=request.stream, partition=request.partition, leader_epoch=epoch
            )
        )
        if snapshots.result_code != ReplicationResult.OK:
            return snapshots.message
        if not snapshots.snapshots:
            return None
        now_ms = self.node.clock.now_ms()
        for snapshot in snapshots.snapshots:  # drained and fenced: what it delivered is exact
            held = DeliveryHorizon(snapshot.delivery_horizon, epoch, snapshot.horizon_since_ms)
            exact = delivery_horizon.handed_over(held, snapshot.last_delivered, now_ms)
            snapshot.delivery_horizon, snapshot.horizon_since_ms = exact.seq, exact.since_ms
        try:
            async with asyncio.timeout(max(0.1, (deadline_ms - monotonic_ms()) / 1000)):
                await self.ship_consumers(request.stream, epoch, request.to_node_id, list(snapshots.snapshots))
        except (WeirError, OSError, TimeoutError) as error:
            logger.warning(
                "%s/%d: consumer state not handed to %s: %s",
                request.stream,
                request.partition,
                request.to_node_id,
                error,
            )
            return f"the consumers' state could not be handed to {request.to_node_id} ({error})"
        return None

    def _lead_again(self, stream_name: str, index: int, epoch: int) -> None:
        """End a fence. Still leading under the same epoch: no new leader took over (the controller
        died or gave up), so clients may use the partition here again."""
        self._unfence.pop((stream_name, index), None)
        stream = self.node.hosted_stream(stream_name)
        if stream is None or index not in stream.fenced:
            return
        partition = stream.partitions[index]
        stream.fence(index, False)
        if partition.leading and partition.leader_epoch == epoch:
            logger.warning("%s/%d: no new leader took over; leading again under epoch %d", stream_name, index, epoch)

    def close(self) -> None:
        for handle in self._unfence.values():
            handle.cancel()
        self._unfence.clear()
