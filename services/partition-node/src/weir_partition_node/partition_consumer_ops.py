"""A partition's consumer entry points (partition.py): registering a consumer's cursor, the cheap
check whether a fetch could deliver anything, and every consumer op sent through the commit loop.

Each op (fetch, ack, nak, term, in progress, seek, undeliver, remove; commit_items.ConsumerOpKind)
is a queue item of the partition's commit loop, decided by partition_consumers.ConsumerDecisions;
its caller hears back once the commit that recorded it is durable. A fetch whose caller went away
meanwhile (cancelled, past its deadline) gives its deliveries back (an `undeliver`), so they are due
again at once instead of after their ack wait.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from weir.errors import WeirError

from weir_partition_node import consumers, delivery_horizon
from weir_partition_node.clock import Clock
from weir_partition_node.commit_items import CommitItem, ConsumerOp, ConsumerOpKind, Delivery
from weir_partition_node.consumers import ConsumerCursor, ConsumerSpec, Counters, Pending
from weir_partition_node.delivery_horizon import DeliveryHorizon, PushHorizon
from weir_partition_node.storage.base import StoredConsumer

if TYPE_CHECKING:
    from weir_partition_node.partition import Partition

logger = logging.getLogger(__name__)


class PartitionConsumerOps:
    """The consumer calls of one partition; the cursors live in `Partition.consumers`."""

    def __init__(
        self,
        partition: Partition,
        *,
        put: Callable[[CommitItem], Awaitable[None]],
        clock: Clock,
        push_horizon: PushHorizon | None = None,
    ) -> None:
        self._partition = partition
        self._put = put  # onto the partition's commit queue
        self._clock = clock
        # raises a consumer's delivery horizon on the in-sync replicas (None: standalone, no replicas)
        self._push_horizon = push_horizon
        self._take_backs: set[asyncio.Task[None]] = set()

    def restore(
        self,
        spec: ConsumerSpec,
        start_last_delivered: int,
        stored: StoredConsumer | None,
        last_per_subject_until: int = 0,
    ) -> None:
        """Register a consumer: from its stored state when that belongs to this incarnation, else
        fresh at `start_last_delivered` (the delivery policy's start, decided at creation) with
        `last_per_subject_until` (DELIVER_POLICY_LAST_PER_SUBJECT's horizon, 0 = none)."""
        if stored is not None and stored.incarnation == spec.incarnation:
            cursor = ConsumerCursor(
                spec,
                stored.last_delivered,
                {seq: Pending(at, count, due) for seq, at, count, due in stored.pending},
                Counters(*stored.totals),
                last_per_subject_until=stored.last_per_subject_until,
            )
            cursor.earliest_redeliver_ms = min((entry[3] for entry in stored.pending), default=consumers.NEVER)
        else:
            cursor = ConsumerCursor(spec, start_last_delivered, last_per_subject_until=last_per_subject_until)
        previous = self._partition.consumers.get(spec.name)
        if previous is not None and previous.spec.incarnation == spec.incarnation:
            cursor.horizon, cursor.maybe_delivered_until = previous.horizon, previous.maybe_delivered_until
        self._partition.consumers[spec.name] = cursor

    def take_over(self, leader_epoch: int) -> None:
        """This copy now leads under `leader_epoch`: what each consumer's horizon covers beyond its
        last delivery (up to the log's end here) is delivered as redeliveries, and each horizon
        starts anew (delivery_horizon.py)."""
        log_end = self._partition.last_seq
        for cursor in self._partition.consumers.values():
            held = cursor.horizon
            until = min(delivery_horizon.maybe_delivered_until(held, cursor.last_delivered), log_end)
            cursor.maybe_delivered_until = max(cursor.maybe_delivered_until, until)
            start = max(held.seq, cursor.last_delivered, cursor.maybe_delivered_until)
            cursor.horizon = delivery_horizon.restarted(held, start, leader_epoch, self._clock.now_ms())

    def ready_for(self, name: str, now_ms: int) -> bool:
        """Whether a fetch could deliver something now (cheap, in memory: no queue round trip)."""
        cursor = self._partition.consumers.get(name)
        if cursor is None:
            return True  # let the fetch fail with no_such_consumer
        if cursor.earliest_redeliver_ms <= now_ms:
            return True
        return (
            cursor.last_delivered < self._partition.visible_last_seq()
            and len(cursor.pending) < cursor.spec.max_ack_pending
        )

    async def fetch_ready(
        self, name: str, now_ms: int, batch_size: int, max_bytes: int, ack_wait_ms: int = 0
    ) -> list[Delivery]:
        """A fetch through the commit loop, skipped (no queue round trip) when `ready_for` says
        nothing can be delivered. `ack_wait_ms`: the deliveries' invisible duration (0 = the consumer's).
        Errors: as `run`'s."""
        if not self.ready_for(name, now_ms):
            return []
        op = self.new_op(
            ConsumerOpKind.FETCH, name, batch_size=batch_size, max_bytes=max_bytes, ack_wait_ms=ack_wait_ms
        )
        await self._put(op)
        try:  # shielded: a cancelled caller (gone, or past its deadline) must not lose what the commit delivers
            deliveries: list[Delivery] = await asyncio.shield(op.future)
        except asyncio.CancelledError:
            op.abandoned = True
            op.future.add_done_callback(functools.partial(self._take_back, name))
            raise
        try:
            await self._announce(name, deliveries, now_ms)
        except asyncio.CancelledError:  # gone while the horizon was pushed: they never reached the caller
            self._take_back(name, op.future)
            raise
        return deliveries

    async def _announce(self, name: str, deliveries: list[Delivery], now_ms: int) -> None:
        """Before a fetch answers: raise the consumer's delivery horizon on the in-sync replicas
        when `deliveries` go above it (delivery_horizon.py). A replica that does not confirm in
        time is logged and counted, and the fetch is answered anyway."""
        partition = self._partition
        tracker = partition.replication.tracker
        cursor = partition.consumers.get(name)
        if self._push_horizon is None or tracker is None or cursor is None or not partition.leading:
            return
        seq = delivery_horizon.to_announce(
            cursor.horizon, (delivery.seq for delivery in deliveries), delivery_horizon.HORIZON_AHEAD
        )
        if not seq:
            return
        held = cursor.horizon
        if held.leader_epoch != partition.leader_epoch:  # a consumer registered before this node led
            held = delivery_horizon.restarted(held, held.seq, partition.leader_epoch, now_ms)
        raised = DeliveryHorizon(seq, held.leader_epoch, held.since_ms)
        replicas = sorted(tracker.in_sync - {tracker.leader_id})
        if replicas and not await self._push_horizon(partition.stream.name, partition.index, name, raised, replicas):
            return  # not confirmed: the next fetch above the horizon pushes again
        cursor = partition.consumers.get(name)
        if cursor is not None:
            cursor.horizon = delivery_horizon.merged(cursor.horizon, raised)

    async def run(self, kind: ConsumerOpKind, consumer: str, **fields: Any) -> Any:
        """Queue one consumer op (`fields`: commit_items.ConsumerOp's) and wait for its answer once
        its commit is durable (partition_consumers.ConsumerDecisions.decide says which). Errors:
        NoSuchConsumerError, NotPendingError, PositionOutOfRangeError, NotLeaderError, and the
        commit loop's (ShuttingDownError, StorageFailedError)."""
        return await self._run(self.new_op(kind, consumer, **fields))

    def new_op(self, kind: ConsumerOpKind, consumer: str, **fields: Any) -> ConsumerOp:
        return ConsumerOp(kind, consumer, asyncio.get_running_loop().create_future(), **fields)

    async def _run(self, op: ConsumerOp) -> Any:
        await self._put(op)
        return await op.future

    def _take_back(self, name: str, future: asyncio.Future[Any]) -> None:
        """An abandoned fetch's deliveries never reached its caller: queue an `undeliver` of them
        (consumers.undeliver), so they are due again at once instead of after their ack wait."""
        if future.cancelled() or future.exception() is not None or not future.result():
            return
        deliveries: list[Delivery] = future.result()
        op = self.new_op(
            ConsumerOpKind.UNDELIVER,
            name,
            seqs=[delivery.seq for delivery in deliveries],
            deliver_counts=[delivery.deliver_count for delivery in deliveries],
        )
        task = asyncio.get_running_loop().create_task(self._run_take_back(op))
        self._take_backs.add(task)  # one per abandoned fetch: bounded by the fetches in flight
        task.add_done_callback(self._take_backs.discard)

    async def _run_take_back(self, op: ConsumerOp) -> None:
        try:
            await self._run(op)
        except WeirError as error:  # closing, failed storage, or no longer leading: the ack wait still applies
            partition = self._partition
            logger.info(
                "%s/%s: abandoned deliveries wait for their ack wait (%s)",
                partition.stream.name,
                partition.index,
                error,
            )
