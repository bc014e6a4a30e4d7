"""Shipping one partition from its primary to its secondaries (DESIGN §5).

A `PartitionShipper` runs while this instance holds the partition's lease, for one leader epoch:

- One `_FollowerLoop` per secondary pulls from the primary with FetchReplication (reporting what
  the follower holds, which is how the primary learns its progress for the in-sync set and the high
  watermark) and pushes what it got with ReplicateMessage, both as lockstep exchanges on long-lived
  calls (FetchReplicationStream, ReplicateMessageStream). What it pushes is the primary's record
  batches, their bytes untouched: this process never decodes a record (issue 25). Positions
  come from the follower itself (GetReplicaState), never from this process, so a restarted
  replicator resumes exactly where each follower is: no gap, no duplicate. Followers in step share
  one fetch a round (`fetch_rounds.FetchRounds`, `fetch_coalesce_ms`); each keeps its own push.
- One tail of the primary's change feed, filtered at the primary to this stream and partition
  without appends, collects what data pulls cannot see: removals of single
  messages (work-queue acks, dead-letter moves, max_msgs_per_subject), consumer state changes,
  stream updates and deletion. Each follower loop ships the removals it saw *before* its last pull,
  so a removal never reaches a follower ahead of the record it removes. Consumer snapshots (full
  state with pending) follow each change, at most every `snapshot_interval_ms`; one read of them
  at the primary serves every follower that needs no newer one (`snapshot_reads.SnapshotReads`).
  While a follower's snapshot is due, its fetch waits for records only (wait_for_records_only).
- The feed position shipped to every follower is stored in Redis (``replicator:position``), so a
  restarted or new owner resumes the tail there. Without a usable position (first start, a new
  primary, a trimmed feed) it reads the primary's whole retained feed and re-ships every consumer
  snapshot: the Replicate* calls are idempotent.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time

from weir.client import NodeClient
from weir.errors import ChangeFeedTruncatedError, PositionOutOfRangeError, ResultCode, WeirError
from weir.v1 import internal_pb2, types_pb2
from weir_server.internal_clients import ChangeFeedClient, ReplicationClient
from weir_server.replication import ReplicationResult

from weir_replicator import metrics
from weir_replicator.follower_loops import FollowerLoops
from weir_replicator.followers import FollowerState, Removal
from weir_replicator.heal import heal
from weir_replicator.ownership import Ownership
from weir_replicator.sessions import Member, PreparedFetch, SessionHub
from weir_replicator.settings import ReplicatorSettings
from weir_replicator.side_changes import SideChangeShipper
from weir_replicator.snapshot_reads import SnapshotReads

logger = logging.getLogger(__name__)

MAX_BACKOFF_S = 5.0
LOG_EVERY = 50


def fetch_wait_ms(
    *,
    side_changes_pending: bool,
    consumers_dirty: bool,
    since_snapshot_ms: float,
    snapshot_interval_ms: int,
    fetch_wait_ms: int,
) -> int:
    """How long (ms) one FetchReplication may wait at the primary for new records before the
    follower loop must run again for the changes that do not come with records.

    - Side changes due now (removals, tombstones, a stream update or deletion): 0, ship them at once.
    - Consumer state changed: wait until the next snapshot is due (`snapshot_interval_ms` after the
      last one; `since_snapshot_ms` have passed), at most `fetch_wait_ms`. Waiting 0 here instead made
      the loop spin through empty fetches until the interval passed: with a consumer acking under
      replicas 3, that took the server core for ~80 ms in every 100 and stalled ack-all publishes.
    - Nothing pending: `fetch_wait_ms`. A wait ends at once when records arrive."""
    if side_changes_pending:
        return 0
    if consumers_dirty:
        return max(0, min(fetch_wait_ms, math.ceil(snapshot_interval_ms - since_snapshot_ms)))
    return fetch_wait_ms


def push_request(
    stream: str, partition: int, leader_epoch: int, after_seq: int, response: internal_pb2.FetchReplicationResponse
) -> internal_pb2.ReplicateMessageRequest | None:
    """What to push to a follower whose log ends at `after_seq` for a fetch's answer; None when it
    brought nothing. Record batches go as they came (their CRC32Cs and log-matching checks travel
    inside them, for the follower to verify); a primary of an earlier version answers with a record
    list, passed on as such (a rolling upgrade may start with the replicators)."""
    if not (response.record_batches or response.records):
        return None
    push = internal_pb2.ReplicateMessageRequest(
        stream=stream,
        partition=partition,
        leader_epoch=leader_epoch,
        after_seq=after_seq,
        high_watermark=response.high_watermark,
        primary_last_seq=response.last_seq,
    )
    if response.record_batches:
        push.record_batches.extend(response.record_batches)
    else:
        push.records.extend(response.records)
        push.record_crc32s.extend(response.record_crc32s)
        if response.HasField("follower_last_crc32"):  # log matching, checked by the follower
            push.after_crc32 = response.follower_last_crc32
    return push


class PartitionShipper:
    def __init__(
        self,
        *,
        settings: ReplicatorSettings,
        ownership: Ownership,
        record: types_pb2.StreamRecord,
        partition: int,
        addresses: dict[str, str],
        clients: ClientPool,
        sessions: SessionHub,
        lease_valid: asyncio.Event,
    ) -> None:
        self.settings = settings
        self.ownership = ownership
        self.record = record
        self.stream = record.config.name
        self.partition = partition
        entry = record.placement.partitions[partition]
        self.epoch = entry.leader_epoch
        self.primary = entry.primary_node_id
        self.primary_address = addresses.get(self.primary, "")
        self.followers = [FollowerState(node_id, addresses.get(node_id, "")) for node_id in entry.secondary_node_ids]
        self._snapshot_reads = SnapshotReads(self._read_snapshots)
        self._side_changes = SideChangeShipper(
            stream=self.stream,
            partition=partition,
            leader_epoch=self.epoch,
            snapshot_reads=self._snapshot_reads,
            snapshot_interval_ms=settings.snapshot_interval_ms,
            read_config=self._read_config,
        )
        self.clients = clients
        self._sessions = sessions
        self._members: list[Member] = []
        self._loops: FollowerLoops | None = None
        self.lease_valid = lease_valid
        self.observed_through = 0
        self._tasks: list[asyncio.Task[None]] = []
        self.labels = self._labels = (self.stream, str(partition))

    @property
    def key(self) -> tuple[str, int, int, str]:
        """What the shipper was started for; a different key means restart it."""
        return self.stream, self.partition, self.epoch, self.primary

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        name = f"{self.stream}/{self.partition}"
        self._tasks = [loop.create_task(self._tail(), name=f"tail:{name}")]
        self._tasks.append(loop.create_task(self._save_positions(), name=f"position:{name}"))
        if self.settings.replication_sessions:  # each follower's rounds in its node pair's session
            self._members = [self._sessions.join(self.primary_address, self, f) for f in self.followers]
        else:  # a loop per follower (follower_loops.py)
            self._loops = FollowerLoops(
                self,
                self.followers,
                primary_address=self.primary_address,
                clients=self.clients,
                fetch_coalesce_ms=self.settings.fetch_coalesce_ms,
                timeout_s=self.settings.node_timeout_ms / 1000,
                retry_backoff_s=self.settings.retry_backoff_ms / 1000,
            )
            self._loops.start()

    async def stop(self) -> None:
        for member in self._members:
            self._sessions.leave(self.primary_address, member)
        self._members = []
        if self._loops is not None:
            await self._loops.stop()
        for task in self._tasks:
            task.cancel()
        self._snapshot_reads.close()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for follower in self.followers:
            with contextlib.suppress(KeyError):
                metrics.REPLICATION_LAG.remove(*self._labels, follower.node_id)

    # -- the primary's change feed -----------------------------------------------------------------

    async def _tail(self) -> None:
        feed = self.clients.change_feed(self.primary_address)
        stored = await self.ownership.position(self.stream, self.partition)
        start = stored[1] + 1 if stored is not None and stored[0] == self.primary else 0
        while True:
            try:
                # Only what the followers need: this partition's removals and consumer changes and
                # the stream's lifecycle; appends come with FetchReplication.
                async for batch in feed.tail_changes(
                    start, 1000, stream=self.stream, partition=self.partition, exclude_appends=True
                ):
                    for change in batch.changes:
                        self._observe(change)
                    start = max(start, batch.through_change_seq + 1)
                    self.observed_through = max(self.observed_through, batch.through_change_seq)
            except (ChangeFeedTruncatedError, PositionOutOfRangeError) as error:
                # Retention removed what follows the stored position, or the primary's feed starts
                # over below it (its data was replaced): re-read what it retains.
                logger.warning("%s/%s: %s; re-reading the retained feed", *self._labels, error)
                start = 0
                self._consumers_changed()
            except WeirError as error:
                metrics.ERRORS.labels("tail").inc()
                logger.warning("%s/%s: change feed of %s: %s", *self._labels, self.primary, error)
            await asyncio.sleep(self.settings.retry_backoff_ms / 1000)

    def _observe(self, change: types_pb2.Change) -> None:
        if change.stream != self.stream:
            return
        kind = change.WhichOneof("kind")
        if kind in ("stream_updated", "stream_deleted", "consumer_created"):
            for follower in self.followers:
                if kind == "stream_updated":
                    follower.config_dirty = True
                elif kind == "stream_deleted":
                    follower.delete_stream = True
            if kind == "consumer_created":
                self._consumers_changed()
            return
        if kind == "consumer_deleted":
            for follower in self.followers:
                follower.tombstones.add(change.consumer_deleted.consumer)
            return
        if change.partition != self.partition or change.role != types_pb2.PARTITION_ROLE_PRIMARY:
            return
        if kind == "remove":
            removal = Removal(change.change_seq, list(change.remove.seqs), change.remove.reason)
            for follower in self.followers:
                follower.removals.append(removal)
        elif kind == "consumer_state":
            self._consumers_changed()

    def _consumers_changed(self) -> None:
        """Every follower needs the primary's consumer state as read after this change."""
        generation = self._snapshot_reads.changed()
        for follower in self.followers:
            follower.consumers_dirty = True
            follower.consumers_generation = generation

    async def _save_positions(self) -> None:
        saved = -1
        while True:
            await asyncio.sleep(1.0)
            through = min((follower.shipped_through for follower in self.followers), default=0)
            if through > saved and self.lease_valid.is_set():
                try:
                    await self.ownership.save_position(self.stream, self.partition, self.primary, through)
                    saved = through
                except OSError as error:
                    logger.warning("%s/%s: could not store the feed position: %s", *self._labels, error)

    # -- one follower's part of its session's rounds (sessions.py) ------------------------------------

    async def sync_position(self, follower: FollowerState) -> bool:
        """Learn where the follower's log ends, making it adopt the epoch first; False while it is
        at another epoch (the session retries after a pause). Errors: WeirError of a call."""
        target = self.clients.replication(follower.address)
        try:
            state = await target.replica_state(self.stream, self.partition)
        except WeirError as error:
            if error.result_code != ResultCode.NO_SUCH_STREAM:
                raise
            await target.replicate(
                "ReplicateStreamCreate", internal_pb2.ReplicateStreamCreateRequest(record=self.record)
            )
            state = await target.replica_state(self.stream, self.partition)
        if state.replica_epoch != self.epoch:
            await target.apply_placement(self.record)
            state = await target.replica_state(self.stream, self.partition)
        if state.replica_epoch != self.epoch:
            logger.info(
                "%s/%s: %s is at epoch %d, waiting for %d",
                *self._labels,
                follower.node_id,
                state.replica_epoch,
                self.epoch,
            )
            return False
        if follower.diverged:  # cut back to where it matches the primary before anything is pushed
            reply = await heal(
                stream=self.stream,
                partition=self.partition,
                leader_epoch=self.epoch,
                follower_node_id=follower.node_id,
                follower_log=(state.first_seq, state.last_seq),
                primary=self.clients.replication(self.primary_address),
                follower=target,
            )
            if reply.result_code != ReplicationResult.OK:
                return False
            follower.diverged = False
            state.first_seq, state.last_seq = reply.first_seq, reply.last_seq
        follower.last_seq = state.last_seq
        follower.first_seq = state.first_seq
        follower.consumers_dirty = True  # whatever it holds: the state as last read will do
        follower.consumers_generation = self._snapshot_reads.generation
        return True

    def prepare_fetch(self, follower: FollowerState) -> PreparedFetch:
        """The follower's fetch entry for the next round (its progress report), how long the round
        may wait for it, and what it must ship after the round: the removals seen before the fetch."""
        assert follower.last_seq is not None
        wait_ms = fetch_wait_ms(
            side_changes_pending=follower.side_changes_pending,
            consumers_dirty=follower.consumers_dirty,
            since_snapshot_ms=(time.monotonic() - follower.last_snapshot_s) * 1000,
            snapshot_interval_ms=self.settings.snapshot_interval_ms,
            fetch_wait_ms=self.settings.fetch_wait_ms,
        )
        request = internal_pb2.FetchReplicationRequest(
            stream=self.stream,
            partition=self.partition,
            leader_epoch=self.epoch,
            follower_node_id=follower.node_id,
            follower_last_seq=follower.last_seq,
            max_messages=self.settings.max_batch_messages,
            max_bytes=self.settings.max_batch_bytes,
            want_record_batch=True,
            # Consumer state already due at the snapshot time: deliveries and acks need not end the wait.
            wait_for_records_only=follower.consumers_dirty,
        )
        return PreparedFetch(request, wait_ms, list(follower.removals), self.observed_through)

    async def push_for(
        self, follower: FollowerState, answer: internal_pb2.FetchReplicationResponse
    ) -> tuple[bool, internal_pb2.ReplicateMessageRequest | None]:
        """What the round pushes to the follower for the primary's `answer`: (False, None) when the
        primary refused or a truncation was refused (the member backs off), else (True, the push or
        None when the answer brought no records). The primary's retention truncation is applied first.
        Errors: WeirError of the truncation."""
        if answer.result_code != ReplicationResult.OK:
            logger.info("%s/%s: primary %s: %s %s", *self._labels, self.primary, answer.result_code, answer.message)
            return False, None
        assert follower.last_seq is not None
        if answer.first_seq > follower.first_seq and follower.first_seq <= follower.last_seq + 1:
            reply = await self.clients.replication(follower.address).replicate(
                "ReplicateTruncate",
                internal_pb2.ReplicateTruncateRequest(
                    stream=self.stream, partition=self.partition, leader_epoch=self.epoch, first_seq=answer.first_seq
                ),
            )
            if not self._accepted(follower, reply):
                return False, None
        return True, push_request(self.stream, self.partition, self.epoch, follower.last_seq, answer)

    def accept_push(
        self,
        follower: FollowerState,
        push: internal_pb2.ReplicateMessageRequest,
        answer: internal_pb2.FetchReplicationResponse,
        reply: internal_pb2.ReplicateResponse,
    ) -> bool:
        """Take the follower's reply to its push; False when it refused (the member backs off)."""
        if not self._accepted(follower, reply):
            return False
        metrics.SHIPPED_MESSAGES.labels(*self._labels).inc(answer.record_count or len(push.records))
        metrics.SHIPPED_BYTES.labels(*self._labels).inc(sum(map(len, push.record_batches or push.records)))
        return True

    async def finish_round(
        self, follower: FollowerState, prepared: PreparedFetch, answer: internal_pb2.FetchReplicationResponse
    ) -> None:
        """After the round's push: the lag gauge, then what does not come with records (the removals
        seen before the fetch first). Errors: WeirError of a Replicate* call."""
        metrics.REPLICATION_LAG.labels(*self._labels, follower.node_id).set(
            max(0, answer.last_seq - (follower.last_seq or 0))
        )
        removals = prepared.removals
        if removals or follower.side_changes_pending or follower.consumers_dirty:
            await self._side_changes.ship(follower, self.clients.replication(follower.address), removals)
        follower.shipped_through = max(follower.shipped_through, prepared.observed_through)

    async def _read_config(self) -> types_pb2.StreamConfig:
        """The stream's config as the primary holds it (for a stream update)."""
        info = await self.clients.node(self.primary_address).stream_info(self.stream)
        return info.config

    async def _read_snapshots(self) -> internal_pb2.GetConsumerSnapshotsResponse:
        """GetConsumerSnapshots on the primary (SnapshotReads shares it between the followers)."""
        metrics.SNAPSHOT_READS.labels(*self._labels).inc()
        return await self.clients.replication(self.primary_address).consumer_snapshots(
            self.stream, self.partition, self.epoch
        )

    def _accepted(self, follower: FollowerState, reply: internal_pb2.ReplicateResponse) -> bool:
        if reply.result_code == ReplicationResult.OK:
            follower.last_seq = reply.last_seq
            follower.first_seq = reply.first_seq
            return True
        if reply.result_code == ReplicationResult.OUT_OF_ORDER:
            follower.last_seq = reply.last_seq  # resend from where its log ends
            follower.first_seq = reply.first_seq
            return True
        metrics.ERRORS.labels(reply.result_code).inc()
        logger.warning("%s/%s -> %s: %s %s", *self._labels, follower.node_id, reply.result_code, reply.message)
        follower.last_seq = None  # re-sync (adopt the epoch, re-read the position)
        follower.diverged = reply.result_code == ReplicationResult.DIVERGENCE  # and heal it first (heal.py)
        return False


class ClientPool:
    """One client per node address and API, kept for the replicator's lifetime."""

    def __init__(self, timeout_s: float) -> None:
        self.timeout_s = timeout_s
        self._replication: dict[str, ReplicationClient] = {}
        self._feeds: dict[str, ChangeFeedClient] = {}
        self._nodes: dict[str, NodeClient] = {}

    def replication(self, address: str) -> ReplicationClient:
        client = self._replication.get(address)
        if client is None:
            client = self._replication[address] = ReplicationClient(address, timeout_s=self.timeout_s)
        return client

    def change_feed(self, address: str) -> ChangeFeedClient:
        client = self._feeds.get(address)
        if client is None:
            client = self._feeds[address] = ChangeFeedClient(address, timeout_s=self.timeout_s)
        return client

    def node(self, address: str) -> NodeClient:
        client = self._nodes.get(address)
        if client is None:
            client = self._nodes[address] = NodeClient(address, timeout_s=self.timeout_s)
        return client

    async def close(self) -> None:
        for pool in (self._replication, self._feeds, self._nodes):
            for client in pool.values():
                await client.close()
