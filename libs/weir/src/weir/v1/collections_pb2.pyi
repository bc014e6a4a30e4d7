from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class CreateHashStoreRequest(_message.Message):
    __slots__ = ("name", "max_bytes", "ephemeral", "replicas")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    EPHEMERAL_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    name: str
    max_bytes: int
    ephemeral: bool
    replicas: int
    def __init__(self, name: _Optional[str] = ..., max_bytes: _Optional[int] = ..., ephemeral: bool = ..., replicas: _Optional[int] = ...) -> None: ...

class CreateHashStoreResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DeleteHashStoreRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteHashStoreResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

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
    __slots__ = ("revision",)
    REVISION_FIELD_NUMBER: _ClassVar[int]
    revision: int
    def __init__(self, revision: _Optional[int] = ...) -> None: ...

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
    __slots__ = ("value", "revision")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    REVISION_FIELD_NUMBER: _ClassVar[int]
    value: bytes
    revision: int
    def __init__(self, value: _Optional[bytes] = ..., revision: _Optional[int] = ...) -> None: ...

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
    __slots__ = ("exists",)
    EXISTS_FIELD_NUMBER: _ClassVar[int]
    exists: bool
    def __init__(self, exists: bool = ...) -> None: ...

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
    __slots__ = ()
    def __init__(self) -> None: ...

class HashGetAllRequest(_message.Message):
    __slots__ = ("bucket", "hash_key")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    HASH_KEY_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    hash_key: str
    def __init__(self, bucket: _Optional[str] = ..., hash_key: _Optional[str] = ...) -> None: ...

class HashGetAllResponse(_message.Message):
    __slots__ = ("entries",)
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    entries: _containers.RepeatedCompositeFieldContainer[HashFieldEntry]
    def __init__(self, entries: _Optional[_Iterable[_Union[HashFieldEntry, _Mapping]]] = ...) -> None: ...

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
    __slots__ = ("fields",)
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    fields: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, fields: _Optional[_Iterable[str]] = ...) -> None: ...

class HashLenRequest(_message.Message):
    __slots__ = ("bucket", "hash_key")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    HASH_KEY_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    hash_key: str
    def __init__(self, bucket: _Optional[str] = ..., hash_key: _Optional[str] = ...) -> None: ...

class HashLenResponse(_message.Message):
    __slots__ = ("count",)
    COUNT_FIELD_NUMBER: _ClassVar[int]
    count: int
    def __init__(self, count: _Optional[int] = ...) -> None: ...

class CreateSetStoreRequest(_message.Message):
    __slots__ = ("name", "max_bytes", "ephemeral", "replicas")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    EPHEMERAL_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    name: str
    max_bytes: int
    ephemeral: bool
    replicas: int
    def __init__(self, name: _Optional[str] = ..., max_bytes: _Optional[int] = ..., ephemeral: bool = ..., replicas: _Optional[int] = ...) -> None: ...

class CreateSetStoreResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DeleteSetStoreRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteSetStoreResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

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
    __slots__ = ()
    def __init__(self) -> None: ...

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
    __slots__ = ()
    def __init__(self) -> None: ...

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
    __slots__ = ("is_member",)
    IS_MEMBER_FIELD_NUMBER: _ClassVar[int]
    is_member: bool
    def __init__(self, is_member: bool = ...) -> None: ...

class SetMembersRequest(_message.Message):
    __slots__ = ("bucket", "set_key")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    SET_KEY_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    set_key: str
    def __init__(self, bucket: _Optional[str] = ..., set_key: _Optional[str] = ...) -> None: ...

class SetMembersResponse(_message.Message):
    __slots__ = ("members",)
    MEMBERS_FIELD_NUMBER: _ClassVar[int]
    members: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, members: _Optional[_Iterable[str]] = ...) -> None: ...

class SetLenRequest(_message.Message):
    __slots__ = ("bucket", "set_key")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    SET_KEY_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    set_key: str
    def __init__(self, bucket: _Optional[str] = ..., set_key: _Optional[str] = ...) -> None: ...

class SetLenResponse(_message.Message):
    __slots__ = ("count",)
    COUNT_FIELD_NUMBER: _ClassVar[int]
    count: int
    def __init__(self, count: _Optional[int] = ...) -> None: ...

class CreateQueueRequest(_message.Message):
    __slots__ = ("name", "max_bytes", "max_messages", "ephemeral", "replicas")
    NAME_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_MESSAGES_FIELD_NUMBER: _ClassVar[int]
    EPHEMERAL_FIELD_NUMBER: _ClassVar[int]
    REPLICAS_FIELD_NUMBER: _ClassVar[int]
    name: str
    max_bytes: int
    max_messages: int
    ephemeral: bool
    replicas: int
    def __init__(self, name: _Optional[str] = ..., max_bytes: _Optional[int] = ..., max_messages: _Optional[int] = ..., ephemeral: bool = ..., replicas: _Optional[int] = ...) -> None: ...

class CreateQueueResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class DeleteQueueRequest(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class DeleteQueueResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class QueuePushRequest(_message.Message):
    __slots__ = ("bucket", "value")
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    value: bytes
    def __init__(self, bucket: _Optional[str] = ..., value: _Optional[bytes] = ...) -> None: ...

class QueuePushResponse(_message.Message):
    __slots__ = ("sequence",)
    SEQUENCE_FIELD_NUMBER: _ClassVar[int]
    sequence: int
    def __init__(self, sequence: _Optional[int] = ...) -> None: ...

class QueuePopRequest(_message.Message):
    __slots__ = ("bucket",)
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    def __init__(self, bucket: _Optional[str] = ...) -> None: ...

class QueuePopResponse(_message.Message):
    __slots__ = ("value",)
    VALUE_FIELD_NUMBER: _ClassVar[int]
    value: bytes
    def __init__(self, value: _Optional[bytes] = ...) -> None: ...

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
    __slots__ = ("values",)
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedScalarFieldContainer[bytes]
    def __init__(self, values: _Optional[_Iterable[bytes]] = ...) -> None: ...

class QueueLenRequest(_message.Message):
    __slots__ = ("bucket",)
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    bucket: str
    def __init__(self, bucket: _Optional[str] = ...) -> None: ...

class QueueLenResponse(_message.Message):
    __slots__ = ("count",)
    COUNT_FIELD_NUMBER: _ClassVar[int]
    count: int
    def __init__(self, count: _Optional[int] = ...) -> None: ...
