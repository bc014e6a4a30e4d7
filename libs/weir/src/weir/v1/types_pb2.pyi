from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

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

class PartitionRole(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    PARTITION_ROLE_PRIMARY: _ClassVar[PartitionRole]
    PARTITION_ROLE_SECONDARY: _ClassVar[PartitionRole]
RETENTION_POLICY_LIMITS: RetentionPolicy
RETENTION_POLICY_WORK_QUEUE: RetentionPolicy
RETENTION_POLICY_INTEREST: RetentionPolicy
STORAGE_KIND_FILE: StorageKind
STORAGE_KIND_MEMORY: StorageKind
PARTITION_ROLE_PRIMARY: PartitionRole
PARTITION_ROLE_SECONDARY: PartitionRole

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
    __slots__ = ("name", "subjects", "retention", "limits", "max_msg_bytes", "partitions", "replicas", "storage")
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUBJECTS_FIELD_NUMBER: _ClassVar[int]
    RETENTION_FIELD_NUMBER: _ClassVar[int]
    LIMITS_FIELD_NUMBER: _ClassVar[int]
    MAX_MSG_BYTES_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    STORAGE_FIELD_NUMBER: _ClassVar[int]
    name: str
    subjects: _containers.RepeatedScalarFieldContainer[str]
    retention: RetentionPolicy
    limits: Limits
    max_msg_bytes: int
    partitions: int
    replicas: int
    storage: StorageKind
    def __init__(self, name: _Optional[str] = ..., subjects: _Optional[_Iterable[str]] = ..., retention: _Optional[_Union[RetentionPolicy, str]] = ..., limits: _Optional[_Union[Limits, _Mapping]] = ..., max_msg_bytes: _Optional[int] = ..., partitions: _Optional[int] = ..., replicas: _Optional[int] = ..., storage: _Optional[_Union[StorageKind, str]] = ...) -> None: ...

class Header(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class Message(_message.Message):
    __slots__ = ("seq", "subject", "ts_ms", "headers", "payload", "deliver_count", "partition")
    SEQ_FIELD_NUMBER: _ClassVar[int]
    SUBJECT_FIELD_NUMBER: _ClassVar[int]
    TS_MS_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    DELIVER_COUNT_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    seq: int
    subject: str
    ts_ms: int
    headers: _containers.RepeatedCompositeFieldContainer[Header]
    payload: bytes
    deliver_count: int
    partition: int
    def __init__(self, seq: _Optional[int] = ..., subject: _Optional[str] = ..., ts_ms: _Optional[int] = ..., headers: _Optional[_Iterable[_Union[Header, _Mapping]]] = ..., payload: _Optional[bytes] = ..., deliver_count: _Optional[int] = ..., partition: _Optional[int] = ...) -> None: ...

class PartitionStats(_message.Message):
    __slots__ = ("partition", "first_seq", "last_seq", "msg_count", "bytes")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    FIRST_SEQ_FIELD_NUMBER: _ClassVar[int]
    LAST_SEQ_FIELD_NUMBER: _ClassVar[int]
    MSG_COUNT_FIELD_NUMBER: _ClassVar[int]
    BYTES_FIELD_NUMBER: _ClassVar[int]
    partition: int
    first_seq: int
    last_seq: int
    msg_count: int
    bytes: int
    def __init__(self, partition: _Optional[int] = ..., first_seq: _Optional[int] = ..., last_seq: _Optional[int] = ..., msg_count: _Optional[int] = ..., bytes: _Optional[int] = ...) -> None: ...

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

class Change(_message.Message):
    __slots__ = ("change_seq", "ts_ms", "stream", "partition", "role", "append", "truncate", "remove", "stream_created", "stream_updated", "stream_deleted")
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
    def __init__(self, change_seq: _Optional[int] = ..., ts_ms: _Optional[int] = ..., stream: _Optional[str] = ..., partition: _Optional[int] = ..., role: _Optional[_Union[PartitionRole, str]] = ..., append: _Optional[_Union[AppendChange, _Mapping]] = ..., truncate: _Optional[_Union[TruncateChange, _Mapping]] = ..., remove: _Optional[_Union[RemoveChange, _Mapping]] = ..., stream_created: _Optional[_Union[StreamCreatedChange, _Mapping]] = ..., stream_updated: _Optional[_Union[StreamUpdatedChange, _Mapping]] = ..., stream_deleted: _Optional[_Union[StreamDeletedChange, _Mapping]] = ...) -> None: ...
