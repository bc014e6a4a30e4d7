from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class KvCreateBucketRequest(_message.Message):
    __slots__ = ("bucket", "max_bytes", "max_value_size", "max_age_ms", "ephemeral", "history", "replicas")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_VALUE_SIZE_FIELD_NUMBER: _ClassVar[int]
    MAX_AGE_MS_FIELD_NUMBER: _ClassVar[int]
    EPHEMERAL_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    max_bytes: int
    max_value_size: int
    max_age_ms: int
    ephemeral: bool
    history: int
    replicas: int
    def __init__(self, bucket: _Optional[str] = ..., max_bytes: _Optional[int] = ..., max_value_size: _Optional[int] = ..., max_age_ms: _Optional[int] = ..., ephemeral: bool = ..., history: _Optional[int] = ..., replicas: _Optional[int] = ...) -> None: ...

class KvCreateBucketResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class KvDeleteBucketRequest(_message.Message):
    __slots__ = ("bucket",)
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    def __init__(self, bucket: _Optional[str] = ...) -> None: ...

class KvDeleteBucketResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

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
    __slots__ = ("revision",)
    REVISION_FIELD_NUMBER: _ClassVar[int]
    revision: int
    def __init__(self, revision: _Optional[int] = ...) -> None: ...

class KvGetRequest(_message.Message):
    __slots__ = ("bucket", "key")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    key: str
    def __init__(self, bucket: _Optional[str] = ..., key: _Optional[str] = ...) -> None: ...

class KvGetResponse(_message.Message):
    __slots__ = ("entry",)
    ENTRY_FIELD_NUMBER: _ClassVar[int]
    entry: KvEntry
    def __init__(self, entry: _Optional[_Union[KvEntry, _Mapping]] = ...) -> None: ...

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

class KvTouchRequest(_message.Message):
    __slots__ = ("bucket", "key", "ttl_ms")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    TTL_MS_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    key: str
    ttl_ms: int
    def __init__(self, bucket: _Optional[str] = ..., key: _Optional[str] = ..., ttl_ms: _Optional[int] = ...) -> None: ...

class KvPurgeRequest(_message.Message):
    __slots__ = ("bucket", "key")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    key: str
    def __init__(self, bucket: _Optional[str] = ..., key: _Optional[str] = ...) -> None: ...

class KvDeleteResponse(_message.Message):
    __slots__ = ("revision",)
    REVISION_FIELD_NUMBER: _ClassVar[int]
    revision: int
    def __init__(self, revision: _Optional[int] = ...) -> None: ...

class KvKeysRequest(_message.Message):
    __slots__ = ("bucket",)
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    def __init__(self, bucket: _Optional[str] = ...) -> None: ...

class KvKeysResponse(_message.Message):
    __slots__ = ("entries", "truncated")
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[KvKeyEntry]
    truncated: bool
    def __init__(self, entries: _Optional[_Iterable[_Union[KvKeyEntry, _Mapping]]] = ..., truncated: bool = ...) -> None: ...

class KvKeyEntry(_message.Message):
    __slots__ = ("key", "revision", "deleted")
    KEY_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    key: str
    revision: int
    deleted: bool
    def __init__(self, key: _Optional[str] = ..., revision: _Optional[int] = ..., deleted: bool = ...) -> None: ...

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
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[KvHistoryEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[KvHistoryEntry, _Mapping]]] = ...) -> None: ...

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
    def __init__(self, value: _Optional[bytes] = ..., revision: _Optional[int] = ..., ts_ms: _Optional[int] = ..., deleted: bool = ...) -> None: ...

class KvWatchRequest(_message.Message):
    __slots__ = ("bucket", "key", "from_revision")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    FROM_REVISION_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    key: str
    from_revision: int
    def __init__(self, bucket: _Optional[str] = ..., key: _Optional[str] = ..., from_revision: _Optional[int] = ...) -> None: ...

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
