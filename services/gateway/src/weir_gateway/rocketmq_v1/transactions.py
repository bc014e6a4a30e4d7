"""RocketMQ v1 transactions over Weir's held messages, transport-neutral: EndTransaction, and the
recovery of orphaned transactions through the producers' MultiplexingCall long polls. Source:
service.proto (EndTransactionRequest, GenericPollingRequest, MultiplexingResponse's
RecoverOrphanedTransactionRequest), definition.proto (SystemAttribute.orphaned_transaction_recovery_period:
"Delay time of first recover orphaned transaction request from server") and RocketMQ's transaction
check (the broker asks a producer of the message's producer group about a half message that is still
unresolved after the check period, and the producer answers with EndTransaction, source SERVER_CHECK).

A TRANSACTION message is stored held (`client.publish(..., hold=True)`, the stream needs
allow_scheduled_messages); its transaction id (`handles.Signer.transaction_id`) names the held record.
COMMIT delivers it (ReleaseScheduled), ROLLBACK discards it. Every copy of the partition records
how each held message was resolved (replicated with the delivery or removal, so a failover keeps it),
and a second EndTransaction is answered from that record: the same resolution again (one retried
after a lost answer, a SERVER_CHECK answer agreeing with the client's own) is OK and changes nothing;
the other one (a commit after a rollback, a rollback after a commit) is FAILED_PRECONDITION
(`already_resolved`, ErrorInfo metadata `resolution` = the first one) and changes nothing: the first
stands, and the client learns that its resolution was not applied. A transaction whose resolution is
no longer known (more than 65,536 resolutions of its partition since, or resolved before the record
existed) answers OK, as the repeat it most likely is.

Orphans: each MultiplexingCall poll waits (at most `poll_timeout_ms`; at most `max_waiting_polls` at
once on this instance) with its producer group and topics. While polls wait, a scan every
`scan_interval_ms` pages through the held records of their topics' partitions (at most
MAX_SCANNED_PER_PARTITION per partition and scan) and answers one waiting poll of the record's
producer group (any poll of the topic when the record names none) with each record older than its
recovery period (the message's own orphaned_transaction_recovery_period, else the gateway's
`recovery_period_ms`). A record is offered again only after another period: a producer that does not
answer is asked again, never flooded.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from weir import Client
from weir.client import NodeClient
from weir.errors import AlreadyResolvedError, InvalidArgumentError, NoSuchMessageError, WeirError
from weir.v1 import streams_pb2, types_pb2

from weir_gateway import metrics
from weir_gateway.rocketmq_v1 import mapping
from weir_gateway.rocketmq_v1.bounded import BoundedMap
from weir_gateway.rocketmq_v1.errors import TooManyPollsError
from weir_gateway.rocketmq_v1.handles import Signer, Transaction

logger = logging.getLogger(__name__)

PAGE_MESSAGES = 100
MAX_SCANNED_PER_PARTITION = 10_000  # held records one scan reads per partition
MAX_TOPICS_PER_POLL = 64
MAX_REMEMBERED_OFFERS = 100_000


@dataclass(frozen=True, slots=True)
class TransactionSettings:
    """recovery_period_ms: default age before a held message is checked; scan_interval_ms: time
    between scans; poll_timeout_ms: a MultiplexingCall's longest wait; max_waiting_polls: polls
    waiting at once on this instance."""

    recovery_period_ms: int = 30_000
    scan_interval_ms: int = 5_000
    poll_timeout_ms: int = 20_000
    max_waiting_polls: int = 1024


@dataclass(frozen=True, slots=True)
class Orphan:
    """An unresolved transaction to check with its producer: the held record as stored (seq = the
    record's, ts_ms = when it was stored, headers and msg_id as sent) in `partition` of `stream`,
    and its transaction id."""

    stream: str
    partition: int
    record: types_pb2.Message
    transaction_id: str


@dataclass(eq=False, slots=True)
class _Poll:
    producer_group: str  # Weir name; "" = the producer named none
    streams: frozenset[str]
    answer: asyncio.Future[Orphan]


class Transactions:
    """EndTransaction and orphan recovery on one cluster; `now_ms` the wall clock (ms since the epoch)."""

    def __init__(
        self,
        client: Client,
        signer: Signer,
        settings: TransactionSettings | None = None,
        now_ms: Callable[[], int] | None = None,
    ) -> None:
        self.client = client
        self.signer = signer
        self.settings = settings or TransactionSettings()
        self.now_ms = now_ms or (lambda: int(time.time() * 1000))
        self._polls: list[_Poll] = []
        self._offered: BoundedMap[tuple[str, int, int], int] = BoundedMap(MAX_REMEMBERED_OFFERS)
        self._scanner: asyncio.Task[None] | None = None

    async def end(self, transaction_id: str, message_id: str, commit: bool, source: str) -> bool:
        """Commit (deliver) or roll back (discard) the half message `transaction_id` names; returns
        False when its resolution was no longer known (answered OK all the same, see the module
        docstring). `source` ("CLIENT" | "SERVER_CHECK") is only counted. Errors:
        InvalidArgumentError (a malformed or forged transaction id, or one of another message_id),
        AlreadyResolvedError (FAILED_PRECONDITION: the other resolution came first; nothing
        changed), NotLeaderError / UnavailableError after the SDK's retries."""
        transaction = self.signer.transaction(transaction_id)
        if message_id and message_id != transaction.message_id:
            raise InvalidArgumentError(
                f"message_id {message_id!r} is not the message of this transaction ({transaction.message_id!r})"
            )
        resolution = "commit" if commit else "rollback"
        try:
            await self.client.release_scheduled(
                transaction.stream, transaction.partition, transaction.seq, discard=not commit
            )
        except AlreadyResolvedError as error:
            metrics.ROCKETMQ_TRANSACTIONS.labels(resolution, source.lower(), "conflicting").inc()
            logger.info("transaction %s of %r: %s refused: %s", transaction.seq, transaction.stream, resolution, error)
            raise
        except NoSuchMessageError:
            metrics.ROCKETMQ_TRANSACTIONS.labels(resolution, source.lower(), "unknown").inc()
            logger.info(
                "transaction %s of %r: no record of its resolution (%s answered ok, nothing changed)",
                transaction.seq,
                transaction.stream,
                resolution,
            )
            return False
        self._offered.pop((transaction.stream, transaction.partition, transaction.seq))
        metrics.ROCKETMQ_TRANSACTIONS.labels(resolution, source.lower(), "resolved").inc()
        return True

    async def poll(self, producer_group: str, streams: Iterable[str]) -> Orphan | None:
        """Wait up to poll_timeout_ms for an orphaned transaction of `producer_group` (a Weir name,
        "" = any) on `streams`; None when none came. Errors: TooManyPollsError (RESOURCE_EXHAUSTED),
        InvalidArgumentError (more than MAX_TOPICS_PER_POLL topics)."""
        topics = frozenset(streams)
        if len(topics) > MAX_TOPICS_PER_POLL:
            raise InvalidArgumentError(f"topics: at most {MAX_TOPICS_PER_POLL} per polling request, got {len(topics)}")
        if len(self._polls) >= self.settings.max_waiting_polls:
            raise TooManyPollsError(
                f"{len(self._polls)} MultiplexingCall polls wait on this gateway already "
                "(WEIR_GATEWAY_ROCKETMQ_MAX_WAITING_POLLS); poll again later"
            )
        poll = _Poll(producer_group, topics, asyncio.get_running_loop().create_future())
        self._polls.append(poll)
        metrics.ROCKETMQ_WAITING_POLLS.set(len(self._polls))
        if topics and (self._scanner is None or self._scanner.done()):
            self._scanner = asyncio.get_running_loop().create_task(self._scan_loop(), name="rocketmq-orphan-scan")
        try:
            await asyncio.wait({poll.answer}, timeout=self.settings.poll_timeout_ms / 1000)
        except asyncio.CancelledError:
            if poll.answer.done() and not poll.answer.cancelled():  # handed out but not delivered: offer again
                orphan = poll.answer.result()
                self._offered.pop((orphan.stream, orphan.partition, orphan.record.seq))
            raise
        finally:
            self._polls.remove(poll)
            metrics.ROCKETMQ_WAITING_POLLS.set(len(self._polls))
        if poll.answer.done():
            return poll.answer.result()
        poll.answer.cancel()
        return None

    async def close(self) -> None:
        """Stop scanning; waiting polls answer empty at their timeout (or when their call ends)."""
        if self._scanner is not None:
            self._scanner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._scanner

    async def _scan_loop(self) -> None:
        """Scan every scan_interval_ms while any poll waits (then stop; the next poll restarts it)."""
        while self._polls:
            await asyncio.sleep(self.settings.scan_interval_ms / 1000)
            try:
                await self.scan_once()
            except WeirError as error:
                logger.warning("scanning for orphaned transactions: %s", error)

    async def scan_once(self) -> int:
        """One pass over the waiting polls' topics; returns how many orphans it handed out."""
        streams = sorted({stream for poll in self._polls for stream in poll.streams})
        handed = 0
        for stream in streams:
            try:
                partitions = len((await self.client.route(stream)).partitions)
            except WeirError as error:  # a topic deleted (or never created): nothing to check there
                logger.debug("orphan scan of %r: %s", stream, error)
                continue
            for partition in range(partitions):
                if not any(not poll.answer.done() and stream in poll.streams for poll in self._polls):
                    break
                handed += await self._scan_partition(stream, partition)
        return handed

    async def _scan_partition(self, stream: str, partition: int) -> int:
        """Hand the due held records of one partition to waiting polls (bounded, see the module)."""
        from_seq, scanned, handed = 0, 0, 0
        while scanned < MAX_SCANNED_PER_PARTITION:

            async def read(node: NodeClient, start: int = from_seq) -> streams_pb2.ListScheduledResponse:
                return await node.list_scheduled(  # the records as stored: an Orphan carries one on
                    stream, partition, held_only=True, from_seq=start, max_messages=PAGE_MESSAGES
                )

            page = await self.client.on_leader(stream, partition, read)
            for record in page.messages:
                scanned += 1
                if self._due(stream, partition, record) and self._offer(stream, partition, record):
                    handed += 1
            if not page.next_seq or not page.messages:
                break
            from_seq = page.next_seq
        return handed

    def _due(self, stream: str, partition: int, record: types_pb2.Message) -> bool:
        """Whether a held record is older than its recovery period and was not offered within one."""
        headers = {header.key: header.value for header in record.headers}
        try:
            period_ms = int(headers.get(mapping.HEADER_RECOVERY_PERIOD_MS, self.settings.recovery_period_ms))
        except ValueError:
            period_ms = self.settings.recovery_period_ms
        now_ms = self.now_ms()
        offered_ms = self._offered.get((stream, partition, record.seq))
        if offered_ms is not None and now_ms - offered_ms < period_ms:
            return False
        return now_ms - record.ts_ms >= period_ms

    def _offer(self, stream: str, partition: int, record: types_pb2.Message) -> bool:
        """Answer one waiting poll of the record's producer group (any, when it names none) on the
        record's topic; False when none waits."""
        group = next((h.value for h in record.headers if h.key == mapping.HEADER_PRODUCER_GROUP), "")
        for poll in self._polls:
            if poll.answer.done() or stream not in poll.streams:
                continue
            if group and poll.producer_group and poll.producer_group != group:
                continue
            transaction_id = self.signer.transaction_id(Transaction(stream, partition, record.seq, record.msg_id))
            poll.answer.set_result(Orphan(stream, partition, record, transaction_id))
            self._offered.set((stream, partition, record.seq), self.now_ms())
            metrics.ROCKETMQ_ORPHAN_CHECKS.inc()
            return True
        return False
