"""Replication decisions shared by the partition node and the router's controller (DESIGN §5).

Pure functions and one small state machine, no I/O, so they are unit-tested directly:

- `valid_log_end`: how much of a replica's log belongs to the cluster's history, given the epoch
  history of its partition (Kafka's leader-epoch truncation). A replica whose log was a prefix of
  epoch `e`'s primary keeps its log up to the start of the next epoch after `e`, minus one.
- `InSyncTracker`: the primary's view of its followers: each one's applied seq, the in-sync set
  (Kafka's ISR rules: a follower that has not caught up for `lag_max_ms` leaves it; one that reaches
  the high watermark joins again) and the high watermark (highest seq every in-sync replica holds;
  never decreases). A follower whose fetch waits at the primary's log end holds everything, so it
  counts as caught up for as long as it waits (`park` / `unpark`), as a Kafka follower's fetch
  that read up to the log end does: `lag_max_ms` can then be short (a dead follower leaves the set
  quickly, which ends the stall of ack-all publishes) without idle followers leaving it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field


class ReplicationResult(enum.StrEnum):
    """The `result_code` of the Replication service's answers (internal.proto, the streams seed's
    shape: outcomes a caller acts on travel in the response; malformed requests are gRPC errors).
    Which call answers which is listed on each rpc in internal.proto."""

    OK = "ok"
    # The caller's leader epoch is older than the replica's: it acts for a replaced primary.
    FENCED = "fenced"
    # The caller's epoch is newer than the replica's: it adopts the placement; retry.
    STALE_EPOCH = "stale_epoch"
    # Primary-side calls reached a node that does not lead the partition (or whose lease lapsed).
    NOT_LEADER = "not_leader"
    # Secondary-side calls reached the partition's primary.
    NOT_FOLLOWER = "not_follower"
    # ReplicateMessage: the follower's log ends before after_seq (resend from its last_seq).
    OUT_OF_ORDER = "out_of_order"
    # ReplicateMessage: the follower holds another record at a seq the primary sent (log matching).
    DIVERGENCE = "divergence"
    # ReplicateStreamCreate: the router does not record the stream with that config.
    NOT_PLACED = "not_placed"
    # ReplicateStreamUpdate: the config is not the router's current one.
    STALE_CONFIG = "stale_config"
    # ReplicateStreamDelete: the router still records the stream.
    STILL_PLACED = "still_placed"
    # TransferLeadership: the target is not an in-sync replica.
    NOT_IN_SYNC = "not_in_sync"
    # TransferLeadership: the target did not catch up in time (the primary leads again).
    TIMEOUT = "timeout"


def valid_log_end(replica_epoch: int, last_seq: int, epoch_starts: Iterable[tuple[int, int]]) -> int:
    """The highest seq of a replica's log that belongs to the partition's history.

    `replica_epoch` is the epoch whose primary's log this replica's log is a prefix of, `last_seq`
    the end of its log and `epoch_starts` the (leader_epoch, start_seq) pairs of the placement. A
    later epoch replaced every seq from its start on, and a later epoch may start below an earlier
    one (its primary had less), so the result is below the start of *every* later epoch; every seq
    above it is a divergent tail to truncate. Example: epochs [(1, 1), (2, 96)], a replica of epoch 1
    ending at 100 keeps 1..95; with [(1, 1), (2, 11), (3, 7)] one of epoch 1 ending at 10 keeps 1..6.
    """
    end = last_seq
    for epoch, start_seq in epoch_starts:
        if epoch > replica_epoch:
            end = min(end, start_seq - 1)
    return end


def default_min_insync(replicas: int) -> int:
    """min_insync_replicas when the stream leaves it 0: min(2, replicas)."""
    return min(2, max(1, replicas))


@dataclass(slots=True)
class FollowerProgress:
    """What the primary knows of one follower (times in the primary's monotonic milliseconds)."""

    last_seq: int = 0
    reported: bool = False
    # When the follower was last known to hold everything the primary had (Kafka lastCaughtUpTime).
    caught_up_ms: int = 0
    last_fetch_ms: int = 0
    # The primary's last seq at the follower's previous report.
    leader_last_at_previous: int = 0
    # Fetches of this follower waiting at the primary's log end (it holds everything meanwhile).
    parked: int = 0


@dataclass(slots=True)
class InSyncTracker:
    """The primary's in-sync set and high watermark for one partition.

    The primary is always in sync. `report` records a follower's progress (the replicator reports
    it with every fetch); `lagging` names in-sync followers that have not caught up for `lag_max_ms`;
    `joining` names out-of-sync followers that reached the high watermark. Callers persist a
    membership change first and then apply it with `set_in_sync` (a shrink must be durable before
    the primary acknowledges with the smaller set, or a failover could pick a replica without them).
    """

    leader_id: str
    followers: dict[str, FollowerProgress]
    in_sync: set[str]
    lag_max_ms: int
    high_watermark: int = 0
    # Followers whose joining is being persisted: they already hold the high watermark back.
    pending_joiners: set[str] = field(default_factory=set)

    @classmethod
    def start(
        cls,
        leader_id: str,
        follower_ids: Sequence[str],
        in_sync: Iterable[str],
        *,
        lag_max_ms: int,
        now_ms: int,
        high_watermark: int = 0,
    ) -> InSyncTracker:
        """A tracker for a primary that just took over (or restarted): followers get a full
        `lag_max_ms` from now to report before they count as lagging."""
        followers = {node: FollowerProgress(caught_up_ms=now_ms) for node in follower_ids if node != leader_id}
        members = {node for node in in_sync if node in followers}
        members.add(leader_id)
        return cls(leader_id, followers, members, lag_max_ms, high_watermark)

    def report(self, follower: str, last_seq: int, leader_last_seq: int, now_ms: int) -> None:
        """The follower holds every record up to `last_seq`; the primary's log ends at `leader_last_seq`."""
        progress = self.followers.get(follower)
        if progress is None:
            return
        last_seq = min(last_seq, leader_last_seq)  # a follower never holds more than the primary
        if progress.reported and last_seq >= progress.leader_last_at_previous:
            progress.caught_up_ms = max(progress.caught_up_ms, progress.last_fetch_ms)
        if last_seq >= leader_last_seq:
            progress.caught_up_ms = now_ms
        progress.last_seq = last_seq
        progress.reported = True
        progress.last_fetch_ms = now_ms
        progress.leader_last_at_previous = leader_last_seq

    def park(self, follower: str) -> bool:
        """A fetch of `follower`, which holds the primary's whole log, starts waiting for more:
        it counts as caught up until `unpark`. Returns False (nothing to undo) for an unknown node."""
        progress = self.followers.get(follower)
        if progress is None:
            return False
        progress.parked += 1
        return True

    def unpark(self, follower: str, now_ms: int) -> None:
        """The waiting fetch ended at `now_ms` (new records, its wait ran out, or it was cancelled):
        the follower held everything until then."""
        progress = self.followers.get(follower)
        if progress is None or progress.parked <= 0:
            return
        progress.parked -= 1
        progress.caught_up_ms = max(progress.caught_up_ms, now_ms)

    def restart_lag_clocks(self, now_ms: int) -> None:
        """The primary could not serve its followers until `now_ms` (its heartbeat lease had lapsed,
        so it refused their fetches): each in-sync follower gets a full `lag_max_ms` from now to
        catch up, as at `start`, instead of leaving for a lag that was the primary's. Keeping a
        follower in the set never risks an acknowledged record; only a shrink needs care."""
        for node in self.in_sync:
            if node in self.followers:
                progress = self.followers[node]
                progress.caught_up_ms = max(progress.caught_up_ms, now_ms)

    def compute_high_watermark(self, leader_last_seq: int) -> int:
        """Advance (never lower) the high watermark to the lowest end among in-sync replicas."""
        candidate = leader_last_seq
        for node in self.in_sync | self.pending_joiners:
            if node == self.leader_id or node not in self.followers:
                continue
            progress = self.followers[node]
            candidate = min(candidate, progress.last_seq if progress.reported else 0)
        self.high_watermark = max(self.high_watermark, candidate)
        return self.high_watermark

    def lagging(self, now_ms: int) -> list[str]:
        """In-sync followers that have not caught up within lag_max_ms (sorted)."""
        return sorted(
            node
            for node in self.in_sync
            if node != self.leader_id
            and not self.followers[node].parked
            and now_ms - self.followers[node].caught_up_ms > self.lag_max_ms
        )

    def joining(self, now_ms: int) -> list[str]:
        """Out-of-sync followers whose log reached the high watermark and that are caught up now
        (a report within lag_max_ms: a dead follower's last report does not bring it back), sorted."""
        return sorted(
            node
            for node, progress in self.followers.items()
            if node not in self.in_sync
            and progress.reported
            and progress.last_seq >= self.high_watermark
            and now_ms - progress.caught_up_ms <= self.lag_max_ms
        )

    def at_rest(self) -> bool:
        """Whether no in-sync change can be due now: every follower is in the set and parked
        (its fetch waits at the log end, so it holds everything and cannot lag). An idle cluster's
        partitions are at rest; `proposed` would return None for them, at a cost per follower."""
        return len(self.in_sync) == len(self.followers) + 1 and all(
            progress.parked for progress in self.followers.values()
        )

    def proposed(self, now_ms: int) -> set[str] | None:
        """The in-sync set after dropping laggards and adding joiners; None when unchanged."""
        target = (self.in_sync - set(self.lagging(now_ms))) | set(self.joining(now_ms))
        return None if target == self.in_sync else target

    def set_in_sync(self, members: Iterable[str], now_ms: int) -> None:
        """Apply a persisted in-sync set (the primary always stays in it). A follower that joins
        starts its lag clock now."""
        members = set(members) | {self.leader_id}
        for node in members - self.in_sync:
            if node in self.followers:
                self.followers[node].caught_up_ms = now_ms
        self.in_sync = {node for node in members if node == self.leader_id or node in self.followers}

    def in_sync_sorted(self) -> list[str]:
        """The in-sync set, primary first, then the followers sorted."""
        return [self.leader_id, *sorted(self.in_sync - {self.leader_id})]
