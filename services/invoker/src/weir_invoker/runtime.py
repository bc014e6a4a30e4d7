"""The invoker's core (transport-neutral): invocations from admission to their end.

An invocation is admitted once (its record created in `invoker-invocations`; admitting the same id
again returns the stored one), then driven by one task: attempts (attempt.py) until one ends with
End, suspending between attempts until an awaited entry is completed, and backing off after a failed
attempt (exponential, or the SDK's next_retry_delay). Invocations of an exclusive handler of one
object or workflow key run one at a time, in admission order; a suspended one keeps its key. When
an invocation ends its record keeps the output (or failure) for completed_retention_ms and its
journal is deleted; a caller waiting on it is completed, and a subscription's invocation is
dead-lettered (terminal failure) or replied to (output) as its subscription says.

Every unfinished invocation is in memory (bounded by max_unfinished_invocations: admission waits) and
in the store; a restarted invoker finds them in the store and drives them on from their journals.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from weir.cluster import Client
from weir.errors import (
    FailedPreconditionError,
    NoSuchBucketError,
    NoSuchHandlerError,
    NoSuchInvocationError,
    NoSuchStreamError,
    WeirError,
)
from weir.v1 import invoker_pb2

from weir_invoker import cancellation, ids, metrics
from weir_invoker.active import (
    Active,
    admission_chains,
    completed_indexes,
    earliest_wake_up_ms,
    final_result,
    input_frame,
)
from weir_invoker.attempt import Attempt, Outcome, StartPlan, now_ms, start_message
from weir_invoker.cancelling import Cancelling
from weir_invoker.completions import Completions, completion_of
from weir_invoker.connections import ConnectionPool
from weir_invoker.entries import EntryActions
from weir_invoker.http2 import DeploymentUnreachable
from weir_invoker.protocol import MessageType, ProtocolViolation
from weir_invoker.registry import Registry, Target
from weir_invoker.restate.pb import protocol_pb2 as pb
from weir_invoker.store import (
    PROMISE_STORE,
    STATE_STORE,
    Fence,
    InvocationStore,
    Journal,
    JournalConflict,
    JournalStore,
    RegistryStore,
    StateStore,
)

logger = logging.getLogger(__name__)
DRIVER_RETRY_MAX_S = 30.0
MAX_STREAMS_PER_CONNECTION = 900  # then a new connection (hypercorn ends one after 1,000 requests)
DELETE_FLUSH_MS = 100  # finished journals are deleted in batches this often
DELETE_FLUSH_SEQS = 10_000  # or at once when this many seqs wait
Status = invoker_pb2.InvocationStatus
TERMINAL = (Status.INVOCATION_STATUS_COMPLETED, Status.INVOCATION_STATUS_FAILED, Status.INVOCATION_STATUS_CANCELLED)


@dataclass(frozen=True)
class RuntimeSettings:
    replicas: int = 1
    journal_partitions: int = 4
    max_concurrent_attempts: int = 64
    max_unfinished_invocations: int = 10_000
    inactivity_timeout_ms: int = 60_000
    retry_initial_delay_ms: int = 100
    retry_factor: float = 2.0
    retry_max_delay_ms: int = 30_000
    max_attempts: int = 0  # 0 = retry until it succeeds or fails terminally (Restate's default)
    completed_retention_ms: int = 24 * 3600 * 1000


class Invoker:
    def __init__(self, client: Client, settings: RuntimeSettings) -> None:
        self.client = client
        self.settings = settings
        self.fence = Fence()  # the server points it at the lease: only the active invoker writes
        self.journals = JournalStore(client, settings.replicas, settings.journal_partitions, self.fence)
        self.invocations = InvocationStore(client, settings.replicas, self.fence)
        self.registry = Registry(RegistryStore(client, settings.replicas))
        self.active: dict[str, Active] = {}
        self.completions = Completions(self.active, self.journals)
        self.entries = EntryActions(
            journals=self.journals,
            completions=self.completions,
            registry=self.registry,
            admit=self.admit,
            state=StateStore(client, STATE_STORE, settings.replicas, self.fence),
            promises=StateStore(client, PROMISE_STORE, settings.replicas, self.fence),
        )
        self.on_finished: list[Callable[[invoker_pb2.Invocation], object]] = []  # ingress: dead letters, replies
        self._keys: dict[tuple[str, str], collections.deque[Active]] = {}
        self.connections = ConnectionPool(MAX_STREAMS_PER_CONNECTION)
        self._attempt_slots = asyncio.Semaphore(settings.max_concurrent_attempts)
        self._room = asyncio.Condition()
        self._tasks: set[asyncio.Task[None]] = set()
        self._order = 0
        self._stores_ready = False
        self.cancels = Cancelling(
            active=self.active,
            keys=self._keys,
            invocations=self.invocations,
            journals=self.journals,
            completions=self.completions,
            finish=self.finish,
        )

    # -- lifecycle -----------------------------------------------------------------------------------

    async def start(self) -> None:
        """Load the registry and resume every unfinished invocation (called when this invoker takes
        the lease, which exists once a deployment was registered: the invoker's streams are created
        then (`ensure_stores`), so a cluster that never used the invoker has none of them)."""
        with contextlib.suppress(NoSuchBucketError, NoSuchStreamError):
            await self.registry.load()
        await self.ensure_stores()
        unfinished = [record async for record in self.invocations.scan() if record.status not in TERMINAL]
        orphans = await self.journals.collect_orphans({record.id for record in unfinished})
        for record in sorted(unfinished, key=lambda item: item.ingest_order):
            self._schedule(Active(record))
        self._spawn(self._delete_finished_journals(), "journal-deletes")
        logger.info(
            "invoker: %d unfinished invocations resumed, %d orphaned journals deleted", len(unfinished), orphans
        )

    async def _delete_finished_journals(self) -> None:
        """Every DELETE_FLUSH_MS, delete the journals of the invocations that finished since."""
        while True:
            await asyncio.sleep(DELETE_FLUSH_MS / 1000)
            await self._flush_deletes()

    async def _flush_deletes(self) -> None:
        try:
            await self.journals.flush()
        except WeirError as error:  # left for the next take-over's orphan collection
            logger.warning("invoker: deleting finished journals failed: %s", error)

    async def ensure_stores(self) -> None:
        """Create the journal stream, the buckets and the hash stores (idempotent)."""
        if self._stores_ready:
            return
        for store in (self.journals, self.invocations, self.registry.store, self.entries.state, self.entries.promises):
            await store.ensure()
        self._stores_ready = True

    async def stop(self) -> None:
        if self._stores_ready:
            await self._flush_deletes()
        await self.completions.stop()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(BaseException):
                await task
        await self.connections.close()

    def _spawn(self, coroutine: object, name: str) -> asyncio.Task[None]:
        task: asyncio.Task[None] = asyncio.get_running_loop().create_task(coroutine, name=name)  # type: ignore[arg-type]
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    # -- admission and scheduling --------------------------------------------------------------------

    async def admit(self, record: invoker_pb2.Invocation) -> tuple[invoker_pb2.Invocation, bool]:
        """Store and start `record` unless its id is known: (the stored record, created). Waits while
        max_unfinished_invocations are unfinished."""
        [result] = await self.admit_many([record])
        return result

    async def admit_many(self, records: list[invoker_pb2.Invocation]) -> list[tuple[invoker_pb2.Invocation, bool]]:
        """Admit `records` together and start them in the given order, which is the order their
        invocations of one key run in. Records of different keys are stored concurrently, those of
        one key one after another (`admission_chains`): what is stored of a key is always a prefix."""
        for record in records:
            self._order = max(self._order + 1, time.time_ns() // 1000)
            record.ingest_order = self._order
        results: list[tuple[invoker_pb2.Invocation, bool]] = [(record, False) for record in records]

        async def store_chain(indexes: list[int]) -> None:
            for index in indexes:
                results[index] = await self._store(records[index])

        await asyncio.gather(*(store_chain(indexes) for indexes in admission_chains(records)))
        for stored, created in results:
            await self._start(stored, created)
        return results

    async def _store(self, record: invoker_pb2.Invocation) -> tuple[invoker_pb2.Invocation, bool]:
        if record.id in self.active:
            return self.active[record.id].record, False
        async with self._room:
            await self._room.wait_for(lambda: len(self.active) < self.settings.max_unfinished_invocations)
        moment = now_ms()
        record.status = Status.INVOCATION_STATUS_PENDING
        record.created_at_ms = record.created_at_ms or moment
        record.modified_at_ms = moment
        return await self.invocations.create(record)

    async def _start(self, stored: invoker_pb2.Invocation, created: bool) -> None:
        if stored.status in TERMINAL:
            if stored.parent_id and stored.parent_awaits:  # a call whose completion may not have reached its parent
                await self._complete_parent(stored)
            return
        if stored.id not in self.active:
            # a record created just now has no journal yet: its first attempt need not read one
            self._schedule(Active(stored, fresh=created))

    def _schedule(self, active: Active) -> None:
        record = active.record
        self.active[record.id] = active
        metrics.UNFINISHED.set(len(self.active))
        try:
            exclusive = self.registry.target(record.service, record.handler).exclusive
        except NoSuchHandlerError:
            exclusive = bool(record.key)  # decided again when a deployment serves it; a key serialises
        if not exclusive:
            active.task = self._spawn(self._drive(active), f"invocation-{record.id}")
            return
        key = (record.service, record.key)
        queue = self._keys.get(key)
        if queue is not None:
            queue.append(active)
            return
        self._keys[key] = collections.deque([active])
        self._spawn(self._drive_key(key), f"key-{record.service}/{record.key}")

    async def _drive_key(self, key: tuple[str, str]) -> None:
        queue = self._keys[key]
        try:
            while queue:
                active = queue[0]
                await self._drive(active)
                queue.popleft()
        finally:
            del self._keys[key]

    # -- driving -------------------------------------------------------------------------------------

    async def _drive(self, active: Active) -> None:
        """Drive `active` to its end. An unexpected failure (a store unreachable for longer than
        the client's retries, a bug) does not abandon it: the driver waits (doubling from 1 s to
        DRIVER_RETRY_MAX_S) and goes on from its record and journal, as after a restart."""
        failures = 0
        while True:
            try:
                await self._drive_once(active)
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                failures += 1
                delay_s = min(DRIVER_RETRY_MAX_S, 2.0 ** (failures - 1))
                logger.exception("invocation %s: driving it failed; going on in %g s", active.record.id, delay_s)
                await asyncio.sleep(delay_s)

    async def _drive_once(self, active: Active) -> None:
        record = active.record
        if record.status == Status.INVOCATION_STATUS_SUSPENDED:
            await self._wait_for_completion(active, list(record.waiting_on_entries), resumed=True)
        elif record.status == Status.INVOCATION_STATUS_BACKING_OFF:
            await self._sleep_until(active, record.next_retry_at_ms)
        await self._sleep_until(active, record.not_before_ms)
        while not active.cancelled:
            outcome = await self._attempt(active)
            if outcome.kind == "ended":
                await self._ended(active)
                return
            if outcome.kind == "suspended":
                await self._suspend(active, outcome.waiting_on)
            elif outcome.kind == "failed" and not active.cancelled and await self._failed(active, outcome):
                return
        await self.finish(active, Status.INVOCATION_STATUS_CANCELLED, cancellation.cancelled_failure())

    async def _sleep_until(self, active: Active, deadline_ms: int) -> None:
        while not active.cancelled and (wait := deadline_ms - now_ms()) > 0:
            active.wakeup.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(active.wakeup.wait(), wait / 1000)

    async def _attempt(self, active: Active) -> Outcome:
        record = active.record
        try:
            target = self.registry.target(record.service, record.handler)
        except NoSuchHandlerError as error:
            return Outcome("failed", error=error.message)
        async with self._attempt_slots:
            attempt: Attempt | None = None
            outcome = Outcome("aborted")
            try:
                async with active.lock:
                    attempt, plan = await self._prepare(active, target)
                    if plan is None:
                        return Outcome("ended")
                    if active.cancelled:  # cancelled before its first attempt began: it never runs
                        return Outcome("aborted")
                    active.attempt = attempt
                    record.deployment_id = target.deployment.id
                    record.attempts += 1
                    record.status = Status.INVOCATION_STATUS_RUNNING
                    metrics.ATTEMPTS.inc()
                    await attempt.start(plan)
                with metrics.RUNNING.track_inprogress():
                    outcome = await attempt.run(len(plan.entries))
            except JournalConflict as error:
                logger.warning("invocation %s: %s; replaying the stored journal", record.id, error)
                outcome = Outcome("aborted", error=str(error))
            except (DeploymentUnreachable, ProtocolViolation, WeirError) as error:
                outcome = Outcome("failed", error=str(error))
            finally:
                active.attempt = None
                if attempt is not None:
                    await attempt.close(abort=outcome.kind not in ("ended", "suspended"))
        return outcome

    async def _prepare(self, active: Active, target: Target) -> tuple[Attempt, StartPlan | None]:
        """Load the journal (its Input entry is the record's input: the record keeps it until the
        invocation ends, so it is not stored twice), re-arm what it waits on, and plan the replay;
        plan None when the journal already holds the output (nothing to invoke)."""
        record = active.record
        if active.fresh:  # admitted just now: nothing is stored but its record
            partition = await self.journals.partition_of(record.id)
            journal = Journal(entries=[input_frame(record)], partition=partition)
            active.fresh = False
        else:
            journal = await self.journals.load(record.id, input_frame(record))
        active.journal = journal
        active.completed = completed_indexes(journal)
        if not active.state_synced and target.keyed:
            await self.entries.reapply_state(active)
            active.state_synced = True
        await self.entries.rearm(active)
        deployment = target.deployment
        http1 = deployment.http_version == "HTTP/1.1"
        connection = await self.connections.get(deployment.id, deployment.url, http1=http1)
        attempt = Attempt(
            connection,
            service=record.service,
            handler=record.handler,
            bidi=target.bidi,
            inactivity_timeout_s=self.settings.inactivity_timeout_ms / 1000,
            on_entry=lambda index, frame: self.entries.handle(active, index, frame),
        )
        if any(frame.type == MessageType.OUTPUT for frame in journal.entries):
            return attempt, None
        state = await self.entries.state.get_all(record.service, record.key) if target.keyed else None
        since = now_ms() - active.last_stored_ms if active.last_stored_ms else 0
        start = start_message(
            raw_id=ids.raw_of(record.id),
            invocation_id=record.id,
            key=record.key,
            known_entries=len(journal),
            state=state,
            retry_count=active.failures_in_row,
            since_last_stored_ms=since,
        )
        return attempt, StartPlan(start, journal.entries, journal.completions)

    async def _suspend(self, active: Active, waiting_on: list[int]) -> None:
        record = active.record
        active.failures_in_row = 0
        if any(index in active.completed for index in waiting_on):
            return  # a completion arrived while the SDK was suspending: resume at once
        record.status = Status.INVOCATION_STATUS_SUSPENDED
        del record.waiting_on_entries[:]
        record.waiting_on_entries.extend(waiting_on)
        record.wake_up_at_ms = earliest_wake_up_ms(active.journal, waiting_on)
        record.modified_at_ms = now_ms()
        await self.invocations.put(record)
        await self._wait_for_completion(active, waiting_on, resumed=False)

    async def _wait_for_completion(self, active: Active, waiting_on: list[int], resumed: bool) -> None:
        if resumed:  # a restarted invoker: load the journal and arm its timers, calls and promises again
            async with active.lock:
                active.journal = await self.journals.load(active.record.id, input_frame(active.record))
                active.completed = completed_indexes(active.journal)
                await self.entries.rearm(active)
        with metrics.SUSPENDED.track_inprogress():
            while not active.cancelled and not any(index in active.completed for index in waiting_on):
                active.wakeup.clear()
                await active.wakeup.wait()

    async def _failed(self, active: Active, outcome: Outcome) -> bool:
        """Back off after a failed attempt; True when the invocation ended (max_attempts)."""
        record = active.record
        active.failures_in_row = 1 if outcome.stored_entries else active.failures_in_row + 1
        record.last_failure = outcome.error[:4096]
        metrics.RETRIES.inc()
        settings = self.settings
        if settings.max_attempts and record.attempts >= settings.max_attempts:
            message = f"gave up after {record.attempts} attempts: {outcome.error}"
            await self.finish(active, Status.INVOCATION_STATUS_FAILED, pb.Failure(code=500, message=message[:4096]))
            return True
        delay = ids.retry_delay_ms(
            active.failures_in_row,
            settings.retry_initial_delay_ms,
            settings.retry_factor,
            settings.retry_max_delay_ms,
            outcome.retry_delay_ms,
        )
        logger.info(
            "invocation %s: attempt %d failed (%s); next in %d ms", record.id, record.attempts, outcome.error, delay
        )
        record.status = Status.INVOCATION_STATUS_BACKING_OFF
        record.next_retry_at_ms = now_ms() + delay
        record.modified_at_ms = now_ms()
        await self.invocations.put(record)
        await self._sleep_until(active, record.next_retry_at_ms)
        return False

    async def _ended(self, active: Active) -> None:
        assert active.journal is not None
        status, result = final_result(active.journal)
        await self.finish(active, cancellation.final_status(status, result), result)

    async def finish(self, active: Active, status: int, result: bytes | pb.Failure) -> None:
        """End an invocation: record its result (kept completed_retention_ms), notify its caller and
        its subscription, delete its journal, free its key."""
        record = active.record
        record.status = status  # type: ignore[assignment]
        if isinstance(result, bytes):
            record.output = result
        else:
            record.failure.CopyFrom(invoker_pb2.InvocationFailure(code=result.code, message=result.message))
        record.journal_length = len(active.journal) if active.journal else 0
        record.modified_at_ms = now_ms()
        del record.waiting_on_entries[:]
        for hook in self.on_finished:
            await hook(record)  # type: ignore[misc]
        record.ClearField("input")
        if record.parent_id and record.parent_awaits:
            await self._complete_parent(record)
        await self.completions.run_finished(record)  # callers attached to a workflow run
        await self.invocations.put(record, ttl_ms=self.settings.completed_retention_ms)
        if active.journal is not None:
            self.journals.delete_later(active.journal)
            if self.journals.doomed >= DELETE_FLUSH_SEQS:
                await self._flush_deletes()
        metrics.FINISHED.labels(
            invoker_pb2.InvocationStatus.Name(status).removeprefix("INVOCATION_STATUS_").lower()
        ).inc()
        metrics.JOURNAL_ENTRIES.observe(record.journal_length)
        self.completions.cancel_timers(record.id)
        self.active.pop(record.id, None)
        metrics.UNFINISHED.set(len(self.active))
        async with self._room:
            self._room.notify_all()

    async def _complete_parent(self, record: invoker_pb2.Invocation) -> None:
        with contextlib.suppress(NoSuchInvocationError, FailedPreconditionError):
            await self.completions.complete(record.parent_id, record.parent_entry_index, completion_of(record))

    # -- operator calls ------------------------------------------------------------------------------

    async def cancel(self, invocation_id: str) -> invoker_pb2.Invocation:
        """Cancel an unfinished invocation as Restate does (cancelling.py). Errors:
        NoSuchInvocationError, FailedPreconditionError (finished, or being cancelled already)."""
        return await self.cancels.cancel(invocation_id)

    async def record_of(self, invocation_id: str) -> invoker_pb2.Invocation:
        active = self.active.get(invocation_id)
        if active is not None:
            return active.record
        stored = await self.invocations.get(invocation_id)
        if stored is None:
            raise NoSuchInvocationError(f"invocation {invocation_id} does not exist", invocation=invocation_id)
        return stored
