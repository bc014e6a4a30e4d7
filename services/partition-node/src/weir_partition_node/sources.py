"""Cross-stream sources (StreamConfig.sources): the tails a sourcing stream's primary runs.

For each source stream and each of its partitions, a tail reads the source partition over the
client API (ReadMessages, long-polling, from whichever node leads it) and appends what passes the
source's filter, with its subject transformed and the provenance headers added, to the sourcing
stream's one partition.

How far a tail has read (its position: the last source seq settled, filtered-over messages
included) is partition state beside the log, never a record in it: no subject, seq, count, byte,
read, consumer or change shows it. Every append stores it in the same commit as what it appended
(`Partition.append`'s positions; storage/source_positions.py), so it is exactly as durable as those
records. Each sourced message's msg_id names its origin (`source_msg_id`), and every copy, the
secondaries included, stores the position that msg_id settles in the commit that stores the
message (commit_plan.source_position_rows): a newly promoted primary resumes after the last
sourced message it holds, whatever retention removed since, so nothing is skipped and nothing
doubled (the duplicate window catches a repeat too). Progress over filtered-out messages after the
last sourced one is the primary's own: a new primary reads those again and filters them out again.
A stream of an earlier version kept the position as a record at `$weir.source.<source>.<partition>`:
a tail that finds no position beside the log reads that record once, and removes it after its first
commit.

Errors a tail meets are reported in its status (GetStreamInfo's sources_status) and, when the
source names one, as a JSON record on its dead-letter stream. Source: the streams seed's
StreamSourceConfigPb / SourceStatusPb; JetStream's stream sources.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from weir import tls as sdk_tls
from weir.client import NodeClient
from weir.errors import InternalError, NoSuchStreamError, WeirError
from weir.subjects import RESERVED_SUBJECT_PREFIX, SubjectFilter
from weir.v1 import streams_pb2, types_pb2
from weir_server.sources import (
    HEADER_SOURCE_PARTITION,
    HEADER_SOURCE_SEQ,
    HEADER_SOURCE_STREAM,
    SubjectRewrite,
    decode_position,
    initial_position,
    position_subject,
    provenance,
    source_msg_id,
)

from weir_partition_node.commit_items import PreparedEntry
from weir_partition_node.hosted import Stream
from weir_partition_node.membership import Membership
from weir_partition_node.node import Node

logger = logging.getLogger(__name__)
PROVENANCE_HEADERS = frozenset({HEADER_SOURCE_STREAM, HEADER_SOURCE_PARTITION, HEADER_SOURCE_SEQ})

READ_MESSAGES = 500  # source messages one tail step reads (and appends in one commit) at most
READ_WAIT_MS = 2000  # a tail's long poll
RECONCILE_INTERVAL_S = 0.5  # how often the supervisor looks at which sourcing streams this node leads
BACKOFF_S = (0.2, 0.5, 1.0, 2.0, 5.0)  # waits after consecutive failures of one tail
CALL_TIMEOUT_S = 10.0
RESUME_SCAN_RECORDS = 100_000  # records a tail without a stored position looks through for its provenance
RESUME_SCAN_CHUNK = 2000


class SourceLocator(Protocol):
    """Where a source stream's partitions are served."""

    async def partitions(self, stream: str) -> int:
        """The stream's partition count. Errors: NoSuchStreamError."""

    async def address(self, stream: str, partition: int) -> str:
        """The client address of the node leading `partition` ("" when unknown)."""


@dataclass(slots=True)
class TailStatus:
    """One source partition's tail, as GetStreamInfo reports it."""

    source_stream: str
    source_partition: int
    last_sourced_seq: int = 0
    pulled_total: int = 0
    last_error: str = ""
    last_error_ts_ms: int = 0
    halted: bool = False

    def to_proto(self) -> types_pb2.SourceStatus:
        return types_pb2.SourceStatus(
            source_stream=self.source_stream,
            source_partition=self.source_partition,
            last_sourced_seq=self.last_sourced_seq,
            pulled_total=self.pulled_total,
            last_error=self.last_error,
            last_error_ts_ms=self.last_error_ts_ms,
            halted=self.halted,
        )


class SourceHalted(Exception):
    """on_drop HALT fired: the tail stops until its stream is recreated."""


class NotLeading(Exception):
    """This node no longer leads the sourcing stream (or it was deleted): the tail ends."""


@dataclass(slots=True)
class Batch:
    """What one tail step appends: the sourced entries and, in the same commit, the position."""

    entries: list[PreparedEntry]
    size: int
    position: int  # the last source seq this batch settles (filtered-over ones included)
    errors: list[tuple[int, str]] = field(default_factory=list)  # (source seq, why it was not appended)


MAX_REPORTED_PER_STEP = 10  # errors of one step sent to the dead-letter stream one by one (then one summary)


class PartitionTail:
    """One source partition's tail on the sourcing stream's primary."""

    def __init__(
        self,
        node: Node,
        sourcing: str,
        source: types_pb2.StreamSource,
        *,
        locator: SourceLocator,
        connect: Callable[[str], NodeClient],
        status: TailStatus,
    ) -> None:
        self.node = node
        self.sourcing = sourcing
        self.source = source
        self.source_partition = status.source_partition
        self.locator = locator
        self.connect = connect
        self.status = status
        self.rewrite = SubjectRewrite.of(source.subject_transform) if source.HasField("subject_transform") else None
        self.accepts = SubjectFilter([source.filter_subject]).accepts if source.filter_subject else None
        self.key = (source.source_stream, self.source_partition)
        self.position: int | None = None  # the last settled source seq, once resumed
        # A failure or a lasting condition was reported and no step has appended since (run).
        self.unhealthy = False
        self.legacy_seq = 0  # an earlier version's position record, removed after the next commit (0: none)

    def _stream(self) -> Stream:
        stream = self.node.hosted_stream(self.sourcing)
        if stream is None or stream.deleted or 0 not in stream.led_set:
            raise NotLeading
        return stream

    def stored_position(self) -> int | None:
        """The position stored beside the sourcing stream's log, else the position record a stream
        of an earlier version kept in it (noted in `legacy_seq`, to remove); None when neither."""
        log = self._stream().partitions[0].log
        record = log.latest_at_subject(position_subject(*self.key))
        legacy = types_pb2.Message.FromString(record) if record is not None else None
        self.legacy_seq = legacy.seq if legacy is not None else 0
        stored = log.source_positions().get(self.key)
        if stored is not None:
            return stored.last_sourced_seq
        return decode_position(legacy.payload) if legacy is not None else None

    async def run(self) -> None:
        """Step until this node stops leading, the stream goes, or on_drop HALT fires; failures are
        reported and retried after a growing wait (at most 5 s). Once a step appends again after a
        failure or a wait it reported, the status's last error is cleared: it is empty when the
        tail is healthy, as the streams seed's SourceStatus says."""
        failures = 0
        while True:
            try:
                address = await self.locator.address(self.source.source_stream, self.source_partition)
                if not address:
                    raise NoSuchStreamError(
                        f"source {self.source.source_stream}/{self.source_partition}: no node leads it now"
                    )
                if await self.step(self.connect(address)) and self.unhealthy:
                    logger.info("stream %s: source %s is healthy again", self.sourcing, self.source.source_stream)
                    self.unhealthy = False
                    self.status.last_error, self.status.last_error_ts_ms = "", 0
                failures = 0
            except (SourceHalted, NotLeading):
                return
            except (WeirError, OSError) as error:
                message = error.message if isinstance(error, WeirError) else f"{type(error).__name__}: {error}"
                self.report(message)
                self.unhealthy = True
                await asyncio.sleep(BACKOFF_S[min(failures, len(BACKOFF_S) - 1)])
                failures += 1

    async def logged_position(self) -> int | None:
        """The newest provenance of this source partition among the sourcing stream's last
        RESUME_SCAN_RECORDS records (None when none carries it): where a tail resumes when no
        position is stored (a stream of an earlier version whose position record retention took)."""
        partition = self._stream().partitions[0]
        seq = max(partition.first_seq, partition.last_seq - RESUME_SCAN_RECORDS + 1)
        found: int | None = None
        while seq <= partition.last_seq:
            rows = partition.log.read(seq, RESUME_SCAN_CHUNK, 16 * 1024 * 1024)
            if not rows:
                break
            for _, record in rows:
                message = types_pb2.Message.FromString(record)
                where = provenance([(header.key, header.value) for header in message.headers])
                if where is not None and where[:2] == (self.source.source_stream, self.source_partition):
                    found = max(found or 0, where[2])
            seq = rows[-1][0] + 1
            await asyncio.sleep(0)  # a long scan does not hold the event loop
        return found

    async def step(self, client: NodeClient) -> bool:
        """Resume if needed, read one batch, append it with the new position in one commit; whether
        it appended (False: the long poll ran out with nothing new)."""
        if self.position is None:
            stored = self.stored_position()
            if stored is None:
                stored = await self.logged_position()
            if stored is None:
                probe = await client.read_messages(self.source.source_stream, self.source_partition, 0, max_messages=1)
                stored = initial_position(self.source, probe.first_seq, probe.last_seq)
            self.position = self.status.last_sourced_seq = stored
        start = self.position + 1
        read = await client.read_messages(
            self.source.source_stream,
            self.source_partition,
            start,
            max_messages=READ_MESSAGES,
            max_wait_ms=READ_WAIT_MS,
        )
        if read.first_seq > start:
            start = await self._dropped(start, read.first_seq)
        records = [message for message in read.messages if message.seq >= start]
        position = max(read.next_seq - 1, start - 1)
        if not records and position == self.position:  # nothing new: the long poll ran out
            if read.last_seq < position:
                self.report(
                    f"source {self.source.source_stream}/{self.source_partition}: its last seq {read.last_seq} is "
                    f"below the position {position} (was it deleted and created again?); waiting for seq {position + 1}"
                )
                self.unhealthy = True
            return False
        await self._append(self.plan(records, position))
        return True

    async def _dropped(self, start: int, first_seq: int) -> int:
        """The source's retention removed seqs start..first_seq-1 before they were read: skip them
        (SKIP_TO_FIRST_AVAILABLE; returns where reading goes on) or halt (raises SourceHalted)."""
        what = (
            f"source {self.source.source_stream}/{self.source_partition}: messages {start}..{first_seq - 1} "
            "were removed by its retention before they were read"
        )
        if self.source.on_drop == types_pb2.SOURCE_DROP_POLICY_SKIP_TO_FIRST_AVAILABLE:
            self.report(f"{what}; skipped to {first_seq} (on_drop SKIP_TO_FIRST_AVAILABLE)")
            await self.dead_letter(start, f"{what}; skipped")
            return first_seq
        self.status.halted = True
        self.report(f"{what}; halted (on_drop HALT)")
        await self.dead_letter(start, f"{what}; halted")
        raise SourceHalted

    def plan(self, records: list[types_pb2.Message], position: int) -> Batch:
        """The entries for `records` (those passing the filter, transformed, validated as a publish
        to the sourcing stream is), settling everything through `position` (none may pass)."""
        stream = self._stream()
        batch = Batch([], 0, position)
        origin = f"{self.source.source_stream}"
        for message in records:
            if message.subject.startswith(RESERVED_SUBJECT_PREFIX):
                continue  # the source's own records (schedules, an earlier version's positions)
            if self.accepts is not None and not self.accepts(message.subject):
                continue
            subject = self.rewrite.apply(message.subject) if self.rewrite is not None else message.subject
            if subject is None:
                batch.errors.append(
                    (message.seq, f"subject {message.subject!r} does not match the transform's source_pattern")
                )
                continue
            headers = [header for header in message.headers if header.key not in PROVENANCE_HEADERS]
            headers += [
                types_pb2.Header(key=HEADER_SOURCE_STREAM, value=origin),
                types_pb2.Header(key=HEADER_SOURCE_PARTITION, value=str(self.source_partition)),
                types_pb2.Header(key=HEADER_SOURCE_SEQ, value=str(message.seq)),
            ]
            fields = streams_pb2.PublishRequest(
                stream=self.sourcing,
                subject=subject,
                payload=message.payload,
                headers=headers,
                msg_id=source_msg_id(origin, self.source_partition, message.seq),
            )
            if message.HasField("key"):
                fields.key = message.key
            try:
                _, entry, size = self.node.publisher.prepare_entry(stream, fields)
            except WeirError as error:
                batch.errors.append((message.seq, error.message))
                continue
            batch.entries.append(entry)
            batch.size += size
        return batch

    async def _append(self, batch: Batch) -> None:
        """Append `batch` with its position in one commit; then remove an earlier version's
        position record, if the stream still holds one (the position is beside the log now)."""
        partition = self._stream().partitions[0]
        outcomes = await partition.append(batch.entries, batch.size, [(*self.key, batch.position)])
        failed = [outcome for outcome in outcomes if outcome.result_code != "ok"]
        if failed:  # nothing a tail sends can be refused per entry; say so if it ever is
            raise InternalError(f"append refused: {failed[0].result_code}: {failed[0].message}")
        self.position = self.status.last_sourced_seq = batch.position
        self.status.pulled_total += sum(1 for outcome in outcomes if not outcome.duplicate)
        if self.legacy_seq:
            await partition.purge(None, [self.legacy_seq])
            self.legacy_seq = 0
        if not batch.errors:
            return
        for source_seq, error in batch.errors[:MAX_REPORTED_PER_STEP]:
            self.report(f"source {self.source.source_stream}/{self.source_partition} seq {source_seq}: {error}")
            await self.dead_letter(source_seq, error)
        if len(batch.errors) > MAX_REPORTED_PER_STEP:
            more = len(batch.errors) - MAX_REPORTED_PER_STEP
            await self.dead_letter(batch.errors[-1][0], f"{more} more message(s) of this batch were not appended")

    def report(self, message: str) -> None:
        """Set the status's last error (logged when it differs from the one before: a condition
        that lasts, such as a missing source, is logged once, its time kept current)."""
        if message != self.status.last_error:
            logger.warning("stream %s: %s", self.sourcing, message)
        self.status.last_error = message
        self.status.last_error_ts_ms = self.node.clock.now_ms()

    async def dead_letter(self, source_seq: int, error: str) -> None:
        """Publish a JSON record of the error to the source's dlq_stream (none: nothing); a failure
        to is logged, not retried."""
        dlq = self.source.dlq_stream
        if not dlq:
            return
        record = {
            "sourcing_stream": self.sourcing,
            "source_stream": self.source.source_stream,
            "source_partition": self.source_partition,
            "source_seq": source_seq,
            "error": error,
            "ts_ms": self.node.clock.now_ms(),
        }
        try:
            address = await self.locator.address(dlq, 0)
            if not address:
                raise NoSuchStreamError(f"no node leads {dlq}/0 now")
            await self.connect(address).publish(
                dlq, f"weir.source-errors.{self.sourcing}", json.dumps(record).encode(), partition=0
            )
        except (WeirError, OSError) as failure:
            logger.warning("stream %s: dead-letter record to %s not stored: %s", self.sourcing, dlq, failure)


class SourceTails:
    """The node's supervisor of source tails: every RECONCILE_INTERVAL_S it starts the tails of
    the sourcing streams whose partition this node leads and stops those it no longer leads."""

    def __init__(self, node: Node, locator: SourceLocator, security: sdk_tls.Security = sdk_tls.PROCESS_DEFAULT):
        self.node = node
        self.locator = locator
        self.security = security
        self._clients: dict[str, NodeClient] = {}
        # (sourcing stream, its created_at_ms, source stream) -> the task running that source's tails
        self._running: dict[tuple[str, int, str], asyncio.Task[None]] = {}
        self._statuses: dict[tuple[str, int, str], list[TailStatus]] = {}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._reconcile_forever(), name="source-tails")

    def connect(self, address: str) -> NodeClient:
        client = self._clients.get(address)
        if client is None:
            client = self._clients[address] = NodeClient(address, timeout_s=CALL_TIMEOUT_S, tls=self.security)
        return client

    def status(self, sourcing: str) -> list[types_pb2.SourceStatus]:
        """The tails of `sourcing` running here, in config order then partition order."""
        return [
            status.to_proto()
            for (name, _, _), statuses in self._statuses.items()
            if name == sourcing
            for status in statuses
        ]

    async def _reconcile_forever(self) -> None:
        while True:
            try:
                self.reconcile()
            except Exception:  # never let one bad stream stop every tail
                logger.exception("source tails: reconcile failed")
            await asyncio.sleep(RECONCILE_INTERVAL_S)

    def reconcile(self) -> None:
        wanted: dict[tuple[str, int, str], types_pb2.StreamSource] = {}
        lease_valid = self.node.lease_valid
        if lease_valid is None or lease_valid():
            for stream in self.node.sourcing_streams():
                for source in stream.config.sources:
                    wanted[(stream.name, stream.created_at_ms, source.source_stream)] = source
        for key in [key for key in self._running if key not in wanted]:
            self._running.pop(key).cancel()
            self._statuses.pop(key, None)
        for key, source in wanted.items():
            if key not in self._running or (self._running[key].done() and not self._halted(key)):
                self._running[key] = asyncio.get_running_loop().create_task(
                    self._run_source(key, source), name=f"source-tail:{key[0]}<-{key[2]}"
                )

    def _halted(self, key: tuple[str, int, str]) -> bool:
        return any(status.halted for status in self._statuses.get(key, []))

    async def _run_source(self, key: tuple[str, int, str], source: types_pb2.StreamSource) -> None:
        """Find the source's partition count (waiting for the stream to exist), then tail each."""
        statuses = self._statuses[key] = [TailStatus(source.source_stream, 0)]
        failures = 0
        while True:
            try:
                count = await self.locator.partitions(source.source_stream)
                break
            except (WeirError, OSError) as error:
                statuses[0].last_error = error.message if isinstance(error, WeirError) else str(error)
                statuses[0].last_error_ts_ms = self.node.clock.now_ms()
                await asyncio.sleep(BACKOFF_S[min(failures, len(BACKOFF_S) - 1)])
                failures += 1
        statuses[0].last_error, statuses[0].last_error_ts_ms = "", 0
        statuses.extend(TailStatus(source.source_stream, index) for index in range(1, count))
        tails = [
            PartitionTail(self.node, key[0], source, locator=self.locator, connect=self.connect, status=status)
            for status in statuses
        ]
        try:
            await asyncio.gather(*(tail.run() for tail in tails))
        except Exception:  # a defect: logged; the next reconcile starts the tails again
            logger.exception("stream %s: the tails of source %s failed", key[0], source.source_stream)

    async def close(self) -> None:
        tasks = [task for task in (self._task, *self._running.values()) if task is not None]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._running.clear()
        for client in self._clients.values():
            await client.close()
        self._clients.clear()


class StandaloneLocator:
    """A standalone node: every stream is its own, served on its own client port."""

    def __init__(self, node: Node, client_address: str) -> None:
        self.node = node
        self.client_address = client_address

    async def partitions(self, stream: str) -> int:
        hosted = self.node.hosted_stream(stream)
        if hosted is None:
            raise NoSuchStreamError(f"source stream {stream!r} does not exist", stream=stream)
        return hosted.config.partitions

    async def address(self, stream: str, partition: int) -> str:
        return self.client_address


class ClusterLocator:
    """A clustered node: the router's stream records in Redis say which node leads a partition."""

    def __init__(self, membership: Membership) -> None:
        self.membership = membership

    async def _record(self, stream: str) -> types_pb2.StreamRecord:
        record = await self.membership.placement_of(stream)
        if record is None:
            raise NoSuchStreamError(f"source stream {stream!r} does not exist", stream=stream)
        return record

    async def partitions(self, stream: str) -> int:
        return (await self._record(stream)).config.partitions

    async def address(self, stream: str, partition: int) -> str:
        record = await self._record(stream)
        if partition >= len(record.placement.partitions):
            return ""
        return await self.membership.leader_address(record.placement.partitions[partition].primary_node_id)
