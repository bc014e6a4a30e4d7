"""A Weir stream and consumer group as a Numaflow source (source.v1), over the public SDK.

Source: Numaflow's user-defined source protocol (`source.v1`, seed 004; pynumaflow's `Sourcer`).

Each source replica (a Numaflow source pod) is one member of the Weir consumer group `consumer`: the
router's group assignment gives every partition to one member at a time, and a dead replica's
partitions move to the others after the group session timeout. The member's fetch loops (the SDK's
`GroupConsumer`, one per assigned partition) fill a bounded buffer; `read` hands the data plane what
the buffer holds:

- `read(num_records, timeout_ms)`: waits up to `timeout_ms` for the first message, then takes what
  is buffered, at most `num_records` (a full batch under load, one message at once when idle). A
  buffered message of a partition this replica no longer holds is handed back (nak) instead, so a
  partition is never read by two replicas at once, as is one that waited in the buffer for half the
  ack_wait (its ack would likely come too late). Each message stays pending for the consumer's
  `ack_wait_ms` from its fetch; one the data plane never acks is delivered again after it.
- `ack(offsets)`: one AckBatch per partition, each bound to the delivery the offset names; a late ack
  of a delivery that came back meanwhile settles nothing (counted as stale).
- `nack(offsets)`: delivered again at once (to this or another replica).
- `pending()`: the group's messages the data plane has not read yet (undelivered, or delivered into
  the sidecar and not handed on), -1 when the cluster cannot say.
- `partitions()`: the partitions this replica holds now; `total_partitions()`: the stream's.

Errors: offsets that are not this source's are InvalidArgumentError before anything is settled;
cluster errors are the SDK's typed errors after its retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass

from weir import Client, Message, consumer_config
from weir.consuming import GroupConsumer
from weir.errors import NotPendingError, WeirError

from weir_numaflow_source import metrics
from weir_numaflow_source.offsets import Delivery, by_partition, parse_offset

logger = logging.getLogger(__name__)

FIRST_ASSIGNMENT_WAIT_S = 5.0  # how long partitions() waits for the first assignment at start
# A buffered message older than this share of the ack_wait is handed back instead of read: the data
# plane would likely ack it after its ack_wait ran out (it is delivered again meanwhile, the late ack
# settles nothing, and a data plane that paused would read every buffered message twice).
STALE_FRACTION = 0.5
BUFFER_FULL_RECHECK_S = 0.05  # a fetch loop with a full buffer looks again this often (and at its assignment)


@dataclass(frozen=True, slots=True)
class SourceSettings:
    stream: str
    consumer: str
    member_id: str
    filter_subject: str = ""
    new_group_start: str = "earliest"  # "earliest" | "latest"
    ack_wait_ms: int = 60_000
    max_deliver: int = 1_000_000
    max_ack_pending: int = 10_000
    fetch_batch: int = 500
    heartbeat_interval_ms: int = 1000
    fetch_wait_ms: int = 500


class WeirSource:
    """The translation of one source replica. `start()` joins the group; `stop()` leaves it and
    hands the buffered messages back."""

    def __init__(self, client: Client, settings: SourceSettings) -> None:
        self.client = client
        self.settings = settings
        # Fetched messages with when they arrived (monotonic s): their ack_wait started at the fetch.
        self._buffer: asyncio.Queue[tuple[Message, float]] = asyncio.Queue(2 * settings.fetch_batch)
        self._stale_after_s = settings.ack_wait_ms / 1000 * STALE_FRACTION
        config = consumer_config(
            settings.consumer,
            filter_subject=settings.filter_subject,
            deliver_policy="all" if settings.new_group_start == "earliest" else "new",
            ack_wait_ms=settings.ack_wait_ms,
            max_deliver=settings.max_deliver,
            max_ack_pending=settings.max_ack_pending,
        )
        self.member = GroupConsumer(
            client,
            settings.stream,
            settings.consumer,
            self._take,
            client_id=settings.member_id,
            consumer_config=config,
            batch_size=settings.fetch_batch,
            max_wait_ms=settings.fetch_wait_ms,
            heartbeat_interval_ms=settings.heartbeat_interval_ms,
            auto_settle=False,
        )
        self._task: asyncio.Task[None] | None = None
        self._total_partitions: int | None = None
        self._outstanding = 0  # messages handed to the data plane, not yet acked or nacked by it
        self._stopping = False

    def start(self) -> None:
        """Join the group (once; not again after `stop`)."""
        if self._task is None and not self._stopping:
            self._task = asyncio.get_running_loop().create_task(self.member.run(), name="numaflow-source-member")

    async def stop(self) -> None:
        """Leave the group (its partitions move at once) and hand back what the data plane did not
        read: first the fetch loops end (what an in-flight fetch still brings is handed back at once),
        then the buffer, so nothing handed back is fetched again by this replica."""
        self._stopping = True
        await self.member.stop()
        task, self._task = self._task, None
        if task is not None:
            await asyncio.wait({task})
            if not task.cancelled() and task.exception() is not None:
                logger.warning("the group membership had ended with %r", task.exception())
        await self._hand_back_buffered()

    def _check_member(self) -> None:
        """Raise the membership's non-retryable error (a stream that does not exist, ...), if it ended."""
        task = self._task
        if task is not None and task.done() and not task.cancelled() and task.exception() is not None:
            raise task.exception()  # type: ignore[misc]

    # -- read --------------------------------------------------------------------------------------

    async def _take(self, message: Message) -> None:
        """The membership's handler: buffer a fetched message, waiting while the buffer is full. A
        message of a partition the router took away meanwhile is handed back instead: the member
        gives a revoked partition up only once its fetched batch is handed over, which must not
        wait for a data plane that is not reading."""
        while True:
            if self._stopping or message.partition not in self.member.assigned:
                await self._hand_back(message)
                return
            try:
                self._buffer.put_nowait((message, time.monotonic()))
                return
            except asyncio.QueueFull:
                await asyncio.sleep(BUFFER_FULL_RECHECK_S)

    async def read(self, num_records: int, timeout_ms: int) -> list[Message]:
        """Up to `num_records` messages: waits up to `timeout_ms` for the first, then takes only what
        is already buffered. Messages of partitions this replica no longer holds are handed back."""
        self.start()
        self._check_member()
        if self._stopping:  # leaving the group: nothing more is handed out
            return []
        deadline = time.monotonic() + timeout_ms / 1000
        taken: list[Message] = []
        while len(taken) < num_records:
            if self._buffer.empty():
                if taken:
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    message, fetched_at = await asyncio.wait_for(self._buffer.get(), left)
                except TimeoutError:
                    break
            else:
                message, fetched_at = self._buffer.get_nowait()
            if message.partition in self.member.assigned and time.monotonic() - fetched_at < self._stale_after_s:
                taken.append(message)
            else:  # its partition moved, or it waited so long its ack_wait would run out before an ack
                await self._hand_back(message)
        metrics.READ_MESSAGES.inc(len(taken))
        self._outstanding += len(taken)
        return taken

    async def _hand_back(self, message: Message) -> None:
        with contextlib.suppress(WeirError):
            await self.client.nak(
                message.stream,
                self.settings.consumer,
                message.partition,
                message.seq,
                deliver_count=message.deliver_count,
            )
        metrics.HANDED_BACK.inc()

    async def _hand_back_buffered(self) -> None:
        while not self._buffer.empty():
            await self._hand_back(self._buffer.get_nowait()[0])

    # -- settle ------------------------------------------------------------------------------------

    @staticmethod
    def deliveries(offsets: Sequence[tuple[bytes, int]]) -> list[Delivery]:
        """The deliveries `(offset, partition_id)` pairs name, all validated before any is settled.
        Errors: InvalidArgumentError."""
        return [parse_offset(offset, partition_id) for offset, partition_id in offsets]

    async def ack(self, offsets: Sequence[tuple[bytes, int]]) -> int:
        """Acknowledge the deliveries; returns how many were still pending (the rest were settled
        already or delivered again since: counted as stale)."""
        groups = by_partition(self.deliveries(offsets))
        self._outstanding = max(0, self._outstanding - len(offsets))
        acked = 0
        for partition, deliveries in groups.items():
            results = await self.client.ack_batch(
                self.settings.stream,
                self.settings.consumer,
                partition,
                [delivery.seq for delivery in deliveries],
                [delivery.deliver_count for delivery in deliveries],
            )
            acked += sum(1 for result in results if result == "ok")
        stale = sum(len(deliveries) for deliveries in groups.values()) - acked
        metrics.ACKED_MESSAGES.inc(acked)
        if stale:
            metrics.STALE_SETTLES.labels("ack").inc(stale)
            logger.debug("%d acknowledged offset(s) were no longer pending (delivered again or settled)", stale)
        return acked

    async def nack(self, offsets: Sequence[tuple[bytes, int]]) -> int:
        """Deliver the messages again at once; returns how many were still pending."""
        nacked = 0
        deliveries = self.deliveries(offsets)
        self._outstanding = max(0, self._outstanding - len(deliveries))
        for delivery in deliveries:
            try:
                await self.client.nak(
                    self.settings.stream,
                    self.settings.consumer,
                    delivery.partition,
                    delivery.seq,
                    deliver_count=delivery.deliver_count,
                )
                nacked += 1
            except NotPendingError:
                metrics.STALE_SETTLES.labels("nack").inc()
        metrics.NACKED_MESSAGES.inc(nacked)
        return nacked

    # -- state -------------------------------------------------------------------------------------

    async def pending(self) -> int:
        """The group's messages the data plane has not read yet, -1 when the cluster cannot say: not
        yet delivered plus delivered and unacknowledged (the consumer's num_pending + num_ack_pending,
        every partition: what sits in fetch loops and this replica's buffer counts), less what this
        replica handed the data plane and has not had settled. With several replicas, what the others
        handed out and was not settled yet counts too."""
        try:
            info = await self.client.consumer_info(self.settings.stream, self.settings.consumer)
        except WeirError as error:
            logger.warning("pending: %s", error)
            return -1
        return max(0, int(info.num_pending) + int(info.num_ack_pending) - self._outstanding)

    async def partitions(self) -> list[int]:
        """The partitions this replica holds now (at start, after the first assignment or a few seconds)."""
        self.start()
        deadline = time.monotonic() + FIRST_ASSIGNMENT_WAIT_S
        while self.member.generation == 0 and time.monotonic() < deadline:
            self._check_member()
            await asyncio.sleep(0.05)
        return list(self.member.assigned)

    async def total_partitions(self) -> int | None:
        """The stream's partition count (None when the cluster cannot say)."""
        if self._total_partitions is None:
            try:
                route = await self.client.route(self.settings.stream)
            except WeirError as error:
                logger.warning("total partitions: %s", error)
                return None
            self._total_partitions = len(route.partitions)
        return self._total_partitions
