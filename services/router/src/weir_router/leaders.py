"""The controller's preferred-leader rebalance, its asyncio shell (decisions in `rebalance.py`).

Every `leader_rebalance_interval_ms` the controller looks for partitions whose preferred leader is
alive and in sync while another node leads them, or whose primary's scrub found damaged records of
them (they move to an intact in-sync replica), and moves each, one at a time: the primary
hands over (`TransferLeadership`: it fences the partition, drains it and waits until the preferred
leader holds its whole log), then the controller stores the next leader epoch with the new primary
and the unchanged in-sync set in one Redis transaction (only if the record is still at the epoch it
saw) and pushes it to the stream's nodes. A refused or timed-out handover leaves the partition where
it was; the next pass tries again.
"""

from __future__ import annotations

import logging
import time

from weir.errors import WeirError
from weir.v1 import types_pb2
from weir_server.metadata import InSyncRecord
from weir_server.replication import ReplicationResult

from weir_router import metrics, rebalance
from weir_router.routing import NodeView, Routing
from weir_router.settings import RouterSettings

logger = logging.getLogger(__name__)


class LeaderRebalancer:
    def __init__(self, routing: Routing, settings: RouterSettings) -> None:
        self.routing = routing
        self.settings = settings
        self._last_pass = 0.0

    def due(self) -> bool:
        interval_ms = self.settings.leader_rebalance_interval_ms
        return interval_ms > 0 and (time.monotonic() - self._last_pass) * 1000 >= interval_ms

    async def run(self, nodes: dict[str, NodeView]) -> int:
        """One pass (controller only, under the admin lock); returns the partitions moved."""
        self._last_pass = time.monotonic()
        alive = {node_id for node_id, view in nodes.items() if view.alive}
        damaged = {node_id: set(view.record.damaged_partitions) for node_id, view in nodes.items()}
        records = await self.routing.store.streams()
        in_sync: dict[tuple[str, int], list[str]] = {}
        read: dict[tuple[str, int], InSyncRecord | None] = {}
        for record in records:
            for entry in record.placement.partitions:
                key = (record.config.name, entry.partition)
                if rebalance.preferred_leader(entry) != entry.primary_node_id or key in damaged.get(
                    entry.primary_node_id, ()
                ):
                    stored = read[key] = await self.routing.store.in_sync(*key)
                    in_sync[key] = (
                        list(stored.in_sync)
                        if stored is not None and stored.leader_epoch == entry.leader_epoch
                        else list(entry.in_sync_node_ids)
                    )
        moved = 0
        for move in rebalance.handovers(records, in_sync, alive, damaged):
            record = next(record for record in records if record.config.name == move.stream)
            key = (move.stream, move.partition)
            if await self._move(record, move, in_sync[key], read[key], nodes):
                moved += 1
        return moved

    async def _move(
        self,
        record: types_pb2.StreamRecord,
        move: rebalance.Handover,
        in_sync: list[str],
        read_in_sync: InSyncRecord | None,
        nodes: dict[str, NodeView],
    ) -> bool:
        """Hand `move`'s partition to its preferred leader (TransferLeadership on the primary), then
        store the new placement, only if neither the epoch nor the in-sync record changed since
        `in_sync` was read from `read_in_sync` (a set the old primary shrank meanwhile must not be
        handed on as the new primary's)."""
        settings = self.settings
        primary = nodes[move.from_node_id].record.internal_address
        try:
            answer = await self.routing.nodes.replication(primary).transfer_leadership(
                move.stream, move.partition, move.leader_epoch, move.to_node_id, settings.leader_transfer_timeout_ms
            )
        except WeirError as error:
            metrics.LEADER_TRANSFERS.labels("unreachable").inc()
            logger.warning("%s/%d: handover to %s: %s", move.stream, move.partition, move.to_node_id, error)
            return False
        if answer.result_code != ReplicationResult.OK:
            metrics.LEADER_TRANSFERS.labels(answer.result_code).inc()
            logger.info(
                "%s/%d: handover to %s refused: %s", move.stream, move.partition, move.to_node_id, answer.message
            )
            return False
        entry = record.placement.partitions[move.partition]
        new_entry = rebalance.handed_over(entry, move.to_node_id, answer.last_seq, in_sync)
        updated = types_pb2.StreamRecord()
        updated.CopyFrom(record)
        updated.placement.partitions[move.partition].CopyFrom(new_entry)
        value = InSyncRecord(new_entry.leader_epoch, move.to_node_id, tuple(new_entry.in_sync_node_ids))
        if not await self.routing.store.replace_placement(
            updated,
            {move.partition: move.leader_epoch},
            {move.partition: value},
            read_in_sync={move.partition: read_in_sync},
        ):
            metrics.LEADER_TRANSFERS.labels("placement_changed").inc()
            logger.warning("%s/%d: placement changed during the handover; left as it is", move.stream, move.partition)
            return False  # the old primary's fence lapses on its own
        record.CopyFrom(updated)  # later moves of this stream build on this one
        metrics.LEADER_TRANSFERS.labels("ok").inc()
        logger.info(
            "%s/%d: leadership moved back to preferred leader %s from %s at seq %d (epoch %d)",
            move.stream,
            move.partition,
            move.to_node_id,
            move.from_node_id,
            answer.last_seq,
            new_entry.leader_epoch,
        )
        await self.routing.push_placement(updated, nodes)
        return True
