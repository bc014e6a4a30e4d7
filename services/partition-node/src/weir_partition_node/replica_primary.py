"""A primary's side of the Replication service (DESIGN §5): what its followers' replicator pulls.

- **FetchReplication** (and its lockstep stream) reports the progress of the followers it speaks
  for (follower_node_id and sharing_node_ids, all holding follower_last_seq) to the partition's
  in-sync tracker, which moves the high watermark and completes ack-all publishes; then it answers
  with the record batches after that seq. A follower that holds everything waits up to
  max_wait_ms for new records (parked: it stays caught up while it waits); a fetch that finds a
  group commit with appends in flight waits for it (`fetch_linger_ms`).
- **GetConsumerSnapshots**: every consumer's committed state in one partition, read from the log.

Both refuse a fetch under another leader epoch (`fenced`, `stale_epoch`), on a copy that does not
lead (`not_leader`) and, for fetches, while this node's heartbeat lease lapsed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from weir.errors import InvalidArgumentError, WeirError
from weir.v1 import internal_pb2
from weir_server.replication import InSyncTracker, ReplicationResult

from weir_partition_node import delivery_horizon, metrics
from weir_partition_node.clock import monotonic_ms
from weir_partition_node.membership import Membership
from weir_partition_node.node import Node
from weir_partition_node.node_reads import MAX_READ_MESSAGES, check_max_bytes
from weir_partition_node.partition import Partition
from weir_partition_node.replica_secondary import EpochCheck
from weir_partition_node.replication_batches import add_records
from weir_partition_node.waiters import wait_on_any

DEFAULT_FETCH_MESSAGES = 1000
DEFAULT_FETCH_BYTES = 4 * 1024 * 1024
MAX_FETCH_WAIT_MS = 30_000
# Followers one FetchReplication may speak for (follower_node_id and sharing_node_ids): a partition
# has at most 16 copies.
MAX_FETCH_FOLLOWERS = 16
# A FetchReplicationSession: most entries (partitions) in one request, and the default bound of the
# record bytes of one answer (it must fit the gRPC send limit, 64 MiB, with MAX_READ_BYTES at most).
MAX_SESSION_FETCHES = 10_000
DEFAULT_SESSION_BYTES = 16 * 1024 * 1024

# What answers an opened fetch: its partition, the followers it reports, the in-sync tracker it
# reported to (None: the partition has no followers).
_Opened = tuple[Partition, list[str], InSyncTracker | None]


def fetching_followers(request: internal_pb2.FetchReplicationRequest) -> list[str]:
    """The secondaries a fetch reports at `follower_last_seq`: follower_node_id, then
    sharing_node_ids. Errors: InvalidArgumentError for a missing or repeated node id, or more than
    MAX_FETCH_FOLLOWERS of them."""
    if not request.follower_node_id:
        raise InvalidArgumentError("follower_node_id: required")
    followers = [request.follower_node_id, *request.sharing_node_ids]
    if len(followers) > MAX_FETCH_FOLLOWERS:
        raise InvalidArgumentError(
            f"sharing_node_ids: at most {MAX_FETCH_FOLLOWERS - 1}, got {len(request.sharing_node_ids)}"
        )
    if len(set(followers)) != len(followers) or "" in followers:
        raise InvalidArgumentError("sharing_node_ids: each must be a node id, distinct and other than follower_node_id")
    return followers


def fetch_linger_ms(
    *, appends_pending: bool, records_ready: int, max_messages: int, max_wait_ms: int, replication_linger_ms: int
) -> int:
    """How long (ms) a primary holds a follower fetch's answer before it reads the records: while a
    group commit with appends is in flight (`appends_pending`) and the answer is not full yet
    (`records_ready` < `max_messages`), until that commit is durable (the wait ends then), at most
    `replication_linger_ms` and never longer than the fetch may wait (`max_wait_ms`; 0 = not at all).
    Otherwise 0: an idle partition answers at once.

    Why: a replication round (fetch, a push to each follower, a commit on each) costs the same per
    call whatever it carries, so under load two commits in one round cost about half of two
    rounds; the records of the first commit wait at most for the second's write (measured in
    docs/benchmarks.md, "Replicas 3: a fetch waits for the commit in flight"). Ack-all waiters are
    not held: the fetch's progress report is applied before the wait."""
    if not appends_pending or records_ready >= max_messages:
        return 0
    return min(replication_linger_ms, max_wait_ms)


class PrimaryReplication:
    """See the module docstring. `check_epoch` is the refusal rule every replication call shares;
    `maybe_join` starts the in-sync write for followers that caught up (ReplicaManager)."""

    def __init__(
        self,
        node: Node,
        membership: Membership,
        *,
        check_epoch: EpochCheck,
        maybe_join: Callable[[str, Partition], None],
    ) -> None:
        self._node = node
        self._membership = membership
        self._check_epoch = check_epoch
        self._maybe_join = maybe_join

    async def fetch_replication(
        self, request: internal_pb2.FetchReplicationRequest
    ) -> internal_pb2.FetchReplicationResponse:
        """Primary: record the progress of the followers the fetch speaks for (all at
        follower_last_seq), then return the records after it. Errors: InvalidArgumentError (a
        bound above its maximum, the follower ids), NoSuchStreamError, NoSuchPartitionError;
        refusals are result codes (module docstring)."""
        response, opened = self._open(request)
        if opened is None:
            return response
        partition, followers, _ = opened
        if request.follower_last_seq >= partition.last_seq and request.max_wait_ms:
            await self._wait_for_records(request, partition, followers)
        linger_ms = self._linger_ms(request, partition, request.max_wait_ms)
        if linger_ms:
            metrics.REPLICATION_FETCH_LINGERS.inc()
            await partition.wait_for_appends(linger_ms / 1000)
        self._answer(response, request, opened, request.max_bytes or DEFAULT_FETCH_BYTES)
        return response

    async def fetch_session(self, request: internal_pb2.FetchSessionRequest) -> internal_pb2.FetchSessionResponse:
        """Primary: FetchReplicationSession (issue 53): every entry opened as `fetch_replication`
        opens it (progress recorded), then, when every entry is answered ok and none has records
        to ship, one wait of up to `max_wait_ms` on all of them and on any append here; then one
        linger for the commits in flight, and the records of each entry within the session's byte
        bound (`max_bytes`, 0 = DEFAULT_SESSION_BYTES). An entry's error is its result_code.
        Errors (the whole call): InvalidArgumentError for more than MAX_SESSION_FETCHES entries or
        a bound above its maximum."""
        if len(request.fetches) > MAX_SESSION_FETCHES:
            raise InvalidArgumentError(f"fetches: at most {MAX_SESSION_FETCHES}, got {len(request.fetches)}")
        if request.max_wait_ms > MAX_FETCH_WAIT_MS:
            raise InvalidArgumentError(f"max_wait_ms: at most {MAX_FETCH_WAIT_MS}, got {request.max_wait_ms}")
        check_max_bytes(request.max_bytes)
        answers: list[internal_pb2.FetchReplicationResponse] = []
        opened: list[tuple[internal_pb2.FetchReplicationRequest, internal_pb2.FetchReplicationResponse, _Opened]] = []
        for fetch in request.fetches:
            try:
                response, state = self._open(fetch)
            except WeirError as error:
                response, state = internal_pb2.FetchReplicationResponse(result_code=error.result_code.value), None
                response.message = error.message
            answers.append(response)
            if state is not None:
                opened.append((fetch, response, state))
        idle = all(fetch.follower_last_seq >= state[0].last_seq for fetch, _, state in opened)
        if request.max_wait_ms and opened and idle and len(opened) == len(answers):
            await self._wait_for_any(opened, request.max_wait_ms)
        await self._linger_all(opened, request.max_wait_ms)
        budget = request.max_bytes or DEFAULT_SESSION_BYTES
        for fetch, response, state in opened:
            self._answer(response, fetch, state, min(fetch.max_bytes or DEFAULT_FETCH_BYTES, budget) if budget else 0)
            budget = max(0, budget - sum(map(len, response.record_batches)) - sum(map(len, response.records)))
        return internal_pb2.FetchSessionResponse(answers=answers)

    def _open(
        self, request: internal_pb2.FetchReplicationRequest
    ) -> tuple[internal_pb2.FetchReplicationResponse, _Opened | None]:
        """A fetch checked and its progress report applied: its response so far and what answers
        it, or the response carrying its refusal and None. Errors: as `fetch_replication`."""
        response = internal_pb2.FetchReplicationResponse(result_code=ReplicationResult.OK)
        if request.max_messages > MAX_READ_MESSAGES:
            raise InvalidArgumentError(f"max_messages: at most {MAX_READ_MESSAGES}, got {request.max_messages}")
        if request.max_wait_ms > MAX_FETCH_WAIT_MS:
            raise InvalidArgumentError(f"max_wait_ms: at most {MAX_FETCH_WAIT_MS}, got {request.max_wait_ms}")
        check_max_bytes(request.max_bytes)
        followers = fetching_followers(request)
        partition = self._node.hosted_partition(request.stream, request.partition)
        refusal = self._refusal(partition, request.leader_epoch, fetching=True)
        if refusal is not None:
            response.result_code, response.message = refusal
            response.leader_epoch = partition.leader_epoch
            return response, None
        tracker = partition.tracker  # the one this fetch reported to, also after a wait
        self._record_progress(request, partition, followers)
        return response, (partition, followers, tracker)

    def _linger_ms(self, request: internal_pb2.FetchReplicationRequest, partition: Partition, max_wait_ms: int) -> int:
        return fetch_linger_ms(
            appends_pending=partition.appends_pending,
            records_ready=partition.last_seq - request.follower_last_seq,
            max_messages=request.max_messages or DEFAULT_FETCH_MESSAGES,
            max_wait_ms=max_wait_ms,
            replication_linger_ms=self._node.settings.replication_linger_ms,
        )

    async def _linger_all(
        self,
        opened: list[tuple[internal_pb2.FetchReplicationRequest, internal_pb2.FetchReplicationResponse, _Opened]],
        max_wait_ms: int,
    ) -> None:
        """A session's linger: until every partition with a commit in flight made it durable, each at
        most its `fetch_linger_ms`, all at once."""
        waits = []
        for fetch, _, (partition, _, _) in opened:
            linger_ms = self._linger_ms(fetch, partition, max_wait_ms)
            if linger_ms:
                waits.append(partition.wait_for_appends(linger_ms / 1000))
        if waits:
            metrics.REPLICATION_FETCH_LINGERS.inc()
            await asyncio.gather(*waits)

    @staticmethod
    def _answer(
        response: internal_pb2.FetchReplicationResponse,
        request: internal_pb2.FetchReplicationRequest,
        opened: _Opened,
        max_bytes: int,
    ) -> None:
        """Fill an opened fetch's answer: its records (none when `max_bytes` is 0: the session's
        bound was reached) and the partition's log, watermark, epoch and in-sync set."""
        partition, _, tracker = opened
        if max_bytes:
            add_records(response, partition, request, request.max_messages or DEFAULT_FETCH_MESSAGES, max_bytes)
        response.first_seq = partition.first_seq
        response.last_seq = partition.last_seq
        response.high_watermark = partition.high_watermark
        response.leader_epoch = partition.leader_epoch
        if tracker is not None:
            response.in_sync_node_ids.extend(tracker.in_sync_sorted())
        response.sharing_reported = bool(request.sharing_node_ids)

    async def _wait_for_any(
        self,
        opened: list[tuple[internal_pb2.FetchReplicationRequest, internal_pb2.FetchReplicationResponse, _Opened]],
        max_wait_ms: int,
    ) -> None:
        """A session's wait: every follower of every entry parked (caught up while it waits), one
        waiter on each partition's wait set and on the node's appends, until the first wakes."""
        sets: list[set[asyncio.Future[None]]] = [self._node.append_waiters]
        parked: list[tuple[InSyncTracker, str]] = []
        for fetch, _, (partition, followers, _) in opened:
            sets.append(partition.waits.appends if fetch.wait_for_records_only else partition.waits.work)
            tracker = partition.tracker
            if tracker is not None:
                parked += [(tracker, follower) for follower in followers if tracker.park(follower)]
        try:
            await wait_on_any(sets, max_wait_ms / 1000)
        finally:
            now_ms = monotonic_ms()
            for tracker, follower in parked:
                tracker.unpark(follower, now_ms)

    def _refusal(
        self, partition: Partition, leader_epoch: int, *, fetching: bool
    ) -> tuple[ReplicationResult, str] | None:
        """Why this copy must not answer a call under `leader_epoch`, else None: another epoch,
        not leading, or (`fetching`: records would be shipped) this node's lease lapsed."""
        refusal = self._check_epoch(partition, leader_epoch)
        if refusal is None and not partition.leading:
            refusal = ReplicationResult.NOT_LEADER, f"node {self._node.node_id} does not lead this partition"
        if refusal is None and fetching and not self._membership.lease_valid():
            refusal = ReplicationResult.NOT_LEADER, str(self._node.lease_expired())
        return refusal

    def _record_progress(
        self, request: internal_pb2.FetchReplicationRequest, partition: Partition, followers: list[str]
    ) -> None:
        """The fetch's progress report, applied before any wait so no ack-all publish waits on it:
        the in-sync tracker hears every follower it speaks for, the high watermark moves, followers
        that caught up may join, and the batch cache drops what every follower holds."""
        tracker = partition.tracker
        if tracker is None:
            return
        now_ms = monotonic_ms()
        for follower in followers:
            tracker.report(follower, request.follower_last_seq, partition.last_seq, now_ms)
        partition.update_high_watermark()
        self._maybe_join(request.stream, partition)
        partition.batch_cache.forget_through(
            min((follower.last_seq for follower in tracker.followers.values()), default=0)
        )

    @staticmethod
    async def _wait_for_records(
        request: internal_pb2.FetchReplicationRequest, partition: Partition, followers: list[str]
    ) -> None:
        """The followers hold everything: wait up to max_wait_ms for new records (or, unless the
        fetch waits for records only, any work), the followers parked meanwhile so they stay
        caught up (replication.py)."""
        tracker = partition.tracker
        parked = [follower for follower in followers if tracker is not None and tracker.park(follower)]
        try:
            wait = partition.wait_for_appends if request.wait_for_records_only else partition.wait_for_work
            await wait(request.max_wait_ms / 1000)
        finally:
            if tracker is not None:
                now_ms = monotonic_ms()
                for follower in parked:
                    tracker.unpark(follower, now_ms)

    def consumer_snapshots(
        self, request: internal_pb2.GetConsumerSnapshotsRequest
    ) -> internal_pb2.GetConsumerSnapshotsResponse:
        """Primary: the committed state of every consumer in one partition (read from the log)."""
        partition = self._node.hosted_partition(request.stream, request.partition)
        response = internal_pb2.GetConsumerSnapshotsResponse(result_code=ReplicationResult.OK)
        refusal = self._refusal(partition, request.leader_epoch, fetching=False)
        if refusal is not None:
            response.result_code, response.message = refusal
            return response
        for name, stored in sorted(partition.log.load_consumers().items()):
            delivered, acked, redelivered, dead_lettered, dropped, termed = stored.totals
            snapshot = response.snapshots.add(
                consumer=name,
                partition=partition.index,
                ack_floor=stored.ack_floor,
                last_delivered=stored.last_delivered,
                delivered=delivered,
                acked=acked,
                redelivered=redelivered,
                dead_lettered=dead_lettered,
                dropped=dropped,
                termed=termed,
                last_per_subject_until=stored.last_per_subject_until,
            )
            cursor = partition.consumers.get(name)
            if cursor is not None:  # the in-memory horizon (delivery_horizon.py)
                for field_name, value in delivery_horizon.as_snapshot_fields(
                    cursor.horizon, stored.last_delivered
                ).items():
                    setattr(snapshot, field_name, value)
            for seq, delivered_at_ms, deliver_count, redeliver_at_ms in stored.pending:
                snapshot.pending.add(
                    seq=seq,
                    delivered_at_ms=delivered_at_ms,
                    deliver_count=deliver_count,
                    redeliver_at_ms=redeliver_at_ms,
                )
        return response
