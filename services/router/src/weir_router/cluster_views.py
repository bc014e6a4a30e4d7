"""Cluster-wide views (a section of the router, made by RouterCore in core.py): GetClusterInfo (every
registered node with its heartbeat and integrity report), StartScrub (fanned out to the alive nodes)
and GetClusterStreamStats (each node reports the partitions it leads; the latest analytics from
spark-analytics ride along). Read-only: a node that does not answer is listed, not fatal.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence

from google.protobuf.message import DecodeError
from weir.errors import WeirError
from weir.v1 import router_pb2, streams_pb2, types_pb2
from weir_server.analytics import STATS_SUBJECT

from weir_router.admin import led_by
from weir_router.routing import NodeView, Routing
from weir_router.settings import RouterSettings

logger = logging.getLogger(__name__)


class ClusterViews:
    """See the module docstring; `routing` gives the node registry, records and node clients,
    `lease_holder` (the controller's) the router holding the controller lease."""

    def __init__(
        self, routing: Routing, settings: RouterSettings, lease_holder: Callable[[], Awaitable[tuple[str, str]]]
    ) -> None:
        self._routing = routing
        self._settings = settings
        self._lease_holder = lease_holder

    async def cluster_info(self) -> router_pb2.GetClusterInfoResponse:
        controller_id, controller_address = await self._lease_holder()
        response = router_pb2.GetClusterInfoResponse(
            controller_id=controller_id, controller_address=controller_address, router_id=self._settings.router_id
        )
        for view in await self._routing.node_views():
            record = view.record
            response.nodes.add(
                node_id=record.node_id,
                client_address=record.client_address,
                internal_address=record.internal_address,
                metrics_address=record.metrics_address,
                zone=record.zone,
                capacity=record.capacity,
                alive=view.alive,
                registered_at_ms=record.registered_at_ms,
                last_heartbeat_ms=record.last_heartbeat_ms,
                scrub_passes=record.scrub_passes,
                scrub_last_pass_ms=record.scrub_last_pass_ms,
                corrupt_records=record.corrupt_records,
                integrity=record.integrity,
                rebuilding_partitions=[f"{stream}/{index}" for stream, index in record.rebuilding_partitions],
                number=record.number,
                diverged_tails_cut=record.diverged_tails_cut,
            )
        return response

    async def start_scrub(self) -> router_pb2.StartScrubResponse:
        """Ask every alive node to start a scrub pass now (in parallel); a node that does not answer
        or whose scrub is off is listed with the reason."""
        views = [view for view in await self._routing.node_views() if view.alive]

        async def start(view: NodeView) -> router_pb2.NodeScrubStart:
            node_id = view.record.node_id
            try:
                answer = await self._routing.nodes.replication(view.record.internal_address).start_scrub()
            except WeirError as error:
                return router_pb2.NodeScrubStart(node_id=node_id, error=str(error))
            reason = "" if answer.enabled else "its scrub is off (WEIR_NODE_SCRUB_BYTES_PER_SECOND=0)"
            return router_pb2.NodeScrubStart(
                node_id=node_id, started=answer.enabled, passes=answer.passes, error=reason
            )

        return router_pb2.StartScrubResponse(nodes=await asyncio.gather(*(start(view) for view in views)))

    async def cluster_stats(self, include_per_stream: bool) -> router_pb2.GetClusterStreamStatsResponse:
        """Fan out over the nodes: each node reports the partitions it leads (seed
        GetClusterStreamStats; skew = max - min over the nodes that answered)."""
        records = await self._routing.store.streams()
        views = await self._routing.node_views()
        nodes = {view.record.node_id: view for view in views}
        led_by_node: dict[str, dict[str, set[int]]] = {view.record.node_id: {} for view in views}
        for record in records:
            for node_id, partitions in led_by(record).items():
                led_by_node.setdefault(node_id, {})[record.config.name] = partitions

        async def node_stats(node_id: str) -> dict[str, streams_pb2.GetStreamInfoResponse]:
            client = self._routing.internal_client(node_id, nodes)
            names = sorted(led_by_node[node_id])
            infos = await asyncio.gather(*(client.stream_info(name) for name in names))
            return dict(zip(names, infos, strict=True))

        alive_ids = [view.record.node_id for view in views if view.alive]
        answers = await asyncio.gather(*(node_stats(node_id) for node_id in alive_ids), return_exceptions=True)
        response = router_pb2.GetClusterStreamStatsResponse(total_stream_count=len(records))
        partition_stats = add_node_summaries(response, views, led_by_node, dict(zip(alive_ids, answers, strict=True)))
        if include_per_stream:
            add_stream_summaries(response, records, partition_stats)
        analytics = await self._latest_analytics(records, nodes)
        if analytics is not None:
            response.analytics.CopyFrom(analytics)
        return response

    async def _latest_analytics(
        self, records: Sequence[types_pb2.StreamRecord], nodes: dict[str, NodeView]
    ) -> types_pb2.ClusterAnalytics | None:
        """The latest ClusterAnalytics spark-analytics published to the stats stream (subject
        `stats`, partition 0), read from that partition's primary; None when there is no stats
        stream or message yet, or its primary does not answer (the rest of the stats still go out)."""
        name = self._settings.analytics_stream
        record = next((record for record in records if record.config.name == name), None)
        if record is None or not record.placement.partitions:
            return None
        try:
            client = self._routing.internal_client(record.placement.partitions[0].primary_node_id, nodes)
            message = await client.latest_at_subject(name, STATS_SUBJECT, 0)
        except WeirError as error:
            logger.warning("cluster stats: stats stream %s: %s", name, error)
            return None
        if message is None:
            return None
        try:
            return types_pb2.ClusterAnalytics.FromString(message.payload)
        except DecodeError:
            logger.warning("cluster stats: stats stream %s seq %d is not a ClusterAnalytics", name, message.seq)
            return None


def _spread(values: Iterable[int]) -> int:
    items = list(values)
    return max(items) - min(items) if items else 0


# node id -> stream -> the stats of the partitions it reported, or why it did not answer
NodeAnswers = dict[str, "dict[str, streams_pb2.GetStreamInfoResponse] | BaseException"]


def add_node_summaries(
    response: router_pb2.GetClusterStreamStatsResponse,
    views: Sequence[NodeView],
    led_by_node: dict[str, dict[str, set[int]]],
    answers: NodeAnswers,
) -> dict[tuple[str, int], types_pb2.PartitionStats]:
    """One PerNodeSummary per registered node in `response` (pure), its figures from the
    partitions it leads only (its own answer also covers the copies it follows), and the totals
    and skews over the nodes that answered. Returns (stream, partition) -> the leader's stats."""
    partition_stats: dict[tuple[str, int], types_pb2.PartitionStats] = {}
    answered: list[router_pb2.PerNodeSummary] = []
    for view in views:
        node_id = view.record.node_id
        summary = response.nodes.add(node_id=node_id, address=view.record.client_address)
        led = led_by_node.get(node_id, {})
        summary.stream_count = len(led)
        summary.partition_count = sum(len(partitions) for partitions in led.values())
        answer = answers.get(node_id)
        if not view.alive:
            summary.status = "dead"
            continue
        if isinstance(answer, BaseException) or answer is None:
            summary.status = "unreachable"
            logger.warning("cluster stats: node %s: %s", node_id, answer)
            continue
        summary.status = "ok"
        for name, info in answer.items():
            for stats in info.stats.partitions:
                if stats.partition in led.get(name, ()):
                    partition_stats[(name, stats.partition)] = stats
                    summary.total_msg_count += stats.msg_count
                    summary.total_bytes += stats.bytes
        answered.append(summary)
    response.total_msg_count = sum(summary.total_msg_count for summary in answered)
    response.total_bytes = sum(summary.total_bytes for summary in answered)
    if answered:
        response.skew_partitions = _spread(summary.partition_count for summary in answered)
        response.skew_msg_count = _spread(summary.total_msg_count for summary in answered)
        response.skew_bytes = _spread(summary.total_bytes for summary in answered)
    return partition_stats


def add_stream_summaries(
    response: router_pb2.GetClusterStreamStatsResponse,
    records: Sequence[types_pb2.StreamRecord],
    partition_stats: dict[tuple[str, int], types_pb2.PartitionStats],
) -> None:
    """One per-stream entry per record in `response` (pure): each partition's primary and stats
    (empty stats where its primary did not answer), summed per stream."""
    for record in records:
        entry = response.streams.add(name=record.config.name, partitions=record.config.partitions)
        for placement in record.placement.partitions:
            entry.primary_node_ids.append(placement.primary_node_id)
            stats = partition_stats.get(
                (record.config.name, placement.partition), types_pb2.PartitionStats(partition=placement.partition)
            )
            entry.partition_stats.append(stats)
            entry.msg_count += stats.msg_count
            entry.bytes += stats.bytes
            entry.last_seq = max(entry.last_seq, stats.last_seq)
