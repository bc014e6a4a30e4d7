from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class OnDropPolicy(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ON_DROP_HALT: _ClassVar[OnDropPolicy]
    ON_DROP_SKIP_TO_FIRST_AVAILABLE: _ClassVar[OnDropPolicy]

class DeliveryPolicyType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    DELIVERY_ALL: _ClassVar[DeliveryPolicyType]
    DELIVERY_LAST: _ClassVar[DeliveryPolicyType]
    DELIVERY_BY_START_SEQ: _ClassVar[DeliveryPolicyType]
    DELIVERY_BY_START_TIME: _ClassVar[DeliveryPolicyType]

class WatchEventType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    WATCH_UNKNOWN: _ClassVar[WatchEventType]
    WATCH_STREAM_CREATED: _ClassVar[WatchEventType]
    WATCH_STREAM_DELETED: _ClassVar[WatchEventType]
    WATCH_STREAM_UPDATED: _ClassVar[WatchEventType]
    WATCH_CONSUMER_CREATED: _ClassVar[WatchEventType]
    WATCH_CONSUMER_DELETED: _ClassVar[WatchEventType]
    WATCH_STREAM_AUTHORITY_CHANGED: _ClassVar[WatchEventType]
ON_DROP_HALT: OnDropPolicy
ON_DROP_SKIP_TO_FIRST_AVAILABLE: OnDropPolicy
DELIVERY_ALL: DeliveryPolicyType
DELIVERY_LAST: DeliveryPolicyType
DELIVERY_BY_START_SEQ: DeliveryPolicyType
DELIVERY_BY_START_TIME: DeliveryPolicyType
WATCH_UNKNOWN: WatchEventType
WATCH_STREAM_CREATED: WatchEventType
WATCH_STREAM_DELETED: WatchEventType
WATCH_STREAM_UPDATED: WatchEventType
WATCH_CONSUMER_CREATED: WatchEventType
WATCH_CONSUMER_DELETED: WatchEventType
WATCH_STREAM_AUTHORITY_CHANGED: WatchEventType

class LimitsRetention(_message.Message):
    __slots__ = ("max_age_ms", "max_msgs", "max_bytes", "strict_limits")
    MAX_AGE_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_MSGS_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    STRICT_LIMITS_FIELD_NUMBER: _ClassVar[int]
    max_age_ms: int
    max_msgs: int
    max_bytes: int
    strict_limits: bool
    def __init__(self, max_age_ms: _Optional[int] = ..., max_msgs: _Optional[int] = ..., max_bytes: _Optional[int] = ..., strict_limits: _Optional[bool] = ...) -> None: ...

class WorkQueueRetention(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class InterestRetention(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Retention(_message.Message):
    __slots__ = ("limits", "work_queue", "interest")
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    WORK_QUEUE_FIELD_NUMBER: _ClassVar[int]
    INTEREST_FIELD_NUMBER: _ClassVar[int]
    limits: LimitsRetention
    work_queue: WorkQueueRetention
    interest: InterestRetention
    def __init__(self, limits: _Optional[_Union[LimitsRetention, _Mapping]] = ..., work_queue: _Optional[_Union[WorkQueueRetention, _Mapping]] = ..., interest: _Optional[_Union[InterestRetention, _Mapping]] = ...) -> None: ...

class StreamConfigPb(_message.Message):
    __slots__ = ("name", "subjects_filter", "retention", "block_size", "max_msg_bytes", "ephemeral", "sources", "max_msgs_per_subject")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUBJECTS_FILTER_FIELD_NUMBER: _ClassVar[int]
    RETENTION_FIELD_NUMBER: _ClassVar[int]
    BLOCK_SIZE_FIELD_NUMBER: _ClassVar[int]
    MAX_MSG_BYTES_FIELD_NUMBER: _ClassVar[int]
    EPHEMERAL_FIELD_NUMBER: _ClassVar[int]
    SOURCES_FIELD_NUMBER: _ClassVar[int]
    MAX_MSGS_PER_SUBJECT_FIELD_NUMBER: _ClassVar[int]
    name: str
    subjects_filter: _containers.RepeatedScalarFieldContainer[str]
    retention: Retention
    block_size: int
    max_msg_bytes: int
    ephemeral: bool
    sources: _containers.RepeatedCompositeFieldContainer[StreamSourceConfigPb]
    max_msgs_per_subject: int
    def __init__(self, name: _Optional[str] = ..., subjects_filter: _Optional[_Iterable[str]] = ..., retention: _Optional[_Union[Retention, _Mapping]] = ..., block_size: _Optional[int] = ..., max_msg_bytes: _Optional[int] = ..., ephemeral: _Optional[bool] = ..., sources: _Optional[_Iterable[_Union[StreamSourceConfigPb, _Mapping]]] = ..., max_msgs_per_subject: _Optional[int] = ...) -> None: ...

class StreamSourceConfigPb(_message.Message):
    __slots__ = ("source_stream", "filter_subject", "start_seq", "start_time_ms", "subject_transform", "max_initial_backfill", "on_drop", "dlq_stream")
    SOURCE_STREAM_FIELD_NUMBER: _ClassVar[int]
    FILTER_SUBJECT_FIELD_NUMBER: _ClassVar[int]
    START_SEQ_FIELD_NUMBER: _ClassVar[int]
    START_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_TRANSFORM_FIELD_NUMBER: _ClassVar[int]
    MAX_INITIAL_BACKFILL_FIELD_NUMBER: _ClassVar[int]
    ON_DROP_FIELD_NUMBER: _ClassVar[int]
    DLQ_STREAM_FIELD_NUMBER: _ClassVar[int]
    source_stream: str
    filter_subject: str
    start_seq: int
    start_time_ms: int
    subject_transform: SubjectTransformPb
    max_initial_backfill: int
    on_drop: OnDropPolicy
    dlq_stream: str
    def __init__(self, source_stream: _Optional[str] = ..., filter_subject: _Optional[str] = ..., start_seq: _Optional[int] = ..., start_time_ms: _Optional[int] = ..., subject_transform: _Optional[_Union[SubjectTransformPb, _Mapping]] = ..., max_initial_backfill: _Optional[int] = ..., on_drop: _Optional[_Union[OnDropPolicy, str]] = ..., dlq_stream: _Optional[str] = ...) -> None: ...

class SubjectTransformPb(_message.Message):
    __slots__ = ("source_pattern", "destination")
    SOURCE_PATTERN_FIELD_NUMBER: _ClassVar[int]
    DESTINATION_FIELD_NUMBER: _ClassVar[int]
    source_pattern: str
    destination: str
    def __init__(self, source_pattern: _Optional[str] = ..., destination: _Optional[str] = ...) -> None: ...

class StreamStatsPb(_message.Message):
    __slots__ = ("last_seq", "msg_count", "bytes", "block_count", "first_block")
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    MSG_COUNT_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    BLOCK_COUNT_FIELD_NUMBER: _ClassVar[int]
    FIRST_BLOCK_FIELD_NUMBER: _ClassVar[int]
    last_seq: int
    msg_count: int
    bytes: int
    block_count: int
    first_block: int
    def __init__(self, last_seq: _Optional[int] = ..., msg_count: _Optional[int] = ..., bytes: _Optional[int] = ..., block_count: _Optional[int] = ..., first_block: _Optional[int] = ...) -> None: ...

class MessageHeader(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class MessagePb(_message.Message):
    __slots__ = ("seq", "subject", "ts_ms", "headers", "payload", "deliver_count")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    TS_MS_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    DELIVER_COUNT_FIELD_NUMBER: _ClassVar[int]
    seq: int
    subject: str
    ts_ms: int
    headers: _containers.RepeatedCompositeFieldContainer[MessageHeader]
    payload: bytes
    deliver_count: int
    def __init__(self, seq: _Optional[int] = ..., subject: _Optional[str] = ..., ts_ms: _Optional[int] = ..., headers: _Optional[_Iterable[_Union[MessageHeader, _Mapping]]] = ..., payload: _Optional[bytes] = ..., deliver_count: _Optional[int] = ...) -> None: ...

class DeliveryPolicyPb(_message.Message):
    __slots__ = ("type", "start_seq", "start_time_ms")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    START_SEQ_FIELD_NUMBER: _ClassVar[int]
    START_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    type: DeliveryPolicyType
    start_seq: int
    start_time_ms: int
    def __init__(self, type: _Optional[_Union[DeliveryPolicyType, str]] = ..., start_seq: _Optional[int] = ..., start_time_ms: _Optional[int] = ...) -> None: ...

class ConsumerConfigPb(_message.Message):
    __slots__ = ("name", "filter_subject", "delivery_policy", "ack_wait_ms", "max_deliver", "deliver_group", "dead_letter_subject")
    NAME_FIELD_NUMBER: _ClassVar[int]
    FILTER_SUBJECT_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_POLICY_FIELD_NUMBER: _ClassVar[int]
    ACK_WAIT_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_DELIVER_FIELD_NUMBER: _ClassVar[int]
    DELIVER_GROUP_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTER_SUBJECT_FIELD_NUMBER: _ClassVar[int]
    name: str
    filter_subject: str
    delivery_policy: DeliveryPolicyPb
    ack_wait_ms: int
    max_deliver: int
    deliver_group: str
    dead_letter_subject: str
    def __init__(self, name: _Optional[str] = ..., filter_subject: _Optional[str] = ..., delivery_policy: _Optional[_Union[DeliveryPolicyPb, _Mapping]] = ..., ack_wait_ms: _Optional[int] = ..., max_deliver: _Optional[int] = ..., deliver_group: _Optional[str] = ..., dead_letter_subject: _Optional[str] = ...) -> None: ...

class ConsumerStatePb(_message.Message):
    __slots__ = ("config", "ack_floor", "last_delivered", "created_at_ms", "redelivered_dropped")
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    ACK_FLOOR_FIELD_NUMBER: _ClassVar[int]
    LAST_DELIVERED_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    REDELIVERED_DROPPED_FIELD_NUMBER: _ClassVar[int]
    config: ConsumerConfigPb
    ack_floor: int
    last_delivered: int
    created_at_ms: int
    redelivered_dropped: int
    def __init__(self, config: _Optional[_Union[ConsumerConfigPb, _Mapping]] = ..., ack_floor: _Optional[int] = ..., last_delivered: _Optional[int] = ..., created_at_ms: _Optional[int] = ..., redelivered_dropped: _Optional[int] = ...) -> None: ...

class CreateStreamRequest(_message.Message):
    __slots__ = ("config",)
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    config: StreamConfigPb
    def __init__(self, config: _Optional[_Union[StreamConfigPb, _Mapping]] = ...) -> None: ...

class CreateStreamResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class DeleteStreamRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteStreamResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class GetStreamInfoRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetStreamInfoResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "config", "stats", "authority_override", "ring_owner_node_id", "pinned", "sources_status")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    AUTHORITY_OVERRIDE_FIELD_NUMBER: _ClassVar[int]
    RING_OWNER_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    PINNED_FIELD_NUMBER: _ClassVar[int]
    SOURCES_STATUS_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    config: StreamConfigPb
    stats: StreamStatsPb
    authority_override: StreamAuthorityOverride
    ring_owner_node_id: int
    pinned: bool
    sources_status: _containers.RepeatedCompositeFieldContainer[SourceStatusPb]
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., config: _Optional[_Union[StreamConfigPb, _Mapping]] = ..., stats: _Optional[_Union[StreamStatsPb, _Mapping]] = ..., authority_override: _Optional[_Union[StreamAuthorityOverride, _Mapping]] = ..., ring_owner_node_id: _Optional[int] = ..., pinned: _Optional[bool] = ..., sources_status: _Optional[_Iterable[_Union[SourceStatusPb, _Mapping]]] = ...) -> None: ...

class SourceStatusPb(_message.Message):
    __slots__ = ("source_stream", "last_sourced_seq", "pulled_total", "last_error", "last_error_ts_ms")
    SOURCE_STREAM_FIELD_NUMBER: _ClassVar[int]
    LAST_SOURCED_SEQ_FIELD_NUMBER: _ClassVar[int]
    PULLED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_TS_MS_FIELD_NUMBER: _ClassVar[int]
    source_stream: str
    last_sourced_seq: int
    pulled_total: int
    last_error: str
    last_error_ts_ms: int
    def __init__(self, source_stream: _Optional[str] = ..., last_sourced_seq: _Optional[int] = ..., pulled_total: _Optional[int] = ..., last_error: _Optional[str] = ..., last_error_ts_ms: _Optional[int] = ...) -> None: ...

class StreamAuthorityOverride(_message.Message):
    __slots__ = ("claimant_node_id", "fence_epoch")
    CLAIMANT_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    FENCE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    claimant_node_id: int
    fence_epoch: int
    def __init__(self, claimant_node_id: _Optional[int] = ..., fence_epoch: _Optional[int] = ...) -> None: ...

class ClearStreamAuthorityRequest(_message.Message):
    __slots__ = ("stream",)
    STREAM_FIELD_NUMBER: _ClassVar[int]
    stream: str
    def __init__(self, stream: _Optional[str] = ...) -> None: ...

class ClearStreamAuthorityResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ListStreamAuthorityOverridesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListStreamAuthorityOverridesResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "entries")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    entries: _containers.RepeatedCompositeFieldContainer[AuthorityOverrideEntry]
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., entries: _Optional[_Iterable[_Union[AuthorityOverrideEntry, _Mapping]]] = ...) -> None: ...

class AuthorityOverrideEntry(_message.Message):
    __slots__ = ("stream", "claimant_node_id", "fence_epoch")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CLAIMANT_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    FENCE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    stream: str
    claimant_node_id: int
    fence_epoch: int
    def __init__(self, stream: _Optional[str] = ..., claimant_node_id: _Optional[int] = ..., fence_epoch: _Optional[int] = ...) -> None: ...

class SetStreamPinnedRequest(_message.Message):
    __slots__ = ("stream", "pinned")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PINNED_FIELD_NUMBER: _ClassVar[int]
    stream: str
    pinned: bool
    def __init__(self, stream: _Optional[str] = ..., pinned: _Optional[bool] = ...) -> None: ...

class SetStreamPinnedResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ListStreamsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListStreamsResponse(_message.Message):
    __slots__ = ("names",)
    NAMES_FIELD_NUMBER: _ClassVar[int]
    names: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, names: _Optional[_Iterable[str]] = ...) -> None: ...

class GetStreamSourcesRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class GetStreamSourcesResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "entries")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    entries: _containers.RepeatedCompositeFieldContainer[GetStreamSourcesEntry]
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., entries: _Optional[_Iterable[_Union[GetStreamSourcesEntry, _Mapping]]] = ...) -> None: ...

class GetStreamSourcesEntry(_message.Message):
    __slots__ = ("sourcing_stream", "source_stream", "last_sourced_seq", "pulled_total", "last_error", "last_error_ts_ms")
    SOURCING_STREAM_FIELD_NUMBER: _ClassVar[int]
    SOURCE_STREAM_FIELD_NUMBER: _ClassVar[int]
    LAST_SOURCED_SEQ_FIELD_NUMBER: _ClassVar[int]
    PULLED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_FIELD_NUMBER: _ClassVar[int]
    LAST_ERROR_TS_MS_FIELD_NUMBER: _ClassVar[int]
    sourcing_stream: str
    source_stream: str
    last_sourced_seq: int
    pulled_total: int
    last_error: str
    last_error_ts_ms: int
    def __init__(self, sourcing_stream: _Optional[str] = ..., source_stream: _Optional[str] = ..., last_sourced_seq: _Optional[int] = ..., pulled_total: _Optional[int] = ..., last_error: _Optional[str] = ..., last_error_ts_ms: _Optional[int] = ...) -> None: ...

class UpdateStreamRequest(_message.Message):
    __slots__ = ("name", "max_age_ms", "max_msgs", "max_bytes", "max_msg_bytes", "strict_limits")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_AGE_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_MSGS_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_MSG_BYTES_FIELD_NUMBER: _ClassVar[int]
    STRICT_LIMITS_FIELD_NUMBER: _ClassVar[int]
    name: str
    max_age_ms: int
    max_msgs: int
    max_bytes: int
    max_msg_bytes: int
    strict_limits: bool
    def __init__(self, name: _Optional[str] = ..., max_age_ms: _Optional[int] = ..., max_msgs: _Optional[int] = ..., max_bytes: _Optional[int] = ..., max_msg_bytes: _Optional[int] = ..., strict_limits: _Optional[bool] = ...) -> None: ...

class UpdateStreamResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "config", "pruned")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    PRUNED_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    config: StreamConfigPb
    pruned: int
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., config: _Optional[_Union[StreamConfigPb, _Mapping]] = ..., pruned: _Optional[int] = ...) -> None: ...

class PublishRequest(_message.Message):
    __slots__ = ("stream", "subject", "payload", "headers", "ts_ms", "expected_last_seq")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    TS_MS_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    stream: str
    subject: str
    payload: bytes
    headers: _containers.RepeatedCompositeFieldContainer[MessageHeader]
    ts_ms: int
    expected_last_seq: int
    def __init__(self, stream: _Optional[str] = ..., subject: _Optional[str] = ..., payload: _Optional[bytes] = ..., headers: _Optional[_Iterable[_Union[MessageHeader, _Mapping]]] = ..., ts_ms: _Optional[int] = ..., expected_last_seq: _Optional[int] = ...) -> None: ...

class PublishResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "seq")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    seq: int
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., seq: _Optional[int] = ...) -> None: ...

class FetchRequest(_message.Message):
    __slots__ = ("stream", "consumer", "batch_size")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    stream: str
    consumer: str
    batch_size: int
    def __init__(self, stream: _Optional[str] = ..., consumer: _Optional[str] = ..., batch_size: _Optional[int] = ...) -> None: ...

class FetchResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "messages")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    messages: _containers.RepeatedCompositeFieldContainer[MessagePb]
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[MessagePb, _Mapping]]] = ...) -> None: ...

class AckRequest(_message.Message):
    __slots__ = ("stream", "consumer", "seq")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    stream: str
    consumer: str
    seq: int
    def __init__(self, stream: _Optional[str] = ..., consumer: _Optional[str] = ..., seq: _Optional[int] = ...) -> None: ...

class AckResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class NakRequest(_message.Message):
    __slots__ = ("stream", "consumer", "seq", "delay_ms")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    DELAY_MS_FIELD_NUMBER: _ClassVar[int]
    stream: str
    consumer: str
    seq: int
    delay_ms: int
    def __init__(self, stream: _Optional[str] = ..., consumer: _Optional[str] = ..., seq: _Optional[int] = ..., delay_ms: _Optional[int] = ...) -> None: ...

class NakResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class TermRequest(_message.Message):
    __slots__ = ("stream", "consumer", "seq")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    stream: str
    consumer: str
    seq: int
    def __init__(self, stream: _Optional[str] = ..., consumer: _Optional[str] = ..., seq: _Optional[int] = ...) -> None: ...

class TermResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class InProgressRequest(_message.Message):
    __slots__ = ("stream", "consumer", "seq")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    stream: str
    consumer: str
    seq: int
    def __init__(self, stream: _Optional[str] = ..., consumer: _Optional[str] = ..., seq: _Optional[int] = ...) -> None: ...

class InProgressResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class SubscribeRequest(_message.Message):
    __slots__ = ("stream", "consumer", "batch_size", "stop_when_empty")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    STOP_WHEN_EMPTY_FIELD_NUMBER: _ClassVar[int]
    stream: str
    consumer: str
    batch_size: int
    stop_when_empty: bool
    def __init__(self, stream: _Optional[str] = ..., consumer: _Optional[str] = ..., batch_size: _Optional[int] = ..., stop_when_empty: _Optional[bool] = ...) -> None: ...

class SubscribeEvent(_message.Message):
    __slots__ = ("message", "stopped")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    STOPPED_FIELD_NUMBER: _ClassVar[int]
    message: MessagePb
    stopped: SubscribeStopped
    def __init__(self, message: _Optional[_Union[MessagePb, _Mapping]] = ..., stopped: _Optional[_Union[SubscribeStopped, _Mapping]] = ...) -> None: ...

class SubscribeStopped(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class CreateConsumerRequest(_message.Message):
    __slots__ = ("stream", "config")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    stream: str
    config: ConsumerConfigPb
    def __init__(self, stream: _Optional[str] = ..., config: _Optional[_Union[ConsumerConfigPb, _Mapping]] = ...) -> None: ...

class CreateConsumerResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class DeleteConsumerRequest(_message.Message):
    __slots__ = ("stream", "consumer")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    stream: str
    consumer: str
    def __init__(self, stream: _Optional[str] = ..., consumer: _Optional[str] = ...) -> None: ...

class DeleteConsumerResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ListConsumersRequest(_message.Message):
    __slots__ = ("stream",)
    STREAM_FIELD_NUMBER: _ClassVar[int]
    stream: str
    def __init__(self, stream: _Optional[str] = ...) -> None: ...

class ListConsumersResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "consumers")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CONSUMERS_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    consumers: _containers.RepeatedCompositeFieldContainer[ConsumerStatePb]
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., consumers: _Optional[_Iterable[_Union[ConsumerStatePb, _Mapping]]] = ...) -> None: ...

class GetConsumerInfoRequest(_message.Message):
    __slots__ = ("stream", "consumer")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    stream: str
    consumer: str
    def __init__(self, stream: _Optional[str] = ..., consumer: _Optional[str] = ...) -> None: ...

class GetConsumerInfoResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "consumer")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    consumer: ConsumerStatePb
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., consumer: _Optional[_Union[ConsumerStatePb, _Mapping]] = ...) -> None: ...

class TransferStreamRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class TransferStreamChunk(_message.Message):
    __slots__ = ("data", "summary")
    DATA_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    summary: TransferStreamSummary
    def __init__(self, data: _Optional[bytes] = ..., summary: _Optional[_Union[TransferStreamSummary, _Mapping]] = ...) -> None: ...

class TransferStreamSummary(_message.Message):
    __slots__ = ("total_bytes", "stream_last_seq")
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    STREAM_LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    total_bytes: int
    stream_last_seq: int
    def __init__(self, total_bytes: _Optional[int] = ..., stream_last_seq: _Optional[int] = ...) -> None: ...

class MigrateStreamRequest(_message.Message):
    __slots__ = ("name", "source_node_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SOURCE_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    source_node_id: int
    def __init__(self, name: _Optional[str] = ..., source_node_id: _Optional[int] = ...) -> None: ...

class MigrateStreamResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "total_bytes", "stream_last_seq")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    STREAM_LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    total_bytes: int
    stream_last_seq: int
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., total_bytes: _Optional[int] = ..., stream_last_seq: _Optional[int] = ...) -> None: ...

class GetClusterStreamStatsRequest(_message.Message):
    __slots__ = ("include_per_stream", "local_only")
    INCLUDE_PER_STREAM_FIELD_NUMBER: _ClassVar[int]
    LOCAL_ONLY_FIELD_NUMBER: _ClassVar[int]
    include_per_stream: bool
    local_only: bool
    def __init__(self, include_per_stream: _Optional[bool] = ..., local_only: _Optional[bool] = ...) -> None: ...

class PerStreamStats(_message.Message):
    __slots__ = ("name", "owner_node_id", "msg_count", "bytes", "last_seq")
    NAME_FIELD_NUMBER: _ClassVar[int]
    OWNER_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    MSG_COUNT_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    name: str
    owner_node_id: int
    msg_count: int
    bytes: int
    last_seq: int
    def __init__(self, name: _Optional[str] = ..., owner_node_id: _Optional[int] = ..., msg_count: _Optional[int] = ..., bytes: _Optional[int] = ..., last_seq: _Optional[int] = ...) -> None: ...

class PerNodeSummary(_message.Message):
    __slots__ = ("node_id", "stream_count", "total_msg_count", "total_bytes", "status")
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    STREAM_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_MSG_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    node_id: int
    stream_count: int
    total_msg_count: int
    total_bytes: int
    status: str
    def __init__(self, node_id: _Optional[int] = ..., stream_count: _Optional[int] = ..., total_msg_count: _Optional[int] = ..., total_bytes: _Optional[int] = ..., status: _Optional[str] = ...) -> None: ...

class GetClusterStreamStatsResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "nodes", "streams", "total_stream_count", "total_msg_count", "total_bytes", "skew_count", "skew_bytes")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    NODES_FIELD_NUMBER: _ClassVar[int]
    STREAMS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_STREAM_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_MSG_COUNT_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    SKEW_COUNT_FIELD_NUMBER: _ClassVar[int]
    SKEW_BYTES_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    nodes: _containers.RepeatedCompositeFieldContainer[PerNodeSummary]
    streams: _containers.RepeatedCompositeFieldContainer[PerStreamStats]
    total_stream_count: int
    total_msg_count: int
    total_bytes: int
    skew_count: int
    skew_bytes: int
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., nodes: _Optional[_Iterable[_Union[PerNodeSummary, _Mapping]]] = ..., streams: _Optional[_Iterable[_Union[PerStreamStats, _Mapping]]] = ..., total_stream_count: _Optional[int] = ..., total_msg_count: _Optional[int] = ..., total_bytes: _Optional[int] = ..., skew_count: _Optional[int] = ..., skew_bytes: _Optional[int] = ...) -> None: ...

class RebalancePlanEntry(_message.Message):
    __slots__ = ("name", "target_node_id")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    name: str
    target_node_id: int
    def __init__(self, name: _Optional[str] = ..., target_node_id: _Optional[int] = ...) -> None: ...

class RebalanceStreamsRequest(_message.Message):
    __slots__ = ("plan", "per_step_timeout_ms")
    PLAN_FIELD_NUMBER: _ClassVar[int]
    PER_STEP_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    plan: _containers.RepeatedCompositeFieldContainer[RebalancePlanEntry]
    per_step_timeout_ms: int
    def __init__(self, plan: _Optional[_Iterable[_Union[RebalancePlanEntry, _Mapping]]] = ..., per_step_timeout_ms: _Optional[int] = ...) -> None: ...

class RebalanceStepOutcome(_message.Message):
    __slots__ = ("name", "target_node_id", "success", "result_code", "message")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TARGET_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    name: str
    target_node_id: int
    success: bool
    result_code: str
    message: str
    def __init__(self, name: _Optional[str] = ..., target_node_id: _Optional[int] = ..., success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class RebalanceStreamsResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "steps")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    steps: _containers.RepeatedCompositeFieldContainer[RebalanceStepOutcome]
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., steps: _Optional[_Iterable[_Union[RebalanceStepOutcome, _Mapping]]] = ...) -> None: ...

class WatchStreamsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class StreamWatchDetail(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ConsumerWatchDetail(_message.Message):
    __slots__ = ("stream", "consumer")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    stream: str
    consumer: str
    def __init__(self, stream: _Optional[str] = ..., consumer: _Optional[str] = ...) -> None: ...

class AuthorityWatchDetail(_message.Message):
    __slots__ = ("stream", "claimant_node_id", "fence_epoch")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CLAIMANT_NODE_ID_FIELD_NUMBER: _ClassVar[int]
    FENCE_EPOCH_FIELD_NUMBER: _ClassVar[int]
    stream: str
    claimant_node_id: int
    fence_epoch: int
    def __init__(self, stream: _Optional[str] = ..., claimant_node_id: _Optional[int] = ..., fence_epoch: _Optional[int] = ...) -> None: ...

class ReadLatestAtSubjectRequest(_message.Message):
    __slots__ = ("stream", "subject")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    stream: str
    subject: str
    def __init__(self, stream: _Optional[str] = ..., subject: _Optional[str] = ...) -> None: ...

class ReadLatestAtSubjectResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "latest")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    LATEST_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    latest: MessagePb
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., latest: _Optional[_Union[MessagePb, _Mapping]] = ...) -> None: ...

class ListSubjectsByPrefixRequest(_message.Message):
    __slots__ = ("stream", "prefix")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    PREFIX_FIELD_NUMBER: _ClassVar[int]
    stream: str
    prefix: str
    def __init__(self, stream: _Optional[str] = ..., prefix: _Optional[str] = ...) -> None: ...

class ListSubjectsByPrefixResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "subjects")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SUBJECTS_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    subjects: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., subjects: _Optional[_Iterable[str]] = ...) -> None: ...

class ScanExactAtSubjectRequest(_message.Message):
    __slots__ = ("stream", "subject", "from_seq", "limit")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    FROM_SEQ_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    stream: str
    subject: str
    from_seq: int
    limit: int
    def __init__(self, stream: _Optional[str] = ..., subject: _Optional[str] = ..., from_seq: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class ScanExactAtSubjectResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "messages")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    messages: _containers.RepeatedCompositeFieldContainer[MessagePb]
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[MessagePb, _Mapping]]] = ...) -> None: ...

class WatchEvent(_message.Message):
    __slots__ = ("type", "ts_ms", "node_id", "stream", "consumer", "authority", "lagged_count")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TS_MS_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    AUTHORITY_FIELD_NUMBER: _ClassVar[int]
    LAGGED_COUNT_FIELD_NUMBER: _ClassVar[int]
    type: WatchEventType
    ts_ms: int
    node_id: int
    stream: StreamWatchDetail
    consumer: ConsumerWatchDetail
    authority: AuthorityWatchDetail
    lagged_count: int
    def __init__(self, type: _Optional[_Union[WatchEventType, str]] = ..., ts_ms: _Optional[int] = ..., node_id: _Optional[int] = ..., stream: _Optional[_Union[StreamWatchDetail, _Mapping]] = ..., consumer: _Optional[_Union[ConsumerWatchDetail, _Mapping]] = ..., authority: _Optional[_Union[AuthorityWatchDetail, _Mapping]] = ..., lagged_count: _Optional[int] = ...) -> None: ...

class PendingDeliveryPb(_message.Message):
    __slots__ = ("seq", "delivered_at_ms", "deliver_count")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    DELIVERED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    DELIVER_COUNT_FIELD_NUMBER: _ClassVar[int]
    seq: int
    delivered_at_ms: int
    deliver_count: int
    def __init__(self, seq: _Optional[int] = ..., delivered_at_ms: _Optional[int] = ..., deliver_count: _Optional[int] = ...) -> None: ...

class ConsumerStateSnapshot(_message.Message):
    __slots__ = ("stream", "config", "ack_floor", "last_delivered", "created_at_ms", "redelivered_dropped", "pending", "tombstone")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    ACK_FLOOR_FIELD_NUMBER: _ClassVar[int]
    LAST_DELIVERED_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    REDELIVERED_DROPPED_FIELD_NUMBER: _ClassVar[int]
    PENDING_FIELD_NUMBER: _ClassVar[int]
    TOMBSTONE_FIELD_NUMBER: _ClassVar[int]
    stream: str
    config: ConsumerConfigPb
    ack_floor: int
    last_delivered: int
    created_at_ms: int
    redelivered_dropped: int
    pending: _containers.RepeatedCompositeFieldContainer[PendingDeliveryPb]
    tombstone: bool
    def __init__(self, stream: _Optional[str] = ..., config: _Optional[_Union[ConsumerConfigPb, _Mapping]] = ..., ack_floor: _Optional[int] = ..., last_delivered: _Optional[int] = ..., created_at_ms: _Optional[int] = ..., redelivered_dropped: _Optional[int] = ..., pending: _Optional[_Iterable[_Union[PendingDeliveryPb, _Mapping]]] = ..., tombstone: _Optional[bool] = ...) -> None: ...

class ReplicateConsumerStateRequest(_message.Message):
    __slots__ = ("snapshot",)
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    snapshot: ConsumerStateSnapshot
    def __init__(self, snapshot: _Optional[_Union[ConsumerStateSnapshot, _Mapping]] = ...) -> None: ...

class ReplicateConsumerStateResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class SourceTailStateSnapshot(_message.Message):
    __slots__ = ("sourcing_stream", "source_stream", "last_sourced_seq", "pulled_total", "updated_ts_ms", "tombstone")
    SOURCING_STREAM_FIELD_NUMBER: _ClassVar[int]
    SOURCE_STREAM_FIELD_NUMBER: _ClassVar[int]
    LAST_SOURCED_SEQ_FIELD_NUMBER: _ClassVar[int]
    PULLED_TOTAL_FIELD_NUMBER: _ClassVar[int]
    UPDATED_TS_MS_FIELD_NUMBER: _ClassVar[int]
    TOMBSTONE_FIELD_NUMBER: _ClassVar[int]
    sourcing_stream: str
    source_stream: str
    last_sourced_seq: int
    pulled_total: int
    updated_ts_ms: int
    tombstone: bool
    def __init__(self, sourcing_stream: _Optional[str] = ..., source_stream: _Optional[str] = ..., last_sourced_seq: _Optional[int] = ..., pulled_total: _Optional[int] = ..., updated_ts_ms: _Optional[int] = ..., tombstone: _Optional[bool] = ...) -> None: ...

class ReplicateSourceTailStateRequest(_message.Message):
    __slots__ = ("snapshot",)
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    snapshot: SourceTailStateSnapshot
    def __init__(self, snapshot: _Optional[_Union[SourceTailStateSnapshot, _Mapping]] = ...) -> None: ...

class ReplicateSourceTailStateResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ReplicateStreamCreateRequest(_message.Message):
    __slots__ = ("config",)
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    config: StreamConfigPb
    def __init__(self, config: _Optional[_Union[StreamConfigPb, _Mapping]] = ...) -> None: ...

class ReplicateStreamCreateResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ReplicateMessageRequest(_message.Message):
    __slots__ = ("stream", "seq", "subject", "payload", "headers", "ts_ms")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    TS_MS_FIELD_NUMBER: _ClassVar[int]
    stream: str
    seq: int
    subject: str
    payload: bytes
    headers: _containers.RepeatedCompositeFieldContainer[MessageHeader]
    ts_ms: int
    def __init__(self, stream: _Optional[str] = ..., seq: _Optional[int] = ..., subject: _Optional[str] = ..., payload: _Optional[bytes] = ..., headers: _Optional[_Iterable[_Union[MessageHeader, _Mapping]]] = ..., ts_ms: _Optional[int] = ...) -> None: ...

class ReplicateMessageResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "receiver_last_seq")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RECEIVER_LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    receiver_last_seq: int
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., receiver_last_seq: _Optional[int] = ...) -> None: ...

class ReplicateStreamDeleteRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class ReplicateStreamDeleteResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ReplicateTruncateRequest(_message.Message):
    __slots__ = ("stream", "first_seq")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    stream: str
    first_seq: int
    def __init__(self, stream: _Optional[str] = ..., first_seq: _Optional[int] = ...) -> None: ...

class ReplicateTruncateResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "dropped")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    dropped: int
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., dropped: _Optional[int] = ...) -> None: ...

class ReplicateStreamUpdateRequest(_message.Message):
    __slots__ = ("name", "max_age_ms", "max_msgs", "max_bytes", "max_msg_bytes", "strict_limits")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_AGE_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_MSGS_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_MSG_BYTES_FIELD_NUMBER: _ClassVar[int]
    STRICT_LIMITS_FIELD_NUMBER: _ClassVar[int]
    name: str
    max_age_ms: int
    max_msgs: int
    max_bytes: int
    max_msg_bytes: int
    strict_limits: bool
    def __init__(self, name: _Optional[str] = ..., max_age_ms: _Optional[int] = ..., max_msgs: _Optional[int] = ..., max_bytes: _Optional[int] = ..., max_msg_bytes: _Optional[int] = ..., strict_limits: _Optional[bool] = ...) -> None: ...

class ReplicateStreamUpdateResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class ReplicateWorkQueueAckRequest(_message.Message):
    __slots__ = ("stream", "seq")
    STREAM_FIELD_NUMBER: _ClassVar[int]
    SEQ_FIELD_NUMBER: _ClassVar[int]
    stream: str
    seq: int
    def __init__(self, stream: _Optional[str] = ..., seq: _Optional[int] = ...) -> None: ...

class ReplicateWorkQueueAckResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "was_present")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    WAS_PRESENT_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    was_present: bool
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., was_present: _Optional[bool] = ...) -> None: ...

class ObjectInfo(_message.Message):
    __slots__ = ("name", "total_bytes", "chunk_size", "chunk_count", "sha256", "ts_ms", "headers", "metadata_seq", "deduped")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    CHUNK_SIZE_FIELD_NUMBER: _ClassVar[int]
    CHUNK_COUNT_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    TS_MS_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    METADATA_SEQ_FIELD_NUMBER: _ClassVar[int]
    DEDUPED_FIELD_NUMBER: _ClassVar[int]
    name: str
    total_bytes: int
    chunk_size: int
    chunk_count: int
    sha256: str
    ts_ms: int
    headers: _containers.RepeatedCompositeFieldContainer[MessageHeader]
    metadata_seq: int
    deduped: bool
    def __init__(self, name: _Optional[str] = ..., total_bytes: _Optional[int] = ..., chunk_size: _Optional[int] = ..., chunk_count: _Optional[int] = ..., sha256: _Optional[str] = ..., ts_ms: _Optional[int] = ..., headers: _Optional[_Iterable[_Union[MessageHeader, _Mapping]]] = ..., metadata_seq: _Optional[int] = ..., deduped: _Optional[bool] = ...) -> None: ...

class PutObjectRequest(_message.Message):
    __slots__ = ("bucket", "name", "payload", "chunk_size", "headers", "sha256", "dedupe")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    CHUNK_SIZE_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    DEDUPE_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    name: str
    payload: bytes
    chunk_size: int
    headers: _containers.RepeatedCompositeFieldContainer[MessageHeader]
    sha256: str
    dedupe: bool
    def __init__(self, bucket: _Optional[str] = ..., name: _Optional[str] = ..., payload: _Optional[bytes] = ..., chunk_size: _Optional[int] = ..., headers: _Optional[_Iterable[_Union[MessageHeader, _Mapping]]] = ..., sha256: _Optional[str] = ..., dedupe: _Optional[bool] = ...) -> None: ...

class PutObjectResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "info")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    info: ObjectInfo
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., info: _Optional[_Union[ObjectInfo, _Mapping]] = ...) -> None: ...

class PutObjectStreamFrame(_message.Message):
    __slots__ = ("start", "data", "finish")
    START_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    FINISH_FIELD_NUMBER: _ClassVar[int]
    start: PutObjectStart
    data: bytes
    finish: bool
    def __init__(self, start: _Optional[_Union[PutObjectStart, _Mapping]] = ..., data: _Optional[bytes] = ..., finish: _Optional[bool] = ...) -> None: ...

class PutObjectStart(_message.Message):
    __slots__ = ("bucket", "name", "chunk_size", "headers", "sha256", "dedupe")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    CHUNK_SIZE_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    DEDUPE_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    name: str
    chunk_size: int
    headers: _containers.RepeatedCompositeFieldContainer[MessageHeader]
    sha256: str
    dedupe: bool
    def __init__(self, bucket: _Optional[str] = ..., name: _Optional[str] = ..., chunk_size: _Optional[int] = ..., headers: _Optional[_Iterable[_Union[MessageHeader, _Mapping]]] = ..., sha256: _Optional[str] = ..., dedupe: _Optional[bool] = ...) -> None: ...

class GetObjectRequest(_message.Message):
    __slots__ = ("bucket", "name")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    name: str
    def __init__(self, bucket: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class GetObjectResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "info", "payload")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    info: ObjectInfo
    payload: bytes
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., info: _Optional[_Union[ObjectInfo, _Mapping]] = ..., payload: _Optional[bytes] = ...) -> None: ...

class GetObjectStreamFrame(_message.Message):
    __slots__ = ("info", "data", "done")
    INFO_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    info: ObjectInfo
    data: bytes
    done: bool
    def __init__(self, info: _Optional[_Union[ObjectInfo, _Mapping]] = ..., data: _Optional[bytes] = ..., done: _Optional[bool] = ...) -> None: ...

class DeleteObjectRequest(_message.Message):
    __slots__ = ("bucket", "name")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    name: str
    def __init__(self, bucket: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class DeleteObjectResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "tombstone_seq")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TOMBSTONE_SEQ_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    tombstone_seq: int
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., tombstone_seq: _Optional[int] = ...) -> None: ...

class GetObjectInfoRequest(_message.Message):
    __slots__ = ("bucket", "name")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    name: str
    def __init__(self, bucket: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class GetObjectInfoResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "info", "deleted")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    info: ObjectInfo
    deleted: bool
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., info: _Optional[_Union[ObjectInfo, _Mapping]] = ..., deleted: _Optional[bool] = ...) -> None: ...

class ListObjectsRequest(_message.Message):
    __slots__ = ("bucket", "name_prefix", "include_deleted")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    NAME_PREFIX_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_DELETED_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    name_prefix: str
    include_deleted: bool
    def __init__(self, bucket: _Optional[str] = ..., name_prefix: _Optional[str] = ..., include_deleted: _Optional[bool] = ...) -> None: ...

class ListObjectsResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "entries")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    entries: _containers.RepeatedCompositeFieldContainer[ObjectListEntry]
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., entries: _Optional[_Iterable[_Union[ObjectListEntry, _Mapping]]] = ...) -> None: ...

class ObjectListEntry(_message.Message):
    __slots__ = ("name", "total_bytes", "deleted")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    name: str
    total_bytes: int
    deleted: bool
    def __init__(self, name: _Optional[str] = ..., total_bytes: _Optional[int] = ..., deleted: _Optional[bool] = ...) -> None: ...

class ListObjectRevisionsRequest(_message.Message):
    __slots__ = ("bucket", "name", "from_seq", "limit")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    FROM_SEQ_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    name: str
    from_seq: int
    limit: int
    def __init__(self, bucket: _Optional[str] = ..., name: _Optional[str] = ..., from_seq: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class ListObjectRevisionsResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "revisions")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REVISIONS_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    revisions: _containers.RepeatedCompositeFieldContainer[ObjectRevisionEntry]
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., revisions: _Optional[_Iterable[_Union[ObjectRevisionEntry, _Mapping]]] = ...) -> None: ...

class GetObjectRangeRequest(_message.Message):
    __slots__ = ("bucket", "name", "offset", "len")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LEN_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    name: str
    offset: int
    len: int
    def __init__(self, bucket: _Optional[str] = ..., name: _Optional[str] = ..., offset: _Optional[int] = ..., len: _Optional[int] = ...) -> None: ...

class GetObjectRangeResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "info", "actual_offset", "payload")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    INFO_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_OFFSET_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    info: ObjectInfo
    actual_offset: int
    payload: bytes
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., info: _Optional[_Union[ObjectInfo, _Mapping]] = ..., actual_offset: _Optional[int] = ..., payload: _Optional[bytes] = ...) -> None: ...

class ObjectRevisionEntry(_message.Message):
    __slots__ = ("metadata_seq", "deleted", "total_bytes", "chunk_count", "sha256", "ts_ms")
    METADATA_SEQ_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    CHUNK_COUNT_FIELD_NUMBER: _ClassVar[int]
    SHA256_FIELD_NUMBER: _ClassVar[int]
    TS_MS_FIELD_NUMBER: _ClassVar[int]
    metadata_seq: int
    deleted: bool
    total_bytes: int
    chunk_count: int
    sha256: str
    ts_ms: int
    def __init__(self, metadata_seq: _Optional[int] = ..., deleted: _Optional[bool] = ..., total_bytes: _Optional[int] = ..., chunk_count: _Optional[int] = ..., sha256: _Optional[str] = ..., ts_ms: _Optional[int] = ...) -> None: ...

class KvCreateBucketRequest(_message.Message):
    __slots__ = ("bucket", "max_bytes", "max_value_size", "max_age_ms", "ephemeral")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_VALUE_SIZE_FIELD_NUMBER: _ClassVar[int]
    MAX_AGE_MS_FIELD_NUMBER: _ClassVar[int]
    EPHEMERAL_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    max_bytes: int
    max_value_size: int
    max_age_ms: int
    ephemeral: bool
    def __init__(self, bucket: _Optional[str] = ..., max_bytes: _Optional[int] = ..., max_value_size: _Optional[int] = ..., max_age_ms: _Optional[int] = ..., ephemeral: _Optional[bool] = ...) -> None: ...

class KvCreateBucketResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class KvDeleteBucketRequest(_message.Message):
    __slots__ = ("bucket",)
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    def __init__(self, bucket: _Optional[str] = ...) -> None: ...

class KvDeleteBucketResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class KvPutRequest(_message.Message):
    __slots__ = ("bucket", "key", "value", "ttl_ms")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    key: str
    value: bytes
    ttl_ms: int
    def __init__(self, bucket: _Optional[str] = ..., key: _Optional[str] = ..., value: _Optional[bytes] = ..., ttl_ms: _Optional[int] = ...) -> None: ...

class KvCreateRequest(_message.Message):
    __slots__ = ("bucket", "key", "value", "ttl_ms")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    key: str
    value: bytes
    ttl_ms: int
    def __init__(self, bucket: _Optional[str] = ..., key: _Optional[str] = ..., value: _Optional[bytes] = ..., ttl_ms: _Optional[int] = ...) -> None: ...

class KvUpdateRequest(_message.Message):
    __slots__ = ("bucket", "key", "value", "expected_revision", "ttl_ms")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    EXPECTED_REVISION_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    key: str
    value: bytes
    expected_revision: int
    ttl_ms: int
    def __init__(self, bucket: _Optional[str] = ..., key: _Optional[str] = ..., value: _Optional[bytes] = ..., expected_revision: _Optional[int] = ..., ttl_ms: _Optional[int] = ...) -> None: ...

class KvPutResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "revision")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    revision: int
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., revision: _Optional[int] = ...) -> None: ...

class KvGetRequest(_message.Message):
    __slots__ = ("bucket", "key")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    key: str
    def __init__(self, bucket: _Optional[str] = ..., key: _Optional[str] = ...) -> None: ...

class KvGetResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "entry")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    entry: KvEntry
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., entry: _Optional[_Union[KvEntry, _Mapping]] = ...) -> None: ...

class KvEntry(_message.Message):
    __slots__ = ("value", "revision", "ts_ms")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    TS_MS_FIELD_NUMBER: _ClassVar[int]
    value: bytes
    revision: int
    ts_ms: int
    def __init__(self, value: _Optional[bytes] = ..., revision: _Optional[int] = ..., ts_ms: _Optional[int] = ...) -> None: ...

class KvDeleteRequest(_message.Message):
    __slots__ = ("bucket", "key")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    key: str
    def __init__(self, bucket: _Optional[str] = ..., key: _Optional[str] = ...) -> None: ...

class KvDeleteResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "revision")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    revision: int
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., revision: _Optional[int] = ...) -> None: ...

class KvKeysRequest(_message.Message):
    __slots__ = ("bucket",)
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    def __init__(self, bucket: _Optional[str] = ...) -> None: ...

class KvKeysResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "entries")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    entries: _containers.RepeatedCompositeFieldContainer[KvKeyEntry]
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., entries: _Optional[_Iterable[_Union[KvKeyEntry, _Mapping]]] = ...) -> None: ...

class KvKeyEntry(_message.Message):
    __slots__ = ("key", "revision", "deleted")
    KEY_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    key: str
    revision: int
    deleted: bool
    def __init__(self, key: _Optional[str] = ..., revision: _Optional[int] = ..., deleted: _Optional[bool] = ...) -> None: ...

class KvHistoryRequest(_message.Message):
    __slots__ = ("bucket", "key", "from_revision", "limit")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    FROM_REVISION_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    key: str
    from_revision: int
    limit: int
    def __init__(self, bucket: _Optional[str] = ..., key: _Optional[str] = ..., from_revision: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class KvHistoryResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "entries")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    entries: _containers.RepeatedCompositeFieldContainer[KvHistoryEntry]
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., entries: _Optional[_Iterable[_Union[KvHistoryEntry, _Mapping]]] = ...) -> None: ...

class KvHistoryEntry(_message.Message):
    __slots__ = ("value", "revision", "ts_ms", "deleted")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    TS_MS_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    value: bytes
    revision: int
    ts_ms: int
    deleted: bool
    def __init__(self, value: _Optional[bytes] = ..., revision: _Optional[int] = ..., ts_ms: _Optional[int] = ..., deleted: _Optional[bool] = ...) -> None: ...

class KvTouchRequest(_message.Message):
    __slots__ = ("bucket", "key", "ttl_ms")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    key: str
    ttl_ms: int
    def __init__(self, bucket: _Optional[str] = ..., key: _Optional[str] = ..., ttl_ms: _Optional[int] = ...) -> None: ...

class KvWatchRequest(_message.Message):
    __slots__ = ("bucket", "key")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    key: str
    def __init__(self, bucket: _Optional[str] = ..., key: _Optional[str] = ...) -> None: ...

class KvWatchEvent(_message.Message):
    __slots__ = ("put", "delete")
    PUT_FIELD_NUMBER: _ClassVar[int]
    DELETE_FIELD_NUMBER: _ClassVar[int]
    put: KvPutEvent
    delete: KvDeleteEvent
    def __init__(self, put: _Optional[_Union[KvPutEvent, _Mapping]] = ..., delete: _Optional[_Union[KvDeleteEvent, _Mapping]] = ...) -> None: ...

class KvPutEvent(_message.Message):
    __slots__ = ("key", "value", "revision", "ts_ms")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    TS_MS_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: bytes
    revision: int
    ts_ms: int
    def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ..., revision: _Optional[int] = ..., ts_ms: _Optional[int] = ...) -> None: ...

class KvDeleteEvent(_message.Message):
    __slots__ = ("key", "revision", "ts_ms")
    KEY_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    TS_MS_FIELD_NUMBER: _ClassVar[int]
    key: str
    revision: int
    ts_ms: int
    def __init__(self, key: _Optional[str] = ..., revision: _Optional[int] = ..., ts_ms: _Optional[int] = ...) -> None: ...

class CreateHashStoreRequest(_message.Message):
    __slots__ = ("name", "max_bytes", "ephemeral")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    EPHEMERAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    max_bytes: int
    ephemeral: bool
    def __init__(self, name: _Optional[str] = ..., max_bytes: _Optional[int] = ..., ephemeral: _Optional[bool] = ...) -> None: ...

class CreateHashStoreResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class DeleteHashStoreRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteHashStoreResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class HashSetRequest(_message.Message):
    __slots__ = ("bucket", "hash_key", "field", "value")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    HASH_KEY_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    hash_key: str
    field: str
    value: bytes
    def __init__(self, bucket: _Optional[str] = ..., hash_key: _Optional[str] = ..., field: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...

class HashSetResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "revision")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    revision: int
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., revision: _Optional[int] = ...) -> None: ...

class HashGetRequest(_message.Message):
    __slots__ = ("bucket", "hash_key", "field")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    HASH_KEY_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    hash_key: str
    field: str
    def __init__(self, bucket: _Optional[str] = ..., hash_key: _Optional[str] = ..., field: _Optional[str] = ...) -> None: ...

class HashGetResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "value", "revision")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    value: bytes
    revision: int
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., value: _Optional[bytes] = ..., revision: _Optional[int] = ...) -> None: ...

class HashExistsRequest(_message.Message):
    __slots__ = ("bucket", "hash_key", "field")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    HASH_KEY_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    hash_key: str
    field: str
    def __init__(self, bucket: _Optional[str] = ..., hash_key: _Optional[str] = ..., field: _Optional[str] = ...) -> None: ...

class HashExistsResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "exists")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    exists: bool
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., exists: _Optional[bool] = ...) -> None: ...

class HashDeleteRequest(_message.Message):
    __slots__ = ("bucket", "hash_key", "field")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    HASH_KEY_FIELD_NUMBER: _ClassVar[int]
    FIELD_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    hash_key: str
    field: str
    def __init__(self, bucket: _Optional[str] = ..., hash_key: _Optional[str] = ..., field: _Optional[str] = ...) -> None: ...

class HashDeleteResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class HashGetAllRequest(_message.Message):
    __slots__ = ("bucket", "hash_key")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    HASH_KEY_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    hash_key: str
    def __init__(self, bucket: _Optional[str] = ..., hash_key: _Optional[str] = ...) -> None: ...

class HashGetAllResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "entries")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    entries: _containers.RepeatedCompositeFieldContainer[HashFieldEntry]
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., entries: _Optional[_Iterable[_Union[HashFieldEntry, _Mapping]]] = ...) -> None: ...

class HashFieldEntry(_message.Message):
    __slots__ = ("field", "value", "revision")
    FIELD_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    field: str
    value: bytes
    revision: int
    def __init__(self, field: _Optional[str] = ..., value: _Optional[bytes] = ..., revision: _Optional[int] = ...) -> None: ...

class HashFieldsRequest(_message.Message):
    __slots__ = ("bucket", "hash_key")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    HASH_KEY_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    hash_key: str
    def __init__(self, bucket: _Optional[str] = ..., hash_key: _Optional[str] = ...) -> None: ...

class HashFieldsResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "fields")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    fields: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., fields: _Optional[_Iterable[str]] = ...) -> None: ...

class HashLenRequest(_message.Message):
    __slots__ = ("bucket", "hash_key")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    HASH_KEY_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    hash_key: str
    def __init__(self, bucket: _Optional[str] = ..., hash_key: _Optional[str] = ...) -> None: ...

class HashLenResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "count")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    count: int
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class CreateSetStoreRequest(_message.Message):
    __slots__ = ("name", "max_bytes", "ephemeral")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    EPHEMERAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    max_bytes: int
    ephemeral: bool
    def __init__(self, name: _Optional[str] = ..., max_bytes: _Optional[int] = ..., ephemeral: _Optional[bool] = ...) -> None: ...

class CreateSetStoreResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class DeleteSetStoreRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteSetStoreResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class SetAddRequest(_message.Message):
    __slots__ = ("bucket", "set_key", "member")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    SET_KEY_FIELD_NUMBER: _ClassVar[int]
    MEMBER_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    set_key: str
    member: str
    def __init__(self, bucket: _Optional[str] = ..., set_key: _Optional[str] = ..., member: _Optional[str] = ...) -> None: ...

class SetAddResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class SetRemoveRequest(_message.Message):
    __slots__ = ("bucket", "set_key", "member")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    SET_KEY_FIELD_NUMBER: _ClassVar[int]
    MEMBER_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    set_key: str
    member: str
    def __init__(self, bucket: _Optional[str] = ..., set_key: _Optional[str] = ..., member: _Optional[str] = ...) -> None: ...

class SetRemoveResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class SetIsMemberRequest(_message.Message):
    __slots__ = ("bucket", "set_key", "member")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    SET_KEY_FIELD_NUMBER: _ClassVar[int]
    MEMBER_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    set_key: str
    member: str
    def __init__(self, bucket: _Optional[str] = ..., set_key: _Optional[str] = ..., member: _Optional[str] = ...) -> None: ...

class SetIsMemberResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "is_member")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    IS_MEMBER_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    is_member: bool
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., is_member: _Optional[bool] = ...) -> None: ...

class SetMembersRequest(_message.Message):
    __slots__ = ("bucket", "set_key")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    SET_KEY_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    set_key: str
    def __init__(self, bucket: _Optional[str] = ..., set_key: _Optional[str] = ...) -> None: ...

class SetMembersResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "members")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    members: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., members: _Optional[_Iterable[str]] = ...) -> None: ...

class SetLenRequest(_message.Message):
    __slots__ = ("bucket", "set_key")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    SET_KEY_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    set_key: str
    def __init__(self, bucket: _Optional[str] = ..., set_key: _Optional[str] = ...) -> None: ...

class SetLenResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "count")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    count: int
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...

class CreateQueueRequest(_message.Message):
    __slots__ = ("name", "max_bytes", "max_messages", "ephemeral")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    EPHEMERAL_FIELD_NUMBER: _ClassVar[int]
    name: str
    max_bytes: int
    max_messages: int
    ephemeral: bool
    def __init__(self, name: _Optional[str] = ..., max_bytes: _Optional[int] = ..., max_messages: _Optional[int] = ..., ephemeral: _Optional[bool] = ...) -> None: ...

class CreateQueueResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class DeleteQueueRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteQueueResponse(_message.Message):
    __slots__ = ("success", "result_code", "message")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class QueuePushRequest(_message.Message):
    __slots__ = ("bucket", "value")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    value: bytes
    def __init__(self, bucket: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...

class QueuePushResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "sequence")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    sequence: int
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., sequence: _Optional[int] = ...) -> None: ...

class QueuePopRequest(_message.Message):
    __slots__ = ("bucket",)
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    def __init__(self, bucket: _Optional[str] = ...) -> None: ...

class QueuePopResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "value")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    value: bytes
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...

class QueueRangeRequest(_message.Message):
    __slots__ = ("bucket", "from_sequence", "limit")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    FROM_SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    from_sequence: int
    limit: int
    def __init__(self, bucket: _Optional[str] = ..., from_sequence: _Optional[int] = ..., limit: _Optional[int] = ...) -> None: ...

class QueueRangeResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "values")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    values: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., values: _Optional[_Iterable[bytes]] = ...) -> None: ...

class QueueLenRequest(_message.Message):
    __slots__ = ("bucket",)
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    def __init__(self, bucket: _Optional[str] = ...) -> None: ...

class QueueLenResponse(_message.Message):
    __slots__ = ("success", "result_code", "message", "count")
    SUCCESS_FIELD_NUMBER: _ClassVar[int]
    RESULT_CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    success: bool
    result_code: str
    message: str
    count: int
    def __init__(self, success: _Optional[bool] = ..., result_code: _Optional[str] = ..., message: _Optional[str] = ..., count: _Optional[int] = ...) -> None: ...
