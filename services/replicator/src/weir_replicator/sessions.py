"""One replication session per node pair (issue 53; Kafka's fetch sessions, KIP-227).

Before, every partition's follower ran its own pull-and-push loop: at 16 partitions a round of
replication cost 16 fetches and 16 pushes per follower, each a gRPC exchange at both ends, and each
carried the few records one partition had. A `ReplicationSession` runs the rounds of every partition
that one primary node leads and one follower node copies, and a round costs one exchange of each
kind whatever the partition count:

1. members without a known log end learn it (`sync_position`, per partition, concurrently);
2. one FetchReplicationSession exchange with the primary carries every member's fetch (its
   progress report) and waits, when none has records, for the shortest wait any member allows;
3. each answer becomes a push (`push_for`; a retention truncation goes first, per partition);
4. one ReplicateSession exchange with the follower carries every push;
5. each member ships what does not come with records (`finish_round`: removals, consumer state),
   per partition, concurrently, only when it has any.

A member that fails (a refusal, a call's error) backs off alone, doubling from `retry_backoff_ms`
up to MAX_BACKOFF_S; an exchange that fails backs off every member it carried and reopens its
call. Members are taken in turn from a rotating start, so that a byte bound reached at the primary
(`FetchSessionRequest.max_bytes`) does not always cut the same partitions. The session's task ends
when its last member leaves; `SessionHub` starts one on the first join.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Protocol, TypeVar

from weir.client import LockstepStream
from weir.errors import UnavailableError, WeirError
from weir.v1 import internal_pb2
from weir_server.internal_clients import ReplicationClient

from weir_replicator import metrics
from weir_replicator.followers import FollowerState, Removal

logger = logging.getLogger(__name__)

MAX_BACKOFF_S = 5.0
LOG_EVERY = 50
# How long a session with members that all back off sleeps at most before it looks again.
IDLE_POLL_S = 0.2

T = TypeVar("T")


@dataclass(slots=True)
class PreparedFetch:
    """One member's part of a round, decided before the fetch: its entry, the longest the session
    may wait for it (ms), the removals it saw before the fetch (safe to ship after its push), and the
    change-feed position it had observed."""

    request: internal_pb2.FetchReplicationRequest
    wait_ms: int
    removals: list[Removal] = field(default_factory=list)
    observed_through: int = 0


class SessionPartition(Protocol):
    """What a session needs of one partition's shipper (shipping.PartitionShipper is one)."""

    lease_valid: asyncio.Event
    labels: tuple[str, str]

    async def sync_position(self, follower: FollowerState) -> bool: ...

    def prepare_fetch(self, follower: FollowerState) -> PreparedFetch: ...

    async def push_for(
        self, follower: FollowerState, answer: internal_pb2.FetchReplicationResponse
    ) -> tuple[bool, internal_pb2.ReplicateMessageRequest | None]: ...

    def accept_push(
        self,
        follower: FollowerState,
        push: internal_pb2.ReplicateMessageRequest,
        answer: internal_pb2.FetchReplicationResponse,
        reply: internal_pb2.ReplicateResponse,
    ) -> bool: ...

    async def finish_round(
        self, follower: FollowerState, prepared: PreparedFetch, answer: internal_pb2.FetchReplicationResponse
    ) -> None: ...


@dataclass(slots=True, eq=False)
class Member:
    """One partition's follower in a session, with its back-off."""

    partition: SessionPartition
    follower: FollowerState
    failures: int = 0
    retry_at_s: float = 0.0
    active: bool = True


def backoff_s(failures: int, base_s: float) -> float:
    """The pause after a member's `failures`-th failure in a row: `base_s` doubling, at most
    MAX_BACKOFF_S."""
    return min(MAX_BACKOFF_S, base_s * float(2 ** min(max(failures, 1) - 1, 10)))


def session_wait_ms(waits: list[int], retry_in_s: float | None) -> int:
    """How long a round's fetch may wait at the primary (ms): the shortest wait a member allows,
    and no longer than until the soonest member that backs off may try again (`retry_in_s`, None
    when none does)."""
    wait_ms = min(waits) if waits else 0
    if retry_in_s is not None:
        wait_ms = min(wait_ms, max(0, int(retry_in_s * 1000)))
    return wait_ms


class ReplicationSession:
    """The rounds of one (primary, follower) node pair; see the module docstring."""

    def __init__(
        self,
        *,
        primary: ReplicationClient,
        follower: ReplicationClient,
        label: str,
        max_bytes: int,
        timeout_s: float,
        retry_backoff_s: float,
    ) -> None:
        self._primary = primary
        self._follower = follower
        self.label = label
        self._max_bytes = max_bytes
        self._timeout_s = timeout_s
        self._retry_backoff_s = retry_backoff_s
        self.members: list[Member] = []
        self._start = 0
        self._fetches: LockstepStream[internal_pb2.FetchSessionRequest, internal_pb2.FetchSessionResponse] | None = None
        self._pushes: (
            LockstepStream[internal_pb2.ReplicateSessionRequest, internal_pb2.ReplicateSessionResponse] | None
        ) = None
        self._joined = asyncio.Event()

    def join(self, member: Member) -> None:
        self.members.append(member)
        self._joined.set()

    def leave(self, member: Member) -> None:
        member.active = False
        with contextlib.suppress(ValueError):
            self.members.remove(member)

    def close(self) -> None:
        for stream in (self._fetches, self._pushes):
            if stream is not None:
                stream.close()
        self._fetches = self._pushes = None

    async def run(self) -> None:
        """Rounds until the last member leaves."""
        try:
            while self.members:
                await self._round()
        finally:
            self.close()

    async def _round(self) -> None:
        loop = asyncio.get_running_loop()
        now_s = loop.time()
        eligible = [m for m in self.members if m.partition.lease_valid.is_set()]
        due = [m for m in eligible if m.retry_at_s <= now_s]
        if not due:
            await self._idle(eligible, now_s)
            return
        self._start = (self._start + 1) % len(due)
        due = due[self._start :] + due[: self._start]
        unsynced = [m for m in due if m.follower.last_seq is None]
        if unsynced:
            synced = await asyncio.gather(*(self._guarded(m, m.partition.sync_position(m.follower)) for m in unsynced))
            for member, (called, in_step) in zip(unsynced, synced, strict=True):
                if not (called and in_step):
                    self._failed(member)
        ready = [m for m in due if m.active and m.follower.last_seq is not None and m.retry_at_s <= now_s]
        if not ready:
            return
        prepared = [m.partition.prepare_fetch(m.follower) for m in ready]
        backing_off = [m.retry_at_s - now_s for m in eligible if m.retry_at_s > now_s]
        wait_ms = session_wait_ms([p.wait_ms for p in prepared], min(backing_off) if backing_off else None)
        answers = await self._fetch(ready, prepared, wait_ms)
        if answers is None:
            return
        await self._push(ready, prepared, answers)

    async def _idle(self, eligible: list[Member], now_s: float) -> None:
        """Nothing to do now: sleep until a member may retry, one joins, or IDLE_POLL_S passed."""
        retry_in_s = min((m.retry_at_s - now_s for m in eligible), default=IDLE_POLL_S)
        self._joined.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(0.001, min(IDLE_POLL_S, retry_in_s))):
                await self._joined.wait()

    async def _fetch(
        self, ready: list[Member], prepared: list[PreparedFetch], wait_ms: int
    ) -> list[internal_pb2.FetchReplicationResponse] | None:
        """One FetchReplicationSession exchange for `ready`; None (every member failed) on an error."""
        if self._fetches is None:
            self._fetches = self._primary.fetch_session_stream()
        request = internal_pb2.FetchSessionRequest(
            fetches=[p.request for p in prepared], max_wait_ms=wait_ms, max_bytes=self._max_bytes
        )
        try:
            response = await self._fetches.exchange(request, timeout_s=self._timeout_s + wait_ms / 1000)
            if len(response.answers) != len(ready):
                raise UnavailableError(f"{len(response.answers)} answers to {len(ready)} fetches")
        except WeirError as error:
            self._exchange_failed("fetch", ready, error)
            return None
        metrics.SESSION_EXCHANGES.labels("fetch").inc()
        for member, answer in zip(ready, response.answers, strict=True):
            outcome = "records" if answer.record_batches or answer.records else "empty"
            metrics.FETCHES.labels(*member.partition.labels, outcome).inc()
            metrics.FETCHED_FOR.labels(*member.partition.labels).inc()
        return list(response.answers)

    async def _push(
        self,
        ready: list[Member],
        prepared: list[PreparedFetch],
        answers: list[internal_pb2.FetchReplicationResponse],
    ) -> None:
        """The round's pushes in one ReplicateSession exchange, then each member's side changes."""
        outcomes = await asyncio.gather(
            *(self._guarded(m, m.partition.push_for(m.follower, a)) for m, a in zip(ready, answers, strict=True))
        )
        pushing: list[tuple[Member, PreparedFetch, internal_pb2.FetchReplicationResponse]] = []
        pushes: list[internal_pb2.ReplicateMessageRequest] = []
        finishing: list[tuple[Member, PreparedFetch, internal_pb2.FetchReplicationResponse]] = []
        for member, prepared_fetch, answer, (called, outcome) in zip(ready, prepared, answers, outcomes, strict=True):
            if not called or outcome is None or not outcome[0]:
                self._failed(member)
            elif outcome[1] is None:
                finishing.append((member, prepared_fetch, answer))
            else:
                pushing.append((member, prepared_fetch, answer))
                pushes.append(outcome[1])
        if pushes:
            finishing += await self._send_pushes(pushing, pushes)
        done = await asyncio.gather(
            *(self._guarded(m, m.partition.finish_round(m.follower, p, a)) for m, p, a in finishing)
        )
        for (member, _, _), (called, _) in zip(finishing, done, strict=True):
            if not called:
                self._failed(member)
            else:
                self._succeeded(member)

    async def _send_pushes(
        self,
        pushing: list[tuple[Member, PreparedFetch, internal_pb2.FetchReplicationResponse]],
        pushes: list[internal_pb2.ReplicateMessageRequest],
    ) -> list[tuple[Member, PreparedFetch, internal_pb2.FetchReplicationResponse]]:
        """One ReplicateSession exchange; the members whose push was accepted."""
        if self._pushes is None:
            self._pushes = self._follower.replicate_session_stream()
        members = [member for member, _, _ in pushing]
        try:
            response = await self._pushes.exchange(
                internal_pb2.ReplicateSessionRequest(pushes=pushes), timeout_s=self._timeout_s
            )
            if len(response.replies) != len(pushes):
                raise UnavailableError(f"{len(response.replies)} replies to {len(pushes)} pushes")
        except WeirError as error:
            self._exchange_failed("push", members, error)
            return []
        metrics.SESSION_EXCHANGES.labels("push").inc()
        accepted = []
        for (member, prepared, answer), push, reply in zip(pushing, pushes, response.replies, strict=True):
            if member.partition.accept_push(member.follower, push, answer, reply):
                accepted.append((member, prepared, answer))
            else:
                self._failed(member)
        return accepted

    async def _guarded(self, member: Member, call: Awaitable[T]) -> tuple[bool, T | None]:
        """(True, `call`'s result), or (False, None) after a WeirError (logged, counted; the member
        re-syncs)."""
        try:
            return True, await call
        except WeirError as error:
            metrics.ERRORS.labels(error.result_code.value).inc()
            if member.failures % LOG_EVERY == 0:
                logger.warning(
                    "%s/%s -> %s: %s (failure %d)",
                    *member.partition.labels,
                    member.follower.node_id,
                    error,
                    member.failures + 1,
                )
            member.follower.last_seq = None
            return False, None

    def _exchange_failed(self, kind: str, members: list[Member], error: WeirError) -> None:
        """A session exchange failed: its call is reopened and every member it carried backs off."""
        metrics.ERRORS.labels(error.result_code.value).inc()
        metrics.SESSION_EXCHANGES.labels(f"{kind}_failed").inc()
        if all(member.failures % LOG_EVERY == 0 for member in members):
            logger.warning("session %s: %s of %d partitions failed: %s", self.label, kind, len(members), error)
        self.close()
        for member in members:
            member.follower.last_seq = None
            self._failed(member)

    def _failed(self, member: Member) -> None:
        member.failures += 1
        member.retry_at_s = asyncio.get_running_loop().time() + backoff_s(member.failures, self._retry_backoff_s)

    @staticmethod
    def _succeeded(member: Member) -> None:
        if member.failures >= LOG_EVERY:
            logger.info("%s/%s -> %s: replicating again", *member.partition.labels, member.follower.node_id)
        member.failures = 0
        member.retry_at_s = 0.0


class SessionHub:
    """The replicator's sessions, one per (primary address, follower address), each with its task."""

    def __init__(
        self, clients: ReplicationClients, *, max_bytes: int, timeout_s: float, retry_backoff_s: float
    ) -> None:
        self._clients = clients
        self._max_bytes = max_bytes
        self._timeout_s = timeout_s
        self._retry_backoff_s = retry_backoff_s
        self._sessions: dict[tuple[str, str], ReplicationSession] = {}
        self._tasks: dict[tuple[str, str], asyncio.Task[None]] = {}

    def join(self, primary_address: str, partition: SessionPartition, follower: FollowerState) -> Member:
        """Add one partition's follower to its node pair's session (started if need be)."""
        key = (primary_address, follower.address)
        member = Member(partition, follower)
        session = self._sessions.get(key)
        if session is None or key not in self._tasks or self._tasks[key].done():
            session = self._sessions[key] = ReplicationSession(
                primary=self._clients.replication(primary_address),
                follower=self._clients.replication(follower.address),
                label=f"{primary_address}->{follower.node_id}",
                max_bytes=self._max_bytes,
                timeout_s=self._timeout_s,
                retry_backoff_s=self._retry_backoff_s,
            )
            session.join(member)
            task = asyncio.get_running_loop().create_task(session.run(), name=f"session:{session.label}")
            self._tasks[key] = task
            task.add_done_callback(functools.partial(self._ended, key, session))
        else:
            session.join(member)
        metrics.SESSIONS.set(len(self._sessions))
        return member

    def leave(self, primary_address: str, member: Member) -> None:
        """Take a member out; its session ends once it has none (after its round in flight)."""
        session = self._sessions.get((primary_address, member.follower.address))
        if session is not None:
            session.leave(member)
        else:
            member.active = False

    def _ended(self, key: tuple[str, str], session: ReplicationSession, task: asyncio.Task[None]) -> None:
        if self._sessions.get(key) is session:
            del self._sessions[key]
            self._tasks.pop(key, None)
        metrics.SESSIONS.set(len(self._sessions))
        if not task.cancelled() and task.exception() is not None:
            logger.error("session %s ended by an error", session.label, exc_info=task.exception())

    async def close(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._sessions.clear()
        self._tasks.clear()


class ReplicationClients(Protocol):
    """Where a session gets its clients (shipping.ClientPool is one)."""

    def replication(self, address: str) -> ReplicationClient: ...
