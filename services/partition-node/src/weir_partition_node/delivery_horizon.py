"""The delivery horizon: which messages a new primary must deliver as redeliveries.

A consumer's state reaches the secondaries as snapshots the replicator ships every
snapshot_interval_ms, so a copy that takes over after a crash may hold a snapshot from before the
last deliveries: it would deliver them again with deliver_count 1, and nobody could tell
(JetStream's clustered consumers have the same window). The horizon closes it:

- The primary keeps, per consumer and partition, a seq its in-sync replicas know it may have
  delivered up to for the first time. Before it answers a fetch that delivered a seq above it, it
  raises the horizon on each in-sync replica (ReplicateConsumerState with `horizon_only`: a few
  bytes, no disk) and only then hands the messages out. It raises it HORIZON_AHEAD seqs beyond the
  fetch's highest, so the fetches that follow stay under it and cost nothing more: one push (a
  round to each replica, in parallel) per HORIZON_AHEAD seqs delivered, not per fetch. A push per
  fetch cost a third of the consume path's server CPU at replicas 3 (fetches of 100).
- A replica that becomes primary delivers every seq in (last_delivered, horizon] of its snapshot
  that it holds at that moment with deliver_count 2 and counts it as a redelivery: it may have
  reached a consumer already. Of those, up to HORIZON_AHEAD were only covered ahead and may never
  have been delivered (a redelivery that is not one is harmless to an at-least-once consumer; one
  that is not flagged is what this closes). Messages stored after the takeover are first
  deliveries.
- A seek restarts the horizon at the new position (deliveries after a seek are first deliveries),
  and so does a new primary. A planned handover hands the successor the exact horizon, the last
  delivery, with the consumers' state (`handed_over`): nothing is flagged after it. Each horizon
  carries the (leader epoch, wall-clock ms) it started at; a replica keeps the newer one, and of
  one start, the higher seq. Snapshots carry the horizon too, so a replica that restarted (its
  horizon is kept in memory) has it again at the next snapshot.

What it does not cover: a push that failed or timed out (an in-sync replica that does not answer
within `HORIZON_PUSH_TIMEOUT_S`; the fetch is answered anyway, and that replica would deliver those
seqs with deliver_count 1 if it became primary before the next snapshot), and a new primary that
restarts before it delivered its maybe-delivered range (the range is kept in memory).

Pure decisions here; the push itself is horizon_push.HorizonPusher, the node's imperative shell.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass

# How far beyond a fetch's highest seq the horizon is raised: one push per this many seqs delivered.
HORIZON_AHEAD = 1000


@dataclass(frozen=True, slots=True)
class DeliveryHorizon:
    """The highest seq that may have been delivered for the first time (`seq`), and when this
    horizon started: the primary's `leader_epoch` then and its wall-clock `since_ms`."""

    seq: int = 0
    leader_epoch: int = 0
    since_ms: int = 0

    def newer_than(self, other: DeliveryHorizon) -> bool:
        return (self.leader_epoch, self.since_ms) > (other.leader_epoch, other.since_ms)


NO_HORIZON = DeliveryHorizon()


def merged(held: DeliveryHorizon, incoming: DeliveryHorizon) -> DeliveryHorizon:
    """What a replica keeps when `incoming` arrives while it holds `held`: the newer start wins
    (a seek or a new primary may lower the seq), and of one start, the higher seq."""
    if incoming.newer_than(held):
        return incoming
    if held.newer_than(incoming):
        return held
    return incoming if incoming.seq > held.seq else held


def restarted(held: DeliveryHorizon, seq: int, leader_epoch: int, now_ms: int) -> DeliveryHorizon:
    """A horizon started anew at `seq` (a seek's position, or a new primary's) for `leader_epoch`
    at `now_ms`; its start is newer than `held`'s even when the clock did not move."""
    since_ms = now_ms if leader_epoch != held.leader_epoch else max(now_ms, held.since_ms + 1)
    return DeliveryHorizon(seq, leader_epoch, since_ms)


def handed_over(held: DeliveryHorizon, last_delivered: int, now_ms: int) -> DeliveryHorizon:
    """What a fenced and drained primary hands its successor with a consumer's state (a planned
    handover): nothing past `last_delivered` was delivered, so the horizon is exactly there, started
    anew, so that it replaces what pushes gave the successor (which covered up to HORIZON_AHEAD
    more) and the successor flags nothing it need not."""
    return DeliveryHorizon(last_delivered, held.leader_epoch, max(now_ms, held.since_ms + 1))


def maybe_delivered_until(held: DeliveryHorizon, last_delivered: int) -> int:
    """A replica becoming primary: the highest seq it must deliver as a redelivery (0 = none)."""
    return held.seq if held.seq > last_delivered else 0


def to_announce(held: DeliveryHorizon, delivered: Iterable[int], ahead: int = 0) -> int:
    """The seq a fetch that delivered the seqs `delivered` must raise the horizon to before it
    answers, `ahead` seqs beyond its highest (0 = it stays under the horizon: no push)."""
    highest = max(delivered, default=0)
    return highest + ahead if highest > held.seq else 0


def as_snapshot_fields(held: DeliveryHorizon, last_delivered: int) -> dict[str, int]:
    """The horizon as ConsumerSnapshot's delivery_horizon and horizon_since_ms."""
    return {"delivery_horizon": max(held.seq, last_delivered), "horizon_since_ms": held.since_ms}


# (stream, partition, consumer, horizon, in-sync replica node ids) -> whether every replica took it.
PushHorizon = Callable[[str, int, str, DeliveryHorizon, list[str]], Awaitable[bool]]
