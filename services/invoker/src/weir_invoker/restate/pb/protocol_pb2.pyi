from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ServiceProtocolVersion(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    SERVICE_PROTOCOL_VERSION_UNSPECIFIED: _ClassVar[ServiceProtocolVersion]
    V1: _ClassVar[ServiceProtocolVersion]
    V2: _ClassVar[ServiceProtocolVersion]
SERVICE_PROTOCOL_VERSION_UNSPECIFIED: ServiceProtocolVersion
V1: ServiceProtocolVersion
V2: ServiceProtocolVersion

class StartMessage(_message.Message):
    __slots__ = ("id", "debug_id", "known_entries", "state_map", "partial_state", "key", "retry_count_since_last_stored_entry", "duration_since_last_stored_entry")
    class StateEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: bytes
        value: bytes
        def __init__(self, key: _Optional[bytes] = ..., value: _Optional[bytes] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    DEBUG_ID_FIELD_NUMBER: _ClassVar[int]
    KNOWN_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    STATE_MAP_FIELD_NUMBER: _ClassVar[int]
    PARTIAL_STATE_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    RETRY_COUNT_SINCE_LAST_STORED_ENTRY_FIELD_NUMBER: _ClassVar[int]
    DURATION_SINCE_LAST_STORED_ENTRY_FIELD_NUMBER: _ClassVar[int]
    id: bytes
    debug_id: str
    known_entries: int
    state_map: _containers.RepeatedCompositeFieldContainer[StartMessage.StateEntry]
    partial_state: bool
    key: str
    retry_count_since_last_stored_entry: int
    duration_since_last_stored_entry: int
    def __init__(self, id: _Optional[bytes] = ..., debug_id: _Optional[str] = ..., known_entries: _Optional[int] = ..., state_map: _Optional[_Iterable[_Union[StartMessage.StateEntry, _Mapping]]] = ..., partial_state: _Optional[bool] = ..., key: _Optional[str] = ..., retry_count_since_last_stored_entry: _Optional[int] = ..., duration_since_last_stored_entry: _Optional[int] = ...) -> None: ...

class CompletionMessage(_message.Message):
    __slots__ = ("entry_index", "empty", "value", "failure")
    ENTRY_INDEX_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    entry_index: int
    empty: Empty
    value: bytes
    failure: Failure
    def __init__(self, entry_index: _Optional[int] = ..., empty: _Optional[_Union[Empty, _Mapping]] = ..., value: _Optional[bytes] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ...) -> None: ...

class SuspensionMessage(_message.Message):
    __slots__ = ("entry_indexes",)
    ENTRY_INDEXES_FIELD_NUMBER: _ClassVar[int]
    entry_indexes: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, entry_indexes: _Optional[_Iterable[int]] = ...) -> None: ...

class ErrorMessage(_message.Message):
    __slots__ = ("code", "message", "description", "related_entry_index", "related_entry_name", "related_entry_type", "next_retry_delay")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    RELATED_ENTRY_INDEX_FIELD_NUMBER: _ClassVar[int]
    RELATED_ENTRY_NAME_FIELD_NUMBER: _ClassVar[int]
    RELATED_ENTRY_TYPE_FIELD_NUMBER: _ClassVar[int]
    NEXT_RETRY_DELAY_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    description: str
    related_entry_index: int
    related_entry_name: str
    related_entry_type: int
    next_retry_delay: int
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ..., description: _Optional[str] = ..., related_entry_index: _Optional[int] = ..., related_entry_name: _Optional[str] = ..., related_entry_type: _Optional[int] = ..., next_retry_delay: _Optional[int] = ...) -> None: ...

class EntryAckMessage(_message.Message):
    __slots__ = ("entry_index",)
    ENTRY_INDEX_FIELD_NUMBER: _ClassVar[int]
    entry_index: int
    def __init__(self, entry_index: _Optional[int] = ...) -> None: ...

class EndMessage(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class InputEntryMessage(_message.Message):
    __slots__ = ("headers", "value", "name")
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    headers: _containers.RepeatedCompositeFieldContainer[Header]
    value: bytes
    name: str
    def __init__(self, headers: _Optional[_Iterable[_Union[Header, _Mapping]]] = ..., value: _Optional[bytes] = ..., name: _Optional[str] = ...) -> None: ...

class OutputEntryMessage(_message.Message):
    __slots__ = ("value", "failure", "name")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    value: bytes
    failure: Failure
    name: str
    def __init__(self, value: _Optional[bytes] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ..., name: _Optional[str] = ...) -> None: ...

class GetStateEntryMessage(_message.Message):
    __slots__ = ("key", "empty", "value", "failure", "name")
    KEY_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    empty: Empty
    value: bytes
    failure: Failure
    name: str
    def __init__(self, key: _Optional[bytes] = ..., empty: _Optional[_Union[Empty, _Mapping]] = ..., value: _Optional[bytes] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ..., name: _Optional[str] = ...) -> None: ...

class SetStateEntryMessage(_message.Message):
    __slots__ = ("key", "value", "name")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    value: bytes
    name: str
    def __init__(self, key: _Optional[bytes] = ..., value: _Optional[bytes] = ..., name: _Optional[str] = ...) -> None: ...

class ClearStateEntryMessage(_message.Message):
    __slots__ = ("key", "name")
    KEY_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    key: bytes
    name: str
    def __init__(self, key: _Optional[bytes] = ..., name: _Optional[str] = ...) -> None: ...

class ClearAllStateEntryMessage(_message.Message):
    __slots__ = ("name",)
    NAME_FIELD_NUMBER: _ClassVar[int]
    name: str
    def __init__(self, name: _Optional[str] = ...) -> None: ...

class GetStateKeysEntryMessage(_message.Message):
    __slots__ = ("value", "failure", "name")
    class StateKeys(_message.Message):
        __slots__ = ("keys",)
        KEYS_FIELD_NUMBER: _ClassVar[int]
        keys: _containers.RepeatedScalarFieldContainer[bytes]
        def __init__(self, keys: _Optional[_Iterable[bytes]] = ...) -> None: ...
    VALUE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    value: GetStateKeysEntryMessage.StateKeys
    failure: Failure
    name: str
    def __init__(self, value: _Optional[_Union[GetStateKeysEntryMessage.StateKeys, _Mapping]] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ..., name: _Optional[str] = ...) -> None: ...

class GetPromiseEntryMessage(_message.Message):
    __slots__ = ("key", "value", "failure", "name")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: bytes
    failure: Failure
    name: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[bytes] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ..., name: _Optional[str] = ...) -> None: ...

class PeekPromiseEntryMessage(_message.Message):
    __slots__ = ("key", "empty", "value", "failure", "name")
    KEY_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    key: str
    empty: Empty
    value: bytes
    failure: Failure
    name: str
    def __init__(self, key: _Optional[str] = ..., empty: _Optional[_Union[Empty, _Mapping]] = ..., value: _Optional[bytes] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ..., name: _Optional[str] = ...) -> None: ...

class CompletePromiseEntryMessage(_message.Message):
    __slots__ = ("key", "completion_value", "completion_failure", "empty", "failure", "name")
    KEY_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_VALUE_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_FAILURE_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    key: str
    completion_value: bytes
    completion_failure: Failure
    empty: Empty
    failure: Failure
    name: str
    def __init__(self, key: _Optional[str] = ..., completion_value: _Optional[bytes] = ..., completion_failure: _Optional[_Union[Failure, _Mapping]] = ..., empty: _Optional[_Union[Empty, _Mapping]] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ..., name: _Optional[str] = ...) -> None: ...

class SleepEntryMessage(_message.Message):
    __slots__ = ("wake_up_time", "empty", "failure", "name")
    WAKE_UP_TIME_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    wake_up_time: int
    empty: Empty
    failure: Failure
    name: str
    def __init__(self, wake_up_time: _Optional[int] = ..., empty: _Optional[_Union[Empty, _Mapping]] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ..., name: _Optional[str] = ...) -> None: ...

class CallEntryMessage(_message.Message):
    __slots__ = ("service_name", "handler_name", "parameter", "headers", "key", "value", "failure", "name")
    SERVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    HANDLER_NAME_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    service_name: str
    handler_name: str
    parameter: bytes
    headers: _containers.RepeatedCompositeFieldContainer[Header]
    key: str
    value: bytes
    failure: Failure
    name: str
    def __init__(self, service_name: _Optional[str] = ..., handler_name: _Optional[str] = ..., parameter: _Optional[bytes] = ..., headers: _Optional[_Iterable[_Union[Header, _Mapping]]] = ..., key: _Optional[str] = ..., value: _Optional[bytes] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ..., name: _Optional[str] = ...) -> None: ...

class OneWayCallEntryMessage(_message.Message):
    __slots__ = ("service_name", "handler_name", "parameter", "invoke_time", "headers", "key", "name")
    SERVICE_NAME_FIELD_NUMBER: _ClassVar[int]
    HANDLER_NAME_FIELD_NUMBER: _ClassVar[int]
    PARAMETER_FIELD_NUMBER: _ClassVar[int]
    INVOKE_TIME_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    service_name: str
    handler_name: str
    parameter: bytes
    invoke_time: int
    headers: _containers.RepeatedCompositeFieldContainer[Header]
    key: str
    name: str
    def __init__(self, service_name: _Optional[str] = ..., handler_name: _Optional[str] = ..., parameter: _Optional[bytes] = ..., invoke_time: _Optional[int] = ..., headers: _Optional[_Iterable[_Union[Header, _Mapping]]] = ..., key: _Optional[str] = ..., name: _Optional[str] = ...) -> None: ...

class AwakeableEntryMessage(_message.Message):
    __slots__ = ("value", "failure", "name")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    value: bytes
    failure: Failure
    name: str
    def __init__(self, value: _Optional[bytes] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ..., name: _Optional[str] = ...) -> None: ...

class CompleteAwakeableEntryMessage(_message.Message):
    __slots__ = ("id", "value", "failure", "name")
    ID_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    id: str
    value: bytes
    failure: Failure
    name: str
    def __init__(self, id: _Optional[str] = ..., value: _Optional[bytes] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ..., name: _Optional[str] = ...) -> None: ...

class RunEntryMessage(_message.Message):
    __slots__ = ("value", "failure", "name")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    value: bytes
    failure: Failure
    name: str
    def __init__(self, value: _Optional[bytes] = ..., failure: _Optional[_Union[Failure, _Mapping]] = ..., name: _Optional[str] = ...) -> None: ...

class Failure(_message.Message):
    __slots__ = ("code", "message")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class Header(_message.Message):
    __slots__ = ("key", "value")
    KEY_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    key: str
    value: str
    def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class Empty(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
