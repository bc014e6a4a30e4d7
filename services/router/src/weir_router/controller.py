"""The controller role (a section of the router, made by RouterCore in core.py): one router at a time holds
the lease (SET NX PX in Redis, renewed every `controller_tick_ms`). The holder marks nodes whose
heartbeat expired dead, fails their partitions over to the best alive in-sync replica
(`failover.choose_leader`), and now and then moves leadership back to preferred leaders
(`leaders.LeaderRebalancer`). The other routers forward controller calls to it (servicer.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time

from redis.exceptions import RedisError
from weir.errors import WeirError
from weir.v1 import internal_pb2, types_pb2
from weir_server.metadata import InSyncRecord

from weir_router import failover, metrics
from weir_router.leaders import LeaderRebalancer
from weir_router.routing import NodeView, Routing
from weir_router.settings import RouterSettings

logger = logging.getLogger(__name__)


class Controller:
    """The lease and what its holder does each tick; `held` says whether this router holds it."""

    def __init__(
        self,
        routing: Routing,
        settings: RouterSettings,
        holder: str,
        admin_lock: asyncio.Lock,
        rebalancer: LeaderRebalancer,
    ) -> None:
        """`holder` names this router in the lease; the leader rebalancer runs under `admin_lock`
        (RouterCore's: stream changes and leader rebalancing, one at a time)."""
        self._routing = routing
        self._settings = settings
        self._holder = holder
        self._admin_lock = admin_lock
        self._rebalancer = rebalancer
        self.held = False
        self._held_since = 0.0  # time.monotonic() when this router last took the role
        self._task: asyncio.Task[None] | None = None
        self._unavailable_logged: set[tuple[str, int, int]] = set()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop(), name="controller")

    async def stop(self) -> None:
        """Stop ticking and release the lease if held, so another router takes over at once."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        if self.held:
            with contextlib.suppress(RedisError, OSError):
                await self._routing.store.release_lease(self._holder)
        self.held = False
        metrics.IS_CONTROLLER.set(0)

    async def lease_holder(self) -> tuple[str, str]:
        """(router id, address) of the lease holder; ("", "") while nobody holds it."""
        holder = await self._routing.store.lease_holder()
        router_id, _, address = holder.partition(" ")
        return router_id, address

    async def _loop(self) -> None:
        interval_s = self._settings.controller_tick_ms / 1000
        while True:
            try:
                await self.tick()
            except (RedisError, OSError) as error:
                metrics.REDIS_ERRORS.inc()
                if self.held:
                    logger.warning(
                        "router %s: Redis unreachable, giving up the controller role: %s",
                        self._settings.router_id,
                        error,
                    )
                self._set_held(False)
            except Exception:
                logger.exception("controller tick failed")
            await asyncio.sleep(interval_s)

    def _set_held(self, value: bool) -> None:
        router_id = self._settings.router_id
        if value and not self.held:
            logger.info("router %s is now the controller", router_id)
            metrics.CONTROLLER_CHANGES.inc()
            self._held_since = time.monotonic()
        elif not value and self.held:
            logger.warning("router %s lost the controller lease", router_id)
        self.held = value
        metrics.IS_CONTROLLER.set(1 if value else 0)

    async def tick(self) -> None:
        """Renew or seek the lease; as controller, mark nodes with an expired heartbeat dead, fail
        their partitions over, and now and then move leadership back to preferred leaders."""
        lease_ms = self._settings.lease_ms
        if self.held:
            held = await self._routing.store.renew_lease(self._holder, lease_ms)
        else:
            held = await self._routing.store.acquire_lease(self._holder, lease_ms)
        self._set_held(held)
        views = await self._routing.node_views()
        alive = sum(1 for view in views if view.alive)
        metrics.NODES.labels("alive").set(alive)
        metrics.NODES.labels("dead").set(len(views) - alive)
        if not self.held:
            return
        waiting = self._awaiting_heartbeat(views)
        for view in views:
            if not view.alive and view.record.state == "alive" and view.record.node_id not in waiting:
                await self._routing.store.mark_dead(view.record.node_id)
                metrics.NODES_MARKED_DEAD.inc()
                logger.warning("node %s missed its heartbeats: marked dead", view.record.node_id)
        nodes = {view.record.node_id: view for view in views}
        if any(view.alive and view.record.ahead_partitions for view in views):
            await self.restore_lost_epochs(nodes)
        if alive + len(waiting) < len(views) or any(view.alive and view.record.rebuilding_partitions for view in views):
            await self.fail_over(nodes, waiting)
        if self._rebalancer.due():
            async with self._admin_lock:
                await self._rebalancer.run(nodes)

    def _awaiting_heartbeat(self, views: list[NodeView]) -> frozenset[str]:
        """The nodes whose missing heartbeat is not judged yet (`failover.awaiting_heartbeat`: this
        router became the controller less than their heartbeat TTL ago)."""
        controller_for_ms = (time.monotonic() - self._held_since) * 1000
        return failover.awaiting_heartbeat(
            ((view.record, view.alive) for view in views), controller_for_ms=controller_for_ms
        )

    async def fail_over(self, nodes: dict[str, NodeView], waiting: frozenset[str] = frozenset()) -> None:
        """Replace the dead primary of every partition that has one by its best alive in-sync
        replica (failover.py), bump the leader epoch, store the record and the new in-sync set in
        one transaction, then tell the stream's alive nodes (they also poll Redis). A primary that
        rebuilds the partition from another copy (its file was unreadable: its log is not the
        partition's history) counts as dead for that partition, and never as a candidate. A primary
        in `waiting` (its missing heartbeat not judged yet) is left where it is, and is no candidate."""
        alive = {node_id for node_id, view in nodes.items() if view.alive}
        not_judged_dead = alive | waiting
        rebuilding = {node_id: set(view.record.rebuilding_partitions) for node_id, view in nodes.items()}
        for record in await self._routing.store.streams():
            name = record.config.name
            orphaned = [
                entry
                for entry in record.placement.partitions
                if entry.primary_node_id not in not_judged_dead
                or (name, entry.partition) in rebuilding.get(entry.primary_node_id, ())
            ]
            if orphaned:
                await self._fail_over_stream(record, orphaned, nodes, alive, rebuilding)

    async def restore_lost_epochs(self, nodes: dict[str, NodeView]) -> None:
        """Put back the placements the metadata store lost: for each partition an alive node holds
        under a newer leader epoch than the stored record (NodeRecord.ahead_partitions), store the
        newest copy those nodes hold (`failover.newest_placement`) with its in-sync set, guarded by
        the stored epoch, and push it. Failover and rebalance then decide from it."""
        reporters: dict[tuple[str, int], list[str]] = {}
        for node_id, view in nodes.items():
            for stream, partition, _epoch in view.record.ahead_partitions if view.alive else ():
                reporters.setdefault((stream, partition), []).append(node_id)
        store = self._routing.store
        for record in await store.streams():
            name = record.config.name
            updated = types_pb2.StreamRecord()
            updated.CopyFrom(record)
            expected: dict[int, int] = {}
            restored: dict[int, InSyncRecord] = {}
            read_in_sync: dict[int, InSyncRecord | None] = {}
            for entry in record.placement.partitions:
                asked = reporters.get((name, entry.partition), [])
                copies = [state.placement for state in await self._replica_states(name, entry.partition, asked, nodes)]
                newest = failover.newest_placement(entry, copies)
                if newest is None:
                    continue
                updated.placement.partitions[entry.partition].CopyFrom(newest)
                expected[entry.partition] = entry.leader_epoch
                read_in_sync[entry.partition] = await store.in_sync(name, entry.partition)
                restored[entry.partition] = InSyncRecord(
                    newest.leader_epoch, newest.primary_node_id, tuple(newest.in_sync_node_ids)
                )
                self._log_restored(name, entry, newest, asked)
            if expected and await store.replace_placement(updated, expected, restored, read_in_sync=read_in_sync):
                await self._routing.push_placement(updated, nodes)

    async def _fail_over_stream(
        self,
        record: types_pb2.StreamRecord,
        orphaned: list[types_pb2.PartitionPlacement],
        nodes: dict[str, NodeView],
        alive: set[str],
        rebuilding: dict[str, set[tuple[str, int]]],
    ) -> None:
        """Promote a replica for each of the stream's `orphaned` partitions that has one, and store
        the new record in one transaction guarded by the epochs and in-sync sets read here."""
        store = self._routing.store
        updated = types_pb2.StreamRecord()
        updated.CopyFrom(record)
        expected: dict[int, int] = {}
        in_sync_records: dict[int, InSyncRecord] = {}
        read_in_sync: dict[int, InSyncRecord | None] = {}
        for entry in orphaned:
            stored = read_in_sync[entry.partition] = await store.in_sync(record.config.name, entry.partition)
            new_entry = await self._promote(
                record.config.name, entry, stored, nodes=nodes, alive=alive, rebuilding=rebuilding
            )
            if new_entry is None:
                continue
            updated.placement.partitions[entry.partition].CopyFrom(new_entry)
            expected[entry.partition] = entry.leader_epoch
            in_sync_records[entry.partition] = InSyncRecord(
                new_entry.leader_epoch, new_entry.primary_node_id, tuple(new_entry.in_sync_node_ids)
            )
        if not expected:
            return
        dead = sorted({entry.primary_node_id for entry in orphaned if entry.partition in expected} - alive)
        if not await store.replace_placement(
            updated,
            expected,
            in_sync_records,
            read_in_sync={index: read_in_sync[index] for index in expected},
            dead_nodes=dead,
        ):
            logger.warning(
                "%s: placement, in-sync set or the primary's heartbeat changed during failover; deciding again "
                "next tick",
                record.config.name,
            )
            return
        metrics.LEADER_ELECTIONS.inc(len(expected))
        await self._routing.push_placement(updated, nodes)

    async def _promote(
        self,
        stream: str,
        entry: types_pb2.PartitionPlacement,
        stored: InSyncRecord | None,
        *,
        nodes: dict[str, NodeView],
        alive: set[str],
        rebuilding: dict[str, set[tuple[str, int]]],
    ) -> types_pb2.PartitionPlacement | None:
        """The partition's new placement entry with its best candidate promoted; None (logged once
        per leader epoch) when no in-sync replica is alive."""
        in_sync = (
            list(stored.in_sync)
            if stored is not None and stored.leader_epoch == entry.leader_epoch
            else list(entry.in_sync_node_ids)
        )
        candidates = [
            node_id
            for node_id in in_sync
            if node_id in alive
            and node_id != entry.primary_node_id
            and (stream, entry.partition) not in rebuilding.get(node_id, ())
        ]
        states = await self._replica_states(stream, entry.partition, candidates, nodes)
        newest = failover.newest_placement(entry, [state.placement for state in states])
        if newest is not None:  # the store lost a newer placement: put it back; decide from it next tick
            self._log_restored(stream, entry, newest, [state.node_id for state in states])
            return newest
        views = self._replica_views(stream, entry.partition, states)
        promotion = failover.choose_leader(entry, in_sync, views)
        if promotion is None:
            key = (stream, entry.partition, entry.leader_epoch)
            if key not in self._unavailable_logged:
                self._unavailable_logged.add(key)
                logger.error(
                    "%s/%d: primary %s is dead and no in-sync replica is alive (in-sync: %s); the partition "
                    "stays unavailable until one returns",
                    *key[:2],
                    entry.primary_node_id,
                    in_sync,
                )
            return None
        new_entry = failover.promoted(entry, promotion, in_sync, alive)
        logger.warning(
            "%s/%d: primary %s %s; promoted %s (log valid through seq %d) under leader epoch %d",
            stream,
            entry.partition,
            entry.primary_node_id,
            "is dead" if entry.primary_node_id not in alive else "rebuilds the partition's unreadable file",
            promotion.leader,
            promotion.valid_end,
            new_entry.leader_epoch,
        )
        return new_entry

    async def _replica_states(
        self, stream: str, partition: int, asked: list[str], nodes: dict[str, NodeView]
    ) -> list[internal_pb2.GetReplicaStateResponse]:
        """What each of the `asked` nodes holds of the partition (those that answer)."""

        async def ask(node_id: str) -> internal_pb2.GetReplicaStateResponse | None:
            try:
                address = nodes[node_id].record.internal_address
                return await self._routing.nodes.replication(address).replica_state(stream, partition)
            except WeirError as error:
                logger.warning("%s/%d: replica %s did not answer: %s", stream, partition, node_id, error)
                return None

        answers = await asyncio.gather(*(ask(node_id) for node_id in asked))
        return [answer for answer in answers if answer is not None]

    def _replica_views(
        self, stream: str, partition: int, states: list[internal_pb2.GetReplicaStateResponse]
    ) -> dict[str, failover.ReplicaView]:
        views: dict[str, failover.ReplicaView] = {}
        for state in states:
            if state.rebuilding:  # its log is not the partition's history yet: never promoted
                logger.warning(
                    "%s/%d: replica %s is rebuilding an unreadable file: no candidate", stream, partition, state.node_id
                )
                continue
            views[state.node_id] = failover.ReplicaView(state.node_id, state.replica_epoch, state.last_seq)
        return views

    def _log_restored(
        self,
        stream: str,
        entry: types_pb2.PartitionPlacement,
        newest: types_pb2.PartitionPlacement,
        holders: list[str],
    ) -> None:
        metrics.LOST_EPOCHS_RESTORED.inc()
        logger.error(
            "%s/%d: the metadata store had lost leader epoch %d (it recorded %d): restoring the placement that "
            "node(s) %s hold (primary %s)",
            stream,
            entry.partition,
            newest.leader_epoch,
            entry.leader_epoch,
            ", ".join(holders),
            newest.primary_node_id,
        )
