from weir.v1 import streams_pb2 as _streams_pb2
from weir.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Permission(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PERMISSION_NONE: _ClassVar[Permission]
    PERMISSION_READ: _ClassVar[Permission]
    PERMISSION_WRITE: _ClassVar[Permission]
    PERMISSION_READ_WRITE: _ClassVar[Permission]
PERMISSION_NONE: Permission
PERMISSION_READ: Permission
PERMISSION_WRITE: Permission
PERMISSION_READ_WRITE: Permission

class PlanRebalanceRequest(_message.Message):
    __slots__ = ("max_moves",)
    MAX_MOVES_FIELD_NUMBER: _ClassVar[int]
    max_moves: int
    def __init__(self, max_moves: _Optional[int] = ...) -> None: ...

class PlannedMove(_message.Message):
    __slots__ = ("stream", "partition", "from_node_id", "to_node_id", "leading")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    FROM_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    TO_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    LEADING_FIELD_NUMBER: _ClassVar[int]
    stream: str
    partition: int
    from_node_id: str
    to_node_id: str
    leading: bool
    def __init__(self, stream: _Optional[str] = ..., partition: _Optional[int] = ..., from_node_id: _Optional[str] = ..., to_node_id: _Optional[str] = ..., leading: bool = ...) -> None: ...

class NodeShare(_message.Message):
    __slots__ = ("node_id", "copies", "leads")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    COPIES_FIELD_NUMBER: _ClassVar[int]
    LEADS_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    copies: int
    leads: int
    def __init__(self, node_id: _Optional[str] = ..., copies: _Optional[int] = ..., leads: _Optional[int] = ...) -> None: ...

class PlanRebalanceResponse(_message.Message):
    __slots__ = ("moves", "before", "after")
    MOVES_FIELD_NUMBER: _ClassVar[int]
    BEFORE_FIELD_NUMBER: _ClassVar[int]
    AFTER_FIELD_NUMBER: _ClassVar[int]
    moves: _containers.RepeatedCompositeFieldContainer[PlannedMove]
    before: _containers.RepeatedCompositeFieldContainer[NodeShare]
    after: _containers.RepeatedCompositeFieldContainer[NodeShare]
    def __init__(self, moves: _Optional[_Iterable[_Union[PlannedMove, _Mapping]]] = ..., before: _Optional[_Iterable[_Union[NodeShare, _Mapping]]] = ..., after: _Optional[_Iterable[_Union[NodeShare, _Mapping]]] = ...) -> None: ...

class MovePartitionRequest(_message.Message):
    __slots__ = ("stream", "partition", "from_node_id", "to_node_id", "catch_up_timeout_ms")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    FROM_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    TO_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    CATCH_UP_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    stream: str
    partition: int
    from_node_id: str
    to_node_id: str
    catch_up_timeout_ms: int
    def __init__(self, stream: _Optional[str] = ..., partition: _Optional[int] = ..., from_node_id: _Optional[str] = ..., to_node_id: _Optional[str] = ..., catch_up_timeout_ms: _Optional[int] = ...) -> None: ...

class MoveProgress(_message.Message):
    __slots__ = ("step", "message", "leader_epoch", "copy_last_seq", "primary_last_seq", "longest_fence_ms", "elapsed_ms")
    STEP_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    COPY_LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    LONGEST_FENCE_MS_FIELD_NUMBER: _ClassVar[int]
    ELAPSED_MS_FIELD_NUMBER: _ClassVar[int]
    step: str
    message: str
    leader_epoch: int
    copy_last_seq: int
    primary_last_seq: int
    longest_fence_ms: int
    elapsed_ms: int
    def __init__(self, step: _Optional[str] = ..., message: _Optional[str] = ..., leader_epoch: _Optional[int] = ..., copy_last_seq: _Optional[int] = ..., primary_last_seq: _Optional[int] = ..., longest_fence_ms: _Optional[int] = ..., elapsed_ms: _Optional[int] = ...) -> None: ...

class SetPartitionPinnedRequest(_message.Message):
    __slots__ = ("stream", "partition", "pinned")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    PINNED_FIELD_NUMBER: _ClassVar[int]
    stream: str
    partition: int
    pinned: bool
    def __init__(self, stream: _Optional[str] = ..., partition: _Optional[int] = ..., pinned: bool = ...) -> None: ...

class SetPartitionPinnedResponse(_message.Message):
    __slots__ = ("pinned_partitions",)
    PINNED_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    pinned_partitions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, pinned_partitions: _Optional[_Iterable[int]] = ...) -> None: ...

class Address(_message.Message):
    __slots__ = ("host", "port")
    HOST_FIELD_NUMBER: _ClassVar[int]
    PORT_FIELD_NUMBER: _ClassVar[int]
    host: str
    port: int
    def __init__(self, host: _Optional[str] = ..., port: _Optional[int] = ...) -> None: ...

class Endpoints(_message.Message):
    __slots__ = ("scheme", "addresses")
    SCHEME_FIELD_NUMBER: _ClassVar[int]
    ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    scheme: str
    addresses: _containers.RepeatedCompositeFieldContainer[Address]
    def __init__(self, scheme: _Optional[str] = ..., addresses: _Optional[_Iterable[_Union[Address, _Mapping]]] = ...) -> None: ...

class Broker(_message.Message):
    __slots__ = ("node_id", "address", "alive")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    ALIVE_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    address: str
    alive: bool
    def __init__(self, node_id: _Optional[str] = ..., address: _Optional[str] = ..., alive: bool = ...) -> None: ...

class PartitionRoute(_message.Message):
    __slots__ = ("partition", "primary", "secondaries", "leader_epoch", "permission")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_FIELD_NUMBER: _ClassVar[int]
    SECONDARIES_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PERMISSION_FIELD_NUMBER: _ClassVar[int]
    partition: int
    primary: Broker
    secondaries: _containers.RepeatedCompositeFieldContainer[Broker]
    leader_epoch: int
    permission: Permission
    def __init__(self, partition: _Optional[int] = ..., primary: _Optional[_Union[Broker, _Mapping]] = ..., secondaries: _Optional[_Iterable[_Union[Broker, _Mapping]]] = ..., leader_epoch: _Optional[int] = ..., permission: _Optional[_Union[Permission, str]] = ...) -> None: ...

class QueryRouteRequest(_message.Message):
    __slots__ = ("stream", "endpoints")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    ENDPOINTS_FIELD_NUMBER: _ClassVar[int]
    stream: str
    endpoints: Endpoints
    def __init__(self, stream: _Optional[str] = ..., endpoints: _Optional[_Union[Endpoints, _Mapping]] = ...) -> None: ...

class QueryRouteResponse(_message.Message):
    __slots__ = ("config", "partitions")
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    config: _types_pb2.StreamConfig
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionRoute]
    def __init__(self, config: _Optional[_Union[_types_pb2.StreamConfig, _Mapping]] = ..., partitions: _Optional[_Iterable[_Union[PartitionRoute, _Mapping]]] = ...) -> None: ...

class QueryAssignmentRequest(_message.Message):
    __slots__ = ("stream", "group", "client_id", "endpoints", "owned_partitions", "consumer")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    ENDPOINTS_FIELD_NUMBER: _ClassVar[int]
    OWNED_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    stream: str
    group: str
    client_id: str
    endpoints: Endpoints
    owned_partitions: _containers.RepeatedScalarFieldContainer[int]
    consumer: _types_pb2.ConsumerConfig
    def __init__(self, stream: _Optional[str] = ..., group: _Optional[str] = ..., client_id: _Optional[str] = ..., endpoints: _Optional[_Union[Endpoints, _Mapping]] = ..., owned_partitions: _Optional[_Iterable[int]] = ..., consumer: _Optional[_Union[_types_pb2.ConsumerConfig, _Mapping]] = ...) -> None: ...

class Assignment(_message.Message):
    __slots__ = ("route",)
    ROUTE_FIELD_NUMBER: _ClassVar[int]
    route: PartitionRoute
    def __init__(self, route: _Optional[_Union[PartitionRoute, _Mapping]] = ...) -> None: ...

class QueryAssignmentResponse(_message.Message):
    __slots__ = ("assignments", "generation", "members", "awaiting_partitions")
    ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    AWAITING_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    assignments: _containers.RepeatedCompositeFieldContainer[Assignment]
    generation: int
    members: _containers.RepeatedScalarFieldContainer[str]
    awaiting_partitions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, assignments: _Optional[_Iterable[_Union[Assignment, _Mapping]]] = ..., generation: _Optional[int] = ..., members: _Optional[_Iterable[str]] = ..., awaiting_partitions: _Optional[_Iterable[int]] = ...) -> None: ...

class LeaveGroupRequest(_message.Message):
    __slots__ = ("stream", "group", "client_id")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    stream: str
    group: str
    client_id: str
    def __init__(self, stream: _Optional[str] = ..., group: _Optional[str] = ..., client_id: _Optional[str] = ...) -> None: ...

class LeaveGroupResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetGroupInfoRequest(_message.Message):
    __slots__ = ("stream", "group")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    stream: str
    group: str
    def __init__(self, stream: _Optional[str] = ..., group: _Optional[str] = ...) -> None: ...

class GroupMember(_message.Message):
    __slots__ = ("client_id", "last_heartbeat_ms", "partitions")
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_HEARTBEAT_MS_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    client_id: str
    last_heartbeat_ms: int
    partitions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, client_id: _Optional[str] = ..., last_heartbeat_ms: _Optional[int] = ..., partitions: _Optional[_Iterable[int]] = ...) -> None: ...

class GetGroupInfoResponse(_message.Message):
    __slots__ = ("generation", "members")
    GENERATION_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    generation: int
    members: _containers.RepeatedCompositeFieldContainer[GroupMember]
    def __init__(self, generation: _Optional[int] = ..., members: _Optional[_Iterable[_Union[GroupMember, _Mapping]]] = ...) -> None: ...

class GetClusterStreamStatsRequest(_message.Message):
    __slots__ = ("include_per_stream",)
    INCLUDE_PER_STREAM_FIELD_NUMBER: _ClassVar[int]
    include_per_stream: bool
    def __init__(self, include_per_stream: bool = ...) -> None: ...

class PerStreamStats(_message.Message):
    __slots__ = ("name", "partitions", "msg_count", "bytes", "last_seq", "partition_stats", "primary_node_ids")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    MSG_COUNT_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    PARTITION_STATS_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    name: str
    partitions: int
    msg_count: int
    bytes: int
    last_seq: int
    partition_stats: _containers.RepeatedCompositeFieldContainer[_types_pb2.PartitionStats]
    primary_node_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., partitions: _Optional[int] = ..., msg_count: _Optional[int] = ..., bytes: _Optional[int] = ..., last_seq: _Optional[int] = ..., partition_stats: _Optional[_Iterable[_Union[_types_pb2.PartitionStats, _Mapping]]] = ..., primary_node_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class PerNodeSummary(_message.Message):
    __slots__ = ("node_id", "stream_count", "partition_count", "total_msg_count", "total_bytes", "status", "address")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    STREAM_COUNT_FIELD_NUMBER: _ClassVar[int]
    PARTITION_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_MSG_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    stream_count: int
    partition_count: int
    total_msg_count: int
    total_bytes: int
    status: str
    address: str
    def __init__(self, node_id: _Optional[str] = ..., stream_count: _Optional[int] = ..., partition_count: _Optional[int] = ..., total_msg_count: _Optional[int] = ..., total_bytes: _Optional[int] = ..., status: _Optional[str] = ..., address: _Optional[str] = ...) -> None: ...

class GetClusterStreamStatsResponse(_message.Message):
    __slots__ = ("nodes", "streams", "total_stream_count", "total_msg_count", "total_bytes", "skew_partitions", "skew_msg_count", "skew_bytes", "analytics")
    NODES_FIELD_NUMBER: _ClassVar[int]
    STREAMS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_STREAM_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_MSG_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    SKEW_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    SKEW_MSG_COUNT_FIELD_NUMBER: _ClassVar[int]
    SKEW_BYTES_FIELD_NUMBER: _ClassVar[int]
    ANALYTICS_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[PerNodeSummary]
    streams: _containers.RepeatedCompositeFieldContainer[PerStreamStats]
    total_stream_count: int
    total_msg_count: int
    total_bytes: int
    skew_partitions: int
    skew_msg_count: int
    skew_bytes: int
    analytics: _types_pb2.ClusterAnalytics
    def __init__(self, nodes: _Optional[_Iterable[_Union[PerNodeSummary, _Mapping]]] = ..., streams: _Optional[_Iterable[_Union[PerStreamStats, _Mapping]]] = ..., total_stream_count: _Optional[int] = ..., total_msg_count: _Optional[int] = ..., total_bytes: _Optional[int] = ..., skew_partitions: _Optional[int] = ..., skew_msg_count: _Optional[int] = ..., skew_bytes: _Optional[int] = ..., analytics: _Optional[_Union[_types_pb2.ClusterAnalytics, _Mapping]] = ...) -> None: ...

class NodeInfo(_message.Message):
    __slots__ = ("node_id", "client_address", "internal_address", "metrics_address", "zone", "capacity", "alive", "registered_at_ms", "last_heartbeat_ms", "scrub_passes", "scrub_last_pass_ms", "corrupt_records", "integrity", "rebuilding_partitions", "number", "diverged_tails_cut")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    INTERNAL_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    METRICS_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    ZONE_FIELD_NUMBER: _ClassVar[int]
    CAPACITY_FIELD_NUMBER: _ClassVar[int]
    ALIVE_FIELD_NUMBER: _ClassVar[int]
    REGISTERED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    LAST_HEARTBEAT_MS_FIELD_NUMBER: _ClassVar[int]
    SCRUB_PASSES_FIELD_NUMBER: _ClassVar[int]
    SCRUB_LAST_PASS_MS_FIELD_NUMBER: _ClassVar[int]
    CORRUPT_RECORDS_FIELD_NUMBER: _ClassVar[int]
    INTEGRITY_FIELD_NUMBER: _ClassVar[int]
    REBUILDING_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    NUMBER_FIELD_NUMBER: _ClassVar[int]
    DIVERGED_TAILS_CUT_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    client_address: str
    internal_address: str
    metrics_address: str
    zone: str
    capacity: int
    alive: bool
    registered_at_ms: int
    last_heartbeat_ms: int
    scrub_passes: int
    scrub_last_pass_ms: int
    corrupt_records: int
    integrity: str
    rebuilding_partitions: _containers.RepeatedScalarFieldContainer[str]
    number: int
    diverged_tails_cut: int
    def __init__(self, node_id: _Optional[str] = ..., client_address: _Optional[str] = ..., internal_address: _Optional[str] = ..., metrics_address: _Optional[str] = ..., zone: _Optional[str] = ..., capacity: _Optional[int] = ..., alive: bool = ..., registered_at_ms: _Optional[int] = ..., last_heartbeat_ms: _Optional[int] = ..., scrub_passes: _Optional[int] = ..., scrub_last_pass_ms: _Optional[int] = ..., corrupt_records: _Optional[int] = ..., integrity: _Optional[str] = ..., rebuilding_partitions: _Optional[_Iterable[str]] = ..., number: _Optional[int] = ..., diverged_tails_cut: _Optional[int] = ...) -> None: ...

class GetClusterInfoRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetClusterInfoResponse(_message.Message):
    __slots__ = ("nodes", "controller_id", "controller_address", "router_id")
    NODES_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_ID_FIELD_NUMBER: _ClassVar[int]
    CONTROLLER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    ROUTER_ID_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[NodeInfo]
    controller_id: str
    controller_address: str
    router_id: str
    def __init__(self, nodes: _Optional[_Iterable[_Union[NodeInfo, _Mapping]]] = ..., controller_id: _Optional[str] = ..., controller_address: _Optional[str] = ..., router_id: _Optional[str] = ...) -> None: ...

class StartScrubRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class NodeScrubStart(_message.Message):
    __slots__ = ("node_id", "started", "passes", "error")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    STARTED_FIELD_NUMBER: _ClassVar[int]
    PASSES_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    started: bool
    passes: int
    error: str
    def __init__(self, node_id: _Optional[str] = ..., started: bool = ..., passes: _Optional[int] = ..., error: _Optional[str] = ...) -> None: ...

class StartScrubResponse(_message.Message):
    __slots__ = ("nodes",)
    NODES_FIELD_NUMBER: _ClassVar[int]
    nodes: _containers.RepeatedCompositeFieldContainer[NodeScrubStart]
    def __init__(self, nodes: _Optional[_Iterable[_Union[NodeScrubStart, _Mapping]]] = ...) -> None: ...
