from weir.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateObjectBucketRequest(_message.Message):
    __slots__ = ("bucket", "history", "replicas", "max_bytes", "ephemeral")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    EPHEMERAL_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    history: int
    replicas: int
    max_bytes: int
    ephemeral: bool
    def __init__(self, bucket: _Optional[str] = ..., history: _Optional[int] = ..., replicas: _Optional[int] = ..., max_bytes: _Optional[int] = ..., ephemeral: bool = ...) -> None: ...

class CreateObjectBucketResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DeleteObjectBucketRequest(_message.Message):
    __slots__ = ("bucket",)
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    def __init__(self, bucket: _Optional[str] = ...) -> None: ...

class DeleteObjectBucketResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

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
    headers: _containers.RepeatedCompositeFieldContainer[_types_pb2.Header]
    metadata_seq: int
    deduped: bool
    def __init__(self, name: _Optional[str] = ..., total_bytes: _Optional[int] = ..., chunk_size: _Optional[int] = ..., chunk_count: _Optional[int] = ..., sha256: _Optional[str] = ..., ts_ms: _Optional[int] = ..., headers: _Optional[_Iterable[_Union[_types_pb2.Header, _Mapping]]] = ..., metadata_seq: _Optional[int] = ..., deduped: bool = ...) -> None: ...

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
    headers: _containers.RepeatedCompositeFieldContainer[_types_pb2.Header]
    sha256: str
    dedupe: bool
    def __init__(self, bucket: _Optional[str] = ..., name: _Optional[str] = ..., payload: _Optional[bytes] = ..., chunk_size: _Optional[int] = ..., headers: _Optional[_Iterable[_Union[_types_pb2.Header, _Mapping]]] = ..., sha256: _Optional[str] = ..., dedupe: bool = ...) -> None: ...

class PutObjectResponse(_message.Message):
    __slots__ = ("info",)
    INFO_FIELD_NUMBER: _ClassVar[int]
    info: ObjectInfo
    def __init__(self, info: _Optional[_Union[ObjectInfo, _Mapping]] = ...) -> None: ...

class PutObjectStreamFrame(_message.Message):
    __slots__ = ("start", "data", "finish")
    START_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    FINISH_FIELD_NUMBER: _ClassVar[int]
    start: PutObjectStart
    data: bytes
    finish: bool
    def __init__(self, start: _Optional[_Union[PutObjectStart, _Mapping]] = ..., data: _Optional[bytes] = ..., finish: bool = ...) -> None: ...

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
    headers: _containers.RepeatedCompositeFieldContainer[_types_pb2.Header]
    sha256: str
    dedupe: bool
    def __init__(self, bucket: _Optional[str] = ..., name: _Optional[str] = ..., chunk_size: _Optional[int] = ..., headers: _Optional[_Iterable[_Union[_types_pb2.Header, _Mapping]]] = ..., sha256: _Optional[str] = ..., dedupe: bool = ...) -> None: ...

class GetObjectRequest(_message.Message):
    __slots__ = ("bucket", "name")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    name: str
    def __init__(self, bucket: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class GetObjectResponse(_message.Message):
    __slots__ = ("info", "payload")
    INFO_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    info: ObjectInfo
    payload: bytes
    def __init__(self, info: _Optional[_Union[ObjectInfo, _Mapping]] = ..., payload: _Optional[bytes] = ...) -> None: ...

class GetObjectStreamFrame(_message.Message):
    __slots__ = ("info", "data", "done")
    INFO_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    info: ObjectInfo
    data: bytes
    done: bool
    def __init__(self, info: _Optional[_Union[ObjectInfo, _Mapping]] = ..., data: _Optional[bytes] = ..., done: bool = ...) -> None: ...

class DeleteObjectRequest(_message.Message):
    __slots__ = ("bucket", "name")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    name: str
    def __init__(self, bucket: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class DeleteObjectResponse(_message.Message):
    __slots__ = ("tombstone_seq",)
    TOMBSTONE_SEQ_FIELD_NUMBER: _ClassVar[int]
    tombstone_seq: int
    def __init__(self, tombstone_seq: _Optional[int] = ...) -> None: ...

class GetObjectInfoRequest(_message.Message):
    __slots__ = ("bucket", "name")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    name: str
    def __init__(self, bucket: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class GetObjectInfoResponse(_message.Message):
    __slots__ = ("info", "deleted")
    INFO_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    info: ObjectInfo
    deleted: bool
    def __init__(self, info: _Optional[_Union[ObjectInfo, _Mapping]] = ..., deleted: bool = ...) -> None: ...

class ListObjectsRequest(_message.Message):
    __slots__ = ("bucket", "name_prefix", "include_deleted")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    NAME_PREFIX_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_DELETED_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    name_prefix: str
    include_deleted: bool
    def __init__(self, bucket: _Optional[str] = ..., name_prefix: _Optional[str] = ..., include_deleted: bool = ...) -> None: ...

class ListObjectsResponse(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[ObjectListEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[ObjectListEntry, _Mapping]]] = ...) -> None: ...

class ObjectListEntry(_message.Message):
    __slots__ = ("name", "total_bytes", "deleted")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOTAL_BYTES_FIELD_NUMBER: _ClassVar[int]
    DELETED_FIELD_NUMBER: _ClassVar[int]
    name: str
    total_bytes: int
    deleted: bool
    def __init__(self, name: _Optional[str] = ..., total_bytes: _Optional[int] = ..., deleted: bool = ...) -> None: ...

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
    __slots__ = ("revisions",)
    REVISIONS_FIELD_NUMBER: _ClassVar[int]
    revisions: _containers.RepeatedCompositeFieldContainer[ObjectRevisionEntry]
    def __init__(self, revisions: _Optional[_Iterable[_Union[ObjectRevisionEntry, _Mapping]]] = ...) -> None: ...

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
    def __init__(self, metadata_seq: _Optional[int] = ..., deleted: bool = ..., total_bytes: _Optional[int] = ..., chunk_count: _Optional[int] = ..., sha256: _Optional[str] = ..., ts_ms: _Optional[int] = ...) -> None: ...

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
    __slots__ = ("info", "actual_offset", "payload")
    INFO_FIELD_NUMBER: _ClassVar[int]
    ACTUAL_OFFSET_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    info: ObjectInfo
    actual_offset: int
    payload: bytes
    def __init__(self, info: _Optional[_Union[ObjectInfo, _Mapping]] = ..., actual_offset: _Optional[int] = ..., payload: _Optional[bytes] = ...) -> None: ...

class CollectGarbageRequest(_message.Message):
    __slots__ = ("bucket", "grace_ms")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    GRACE_MS_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    grace_ms: int
    def __init__(self, bucket: _Optional[str] = ..., grace_ms: _Optional[int] = ...) -> None: ...

class CollectGarbageResponse(_message.Message):
    __slots__ = ("removed",)
    REMOVED_FIELD_NUMBER: _ClassVar[int]
    removed: int
    def __init__(self, removed: _Optional[int] = ...) -> None: ...
