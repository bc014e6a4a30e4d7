"""What `weir.Client`'s routing and cluster admin calls return: frozen dataclasses, not the generated
protobuf messages (weir.info holds the stream and consumer ones).

- `Route` (`Client.route`): a stream's config and one `PartitionRoute` per partition (its primary
  and secondary `Broker`s, leader epoch and permission).
- `GroupInfo` (`Client.group_info`): a consumer group's generation and live `GroupMember`s.
- `ClusterInfo` (`Client.cluster_info`): the registered nodes (`NodeInfo`) and the controller.
- `ClusterStats` (`Client.cluster_stats`): per node (`NodeSummary`), per stream (`StreamSummary`),
  totals, skew, and the analytics job's latest figures (`ClusterAnalytics`: `AnalyticsPartition`,
  `AnalyticsConsumer`, `AnalyticsReplica`, `AnalyticsNode`, `AnalyticsFeedPosition`).
- `MoveProgress` (each step of `Client.move_partition`), `RebalancePlan` (`Client.plan_rebalance`:
  `PlannedMove`s and each node's `NodeShare` before and after), `ScrubStart` (`Client.start_scrub`:
  one `NodeScrubStart` per node).
- `ScheduledPage` (`Client.list_scheduled`): a page of `ScheduledMessage`s and where the next starts.

Each follows one message of proto/weir/v1/router.proto, types.proto or streams.proto (its docstring
names it) field for field, under the proto's names (the proto's comments give each field's
meaning); units are in the names (`_ms`: milliseconds, since the Unix epoch for a time; `bytes`:
bytes; `_per_second`: a rate). The only changes of shape: tuples for repeated fields, string
Literals for enums, None for an unset message or optional field (`ClusterStats.analytics`,
`ScheduledMessage.key`), (key, value) pairs for a message's headers. `from_proto` and `to_proto`
are `ProtoMirror`'s, read off the dataclass's fields (pure; tests/test_info.py round-trips every
field of every message and fails when a proto field has no dataclass field).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from weir.info import PARTITION_ROLES, PartitionInfo, PartitionRole, ProtoMirror, StreamConfig
from weir.v1 import router_pb2, streams_pb2, types_pb2

Permission = Literal["none", "read", "write", "read_write"]
"""What a client may do with a partition now (router.proto Permission): "read_write" while its
primary is alive, "none" while it is dead."""

PERMISSIONS: dict[Permission, router_pb2.Permission] = {
    "none": router_pb2.PERMISSION_NONE,
    "read": router_pb2.PERMISSION_READ,
    "write": router_pb2.PERMISSION_WRITE,
    "read_write": router_pb2.PERMISSION_READ_WRITE,
}


# -- routes -------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Broker(ProtoMirror):
    """A node as a route names it (router.proto Broker): its `node_id`, client `address`
    ("host:port") and whether it is `alive` (False once it missed its heartbeats)."""

    _proto = router_pb2.Broker

    node_id: str
    address: str = ""
    alive: bool = False


@dataclass(frozen=True, slots=True)
class PartitionRoute(ProtoMirror):
    """Where one partition is served (router.proto PartitionRoute): its `primary` and
    `secondaries`, the `leader_epoch`, and `permission` ("read_write" while the primary is alive,
    "none" while it is dead)."""

    _proto = router_pb2.PartitionRoute
    _nested = {"primary": Broker, "secondaries": Broker}
    _enums = {"permission": PERMISSIONS}

    partition: int
    primary: Broker
    secondaries: tuple[Broker, ...] = ()
    leader_epoch: int = 0
    permission: Permission = "none"


@dataclass(frozen=True, slots=True)
class Route(ProtoMirror):
    """A stream's route (router.proto QueryRouteResponse): its effective `config` and one
    PartitionRoute per partition, in partition order (`len(route.partitions)` is its partition
    count)."""

    _proto = router_pb2.QueryRouteResponse
    _nested = {"config": StreamConfig, "partitions": PartitionRoute}

    config: StreamConfig
    partitions: tuple[PartitionRoute, ...] = ()


# -- consumer groups ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupMember(ProtoMirror):
    """A live member of a consumer group (router.proto GroupMember): its `client_id`, its last
    QueryAssignment (`last_heartbeat_ms`, ms since the Unix epoch, the metadata store's clock) and
    the `partitions` it holds."""

    _proto = router_pb2.GroupMember

    client_id: str
    last_heartbeat_ms: int = 0
    partitions: tuple[int, ...] = ()


@dataclass(frozen=True, slots=True)
class GroupInfo(ProtoMirror):
    """A consumer group now (router.proto GetGroupInfoResponse): its `generation` (bumped whenever
    an assignment changes; 0 for a group nobody joined) and its live `members`, by client_id."""

    _proto = router_pb2.GetGroupInfoResponse
    _nested = {"members": GroupMember}

    generation: int = 0
    members: tuple[GroupMember, ...] = ()


# -- nodes --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeInfo(ProtoMirror):
    """A registered node (router.proto NodeInfo): its addresses ("host:port"), `zone`, placement
    `capacity` (0 = 1), `alive`, `registered_at_ms` and `last_heartbeat_ms` (ms since the Unix
    epoch); its background scrub: complete `scrub_passes`, `scrub_last_pass_ms` (0 = none yet),
    `corrupt_records` found in the last pass, SQLite's `integrity` check ("ok" when clean), the
    `rebuilding_partitions` ("stream/partition") it rebuilds from another copy; `number`, the
    cluster's number for it (1, 2, ...; never reused); and `diverged_tails_cut`, the diverged tails
    it cut from its copies since it started, each copied again from the primary (healed)."""

    _proto = router_pb2.NodeInfo

    node_id: str
    client_address: str = ""
    internal_address: str = ""
    metrics_address: str = ""
    zone: str = ""
    capacity: int = 0
    alive: bool = False
    registered_at_ms: int = 0
    last_heartbeat_ms: int = 0
    scrub_passes: int = 0
    scrub_last_pass_ms: int = 0
    corrupt_records: int = 0
    integrity: str = ""
    rebuilding_partitions: tuple[str, ...] = ()
    number: int = 0
    diverged_tails_cut: int = 0


@dataclass(frozen=True, slots=True)
class ClusterInfo(ProtoMirror):
    """The cluster's registered `nodes` and its routers (router.proto GetClusterInfoResponse): the
    router holding the controller lease (`controller_id`, "" while nobody holds it, and its
    `controller_address`) and the id of the router that answered (`router_id`)."""

    _proto = router_pb2.GetClusterInfoResponse
    _nested = {"nodes": NodeInfo}

    nodes: tuple[NodeInfo, ...] = ()
    controller_id: str = ""
    controller_address: str = ""
    router_id: str = ""


@dataclass(frozen=True, slots=True)
class NodeScrubStart(ProtoMirror):
    """Whether a node's scrub pass `started` (router.proto NodeScrubStart), its `passes` so far, and
    why not (`error`: its scrub is off, or it did not answer)."""

    _proto = router_pb2.NodeScrubStart

    node_id: str
    started: bool = False
    passes: int = 0
    error: str = ""


@dataclass(frozen=True, slots=True)
class ScrubStart(ProtoMirror):
    """What `Client.start_scrub` started (router.proto StartScrubResponse): one NodeScrubStart per
    alive node; `Client.cluster_info()` shows a node's scrub_passes grow by one when its pass ends."""

    _proto = router_pb2.StartScrubResponse
    _nested = {"nodes": NodeScrubStart}

    nodes: tuple[NodeScrubStart, ...] = ()


# -- cluster stats ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class NodeSummary(ProtoMirror):
    """One node's load (router.proto PerNodeSummary): streams with a partition it leads
    (`stream_count`), the partitions it leads (`partition_count`), their `total_msg_count` and
    `total_bytes`, its `status` ("ok", "unreachable" or "dead") and client `address`."""

    _proto = router_pb2.PerNodeSummary

    node_id: str
    stream_count: int = 0
    partition_count: int = 0
    total_msg_count: int = 0
    total_bytes: int = 0
    status: str = ""
    address: str = ""


@dataclass(frozen=True, slots=True)
class StreamSummary(ProtoMirror):
    """One stream's figures (router.proto PerStreamStats): its `partitions` count, `msg_count`,
    `bytes`, the highest `last_seq` over its partitions, each partition's stats as its primary
    reports them (`partition_stats`) and the node id of each partition's primary, in partition
    order (`primary_node_ids`)."""

    _proto = router_pb2.PerStreamStats
    _nested = {"partition_stats": PartitionInfo}

    name: str
    partitions: int = 0
    msg_count: int = 0
    bytes: int = 0
    last_seq: int = 0
    partition_stats: tuple[PartitionInfo, ...] = ()
    primary_node_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class AnalyticsPartition(ProtoMirror):
    """One partition in the analytics job's figures (types.proto AnalyticsPartition): what its
    primaries appended (publishes and dead-letter copies), in all and in the window, and the
    publish rates over the window (messages and bytes per second)."""

    _proto = types_pb2.AnalyticsPartition

    stream: str
    partition: int = 0
    primary_node_id: str = ""
    last_seq: int = 0
    published_messages: int = 0
    published_bytes: int = 0
    window_published_messages: int = 0
    window_published_bytes: int = 0
    publish_rate_messages_per_second: float = 0.0
    publish_rate_bytes_per_second: float = 0.0


@dataclass(frozen=True, slots=True)
class AnalyticsConsumer(ProtoMirror):
    """One durable consumer over every partition of its stream (types.proto AnalyticsConsumer):
    `lag_messages` (sum over partitions of last_seq - ack_floor, filter not applied), pending count,
    totals (delivered, redelivered, acked, naked, termed, dead_lettered, dropped), the window's
    acks, redeliveries and dead letters, and `ack_rate_per_second` over the window."""

    _proto = types_pb2.AnalyticsConsumer

    stream: str
    consumer: str = ""
    lag_messages: int = 0
    pending_count: int = 0
    delivered: int = 0
    redelivered: int = 0
    acked: int = 0
    naked: int = 0
    termed: int = 0
    dead_lettered: int = 0
    dropped: int = 0
    window_acked: int = 0
    ack_rate_per_second: float = 0.0
    window_redelivered: int = 0
    window_dead_lettered: int = 0


@dataclass(frozen=True, slots=True)
class AnalyticsReplica(ProtoMirror):
    """One copy of a partition on one node (types.proto AnalyticsReplica): its `role`, `last_seq`,
    `lag_messages` (the partition's highest last_seq over its copies minus this one's; 0 on the
    primary), `message_count` and `bytes`."""

    _proto = types_pb2.AnalyticsReplica
    _enums = {"role": PARTITION_ROLES}

    stream: str
    partition: int = 0
    node_id: str = ""
    role: PartitionRole = "primary"
    last_seq: int = 0
    lag_messages: int = 0
    message_count: int = 0
    bytes: int = 0


@dataclass(frozen=True, slots=True)
class AnalyticsNode(ProtoMirror):
    """One node's load in the analytics job's figures (types.proto AnalyticsNode): partitions it
    leads, what they store (`message_count`, `bytes`), what it accepted as primary, in all and in
    the window, and its publish rate over the window (messages per second)."""

    _proto = types_pb2.AnalyticsNode

    node_id: str
    partitions_led: int = 0
    message_count: int = 0
    bytes: int = 0
    published_messages: int = 0
    published_bytes: int = 0
    window_published_messages: int = 0
    publish_rate_messages_per_second: float = 0.0


@dataclass(frozen=True, slots=True)
class AnalyticsFeedPosition(ProtoMirror):
    """How far the analytics job read one node's change feed (types.proto AnalyticsFeedPosition):
    the `next_change_seq` it reads, the `changes` it processed (each once) and the
    `skipped_changes` retention removed before it read them."""

    _proto = types_pb2.AnalyticsFeedPosition

    node_id: str
    next_change_seq: int = 0
    changes: int = 0
    skipped_changes: int = 0


@dataclass(frozen=True, slots=True)
class ClusterAnalytics(ProtoMirror):
    """The latest figures the analytics job published (types.proto ClusterAnalytics):
    `computed_at_ms`, the Spark micro-batch (`batch_id`), the window they are of (`window_ms` long,
    starting at `window_start_ms`), per partition, consumer, replica and node, the skews over the
    nodes (max - min; 0 when balanced), how far it read each node's change feed, and
    `watermark_ms` (every change before it is counted; 0 = not known). Times in ms since the Unix
    epoch."""

    _proto = types_pb2.ClusterAnalytics
    _nested = {
        "partitions": AnalyticsPartition,
        "consumers": AnalyticsConsumer,
        "replicas": AnalyticsReplica,
        "nodes": AnalyticsNode,
        "feed_positions": AnalyticsFeedPosition,
    }

    computed_at_ms: int = 0
    batch_id: int = 0
    window_ms: int = 0
    window_start_ms: int = 0
    partitions: tuple[AnalyticsPartition, ...] = ()
    consumers: tuple[AnalyticsConsumer, ...] = ()
    replicas: tuple[AnalyticsReplica, ...] = ()
    nodes: tuple[AnalyticsNode, ...] = ()
    skew_partitions: int = 0
    skew_message_count: int = 0
    skew_bytes: int = 0
    skew_window_published_messages: int = 0
    feed_positions: tuple[AnalyticsFeedPosition, ...] = ()
    watermark_ms: int = 0


@dataclass(frozen=True, slots=True)
class ClusterStats(ProtoMirror):
    """Cluster-wide figures (router.proto GetClusterStreamStatsResponse): one NodeSummary per
    registered node, one StreamSummary per stream (when asked for), the totals, the skews over the
    nodes that answered (max - min partitions led, messages and bytes; 0 when balanced), and the
    analytics job's latest figures (None while it published none)."""

    _proto = router_pb2.GetClusterStreamStatsResponse
    _nested = {"nodes": NodeSummary, "streams": StreamSummary, "analytics": ClusterAnalytics}

    nodes: tuple[NodeSummary, ...] = ()
    streams: tuple[StreamSummary, ...] = ()
    total_stream_count: int = 0
    total_msg_count: int = 0
    total_bytes: int = 0
    skew_partitions: int = 0
    skew_msg_count: int = 0
    skew_bytes: int = 0
    analytics: ClusterAnalytics | None = None


# -- moves --------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MoveProgress(ProtoMirror):
    """One step of a partition move (router.proto MoveProgress): `step` ("add_copy", "catch_up",
    "hand_over", "remove_copy" or "done"), what it did for a person (`message`), the
    `leader_epoch`, while catching up the new copy's and the primary's last seq, the longest time
    publishes stalled so far (`longest_fence_ms`) and the time since the move began (`elapsed_ms`)."""

    _proto = router_pb2.MoveProgress

    step: str = ""
    message: str = ""
    leader_epoch: int = 0
    copy_last_seq: int = 0
    primary_last_seq: int = 0
    longest_fence_ms: int = 0
    elapsed_ms: int = 0


@dataclass(frozen=True, slots=True)
class PlannedMove(ProtoMirror):
    """One move of a rebalance plan (router.proto PlannedMove): the copy of `stream`'s `partition`
    on `from_node_id` goes to `to_node_id`; `leading`: that copy leads, so leadership moves too."""

    _proto = router_pb2.PlannedMove

    stream: str
    partition: int = 0
    from_node_id: str = ""
    to_node_id: str = ""
    leading: bool = False


@dataclass(frozen=True, slots=True)
class NodeShare(ProtoMirror):
    """A node's share of the partitions (router.proto NodeShare): the `copies` it holds and how
    many of them it `leads`."""

    _proto = router_pb2.NodeShare

    node_id: str
    copies: int = 0
    leads: int = 0


@dataclass(frozen=True, slots=True)
class RebalancePlan(ProtoMirror):
    """A plan of partition moves that evens out copies and primaries over the alive nodes
    (router.proto PlanRebalanceResponse): the `moves` (nothing is moved yet) and each node's share
    `before` and `after` them."""

    _proto = router_pb2.PlanRebalanceResponse
    _nested = {"moves": PlannedMove, "before": NodeShare, "after": NodeShare}

    moves: tuple[PlannedMove, ...] = ()
    before: tuple[NodeShare, ...] = ()
    after: tuple[NodeShare, ...] = ()


# -- scheduled messages -------------------------------------------------------------------------------


class _HeaderPair:
    """A types.proto Header as a (key, value) pair."""

    @staticmethod
    def from_proto(proto: types_pb2.Header) -> tuple[str, str]:
        return (proto.key, proto.value)

    @staticmethod
    def to_proto(pair: tuple[str, str]) -> types_pb2.Header:
        return types_pb2.Header(key=pair[0], value=pair[1])


@dataclass(frozen=True, slots=True)
class ScheduledMessage(ProtoMirror):
    """A schedule record (a delayed or held message) as its partition stores it (types.proto
    Message): its `seq`, its record `subject` (`$weir.scheduled.<deliver_at_ms>.<seq>`), `ts_ms`,
    `headers` as (key, value) pairs in their order, `payload`, `partition`, `msg_id`, `key` (None
    when the publish gave none), when it is due (`deliver_at_ms`, ms since the Unix epoch) and the
    subject it is delivered on (`scheduled_subject`); `deliver_count`, `scheduled_seq` and
    `expires_at_ms` as on any stored message (0 here but for a ttl)."""

    _proto = types_pb2.Message
    _nested = {"headers": _HeaderPair}

    seq: int
    subject: str = ""
    ts_ms: int = 0
    headers: tuple[tuple[str, str], ...] = ()
    payload: bytes = b""
    deliver_count: int = 0
    partition: int = 0
    msg_id: str = ""
    key: bytes | None = None
    deliver_at_ms: int = 0
    scheduled_subject: str = ""
    scheduled_seq: int = 0
    expires_at_ms: int = 0


@dataclass(frozen=True, slots=True)
class ScheduledPage(ProtoMirror):
    """One page of a partition's schedule records, in seq order (streams.proto
    ListScheduledResponse): the `messages` and `next_seq`, where the next page starts (0 when this
    page holds the last one)."""

    _proto = streams_pb2.ListScheduledResponse
    _nested = {"messages": ScheduledMessage}

    messages: tuple[ScheduledMessage, ...] = ()
    next_seq: int = 0


__all__ = [
    "AnalyticsConsumer",
    "AnalyticsFeedPosition",
    "AnalyticsNode",
    "AnalyticsPartition",
    "AnalyticsReplica",
    "Broker",
    "ClusterAnalytics",
    "ClusterInfo",
    "ClusterStats",
    "GroupInfo",
    "GroupMember",
    "MoveProgress",
    "NodeInfo",
    "NodeScrubStart",
    "NodeShare",
    "NodeSummary",
    "PartitionRoute",
    "Permission",
    "PlannedMove",
    "RebalancePlan",
    "Route",
    "ScheduledMessage",
    "ScheduledPage",
    "ScrubStart",
    "StreamSummary",
]
