from weir.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ReadChangesRequest(_message.Message):
    __slots__ = ("from_change_seq", "max_changes")
    FROM_CHANGE_SEQ_FIELD_NUMBER: _ClassVar[int]
    MAX_CHANGES_FIELD_NUMBER: _ClassVar[int]
    from_change_seq: int
    max_changes: int
    def __init__(self, from_change_seq: _Optional[int] = ..., max_changes: _Optional[int] = ...) -> None: ...

class ReadChangesResponse(_message.Message):
    __slots__ = ("changes", "next_change_seq", "last_change_seq", "node_id", "watermark_ms")
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    NEXT_CHANGE_SEQ_FIELD_NUMBER: _ClassVar[int]
    LAST_CHANGE_SEQ_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    WATERMARK_MS_FIELD_NUMBER: _ClassVar[int]
    changes: _containers.RepeatedCompositeFieldContainer[_types_pb2.Change]
    next_change_seq: int
    last_change_seq: int
    node_id: str
    watermark_ms: int
    def __init__(self, changes: _Optional[_Iterable[_Union[_types_pb2.Change, _Mapping]]] = ..., next_change_seq: _Optional[int] = ..., last_change_seq: _Optional[int] = ..., node_id: _Optional[str] = ..., watermark_ms: _Optional[int] = ...) -> None: ...

class TailChangesRequest(_message.Message):
    __slots__ = ("from_change_seq", "max_changes_per_batch", "stream", "partition", "exclude_appends")
    FROM_CHANGE_SEQ_FIELD_NUMBER: _ClassVar[int]
    MAX_CHANGES_PER_BATCH_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    EXCLUDE_APPENDS_FIELD_NUMBER: _ClassVar[int]
    from_change_seq: int
    max_changes_per_batch: int
    stream: str
    partition: int
    exclude_appends: bool
    def __init__(self, from_change_seq: _Optional[int] = ..., max_changes_per_batch: _Optional[int] = ..., stream: _Optional[str] = ..., partition: _Optional[int] = ..., exclude_appends: bool = ...) -> None: ...

class ChangeBatch(_message.Message):
    __slots__ = ("changes", "last_change_seq", "node_id", "through_change_seq")
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    LAST_CHANGE_SEQ_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    THROUGH_CHANGE_SEQ_FIELD_NUMBER: _ClassVar[int]
    changes: _containers.RepeatedCompositeFieldContainer[_types_pb2.Change]
    last_change_seq: int
    node_id: str
    through_change_seq: int
    def __init__(self, changes: _Optional[_Iterable[_Union[_types_pb2.Change, _Mapping]]] = ..., last_change_seq: _Optional[int] = ..., node_id: _Optional[str] = ..., through_change_seq: _Optional[int] = ...) -> None: ...

class NodeStartScrubRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class NodeStartScrubResponse(_message.Message):
    __slots__ = ("passes", "enabled")
    PASSES_FIELD_NUMBER: _ClassVar[int]
    ENABLED_FIELD_NUMBER: _ClassVar[int]
    passes: int
    enabled: bool
    def __init__(self, passes: _Optional[int] = ..., enabled: bool = ...) -> None: ...

class FetchReplicationRequest(_message.Message):
    __slots__ = ("stream", "partition", "leader_epoch", "follower_node_id", "follower_last_seq", "max_messages", "max_bytes", "max_wait_ms", "want_record_batch", "sharing_node_ids", "wait_for_records_only")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    FOLLOWER_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    FOLLOWER_LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    MAX_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    WANT_RECORD_BATCH_FIELD_NUMBER: _ClassVar[int]
    SHARING_NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    WAIT_FOR_RECORDS_ONLY_FIELD_NUMBER: _ClassVar[int]
    stream: str
    partition: int
    leader_epoch: int
    follower_node_id: str
    follower_last_seq: int
    max_messages: int
    max_bytes: int
    max_wait_ms: int
    want_record_batch: bool
    sharing_node_ids: _containers.RepeatedScalarFieldContainer[str]
    wait_for_records_only: bool
    def __init__(self, stream: _Optional[str] = ..., partition: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., follower_node_id: _Optional[str] = ..., follower_last_seq: _Optional[int] = ..., max_messages: _Optional[int] = ..., max_bytes: _Optional[int] = ..., max_wait_ms: _Optional[int] = ..., want_record_batch: bool = ..., sharing_node_ids: _Optional[_Iterable[str]] = ..., wait_for_records_only: bool = ...) -> None: ...

class FetchReplicationResponse(_message.Message):
    __slots__ = ("result_code", "message", "records", "first_seq", "last_seq", "high_watermark", "leader_epoch", "in_sync_node_ids", "follower_last_crc32", "record_crc32s", "record_batches", "record_count", "sharing_reported")
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    IN_SYNC_NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    FOLLOWER_LAST_CRC32_FIELD_NUMBER: _ClassVar[int]
    RECORD_CRC32S_FIELD_NUMBER: _ClassVar[int]
    RECORD_BATCHES_FIELD_NUMBER: _ClassVar[int]
    RECORD_COUNT_FIELD_NUMBER: _ClassVar[int]
    SHARING_REPORTED_FIELD_NUMBER: _ClassVar[int]
    result_code: str
    message: str
    records: _containers.RepeatedScalarFieldContainer[bytes]
    first_seq: int
    last_seq: int
    high_watermark: int
    leader_epoch: int
    in_sync_node_ids: _containers.RepeatedScalarFieldContainer[str]
    follower_last_crc32: int
    record_crc32s: _containers.RepeatedScalarFieldContainer[int]
    record_batches: _containers.RepeatedScalarFieldContainer[bytes]
    record_count: int
    sharing_reported: bool
    def __init__(self, result_code: _Optional[str] = ..., message: _Optional[str] = ..., records: _Optional[_Iterable[bytes]] = ..., first_seq: _Optional[int] = ..., last_seq: _Optional[int] = ..., high_watermark: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., in_sync_node_ids: _Optional[_Iterable[str]] = ..., follower_last_crc32: _Optional[int] = ..., record_crc32s: _Optional[_Iterable[int]] = ..., record_batches: _Optional[_Iterable[bytes]] = ..., record_count: _Optional[int] = ..., sharing_reported: bool = ...) -> None: ...

class FetchSessionRequest(_message.Message):
    __slots__ = ("fetches", "max_wait_ms", "max_bytes")
    FETCHES_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    fetches: _containers.RepeatedCompositeFieldContainer[FetchReplicationRequest]
    max_wait_ms: int
    max_bytes: int
    def __init__(self, fetches: _Optional[_Iterable[_Union[FetchReplicationRequest, _Mapping]]] = ..., max_wait_ms: _Optional[int] = ..., max_bytes: _Optional[int] = ...) -> None: ...

class FetchSessionResponse(_message.Message):
    __slots__ = ("answers",)
    ANSWERS_FIELD_NUMBER: _ClassVar[int]
    answers: _containers.RepeatedCompositeFieldContainer[FetchReplicationResponse]
    def __init__(self, answers: _Optional[_Iterable[_Union[FetchReplicationResponse, _Mapping]]] = ...) -> None: ...

class ReplicateSessionRequest(_message.Message):
    __slots__ = ("pushes",)
    PUSHES_FIELD_NUMBER: _ClassVar[int]
    pushes: _containers.RepeatedCompositeFieldContainer[ReplicateMessageRequest]
    def __init__(self, pushes: _Optional[_Iterable[_Union[ReplicateMessageRequest, _Mapping]]] = ...) -> None: ...

class ReplicateSessionResponse(_message.Message):
    __slots__ = ("replies",)
    REPLIES_FIELD_NUMBER: _ClassVar[int]
    replies: _containers.RepeatedCompositeFieldContainer[ReplicateResponse]
    def __init__(self, replies: _Optional[_Iterable[_Union[ReplicateResponse, _Mapping]]] = ...) -> None: ...

class GetConsumerSnapshotsRequest(_message.Message):
    __slots__ = ("stream", "partition", "leader_epoch")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    stream: str
    partition: int
    leader_epoch: int
    def __init__(self, stream: _Optional[str] = ..., partition: _Optional[int] = ..., leader_epoch: _Optional[int] = ...) -> None: ...

class GetConsumerSnapshotsResponse(_message.Message):
    __slots__ = ("result_code", "message", "snapshots")
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOTS_FIELD_NUMBER: _ClassVar[int]
    result_code: str
    message: str
    snapshots: _containers.RepeatedCompositeFieldContainer[ConsumerSnapshot]
    def __init__(self, result_code: _Optional[str] = ..., message: _Optional[str] = ..., snapshots: _Optional[_Iterable[_Union[ConsumerSnapshot, _Mapping]]] = ...) -> None: ...

class ConsumerSnapshot(_message.Message):
    __slots__ = ("consumer", "partition", "ack_floor", "last_delivered", "pending", "delivered", "acked", "redelivered", "dead_lettered", "dropped", "termed", "tombstone", "last_per_subject_until", "delivery_horizon", "horizon_since_ms")
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ACK_FLOOR_FIELD_NUMBER: _ClassVar[int]
    LAST_DELIVERED_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    DELIVERED_FIELD_NUMBER: _ClassVar[int]
    ACKED_FIELD_NUMBER: _ClassVar[int]
    REDELIVERED_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERED_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    TERMED_FIELD_NUMBER: _ClassVar[int]
    TOMBSTONE_FIELD_NUMBER: _ClassVar[int]
    LAST_PER_SUBJECT_UNTIL_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_HORIZON_FIELD_NUMBER: _ClassVar[int]
    HORIZON_SINCE_MS_FIELD_NUMBER: _ClassVar[int]
    consumer: str
    partition: int
    ack_floor: int
    last_delivered: int
    pending: _containers.RepeatedCompositeFieldContainer[_types_pb2.PendingDelivery]
    delivered: int
    acked: int
    redelivered: int
    dead_lettered: int
    dropped: int
    termed: int
    tombstone: bool
    last_per_subject_until: int
    delivery_horizon: int
    horizon_since_ms: int
    def __init__(self, consumer: _Optional[str] = ..., partition: _Optional[int] = ..., ack_floor: _Optional[int] = ..., last_delivered: _Optional[int] = ..., pending: _Optional[_Iterable[_Union[_types_pb2.PendingDelivery, _Mapping]]] = ..., delivered: _Optional[int] = ..., acked: _Optional[int] = ..., redelivered: _Optional[int] = ..., dead_lettered: _Optional[int] = ..., dropped: _Optional[int] = ..., termed: _Optional[int] = ..., tombstone: bool = ..., last_per_subject_until: _Optional[int] = ..., delivery_horizon: _Optional[int] = ..., horizon_since_ms: _Optional[int] = ...) -> None: ...

class ReplicateResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "first_seq", "last_seq", "leader_epoch", "dropped")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    first_seq: int
    last_seq: int
    leader_epoch: int
    dropped: int
    def __init__(self, success: bool = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., first_seq: _Optional[int] = ..., last_seq: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., dropped: _Optional[int] = ...) -> None: ...

class ReplicateStreamCreateRequest(_message.Message):
    __slots__ = ("record",)
    RECORD_FIELD_NUMBER: _ClassVar[int]
    record: _types_pb2.StreamRecord
    def __init__(self, record: _Optional[_Union[_types_pb2.StreamRecord, _Mapping]] = ...) -> None: ...

class ReplicateMessageRequest(_message.Message):
    __slots__ = ("stream", "partition", "leader_epoch", "after_seq", "records", "high_watermark", "after_crc32", "primary_last_seq", "record_crc32s", "record_batches")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    AFTER_SEQ_FIELD_NUMBER: _ClassVar[int]
    RECORDS_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    AFTER_CRC32_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    RECORD_CRC32S_FIELD_NUMBER: _ClassVar[int]
    RECORD_BATCHES_FIELD_NUMBER: _ClassVar[int]
    stream: str
    partition: int
    leader_epoch: int
    after_seq: int
    records: _containers.RepeatedScalarFieldContainer[bytes]
    high_watermark: int
    after_crc32: int
    primary_last_seq: int
    record_crc32s: _containers.RepeatedScalarFieldContainer[int]
    record_batches: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, stream: _Optional[str] = ..., partition: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., after_seq: _Optional[int] = ..., records: _Optional[_Iterable[bytes]] = ..., high_watermark: _Optional[int] = ..., after_crc32: _Optional[int] = ..., primary_last_seq: _Optional[int] = ..., record_crc32s: _Optional[_Iterable[int]] = ..., record_batches: _Optional[_Iterable[bytes]] = ...) -> None: ...

class ReplicateTruncateRequest(_message.Message):
    __slots__ = ("stream", "partition", "leader_epoch", "first_seq")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    stream: str
    partition: int
    leader_epoch: int
    first_seq: int
    def __init__(self, stream: _Optional[str] = ..., partition: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., first_seq: _Optional[int] = ...) -> None: ...

class ReplicateTruncateTailRequest(_message.Message):
    __slots__ = ("stream", "partition", "leader_epoch", "last_seq")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    stream: str
    partition: int
    leader_epoch: int
    last_seq: int
    def __init__(self, stream: _Optional[str] = ..., partition: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., last_seq: _Optional[int] = ...) -> None: ...

class GetRecordChecksumsRequest(_message.Message):
    __slots__ = ("stream", "partition", "from_seq", "max_count")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    FROM_SEQ_FIELD_NUMBER: _ClassVar[int]
    MAX_COUNT_FIELD_NUMBER: _ClassVar[int]
    stream: str
    partition: int
    from_seq: int
    max_count: int
    def __init__(self, stream: _Optional[str] = ..., partition: _Optional[int] = ..., from_seq: _Optional[int] = ..., max_count: _Optional[int] = ...) -> None: ...

class GetRecordChecksumsResponse(_message.Message):
    __slots__ = ("seqs", "crc32s", "first_seq", "last_seq")
    SEQS_FIELD_NUMBER: _ClassVar[int]
    CRC32S_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    seqs: _containers.RepeatedScalarFieldContainer[int]
    crc32s: _containers.RepeatedScalarFieldContainer[int]
    first_seq: int
    last_seq: int
    def __init__(self, seqs: _Optional[_Iterable[int]] = ..., crc32s: _Optional[_Iterable[int]] = ..., first_seq: _Optional[int] = ..., last_seq: _Optional[int] = ...) -> None: ...

class ReplicateStreamUpdateRequest(_message.Message):
    __slots__ = ("config",)
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    config: _types_pb2.StreamConfig
    def __init__(self, config: _Optional[_Union[_types_pb2.StreamConfig, _Mapping]] = ...) -> None: ...

class ReplicateWorkQueueAckRequest(_message.Message):
    __slots__ = ("stream", "partition", "leader_epoch", "seqs", "reason")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    SEQS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    stream: str
    partition: int
    leader_epoch: int
    seqs: _containers.RepeatedScalarFieldContainer[int]
    reason: str
    def __init__(self, stream: _Optional[str] = ..., partition: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., seqs: _Optional[_Iterable[int]] = ..., reason: _Optional[str] = ...) -> None: ...

class ReplicateConsumerStateRequest(_message.Message):
    __slots__ = ("stream", "leader_epoch", "snapshot", "defer_sync", "horizon_only")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    DEFER_SYNC_FIELD_NUMBER: _ClassVar[int]
    HORIZON_ONLY_FIELD_NUMBER: _ClassVar[int]
    stream: str
    leader_epoch: int
    snapshot: ConsumerSnapshot
    defer_sync: bool
    horizon_only: bool
    def __init__(self, stream: _Optional[str] = ..., leader_epoch: _Optional[int] = ..., snapshot: _Optional[_Union[ConsumerSnapshot, _Mapping]] = ..., defer_sync: bool = ..., horizon_only: bool = ...) -> None: ...

class ReplicateStreamDeleteRequest(_message.Message):
    __slots__ = ("stream",)
    STREAM_FIELD_NUMBER: _ClassVar[int]
    stream: str
    def __init__(self, stream: _Optional[str] = ...) -> None: ...

class TransferLeadershipRequest(_message.Message):
    __slots__ = ("stream", "partition", "leader_epoch", "to_node_id", "timeout_ms")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    TO_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    stream: str
    partition: int
    leader_epoch: int
    to_node_id: str
    timeout_ms: int
    def __init__(self, stream: _Optional[str] = ..., partition: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., to_node_id: _Optional[str] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class TransferLeadershipResponse(_message.Message):
    __slots__ = ("result_code", "message", "last_seq", "leader_epoch")
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    result_code: str
    message: str
    last_seq: int
    leader_epoch: int
    def __init__(self, result_code: _Optional[str] = ..., message: _Optional[str] = ..., last_seq: _Optional[int] = ..., leader_epoch: _Optional[int] = ...) -> None: ...

class GetReplicaStateRequest(_message.Message):
    __slots__ = ("stream", "partition")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    stream: str
    partition: int
    def __init__(self, stream: _Optional[str] = ..., partition: _Optional[int] = ...) -> None: ...

class GetReplicaStateResponse(_message.Message):
    __slots__ = ("node_id", "role", "replica_epoch", "leader_epoch", "first_seq", "last_seq", "high_watermark", "rebuilding", "placement")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    REPLICA_EPOCH_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    REBUILDING_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    role: _types_pb2.PartitionRole
    replica_epoch: int
    leader_epoch: int
    first_seq: int
    last_seq: int
    high_watermark: int
    rebuilding: bool
    placement: _types_pb2.PartitionPlacement
    def __init__(self, node_id: _Optional[str] = ..., role: _Optional[_Union[_types_pb2.PartitionRole, str]] = ..., replica_epoch: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., first_seq: _Optional[int] = ..., last_seq: _Optional[int] = ..., high_watermark: _Optional[int] = ..., rebuilding: bool = ..., placement: _Optional[_Union[_types_pb2.PartitionPlacement, _Mapping]] = ...) -> None: ...

class ApplyPlacementRequest(_message.Message):
    __slots__ = ("record",)
    RECORD_FIELD_NUMBER: _ClassVar[int]
    record: _types_pb2.StreamRecord
    def __init__(self, record: _Optional[_Union[_types_pb2.StreamRecord, _Mapping]] = ...) -> None: ...

class ApplyPlacementResponse(_message.Message):
    __slots__ = ("partitions",)
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[GetReplicaStateResponse]
    def __init__(self, partitions: _Optional[_Iterable[_Union[GetReplicaStateResponse, _Mapping]]] = ...) -> None: ...

class AdvanceClockRequest(_message.Message):
    __slots__ = ("delta_ms",)
    DELTA_MS_FIELD_NUMBER: _ClassVar[int]
    delta_ms: int
    def __init__(self, delta_ms: _Optional[int] = ...) -> None: ...

class AdvanceClockResponse(_message.Message):
    __slots__ = ("now_ms",)
    NOW_MS_FIELD_NUMBER: _ClassVar[int]
    now_ms: int
    def __init__(self, now_ms: _Optional[int] = ...) -> None: ...
