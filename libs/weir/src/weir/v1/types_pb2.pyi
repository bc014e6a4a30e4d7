from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RetentionPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    RETENTION_POLICY_LIMITS: _ClassVar[RetentionPolicy]
    RETENTION_POLICY_WORK_QUEUE: _ClassVar[RetentionPolicy]
    RETENTION_POLICY_INTEREST: _ClassVar[RetentionPolicy]

class StorageKind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    STORAGE_KIND_FILE: _ClassVar[StorageKind]
    STORAGE_KIND_MEMORY: _ClassVar[StorageKind]

class SourceDropPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SOURCE_DROP_POLICY_HALT: _ClassVar[SourceDropPolicy]
    SOURCE_DROP_POLICY_SKIP_TO_FIRST_AVAILABLE: _ClassVar[SourceDropPolicy]

class PartitionRole(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PARTITION_ROLE_PRIMARY: _ClassVar[PartitionRole]
    PARTITION_ROLE_SECONDARY: _ClassVar[PartitionRole]

class DeliverPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DELIVER_POLICY_ALL: _ClassVar[DeliverPolicy]
    DELIVER_POLICY_LAST: _ClassVar[DeliverPolicy]
    DELIVER_POLICY_BY_START_SEQ: _ClassVar[DeliverPolicy]
    DELIVER_POLICY_BY_START_TIME: _ClassVar[DeliverPolicy]
    DELIVER_POLICY_NEW: _ClassVar[DeliverPolicy]
    DELIVER_POLICY_LAST_PER_SUBJECT: _ClassVar[DeliverPolicy]
RETENTION_POLICY_LIMITS: RetentionPolicy
RETENTION_POLICY_WORK_QUEUE: RetentionPolicy
RETENTION_POLICY_INTEREST: RetentionPolicy
STORAGE_KIND_FILE: StorageKind
STORAGE_KIND_MEMORY: StorageKind
SOURCE_DROP_POLICY_HALT: SourceDropPolicy
SOURCE_DROP_POLICY_SKIP_TO_FIRST_AVAILABLE: SourceDropPolicy
PARTITION_ROLE_PRIMARY: PartitionRole
PARTITION_ROLE_SECONDARY: PartitionRole
DELIVER_POLICY_ALL: DeliverPolicy
DELIVER_POLICY_LAST: DeliverPolicy
DELIVER_POLICY_BY_START_SEQ: DeliverPolicy
DELIVER_POLICY_BY_START_TIME: DeliverPolicy
DELIVER_POLICY_NEW: DeliverPolicy
DELIVER_POLICY_LAST_PER_SUBJECT: DeliverPolicy

class Limits(_message.Message):
    __slots__ = ("max_age_ms", "max_msgs", "max_bytes", "max_msgs_per_subject")
    MAX_AGE_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_MSGS_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_MSGS_PER_SUBJECT_FIELD_NUMBER: _ClassVar[int]
    max_age_ms: int
    max_msgs: int
    max_bytes: int
    max_msgs_per_subject: int
    def __init__(self, max_age_ms: _Optional[int] = ..., max_msgs: _Optional[int] = ..., max_bytes: _Optional[int] = ..., max_msgs_per_subject: _Optional[int] = ...) -> None: ...

class StreamConfig(_message.Message):
    __slots__ = ("name", "subjects", "retention", "limits", "max_msg_bytes", "partitions", "replicas", "storage", "min_insync_replicas", "deliver_up_to_high_watermark", "duplicate_window_ms", "duplicate_window_max_msgs", "allow_scheduled_messages", "sources")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUBJECTS_FIELD_NUMBER: _ClassVar[int]
    RETENTION_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    MAX_MSG_BYTES_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    STORAGE_FIELD_NUMBER: _ClassVar[int]
    MIN_INSYNC_REPLICAS_FIELD_NUMBER: _ClassVar[int]
    DELIVER_UP_TO_HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_WINDOW_MS_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_WINDOW_MAX_MSGS_FIELD_NUMBER: _ClassVar[int]
    ALLOW_SCHEDULED_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    name: str
    subjects: _containers.RepeatedScalarFieldContainer[str]
    retention: RetentionPolicy
    limits: Limits
    max_msg_bytes: int
    partitions: int
    replicas: int
    storage: StorageKind
    min_insync_replicas: int
    deliver_up_to_high_watermark: bool
    duplicate_window_ms: int
    duplicate_window_max_msgs: int
    allow_scheduled_messages: bool
    sources: _containers.RepeatedCompositeFieldContainer[StreamSource]
    def __init__(self, name: _Optional[str] = ..., subjects: _Optional[_Iterable[str]] = ..., retention: _Optional[_Union[RetentionPolicy, str]] = ..., limits: _Optional[_Union[Limits, _Mapping]] = ..., max_msg_bytes: _Optional[int] = ..., partitions: _Optional[int] = ..., replicas: _Optional[int] = ..., storage: _Optional[_Union[StorageKind, str]] = ..., min_insync_replicas: _Optional[int] = ..., deliver_up_to_high_watermark: bool = ..., duplicate_window_ms: _Optional[int] = ..., duplicate_window_max_msgs: _Optional[int] = ..., allow_scheduled_messages: bool = ..., sources: _Optional[_Iterable[_Union[StreamSource, _Mapping]]] = ...) -> None: ...

class SubjectTransform(_message.Message):
    __slots__ = ("source_pattern", "destination")
    SOURCE_PATTERN_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_FIELD_NUMBER: _ClassVar[int]
    source_pattern: str
    destination: str
    def __init__(self, source_pattern: _Optional[str] = ..., destination: _Optional[str] = ...) -> None: ...

class StreamSource(_message.Message):
    __slots__ = ("source_stream", "filter_subject", "start_seq", "subject_transform", "max_initial_backfill", "on_drop", "dlq_stream")
    SOURCE_STREAM_FIELD_NUMBER: _ClassVar[int]
    FILTER_SUBJECT_FIELD_NUMBER: _ClassVar[int]
    START_SEQ_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_TRANSFORM_FIELD_NUMBER: _ClassVar[int]
    MAX_INITIAL_BACKFILL_FIELD_NUMBER: _ClassVar[int]
    ON_DROP_FIELD_NUMBER: _ClassVar[int]
    DLQ_STREAM_FIELD_NUMBER: _ClassVar[int]
    source_stream: str
    filter_subject: str
    start_seq: int
    subject_transform: SubjectTransform
    max_initial_backfill: int
    on_drop: SourceDropPolicy
    dlq_stream: str
    def __init__(self, source_stream: _Optional[str] = ..., filter_subject: _Optional[str] = ..., start_seq: _Optional[int] = ..., subject_transform: _Optional[_Union[SubjectTransform, _Mapping]] = ..., max_initial_backfill: _Optional[int] = ..., on_drop: _Optional[_Union[SourceDropPolicy, str]] = ..., dlq_stream: _Optional[str] = ...) -> None: ...

class SourceStatus(_message.Message):
    __slots__ = ("source_stream", "last_sourced_seq", "pulled_total", "last_error", "last_error_ts_ms", "source_partition", "halted")
    SOURCE_STREAM_FIELD_NUMBER: _ClassVar[int]
    LAST_SOURCED_SEQ_FIELD_NUMBER: _ClassVar[int]
    PULLED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_TS_MS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_PARTITION_FIELD_NUMBER: _ClassVar[int]
    HALTED_FIELD_NUMBER: _ClassVar[int]
    source_stream: str
    last_sourced_seq: int
    pulled_total: int
    last_error: str
    last_error_ts_ms: int
    source_partition: int
    halted: bool
    def __init__(self, source_stream: _Optional[str] = ..., last_sourced_seq: _Optional[int] = ..., pulled_total: _Optional[int] = ..., last_error: _Optional[str] = ..., last_error_ts_ms: _Optional[int] = ..., source_partition: _Optional[int] = ..., halted: bool = ...) -> None: ...

class Header(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class Message(_message.Message):
    __slots__ = ("seq", "subject", "ts_ms", "headers", "payload", "deliver_count", "partition", "msg_id", "key", "deliver_at_ms", "scheduled_subject", "scheduled_seq", "expires_at_ms")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    TS_MS_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    DELIVER_COUNT_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    MSG_ID_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    DELIVER_AT_MS_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_SUBJECT_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_SEQ_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_MS_FIELD_NUMBER: _ClassVar[int]
    seq: int
    subject: str
    ts_ms: int
    headers: _containers.RepeatedCompositeFieldContainer[Header]
    payload: bytes
    deliver_count: int
    partition: int
    msg_id: str
    key: bytes
    deliver_at_ms: int
    scheduled_subject: str
    scheduled_seq: int
    expires_at_ms: int
    def __init__(self, seq: _Optional[int] = ..., subject: _Optional[str] = ..., ts_ms: _Optional[int] = ..., headers: _Optional[_Iterable[_Union[Header, _Mapping]]] = ..., payload: _Optional[bytes] = ..., deliver_count: _Optional[int] = ..., partition: _Optional[int] = ..., msg_id: _Optional[str] = ..., key: _Optional[bytes] = ..., deliver_at_ms: _Optional[int] = ..., scheduled_subject: _Optional[str] = ..., scheduled_seq: _Optional[int] = ..., expires_at_ms: _Optional[int] = ...) -> None: ...

class PartitionStats(_message.Message):
    __slots__ = ("partition", "first_seq", "last_seq", "msg_count", "bytes", "role", "leader_epoch", "high_watermark", "in_sync_node_ids")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    MSG_COUNT_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    HIGH_WATERMARK_FIELD_NUMBER: _ClassVar[int]
    IN_SYNC_NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    partition: int
    first_seq: int
    last_seq: int
    msg_count: int
    bytes: int
    role: PartitionRole
    leader_epoch: int
    high_watermark: int
    in_sync_node_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, partition: _Optional[int] = ..., first_seq: _Optional[int] = ..., last_seq: _Optional[int] = ..., msg_count: _Optional[int] = ..., bytes: _Optional[int] = ..., role: _Optional[_Union[PartitionRole, str]] = ..., leader_epoch: _Optional[int] = ..., high_watermark: _Optional[int] = ..., in_sync_node_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class StreamStats(_message.Message):
    __slots__ = ("msg_count", "bytes", "partitions")
    MSG_COUNT_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    msg_count: int
    bytes: int
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionStats]
    def __init__(self, msg_count: _Optional[int] = ..., bytes: _Optional[int] = ..., partitions: _Optional[_Iterable[_Union[PartitionStats, _Mapping]]] = ...) -> None: ...

class AppendChange(_message.Message):
    __slots__ = ("first_seq", "last_seq", "message_count", "bytes")
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_COUNT_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    first_seq: int
    last_seq: int
    message_count: int
    bytes: int
    def __init__(self, first_seq: _Optional[int] = ..., last_seq: _Optional[int] = ..., message_count: _Optional[int] = ..., bytes: _Optional[int] = ...) -> None: ...

class TruncateChange(_message.Message):
    __slots__ = ("first_seq", "removed_count", "removed_bytes", "reason")
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    REMOVED_COUNT_FIELD_NUMBER: _ClassVar[int]
    REMOVED_BYTES_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    first_seq: int
    removed_count: int
    removed_bytes: int
    reason: str
    def __init__(self, first_seq: _Optional[int] = ..., removed_count: _Optional[int] = ..., removed_bytes: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class RemoveChange(_message.Message):
    __slots__ = ("seqs", "removed_bytes", "reason")
    SEQS_FIELD_NUMBER: _ClassVar[int]
    REMOVED_BYTES_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    seqs: _containers.RepeatedScalarFieldContainer[int]
    removed_bytes: int
    reason: str
    def __init__(self, seqs: _Optional[_Iterable[int]] = ..., removed_bytes: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...

class StreamCreatedChange(_message.Message):
    __slots__ = ("config",)
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    config: StreamConfig
    def __init__(self, config: _Optional[_Union[StreamConfig, _Mapping]] = ...) -> None: ...

class StreamUpdatedChange(_message.Message):
    __slots__ = ("config",)
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    config: StreamConfig
    def __init__(self, config: _Optional[_Union[StreamConfig, _Mapping]] = ...) -> None: ...

class StreamDeletedChange(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ConsumerCreatedChange(_message.Message):
    __slots__ = ("config",)
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    config: ConsumerConfig
    def __init__(self, config: _Optional[_Union[ConsumerConfig, _Mapping]] = ...) -> None: ...

class ConsumerDeletedChange(_message.Message):
    __slots__ = ("consumer",)
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    consumer: str
    def __init__(self, consumer: _Optional[str] = ...) -> None: ...

class ConsumerStateChange(_message.Message):
    __slots__ = ("consumer", "ack_floor", "last_delivered", "pending_count", "delivered", "redelivered", "acked", "naked", "termed", "in_progress", "dead_lettered", "dropped")
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    ACK_FLOOR_FIELD_NUMBER: _ClassVar[int]
    LAST_DELIVERED_FIELD_NUMBER: _ClassVar[int]
    PENDING_COUNT_FIELD_NUMBER: _ClassVar[int]
    DELIVERED_FIELD_NUMBER: _ClassVar[int]
    REDELIVERED_FIELD_NUMBER: _ClassVar[int]
    ACKED_FIELD_NUMBER: _ClassVar[int]
    NAKED_FIELD_NUMBER: _ClassVar[int]
    TERMED_FIELD_NUMBER: _ClassVar[int]
    IN_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERED_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    consumer: str
    ack_floor: int
    last_delivered: int
    pending_count: int
    delivered: int
    redelivered: int
    acked: int
    naked: int
    termed: int
    in_progress: int
    dead_lettered: int
    dropped: int
    def __init__(self, consumer: _Optional[str] = ..., ack_floor: _Optional[int] = ..., last_delivered: _Optional[int] = ..., pending_count: _Optional[int] = ..., delivered: _Optional[int] = ..., redelivered: _Optional[int] = ..., acked: _Optional[int] = ..., naked: _Optional[int] = ..., termed: _Optional[int] = ..., in_progress: _Optional[int] = ..., dead_lettered: _Optional[int] = ..., dropped: _Optional[int] = ...) -> None: ...

class StorageFindingChange(_message.Message):
    __slots__ = ("finding", "seqs", "detail")
    FINDING_FIELD_NUMBER: _ClassVar[int]
    SEQS_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    finding: str
    seqs: _containers.RepeatedScalarFieldContainer[int]
    detail: str
    def __init__(self, finding: _Optional[str] = ..., seqs: _Optional[_Iterable[int]] = ..., detail: _Optional[str] = ...) -> None: ...

class Change(_message.Message):
    __slots__ = ("change_seq", "ts_ms", "stream", "partition", "role", "append", "truncate", "remove", "stream_created", "stream_updated", "stream_deleted", "consumer_created", "consumer_deleted", "consumer_state", "storage_finding", "leader_changed")
    CHANGE_SEQ_FIELD_NUMBER: _ClassVar[int]
    TS_MS_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    APPEND_FIELD_NUMBER: _ClassVar[int]
    TRUNCATE_FIELD_NUMBER: _ClassVar[int]
    REMOVE_FIELD_NUMBER: _ClassVar[int]
    STREAM_CREATED_FIELD_NUMBER: _ClassVar[int]
    STREAM_UPDATED_FIELD_NUMBER: _ClassVar[int]
    STREAM_DELETED_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_CREATED_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_DELETED_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_STATE_FIELD_NUMBER: _ClassVar[int]
    STORAGE_FINDING_FIELD_NUMBER: _ClassVar[int]
    LEADER_CHANGED_FIELD_NUMBER: _ClassVar[int]
    change_seq: int
    ts_ms: int
    stream: str
    partition: int
    role: PartitionRole
    append: AppendChange
    truncate: TruncateChange
    remove: RemoveChange
    stream_created: StreamCreatedChange
    stream_updated: StreamUpdatedChange
    stream_deleted: StreamDeletedChange
    consumer_created: ConsumerCreatedChange
    consumer_deleted: ConsumerDeletedChange
    consumer_state: ConsumerStateChange
    storage_finding: StorageFindingChange
    leader_changed: LeaderChange
    def __init__(self, change_seq: _Optional[int] = ..., ts_ms: _Optional[int] = ..., stream: _Optional[str] = ..., partition: _Optional[int] = ..., role: _Optional[_Union[PartitionRole, str]] = ..., append: _Optional[_Union[AppendChange, _Mapping]] = ..., truncate: _Optional[_Union[TruncateChange, _Mapping]] = ..., remove: _Optional[_Union[RemoveChange, _Mapping]] = ..., stream_created: _Optional[_Union[StreamCreatedChange, _Mapping]] = ..., stream_updated: _Optional[_Union[StreamUpdatedChange, _Mapping]] = ..., stream_deleted: _Optional[_Union[StreamDeletedChange, _Mapping]] = ..., consumer_created: _Optional[_Union[ConsumerCreatedChange, _Mapping]] = ..., consumer_deleted: _Optional[_Union[ConsumerDeletedChange, _Mapping]] = ..., consumer_state: _Optional[_Union[ConsumerStateChange, _Mapping]] = ..., storage_finding: _Optional[_Union[StorageFindingChange, _Mapping]] = ..., leader_changed: _Optional[_Union[LeaderChange, _Mapping]] = ...) -> None: ...

class LeaderChange(_message.Message):
    __slots__ = ("leader_epoch", "primary_node_id", "preferred_leader_node_id")
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_LEADER_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    leader_epoch: int
    primary_node_id: str
    preferred_leader_node_id: str
    def __init__(self, leader_epoch: _Optional[int] = ..., primary_node_id: _Optional[str] = ..., preferred_leader_node_id: _Optional[str] = ...) -> None: ...

class ConsumerConfig(_message.Message):
    __slots__ = ("name", "filter_subject", "deliver_policy", "start_seq", "start_time_ms", "ack_wait_ms", "max_deliver", "dead_letter_subject", "max_ack_pending", "deliver_group")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FILTER_SUBJECT_FIELD_NUMBER: _ClassVar[int]
    DELIVER_POLICY_FIELD_NUMBER: _ClassVar[int]
    START_SEQ_FIELD_NUMBER: _ClassVar[int]
    START_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    ACK_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_DELIVER_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTER_SUBJECT_FIELD_NUMBER: _ClassVar[int]
    MAX_ACK_PENDING_FIELD_NUMBER: _ClassVar[int]
    DELIVER_GROUP_FIELD_NUMBER: _ClassVar[int]
    name: str
    filter_subject: str
    deliver_policy: DeliverPolicy
    start_seq: int
    start_time_ms: int
    ack_wait_ms: int
    max_deliver: int
    dead_letter_subject: str
    max_ack_pending: int
    deliver_group: str
    def __init__(self, name: _Optional[str] = ..., filter_subject: _Optional[str] = ..., deliver_policy: _Optional[_Union[DeliverPolicy, str]] = ..., start_seq: _Optional[int] = ..., start_time_ms: _Optional[int] = ..., ack_wait_ms: _Optional[int] = ..., max_deliver: _Optional[int] = ..., dead_letter_subject: _Optional[str] = ..., max_ack_pending: _Optional[int] = ..., deliver_group: _Optional[str] = ...) -> None: ...

class PendingDelivery(_message.Message):
    __slots__ = ("seq", "delivered_at_ms", "deliver_count", "redeliver_at_ms")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    DELIVERED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    DELIVER_COUNT_FIELD_NUMBER: _ClassVar[int]
    REDELIVER_AT_MS_FIELD_NUMBER: _ClassVar[int]
    seq: int
    delivered_at_ms: int
    deliver_count: int
    redeliver_at_ms: int
    def __init__(self, seq: _Optional[int] = ..., delivered_at_ms: _Optional[int] = ..., deliver_count: _Optional[int] = ..., redeliver_at_ms: _Optional[int] = ...) -> None: ...

class ConsumerPartitionState(_message.Message):
    __slots__ = ("partition", "ack_floor", "last_delivered", "num_ack_pending", "num_pending", "num_redelivered", "delivered_total", "acked_total", "redelivered_total", "dead_lettered_total", "dropped_total", "termed_total", "last_per_subject_until")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ACK_FLOOR_FIELD_NUMBER: _ClassVar[int]
    LAST_DELIVERED_FIELD_NUMBER: _ClassVar[int]
    NUM_ACK_PENDING_FIELD_NUMBER: _ClassVar[int]
    NUM_PENDING_FIELD_NUMBER: _ClassVar[int]
    NUM_REDELIVERED_FIELD_NUMBER: _ClassVar[int]
    DELIVERED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    ACKED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    REDELIVERED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    DROPPED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    TERMED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    LAST_PER_SUBJECT_UNTIL_FIELD_NUMBER: _ClassVar[int]
    partition: int
    ack_floor: int
    last_delivered: int
    num_ack_pending: int
    num_pending: int
    num_redelivered: int
    delivered_total: int
    acked_total: int
    redelivered_total: int
    dead_lettered_total: int
    dropped_total: int
    termed_total: int
    last_per_subject_until: int
    def __init__(self, partition: _Optional[int] = ..., ack_floor: _Optional[int] = ..., last_delivered: _Optional[int] = ..., num_ack_pending: _Optional[int] = ..., num_pending: _Optional[int] = ..., num_redelivered: _Optional[int] = ..., delivered_total: _Optional[int] = ..., acked_total: _Optional[int] = ..., redelivered_total: _Optional[int] = ..., dead_lettered_total: _Optional[int] = ..., dropped_total: _Optional[int] = ..., termed_total: _Optional[int] = ..., last_per_subject_until: _Optional[int] = ...) -> None: ...

class ConsumerInfo(_message.Message):
    __slots__ = ("stream", "config", "created_at_ms", "partitions", "num_ack_pending", "num_pending", "delivered_total", "acked_total", "redelivered_total", "dead_lettered_total", "dropped_total", "termed_total")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    NUM_ACK_PENDING_FIELD_NUMBER: _ClassVar[int]
    NUM_PENDING_FIELD_NUMBER: _ClassVar[int]
    DELIVERED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    ACKED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    REDELIVERED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    DROPPED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    TERMED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    stream: str
    config: ConsumerConfig
    created_at_ms: int
    partitions: _containers.RepeatedCompositeFieldContainer[ConsumerPartitionState]
    num_ack_pending: int
    num_pending: int
    delivered_total: int
    acked_total: int
    redelivered_total: int
    dead_lettered_total: int
    dropped_total: int
    termed_total: int
    def __init__(self, stream: _Optional[str] = ..., config: _Optional[_Union[ConsumerConfig, _Mapping]] = ..., created_at_ms: _Optional[int] = ..., partitions: _Optional[_Iterable[_Union[ConsumerPartitionState, _Mapping]]] = ..., num_ack_pending: _Optional[int] = ..., num_pending: _Optional[int] = ..., delivered_total: _Optional[int] = ..., acked_total: _Optional[int] = ..., redelivered_total: _Optional[int] = ..., dead_lettered_total: _Optional[int] = ..., dropped_total: _Optional[int] = ..., termed_total: _Optional[int] = ...) -> None: ...

class PartitionPlacement(_message.Message):
    __slots__ = ("partition", "primary_node_id", "secondary_node_ids", "leader_epoch", "in_sync_node_ids", "epoch_starts", "replica_node_ids")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    SECONDARY_NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    IN_SYNC_NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    EPOCH_STARTS_FIELD_NUMBER: _ClassVar[int]
    REPLICA_NODE_IDS_FIELD_NUMBER: _ClassVar[int]
    partition: int
    primary_node_id: str
    secondary_node_ids: _containers.RepeatedScalarFieldContainer[str]
    leader_epoch: int
    in_sync_node_ids: _containers.RepeatedScalarFieldContainer[str]
    epoch_starts: _containers.RepeatedCompositeFieldContainer[EpochStart]
    replica_node_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, partition: _Optional[int] = ..., primary_node_id: _Optional[str] = ..., secondary_node_ids: _Optional[_Iterable[str]] = ..., leader_epoch: _Optional[int] = ..., in_sync_node_ids: _Optional[_Iterable[str]] = ..., epoch_starts: _Optional[_Iterable[_Union[EpochStart, _Mapping]]] = ..., replica_node_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class EpochStart(_message.Message):
    __slots__ = ("leader_epoch", "start_seq")
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    START_SEQ_FIELD_NUMBER: _ClassVar[int]
    leader_epoch: int
    start_seq: int
    def __init__(self, leader_epoch: _Optional[int] = ..., start_seq: _Optional[int] = ...) -> None: ...

class MsgIdBatch(_message.Message):
    __slots__ = ("seqs", "msg_ids")
    SEQS_FIELD_NUMBER: _ClassVar[int]
    MSG_IDS_FIELD_NUMBER: _ClassVar[int]
    seqs: _containers.RepeatedScalarFieldContainer[int]
    msg_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, seqs: _Optional[_Iterable[int]] = ..., msg_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class StreamPlacement(_message.Message):
    __slots__ = ("partitions",)
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    partitions: _containers.RepeatedCompositeFieldContainer[PartitionPlacement]
    def __init__(self, partitions: _Optional[_Iterable[_Union[PartitionPlacement, _Mapping]]] = ...) -> None: ...

class StreamRecord(_message.Message):
    __slots__ = ("config", "placement", "created_at_ms", "deleting", "pinned_partitions")
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    DELETING_FIELD_NUMBER: _ClassVar[int]
    PINNED_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    config: StreamConfig
    placement: StreamPlacement
    created_at_ms: int
    deleting: bool
    pinned_partitions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, config: _Optional[_Union[StreamConfig, _Mapping]] = ..., placement: _Optional[_Union[StreamPlacement, _Mapping]] = ..., created_at_ms: _Optional[int] = ..., deleting: bool = ..., pinned_partitions: _Optional[_Iterable[int]] = ...) -> None: ...

class ClusterAnalytics(_message.Message):
    __slots__ = ("computed_at_ms", "batch_id", "window_ms", "window_start_ms", "partitions", "consumers", "replicas", "nodes", "skew_partitions", "skew_message_count", "skew_bytes", "skew_window_published_messages", "feed_positions", "watermark_ms")
    COMPUTED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    BATCH_ID_FIELD_NUMBER: _ClassVar[int]
    WINDOW_MS_FIELD_NUMBER: _ClassVar[int]
    WINDOW_START_MS_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    CONSUMERS_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    SKEW_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    SKEW_MESSAGE_COUNT_FIELD_NUMBER: _ClassVar[int]
    SKEW_BYTES_FIELD_NUMBER: _ClassVar[int]
    SKEW_WINDOW_PUBLISHED_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    FEED_POSITIONS_FIELD_NUMBER: _ClassVar[int]
    WATERMARK_MS_FIELD_NUMBER: _ClassVar[int]
    computed_at_ms: int
    batch_id: int
    window_ms: int
    window_start_ms: int
    partitions: _containers.RepeatedCompositeFieldContainer[AnalyticsPartition]
    consumers: _containers.RepeatedCompositeFieldContainer[AnalyticsConsumer]
    replicas: _containers.RepeatedCompositeFieldContainer[AnalyticsReplica]
    nodes: _containers.RepeatedCompositeFieldContainer[AnalyticsNode]
    skew_partitions: int
    skew_message_count: int
    skew_bytes: int
    skew_window_published_messages: int
    feed_positions: _containers.RepeatedCompositeFieldContainer[AnalyticsFeedPosition]
    watermark_ms: int
    def __init__(self, computed_at_ms: _Optional[int] = ..., batch_id: _Optional[int] = ..., window_ms: _Optional[int] = ..., window_start_ms: _Optional[int] = ..., partitions: _Optional[_Iterable[_Union[AnalyticsPartition, _Mapping]]] = ..., consumers: _Optional[_Iterable[_Union[AnalyticsConsumer, _Mapping]]] = ..., replicas: _Optional[_Iterable[_Union[AnalyticsReplica, _Mapping]]] = ..., nodes: _Optional[_Iterable[_Union[AnalyticsNode, _Mapping]]] = ..., skew_partitions: _Optional[int] = ..., skew_message_count: _Optional[int] = ..., skew_bytes: _Optional[int] = ..., skew_window_published_messages: _Optional[int] = ..., feed_positions: _Optional[_Iterable[_Union[AnalyticsFeedPosition, _Mapping]]] = ..., watermark_ms: _Optional[int] = ...) -> None: ...

class AnalyticsPartition(_message.Message):
    __slots__ = ("stream", "partition", "primary_node_id", "last_seq", "published_messages", "published_bytes", "window_published_messages", "window_published_bytes", "publish_rate_messages_per_second", "publish_rate_bytes_per_second")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    PRIMARY_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    PUBLISHED_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    PUBLISHED_BYTES_FIELD_NUMBER: _ClassVar[int]
    WINDOW_PUBLISHED_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    WINDOW_PUBLISHED_BYTES_FIELD_NUMBER: _ClassVar[int]
    PUBLISH_RATE_MESSAGES_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    PUBLISH_RATE_BYTES_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    stream: str
    partition: int
    primary_node_id: str
    last_seq: int
    published_messages: int
    published_bytes: int
    window_published_messages: int
    window_published_bytes: int
    publish_rate_messages_per_second: float
    publish_rate_bytes_per_second: float
    def __init__(self, stream: _Optional[str] = ..., partition: _Optional[int] = ..., primary_node_id: _Optional[str] = ..., last_seq: _Optional[int] = ..., published_messages: _Optional[int] = ..., published_bytes: _Optional[int] = ..., window_published_messages: _Optional[int] = ..., window_published_bytes: _Optional[int] = ..., publish_rate_messages_per_second: _Optional[float] = ..., publish_rate_bytes_per_second: _Optional[float] = ...) -> None: ...

class AnalyticsConsumer(_message.Message):
    __slots__ = ("stream", "consumer", "lag_messages", "pending_count", "delivered", "redelivered", "acked", "naked", "termed", "dead_lettered", "dropped", "window_acked", "ack_rate_per_second", "window_redelivered", "window_dead_lettered")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    LAG_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    PENDING_COUNT_FIELD_NUMBER: _ClassVar[int]
    DELIVERED_FIELD_NUMBER: _ClassVar[int]
    REDELIVERED_FIELD_NUMBER: _ClassVar[int]
    ACKED_FIELD_NUMBER: _ClassVar[int]
    NAKED_FIELD_NUMBER: _ClassVar[int]
    TERMED_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTERED_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    WINDOW_ACKED_FIELD_NUMBER: _ClassVar[int]
    ACK_RATE_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    WINDOW_REDELIVERED_FIELD_NUMBER: _ClassVar[int]
    WINDOW_DEAD_LETTERED_FIELD_NUMBER: _ClassVar[int]
    stream: str
    consumer: str
    lag_messages: int
    pending_count: int
    delivered: int
    redelivered: int
    acked: int
    naked: int
    termed: int
    dead_lettered: int
    dropped: int
    window_acked: int
    ack_rate_per_second: float
    window_redelivered: int
    window_dead_lettered: int
    def __init__(self, stream: _Optional[str] = ..., consumer: _Optional[str] = ..., lag_messages: _Optional[int] = ..., pending_count: _Optional[int] = ..., delivered: _Optional[int] = ..., redelivered: _Optional[int] = ..., acked: _Optional[int] = ..., naked: _Optional[int] = ..., termed: _Optional[int] = ..., dead_lettered: _Optional[int] = ..., dropped: _Optional[int] = ..., window_acked: _Optional[int] = ..., ack_rate_per_second: _Optional[float] = ..., window_redelivered: _Optional[int] = ..., window_dead_lettered: _Optional[int] = ...) -> None: ...

class AnalyticsReplica(_message.Message):
    __slots__ = ("stream", "partition", "node_id", "role", "last_seq", "lag_messages", "message_count", "bytes")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    LAG_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_COUNT_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    stream: str
    partition: int
    node_id: str
    role: PartitionRole
    last_seq: int
    lag_messages: int
    message_count: int
    bytes: int
    def __init__(self, stream: _Optional[str] = ..., partition: _Optional[int] = ..., node_id: _Optional[str] = ..., role: _Optional[_Union[PartitionRole, str]] = ..., last_seq: _Optional[int] = ..., lag_messages: _Optional[int] = ..., message_count: _Optional[int] = ..., bytes: _Optional[int] = ...) -> None: ...

class AnalyticsNode(_message.Message):
    __slots__ = ("node_id", "partitions_led", "message_count", "bytes", "published_messages", "published_bytes", "window_published_messages", "publish_rate_messages_per_second")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_LED_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_COUNT_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    PUBLISHED_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    PUBLISHED_BYTES_FIELD_NUMBER: _ClassVar[int]
    WINDOW_PUBLISHED_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    PUBLISH_RATE_MESSAGES_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    partitions_led: int
    message_count: int
    bytes: int
    published_messages: int
    published_bytes: int
    window_published_messages: int
    publish_rate_messages_per_second: float
    def __init__(self, node_id: _Optional[str] = ..., partitions_led: _Optional[int] = ..., message_count: _Optional[int] = ..., bytes: _Optional[int] = ..., published_messages: _Optional[int] = ..., published_bytes: _Optional[int] = ..., window_published_messages: _Optional[int] = ..., publish_rate_messages_per_second: _Optional[float] = ...) -> None: ...

class AnalyticsFeedPosition(_message.Message):
    __slots__ = ("node_id", "next_change_seq", "changes", "skipped_changes")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    NEXT_CHANGE_SEQ_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    SKIPPED_CHANGES_FIELD_NUMBER: _ClassVar[int]
    node_id: str
    next_change_seq: int
    changes: int
    skipped_changes: int
    def __init__(self, node_id: _Optional[str] = ..., next_change_seq: _Optional[int] = ..., changes: _Optional[int] = ..., skipped_changes: _Optional[int] = ...) -> None: ...
