"""MovePartition's asyncio shell: runs the steps `moves.py` decides, on the router the call reaches
(each write is a compare-and-set in Redis, so it needs no lock), reporting progress as it goes
(see `moves` for the steps and why each is safe).

Every placement change is a fenced epoch change: the partition's primary stops serving it, drains
and answers its log end (`TransferLeadership`, to itself or to the new copy), the new record is
written only if the stored one is still at the epoch it was decided from (with the in-sync record
in the same Redis transaction), and is then pushed to every node concerned. The fence lasts from
the primary's answer until it adopts the record; `longest_fence_ms` reports the longest one.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator

from weir.errors import AlreadyExistsError, FailedPreconditionError, UnavailableError, WeirError
from weir.v1 import router_pb2, types_pb2
from weir_server.metadata import InSyncRecord
from weir_server.replication import ReplicationResult

from weir_router import moves, rebalance
from weir_router.moves import MovePlan
from weir_router.routing import NodeView, Routing

logger = logging.getLogger(__name__)

DEFAULT_CATCH_UP_TIMEOUT_MS = 600_000
MAX_CATCH_UP_TIMEOUT_MS = 24 * 3600 * 1000
PROGRESS_INTERVAL_S = 1.0
FENCE_TIMEOUT_MS = 10_000  # how long one epoch change may hold the partition fenced at most


class MoveFailed(FailedPreconditionError):
    """A step of a move could not be done; the placement is as the steps before it left it."""


class PartitionMover:
    """One MovePartition call."""

    def __init__(self, routing: Routing, plan: MovePlan, catch_up_timeout_ms: int) -> None:
        self.routing = routing
        self.plan = plan
        self.catch_up_timeout_ms = catch_up_timeout_ms or DEFAULT_CATCH_UP_TIMEOUT_MS
        self.started = time.monotonic()
        self.longest_fence_ms = 0.0

    def progress(
        self, step: str, message: str, entry: types_pb2.PartitionPlacement, **figures: int
    ) -> router_pb2.MoveProgress:
        logger.info("move %s/%d: %s: %s", self.plan.stream, self.plan.partition, step, message)
        return router_pb2.MoveProgress(
            step=step,
            message=message,
            leader_epoch=entry.leader_epoch,
            longest_fence_ms=round(self.longest_fence_ms),
            elapsed_ms=round((time.monotonic() - self.started) * 1000),
            **figures,
        )

    async def run(self) -> AsyncIterator[router_pb2.MoveProgress]:
        plan = self.plan
        record, nodes = await self._current()
        moves.check_move(record, plan, {node_id for node_id, view in nodes.items() if view.alive})
        keep_copy = moves.leadership_only(record, plan)
        entry = record.placement.partitions[plan.partition]
        if plan.to_node_id not in moves.replicas_of(entry):
            record = await self._epoch_change(
                record, nodes, lambda current, end: moves.with_added_copy(current, plan.to_node_id, end)
            )
            await self._host_on_target(record, nodes)
            entry = record.placement.partitions[plan.partition]
            yield self.progress(
                "add_copy", f"{plan.to_node_id} holds a new copy, following {entry.primary_node_id}", entry
            )
        async for item in self._catch_up():
            yield item
        record, nodes = await self._current()
        entry = record.placement.partitions[plan.partition]
        if plan.from_node_id in moves.replicas_of(entry):
            if entry.primary_node_id == plan.from_node_id:
                record = await self._hand_over(record, nodes)
                entry = record.placement.partitions[plan.partition]
                yield self.progress("hand_over", f"{plan.to_node_id} leads now", entry)
            if keep_copy:
                entry = record.placement.partitions[plan.partition]
                yield self.progress(
                    "done", f"{plan.to_node_id} leads; copies stay on {', '.join(moves.replicas_of(entry))}", entry
                )
                return
            record = await self._epoch_change(
                record,
                nodes,
                lambda current, end: moves.with_copy_removed(current, plan.from_node_id, end, taken_by=plan.to_node_id),
            )
            await self._tell_removed(record, nodes)
            entry = record.placement.partitions[plan.partition]
            yield self.progress("remove_copy", f"the copy on {plan.from_node_id} is removed", entry)
        entry = record.placement.partitions[plan.partition]
        yield self.progress("done", f"copies now on {', '.join(moves.replicas_of(entry))}", entry)

    async def _current(self) -> tuple[types_pb2.StreamRecord, dict[str, NodeView]]:
        record = await self.routing.record_of(self.plan.stream)
        return record, await self.routing.nodes_by_id()

    async def _in_sync(self, entry: types_pb2.PartitionPlacement) -> tuple[list[str], InSyncRecord | None]:
        """The partition's live in-sync set for `entry`'s epoch, and the stored record it came from."""
        stored = await self.routing.store.in_sync(self.plan.stream, self.plan.partition)
        if stored is not None and stored.leader_epoch == entry.leader_epoch:
            return list(stored.in_sync), stored
        return list(entry.in_sync_node_ids), stored

    async def _fenced_end(
        self, entry: types_pb2.PartitionPlacement, nodes: dict[str, NodeView], to_node_id: str
    ) -> int:
        """Fence the partition on its primary until it holds everything in sync; its log end."""
        view = nodes.get(entry.primary_node_id)
        if view is None or not view.alive:
            raise UnavailableError(
                f"{self.plan.stream}/{self.plan.partition}: its primary {entry.primary_node_id} is down; "
                "retry after the failover"
            )
        answer = await self.routing.nodes.replication(view.record.internal_address).transfer_leadership(
            self.plan.stream, self.plan.partition, entry.leader_epoch, to_node_id, FENCE_TIMEOUT_MS
        )
        if answer.result_code != ReplicationResult.OK:
            raise MoveFailed(
                f"{self.plan.stream}/{self.plan.partition}: {entry.primary_node_id} refused to hand over: "
                f"{answer.result_code}: {answer.message}"
            )
        return int(answer.last_seq)

    async def _write(
        self,
        new_entry: types_pb2.PartitionPlacement,
        old_epoch: int,
        read_in_sync: InSyncRecord | None,
        nodes: dict[str, NodeView],
        fenced_at: float,
    ) -> types_pb2.StreamRecord:
        index = self.plan.partition
        value = InSyncRecord(new_entry.leader_epoch, new_entry.primary_node_id, tuple(new_entry.in_sync_node_ids))
        updated = await self.routing.store.update_stream_record(
            self.plan.stream,
            lambda current: current.placement.partitions[index].CopyFrom(new_entry),
            expected_epochs={index: old_epoch},
            in_sync={index: value},
            read_in_sync={index: read_in_sync},
        )
        if updated is None:
            raise MoveFailed(
                f"{self.plan.stream}/{self.plan.partition}: the placement changed meanwhile (a failover?); "
                "nothing was written: run the move again"
            )
        await self.routing.push_placement(updated, nodes)
        self.longest_fence_ms = max(self.longest_fence_ms, (time.monotonic() - fenced_at) * 1000)
        return updated

    async def _epoch_change(
        self, record: types_pb2.StreamRecord, nodes: dict[str, NodeView], change: moves.EntryChange
    ) -> types_pb2.StreamRecord:
        """One copy added or removed under a new epoch, with the same primary."""
        entry = record.placement.partitions[self.plan.partition]
        in_sync, read = await self._in_sync(entry)
        fenced_at = time.monotonic()
        end = await self._fenced_end(entry, nodes, entry.primary_node_id)
        current = types_pb2.PartitionPlacement()
        current.CopyFrom(entry)
        del current.in_sync_node_ids[:]
        current.in_sync_node_ids.extend(in_sync)
        return await self._write(change(current, end), entry.leader_epoch, read, nodes, fenced_at)

    async def _hand_over(self, record: types_pb2.StreamRecord, nodes: dict[str, NodeView]) -> types_pb2.StreamRecord:
        entry = record.placement.partitions[self.plan.partition]
        in_sync, read = await self._in_sync(entry)
        fenced_at = time.monotonic()
        end = await self._fenced_end(entry, nodes, self.plan.to_node_id)
        new_entry = rebalance.handed_over(entry, self.plan.to_node_id, end, in_sync)
        new_entry = moves.with_preference_taken(new_entry, self.plan.from_node_id, self.plan.to_node_id)
        return await self._write(new_entry, entry.leader_epoch, read, nodes, fenced_at)

    async def _host_on_target(self, record: types_pb2.StreamRecord, nodes: dict[str, NodeView]) -> None:
        """The target hosts the stream (created there when it had no partition of it) with the
        stream's consumers, so their state can be replicated to it."""
        target = self.routing.internal_client(self.plan.to_node_id, nodes)
        with contextlib.suppress(AlreadyExistsError):  # it hosts other partitions: the pushed record gave it this one
            await target.create_stream(record.config, record.placement)
        primary = self.routing.internal_client(record.placement.partitions[0].primary_node_id, nodes)
        for info in await primary.list_consumers(self.plan.stream):
            await target.create_consumer(self.plan.stream, info.config)

    async def _catch_up(self) -> AsyncIterator[router_pb2.MoveProgress]:
        """Until the target is in the in-sync set of the current epoch (progress every second)."""
        deadline = time.monotonic() + self.catch_up_timeout_ms / 1000
        last_report = 0.0
        while True:
            record, nodes = await self._current()
            entry = record.placement.partitions[self.plan.partition]
            in_sync, _ = await self._in_sync(entry)
            if self.plan.to_node_id in in_sync:
                return
            target = nodes.get(self.plan.to_node_id)
            if target is None or not target.alive:
                raise MoveFailed(
                    f"{self.plan.stream}/{self.plan.partition}: {self.plan.to_node_id} died while catching up; "
                    "its copy stays placed (not in sync): run the move again once it is back"
                )
            if time.monotonic() > deadline:
                raise MoveFailed(
                    f"{self.plan.stream}/{self.plan.partition}: {self.plan.to_node_id} did not catch up within "
                    f"{self.catch_up_timeout_ms} ms; it keeps its copy and goes on catching up: run the move again"
                )
            if time.monotonic() - last_report >= PROGRESS_INTERVAL_S:
                last_report = time.monotonic()
                copy_end, primary_end = await self._ends(entry, nodes)
                yield self.progress(
                    "catch_up",
                    f"{self.plan.to_node_id} holds seq {copy_end} of {primary_end}",
                    entry,
                    copy_last_seq=copy_end,
                    primary_last_seq=primary_end,
                )
            await asyncio.sleep(0.1)

    async def _ends(self, entry: types_pb2.PartitionPlacement, nodes: dict[str, NodeView]) -> tuple[int, int]:
        ends: list[int] = []
        for node_id in (self.plan.to_node_id, entry.primary_node_id):
            view = nodes.get(node_id)
            try:
                state = await self.routing.nodes.replication(view.record.internal_address).replica_state(  # type: ignore[union-attr]
                    self.plan.stream, self.plan.partition
                )
                ends.append(int(state.last_seq))
            except (WeirError, AttributeError):
                ends.append(0)
        return ends[0], ends[1]

    async def _tell_removed(self, record: types_pb2.StreamRecord, nodes: dict[str, NodeView]) -> None:
        """The old copy's node adopts the record that no longer places it there (it drops the copy;
        it also finds the record by itself on its next placement poll)."""
        view = nodes.get(self.plan.from_node_id)
        if view is None or not view.alive:
            return
        try:
            await self.routing.nodes.replication(view.record.internal_address).apply_placement(record)
        except WeirError as error:
            logger.warning(
                "move %s/%d: %s did not adopt its removal yet: %s",
                self.plan.stream,
                self.plan.partition,
                self.plan.from_node_id,
                error,
            )
