from weir.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ReadChangesRequest(_message.Message):
    __slots__ = ("from_change_seq", "max_changes")
    FROM_CHANGE_SEQ_FIELD_NUMBER: _ClassVar[int]
    MAX_CHANGES_FIELD_NUMBER: _ClassVar[int]
    from_change_seq: int
    max_changes: int
    def __init__(self, from_change_seq: _Optional[int] = ..., max_changes: _Optional[int] = ...) -> None: ...

class ReadChangesResponse(_message.Message):
    __slots__ = ("changes", "next_change_seq", "last_change_seq", "node_id")
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    NEXT_CHANGE_SEQ_FIELD_NUMBER: _ClassVar[int]
    LAST_CHANGE_SEQ_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    changes: _containers.RepeatedCompositeFieldContainer[_types_pb2.Change]
    next_change_seq: int
    last_change_seq: int
    node_id: str
    def __init__(self, changes: _Optional[_Iterable[_Union[_types_pb2.Change, _Mapping]]] = ..., next_change_seq: _Optional[int] = ..., last_change_seq: _Optional[int] = ..., node_id: _Optional[str] = ...) -> None: ...

class TailChangesRequest(_message.Message):
    __slots__ = ("from_change_seq", "max_changes_per_batch")
    FROM_CHANGE_SEQ_FIELD_NUMBER: _ClassVar[int]
    MAX_CHANGES_PER_BATCH_FIELD_NUMBER: _ClassVar[int]
    from_change_seq: int
    max_changes_per_batch: int
    def __init__(self, from_change_seq: _Optional[int] = ..., max_changes_per_batch: _Optional[int] = ...) -> None: ...

class ChangeBatch(_message.Message):
    __slots__ = ("changes", "last_change_seq", "node_id")
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    LAST_CHANGE_SEQ_FIELD_NUMBER: _ClassVar[int]
    NODE_ID_FIELD_NUMBER: _ClassVar[int]
    changes: _containers.RepeatedCompositeFieldContainer[_types_pb2.Change]
    last_change_seq: int
    node_id: str
    def __init__(self, changes: _Optional[_Iterable[_Union[_types_pb2.Change, _Mapping]]] = ..., last_change_seq: _Optional[int] = ..., node_id: _Optional[str] = ...) -> None: ...

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
