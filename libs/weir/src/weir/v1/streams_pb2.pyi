from weir.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class AckLevel(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ACK_LEVEL_LEADER: _ClassVar[AckLevel]
    ACK_LEVEL_NONE: _ClassVar[AckLevel]
    ACK_LEVEL_ALL: _ClassVar[AckLevel]

class WatchEventType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WATCH_EVENT_TYPE_UNKNOWN: _ClassVar[WatchEventType]
    WATCH_EVENT_TYPE_STREAM_CREATED: _ClassVar[WatchEventType]
    WATCH_EVENT_TYPE_STREAM_DELETED: _ClassVar[WatchEventType]
    WATCH_EVENT_TYPE_STREAM_UPDATED: _ClassVar[WatchEventType]
    WATCH_EVENT_TYPE_CONSUMER_CREATED: _ClassVar[WatchEventType]
    WATCH_EVENT_TYPE_CONSUMER_DELETED: _ClassVar[WatchEventType]
    WATCH_EVENT_TYPE_LEADER_CHANGED: _ClassVar[WatchEventType]
ACK_LEVEL_LEADER: AckLevel
ACK_LEVEL_NONE: AckLevel
ACK_LEVEL_ALL: AckLevel
WATCH_EVENT_TYPE_UNKNOWN: WatchEventType
WATCH_EVENT_TYPE_STREAM_CREATED: WatchEventType
WATCH_EVENT_TYPE_STREAM_DELETED: WatchEventType
WATCH_EVENT_TYPE_STREAM_UPDATED: WatchEventType
WATCH_EVENT_TYPE_CONSUMER_CREATED: WatchEventType
WATCH_EVENT_TYPE_CONSUMER_DELETED: WatchEventType
WATCH_EVENT_TYPE_LEADER_CHANGED: WatchEventType

class CreateStreamRequest(_message.Message):
    __slots__ = ("config", "placement")
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    config: _types_pb2.StreamConfig
    placement: _types_pb2.StreamPlacement
    def __init__(self, config: _Optional[_Union[_types_pb2.StreamConfig, _Mapping]] = ..., placement: _Optional[_Union[_types_pb2.StreamPlacement, _Mapping]] = ...) -> None: ...

class CreateStreamResponse(_message.Message):
    __slots__ = ("config", "created_at_ms")
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    config: _types_pb2.StreamConfig
    created_at_ms: int
    def __init__(self, config: _Optional[_Union[_types_pb2.StreamConfig, _Mapping]] = ..., created_at_ms: _Optional[int] = ...) -> None: ...

class DeleteStreamRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteStreamResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetStreamInfoRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetStreamInfoResponse(_message.Message):
    __slots__ = ("config", "stats", "created_at_ms", "sources_status", "placement", "pinned_partitions")
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    SOURCES_STATUS_FIELD_NUMBER: _ClassVar[int]
    PLACEMENT_FIELD_NUMBER: _ClassVar[int]
    PINNED_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    config: _types_pb2.StreamConfig
    stats: _types_pb2.StreamStats
    created_at_ms: int
    sources_status: _containers.RepeatedCompositeFieldContainer[_types_pb2.SourceStatus]
    placement: _types_pb2.StreamPlacement
    pinned_partitions: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, config: _Optional[_Union[_types_pb2.StreamConfig, _Mapping]] = ..., stats: _Optional[_Union[_types_pb2.StreamStats, _Mapping]] = ..., created_at_ms: _Optional[int] = ..., sources_status: _Optional[_Iterable[_Union[_types_pb2.SourceStatus, _Mapping]]] = ..., placement: _Optional[_Union[_types_pb2.StreamPlacement, _Mapping]] = ..., pinned_partitions: _Optional[_Iterable[int]] = ...) -> None: ...

class ListStreamsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListStreamsResponse(_message.Message):
    __slots__ = ("names",)
    NAMES_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, names: _Optional[_Iterable[str]] = ...) -> None: ...

class UpdateStreamRequest(_message.Message):
    __slots__ = ("name", "max_age_ms", "max_msgs", "max_bytes", "max_msg_bytes", "max_msgs_per_subject", "duplicate_window_ms", "duplicate_window_max_msgs")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_AGE_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_MSGS_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_MSG_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_MSGS_PER_SUBJECT_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_WINDOW_MS_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_WINDOW_MAX_MSGS_FIELD_NUMBER: _ClassVar[int]
    name: str
    max_age_ms: int
    max_msgs: int
    max_bytes: int
    max_msg_bytes: int
    max_msgs_per_subject: int
    duplicate_window_ms: int
    duplicate_window_max_msgs: int
    def __init__(self, name: _Optional[str] = ..., max_age_ms: _Optional[int] = ..., max_msgs: _Optional[int] = ..., max_bytes: _Optional[int] = ..., max_msg_bytes: _Optional[int] = ..., max_msgs_per_subject: _Optional[int] = ..., duplicate_window_ms: _Optional[int] = ..., duplicate_window_max_msgs: _Optional[int] = ...) -> None: ...

class PurgePartitionRequest(_message.Message):
    __slots__ = ("stream", "partition", "keep_from_seq", "seqs")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    KEEP_FROM_SEQ_FIELD_NUMBER: _ClassVar[int]
    SEQS_FIELD_NUMBER: _ClassVar[int]
    stream: str
    partition: int
    keep_from_seq: int
    seqs: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, stream: _Optional[str] = ..., partition: _Optional[int] = ..., keep_from_seq: _Optional[int] = ..., seqs: _Optional[_Iterable[int]] = ...) -> None: ...

class PurgePartitionResponse(_message.Message):
    __slots__ = ("purged", "first_seq")
    PURGED_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    purged: int
    first_seq: int
    def __init__(self, purged: _Optional[int] = ..., first_seq: _Optional[int] = ...) -> None: ...

class UpdateStreamResponse(_message.Message):
    __slots__ = ("config", "pruned")
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    PRUNED_FIELD_NUMBER: _ClassVar[int]
    config: _types_pb2.StreamConfig
    pruned: int
    def __init__(self, config: _Optional[_Union[_types_pb2.StreamConfig, _Mapping]] = ..., pruned: _Optional[int] = ...) -> None: ...

class PublishRequest(_message.Message):
    __slots__ = ("stream", "subject", "payload", "headers", "ts_ms", "expected_last_seq", "key", "partition", "ack_level", "msg_id", "timeout_ms", "delay_ms", "deliver_at_ms", "hold", "rollup", "ttl_ms")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    TS_MS_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    ACK_LEVEL_FIELD_NUMBER: _ClassVar[int]
    MSG_ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    DELAY_MS_FIELD_NUMBER: _ClassVar[int]
    DELIVER_AT_MS_FIELD_NUMBER: _ClassVar[int]
    HOLD_FIELD_NUMBER: _ClassVar[int]
    ROLLUP_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    stream: str
    subject: str
    payload: bytes
    headers: _containers.RepeatedCompositeFieldContainer[_types_pb2.Header]
    ts_ms: int
    expected_last_seq: int
    key: bytes
    partition: int
    ack_level: AckLevel
    msg_id: str
    timeout_ms: int
    delay_ms: int
    deliver_at_ms: int
    hold: bool
    rollup: bool
    ttl_ms: int
    def __init__(self, stream: _Optional[str] = ..., subject: _Optional[str] = ..., payload: _Optional[bytes] = ..., headers: _Optional[_Iterable[_Union[_types_pb2.Header, _Mapping]]] = ..., ts_ms: _Optional[int] = ..., expected_last_seq: _Optional[int] = ..., key: _Optional[bytes] = ..., partition: _Optional[int] = ..., ack_level: _Optional[_Union[AckLevel, str]] = ..., msg_id: _Optional[str] = ..., timeout_ms: _Optional[int] = ..., delay_ms: _Optional[int] = ..., deliver_at_ms: _Optional[int] = ..., hold: bool = ..., rollup: bool = ..., ttl_ms: _Optional[int] = ...) -> None: ...

class PublishResponse(_message.Message):
    __slots__ = ("partition", "seq", "duplicate", "scheduled")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_FIELD_NUMBER: _ClassVar[int]
    partition: int
    seq: int
    duplicate: bool
    scheduled: bool
    def __init__(self, partition: _Optional[int] = ..., seq: _Optional[int] = ..., duplicate: bool = ..., scheduled: bool = ...) -> None: ...

class PublishEntry(_message.Message):
    __slots__ = ("subject", "payload", "headers", "ts_ms", "expected_last_seq", "key", "partition", "msg_id", "delay_ms", "deliver_at_ms", "hold", "rollup", "ttl_ms")
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    TS_MS_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    MSG_ID_FIELD_NUMBER: _ClassVar[int]
    DELAY_MS_FIELD_NUMBER: _ClassVar[int]
    DELIVER_AT_MS_FIELD_NUMBER: _ClassVar[int]
    HOLD_FIELD_NUMBER: _ClassVar[int]
    ROLLUP_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    subject: str
    payload: bytes
    headers: _containers.RepeatedCompositeFieldContainer[_types_pb2.Header]
    ts_ms: int
    expected_last_seq: int
    key: bytes
    partition: int
    msg_id: str
    delay_ms: int
    deliver_at_ms: int
    hold: bool
    rollup: bool
    ttl_ms: int
    def __init__(self, subject: _Optional[str] = ..., payload: _Optional[bytes] = ..., headers: _Optional[_Iterable[_Union[_types_pb2.Header, _Mapping]]] = ..., ts_ms: _Optional[int] = ..., expected_last_seq: _Optional[int] = ..., key: _Optional[bytes] = ..., partition: _Optional[int] = ..., msg_id: _Optional[str] = ..., delay_ms: _Optional[int] = ..., deliver_at_ms: _Optional[int] = ..., hold: bool = ..., rollup: bool = ..., ttl_ms: _Optional[int] = ...) -> None: ...

class PublishBatchRequest(_message.Message):
    __slots__ = ("stream", "entries", "ack_level", "timeout_ms")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    ACK_LEVEL_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    stream: str
    entries: _containers.RepeatedCompositeFieldContainer[PublishEntry]
    ack_level: AckLevel
    timeout_ms: int
    def __init__(self, stream: _Optional[str] = ..., entries: _Optional[_Iterable[_Union[PublishEntry, _Mapping]]] = ..., ack_level: _Optional[_Union[AckLevel, str]] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class PublishResult(_message.Message):
    __slots__ = ("partition", "seq", "result_code", "message", "duplicate", "scheduled")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DUPLICATE_FIELD_NUMBER: _ClassVar[int]
    SCHEDULED_FIELD_NUMBER: _ClassVar[int]
    partition: int
    seq: int
    result_code: str
    message: str
    duplicate: bool
    scheduled: bool
    def __init__(self, partition: _Optional[int] = ..., seq: _Optional[int] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., duplicate: bool = ..., scheduled: bool = ...) -> None: ...

class PublishBatchResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[PublishResult]
    def __init__(self, results: _Optional[_Iterable[_Union[PublishResult, _Mapping]]] = ...) -> None: ...

class GetMessageRequest(_message.Message):
    __slots__ = ("stream", "partition", "seq")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    stream: str
    partition: int
    seq: int
    def __init__(self, stream: _Optional[str] = ..., partition: _Optional[int] = ..., seq: _Optional[int] = ...) -> None: ...

class GetMessageResponse(_message.Message):
    __slots__ = ("message",)
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    message: _types_pb2.Message
    def __init__(self, message: _Optional[_Union[_types_pb2.Message, _Mapping]] = ...) -> None: ...

class ReadMessagesRequest(_message.Message):
    __slots__ = ("stream", "partition", "from_seq", "max_messages", "max_bytes", "filter_subject", "last_per_subject_until", "max_wait_ms")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    FROM_SEQ_FIELD_NUMBER: _ClassVar[int]
    MAX_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    FILTER_SUBJECT_FIELD_NUMBER: _ClassVar[int]
    LAST_PER_SUBJECT_UNTIL_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    stream: str
    partition: int
    from_seq: int
    max_messages: int
    max_bytes: int
    filter_subject: str
    last_per_subject_until: int
    max_wait_ms: int
    def __init__(self, stream: _Optional[str] = ..., partition: _Optional[int] = ..., from_seq: _Optional[int] = ..., max_messages: _Optional[int] = ..., max_bytes: _Optional[int] = ..., filter_subject: _Optional[str] = ..., last_per_subject_until: _Optional[int] = ..., max_wait_ms: _Optional[int] = ...) -> None: ...

class ReadMessagesResponse(_message.Message):
    __slots__ = ("messages", "next_seq", "last_seq", "first_seq")
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    NEXT_SEQ_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[_types_pb2.Message]
    next_seq: int
    last_seq: int
    first_seq: int
    def __init__(self, messages: _Optional[_Iterable[_Union[_types_pb2.Message, _Mapping]]] = ..., next_seq: _Optional[int] = ..., last_seq: _Optional[int] = ..., first_seq: _Optional[int] = ...) -> None: ...

class ReadLatestAtSubjectRequest(_message.Message):
    __slots__ = ("stream", "subject", "partition")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    stream: str
    subject: str
    partition: int
    def __init__(self, stream: _Optional[str] = ..., subject: _Optional[str] = ..., partition: _Optional[int] = ...) -> None: ...

class ReadLatestAtSubjectResponse(_message.Message):
    __slots__ = ("latest",)
    LATEST_FIELD_NUMBER: _ClassVar[int]
    latest: _types_pb2.Message
    def __init__(self, latest: _Optional[_Union[_types_pb2.Message, _Mapping]] = ...) -> None: ...

class ListSubjectsByPrefixRequest(_message.Message):
    __slots__ = ("stream", "prefix", "partition", "limit", "include_latest")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_LATEST_FIELD_NUMBER: _ClassVar[int]
    stream: str
    prefix: str
    partition: int
    limit: int
    include_latest: bool
    def __init__(self, stream: _Optional[str] = ..., prefix: _Optional[str] = ..., partition: _Optional[int] = ..., limit: _Optional[int] = ..., include_latest: bool = ...) -> None: ...

class ListSubjectsByPrefixResponse(_message.Message):
    __slots__ = ("subjects", "truncated", "latest")
    SUBJECTS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    LATEST_FIELD_NUMBER: _ClassVar[int]
    subjects: _containers.RepeatedScalarFieldContainer[str]
    truncated: bool
    latest: _containers.RepeatedCompositeFieldContainer[_types_pb2.Message]
    def __init__(self, subjects: _Optional[_Iterable[str]] = ..., truncated: bool = ..., latest: _Optional[_Iterable[_Union[_types_pb2.Message, _Mapping]]] = ...) -> None: ...

class ScanExactAtSubjectRequest(_message.Message):
    __slots__ = ("stream", "subject", "partition", "from_seq", "limit")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    FROM_SEQ_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    stream: str
    subject: str
    partition: int
    from_seq: int
    limit: int
    def __init__(self, stream: _Optional[str] = ..., subject: _Optional[str] = ..., partition: _Optional[int] = ..., from_seq: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class ScanExactAtSubjectResponse(_message.Message):
    __slots__ = ("messages",)
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[_types_pb2.Message]
    def __init__(self, messages: _Optional[_Iterable[_Union[_types_pb2.Message, _Mapping]]] = ...) -> None: ...

class WatchStreamsRequest(_message.Message):
    __slots__ = ("from_change_seq",)
    FROM_CHANGE_SEQ_FIELD_NUMBER: _ClassVar[int]
    from_change_seq: int
    def __init__(self, from_change_seq: _Optional[int] = ...) -> None: ...

class WatchEvent(_message.Message):
    __slots__ = ("type", "ts_ms", "node_id", "stream", "change_seq", "consumer", "partition", "leader_epoch", "preferred_leader_node_id")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TS_MS_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CHANGE_SEQ_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    LEADER_EPOCH_FIELD_NUMBER: _ClassVar[int]
    PREFERRED_LEADER_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    type: WatchEventType
    ts_ms: int
    node_id: str
    stream: str
    change_seq: int
    consumer: str
    partition: int
    leader_epoch: int
    preferred_leader_node_id: str
    def __init__(self, type: _Optional[_Union[WatchEventType, str]] = ..., ts_ms: _Optional[int] = ..., node_id: _Optional[str] = ..., stream: _Optional[str] = ..., change_seq: _Optional[int] = ..., consumer: _Optional[str] = ..., partition: _Optional[int] = ..., leader_epoch: _Optional[int] = ..., preferred_leader_node_id: _Optional[str] = ...) -> None: ...

class CreateConsumerRequest(_message.Message):
    __slots__ = ("stream", "config")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    stream: str
    config: _types_pb2.ConsumerConfig
    def __init__(self, stream: _Optional[str] = ..., config: _Optional[_Union[_types_pb2.ConsumerConfig, _Mapping]] = ...) -> None: ...

class CreateConsumerResponse(_message.Message):
    __slots__ = ("info",)
    INFO_FIELD_NUMBER: _ClassVar[int]
    info: _types_pb2.ConsumerInfo
    def __init__(self, info: _Optional[_Union[_types_pb2.ConsumerInfo, _Mapping]] = ...) -> None: ...

class DeleteConsumerRequest(_message.Message):
    __slots__ = ("stream", "consumer")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    stream: str
    consumer: str
    def __init__(self, stream: _Optional[str] = ..., consumer: _Optional[str] = ...) -> None: ...

class DeleteConsumerResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListConsumersRequest(_message.Message):
    __slots__ = ("stream",)
    STREAM_FIELD_NUMBER: _ClassVar[int]
    stream: str
    def __init__(self, stream: _Optional[str] = ...) -> None: ...

class ListConsumersResponse(_message.Message):
    __slots__ = ("consumers",)
    CONSUMERS_FIELD_NUMBER: _ClassVar[int]
    consumers: _containers.RepeatedCompositeFieldContainer[_types_pb2.ConsumerInfo]
    def __init__(self, consumers: _Optional[_Iterable[_Union[_types_pb2.ConsumerInfo, _Mapping]]] = ...) -> None: ...

class GetConsumerInfoRequest(_message.Message):
    __slots__ = ("stream", "consumer")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    stream: str
    consumer: str
    def __init__(self, stream: _Optional[str] = ..., consumer: _Optional[str] = ...) -> None: ...

class GetConsumerInfoResponse(_message.Message):
    __slots__ = ("info",)
    INFO_FIELD_NUMBER: _ClassVar[int]
    info: _types_pb2.ConsumerInfo
    def __init__(self, info: _Optional[_Union[_types_pb2.ConsumerInfo, _Mapping]] = ...) -> None: ...

class FetchRequest(_message.Message):
    __slots__ = ("stream", "consumer", "batch_size", "partition", "max_wait_ms", "max_bytes", "ack_wait_ms")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    MAX_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    ACK_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    stream: str
    consumer: str
    batch_size: int
    partition: int
    max_wait_ms: int
    max_bytes: int
    ack_wait_ms: int
    def __init__(self, stream: _Optional[str] = ..., consumer: _Optional[str] = ..., batch_size: _Optional[int] = ..., partition: _Optional[int] = ..., max_wait_ms: _Optional[int] = ..., max_bytes: _Optional[int] = ..., ack_wait_ms: _Optional[int] = ...) -> None: ...

class FetchResponse(_message.Message):
    __slots__ = ("messages",)
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[_types_pb2.Message]
    def __init__(self, messages: _Optional[_Iterable[_Union[_types_pb2.Message, _Mapping]]] = ...) -> None: ...

class AckRequest(_message.Message):
    __slots__ = ("stream", "consumer", "partition", "seq", "deliver_count")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    DELIVER_COUNT_FIELD_NUMBER: _ClassVar[int]
    stream: str
    consumer: str
    partition: int
    seq: int
    deliver_count: int
    def __init__(self, stream: _Optional[str] = ..., consumer: _Optional[str] = ..., partition: _Optional[int] = ..., seq: _Optional[int] = ..., deliver_count: _Optional[int] = ...) -> None: ...

class AckResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class AckBatchRequest(_message.Message):
    __slots__ = ("stream", "consumer", "partition", "seqs", "deliver_counts")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SEQS_FIELD_NUMBER: _ClassVar[int]
    DELIVER_COUNTS_FIELD_NUMBER: _ClassVar[int]
    stream: str
    consumer: str
    partition: int
    seqs: _containers.RepeatedScalarFieldContainer[int]
    deliver_counts: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, stream: _Optional[str] = ..., consumer: _Optional[str] = ..., partition: _Optional[int] = ..., seqs: _Optional[_Iterable[int]] = ..., deliver_counts: _Optional[_Iterable[int]] = ...) -> None: ...

class AckResult(_message.Message):
    __slots__ = ("seq", "result_code", "message")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    seq: int
    result_code: str
    message: str
    def __init__(self, seq: _Optional[int] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class AckBatchResponse(_message.Message):
    __slots__ = ("results",)
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    results: _containers.RepeatedCompositeFieldContainer[AckResult]
    def __init__(self, results: _Optional[_Iterable[_Union[AckResult, _Mapping]]] = ...) -> None: ...

class NakRequest(_message.Message):
    __slots__ = ("stream", "consumer", "partition", "seq", "delay_ms", "deliver_count")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    DELAY_MS_FIELD_NUMBER: _ClassVar[int]
    DELIVER_COUNT_FIELD_NUMBER: _ClassVar[int]
    stream: str
    consumer: str
    partition: int
    seq: int
    delay_ms: int
    deliver_count: int
    def __init__(self, stream: _Optional[str] = ..., consumer: _Optional[str] = ..., partition: _Optional[int] = ..., seq: _Optional[int] = ..., delay_ms: _Optional[int] = ..., deliver_count: _Optional[int] = ...) -> None: ...

class NakResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class SeekConsumerRequest(_message.Message):
    __slots__ = ("stream", "consumer", "partition", "seq", "time_ms", "end")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    END_FIELD_NUMBER: _ClassVar[int]
    stream: str
    consumer: str
    partition: int
    seq: int
    time_ms: int
    end: bool
    def __init__(self, stream: _Optional[str] = ..., consumer: _Optional[str] = ..., partition: _Optional[int] = ..., seq: _Optional[int] = ..., time_ms: _Optional[int] = ..., end: bool = ...) -> None: ...

class SeekConsumerResponse(_message.Message):
    __slots__ = ("next_seq", "dropped_pending")
    NEXT_SEQ_FIELD_NUMBER: _ClassVar[int]
    DROPPED_PENDING_FIELD_NUMBER: _ClassVar[int]
    next_seq: int
    dropped_pending: int
    def __init__(self, next_seq: _Optional[int] = ..., dropped_pending: _Optional[int] = ...) -> None: ...

class TermRequest(_message.Message):
    __slots__ = ("stream", "consumer", "partition", "seq", "deliver_count", "dead_letter")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    DELIVER_COUNT_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTER_FIELD_NUMBER: _ClassVar[int]
    stream: str
    consumer: str
    partition: int
    seq: int
    deliver_count: int
    dead_letter: bool
    def __init__(self, stream: _Optional[str] = ..., consumer: _Optional[str] = ..., partition: _Optional[int] = ..., seq: _Optional[int] = ..., deliver_count: _Optional[int] = ..., dead_letter: bool = ...) -> None: ...

class TermResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class InProgressRequest(_message.Message):
    __slots__ = ("stream", "consumer", "partition", "seq")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    stream: str
    consumer: str
    partition: int
    seq: int
    def __init__(self, stream: _Optional[str] = ..., consumer: _Optional[str] = ..., partition: _Optional[int] = ..., seq: _Optional[int] = ...) -> None: ...

class InProgressResponse(_message.Message):
    __slots__ = ("redeliver_at_ms",)
    REDELIVER_AT_MS_FIELD_NUMBER: _ClassVar[int]
    redeliver_at_ms: int
    def __init__(self, redeliver_at_ms: _Optional[int] = ...) -> None: ...

class SubscribeRequest(_message.Message):
    __slots__ = ("stream", "consumer", "batch_size", "stop_when_empty", "partitions", "deliver_group", "batch_events")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    STOP_WHEN_EMPTY_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    DELIVER_GROUP_FIELD_NUMBER: _ClassVar[int]
    BATCH_EVENTS_FIELD_NUMBER: _ClassVar[int]
    stream: str
    consumer: str
    batch_size: int
    stop_when_empty: bool
    partitions: _containers.RepeatedScalarFieldContainer[int]
    deliver_group: str
    batch_events: bool
    def __init__(self, stream: _Optional[str] = ..., consumer: _Optional[str] = ..., batch_size: _Optional[int] = ..., stop_when_empty: bool = ..., partitions: _Optional[_Iterable[int]] = ..., deliver_group: _Optional[str] = ..., batch_events: bool = ...) -> None: ...

class SubscribeEvent(_message.Message):
    __slots__ = ("message", "stopped", "batch")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    STOPPED_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    message: _types_pb2.Message
    stopped: SubscribeStopped
    batch: MessageBatch
    def __init__(self, message: _Optional[_Union[_types_pb2.Message, _Mapping]] = ..., stopped: _Optional[_Union[SubscribeStopped, _Mapping]] = ..., batch: _Optional[_Union[MessageBatch, _Mapping]] = ...) -> None: ...

class MessageBatch(_message.Message):
    __slots__ = ("messages",)
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[_types_pb2.Message]
    def __init__(self, messages: _Optional[_Iterable[_Union[_types_pb2.Message, _Mapping]]] = ...) -> None: ...

class SubscribeStopped(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class ReleaseScheduledRequest(_message.Message):
    __slots__ = ("stream", "partition", "seq", "discard")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    DISCARD_FIELD_NUMBER: _ClassVar[int]
    stream: str
    partition: int
    seq: int
    discard: bool
    def __init__(self, stream: _Optional[str] = ..., partition: _Optional[int] = ..., seq: _Optional[int] = ..., discard: bool = ...) -> None: ...

class ReleaseScheduledResponse(_message.Message):
    __slots__ = ("delivered_seq",)
    DELIVERED_SEQ_FIELD_NUMBER: _ClassVar[int]
    delivered_seq: int
    def __init__(self, delivered_seq: _Optional[int] = ...) -> None: ...

class ListScheduledRequest(_message.Message):
    __slots__ = ("stream", "partition", "held_only", "from_seq", "max_messages")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    HELD_ONLY_FIELD_NUMBER: _ClassVar[int]
    FROM_SEQ_FIELD_NUMBER: _ClassVar[int]
    MAX_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    stream: str
    partition: int
    held_only: bool
    from_seq: int
    max_messages: int
    def __init__(self, stream: _Optional[str] = ..., partition: _Optional[int] = ..., held_only: bool = ..., from_seq: _Optional[int] = ..., max_messages: _Optional[int] = ...) -> None: ...

class ListScheduledResponse(_message.Message):
    __slots__ = ("messages", "next_seq")
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    NEXT_SEQ_FIELD_NUMBER: _ClassVar[int]
    messages: _containers.RepeatedCompositeFieldContainer[_types_pb2.Message]
    next_seq: int
    def __init__(self, messages: _Optional[_Iterable[_Union[_types_pb2.Message, _Mapping]]] = ..., next_seq: _Optional[int] = ...) -> None: ...

class SeqAtTimeRequest(_message.Message):
    __slots__ = ("stream", "partition", "time_ms")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    TIME_MS_FIELD_NUMBER: _ClassVar[int]
    stream: str
    partition: int
    time_ms: int
    def __init__(self, stream: _Optional[str] = ..., partition: _Optional[int] = ..., time_ms: _Optional[int] = ...) -> None: ...

class SeqAtTimeResponse(_message.Message):
    __slots__ = ("seq", "last_seq")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    seq: int
    last_seq: int
    def __init__(self, seq: _Optional[int] = ..., last_seq: _Optional[int] = ...) -> None: ...
