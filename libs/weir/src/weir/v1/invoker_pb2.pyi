from weir.v1 import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class InvocationStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    INVOCATION_STATUS_UNSPECIFIED: _ClassVar[InvocationStatus]
    INVOCATION_STATUS_PENDING: _ClassVar[InvocationStatus]
    INVOCATION_STATUS_RUNNING: _ClassVar[InvocationStatus]
    INVOCATION_STATUS_SUSPENDED: _ClassVar[InvocationStatus]
    INVOCATION_STATUS_BACKING_OFF: _ClassVar[InvocationStatus]
    INVOCATION_STATUS_COMPLETED: _ClassVar[InvocationStatus]
    INVOCATION_STATUS_FAILED: _ClassVar[InvocationStatus]
    INVOCATION_STATUS_CANCELLED: _ClassVar[InvocationStatus]
INVOCATION_STATUS_UNSPECIFIED: InvocationStatus
INVOCATION_STATUS_PENDING: InvocationStatus
INVOCATION_STATUS_RUNNING: InvocationStatus
INVOCATION_STATUS_SUSPENDED: InvocationStatus
INVOCATION_STATUS_BACKING_OFF: InvocationStatus
INVOCATION_STATUS_COMPLETED: InvocationStatus
INVOCATION_STATUS_FAILED: InvocationStatus
INVOCATION_STATUS_CANCELLED: InvocationStatus

class DeployedHandler(_message.Message):
    __slots__ = ("name", "kind")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    name: str
    kind: str
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[str] = ...) -> None: ...

class DeployedService(_message.Message):
    __slots__ = ("name", "kind", "handlers")
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    HANDLERS_FIELD_NUMBER: _ClassVar[int]
    name: str
    kind: str
    handlers: _containers.RepeatedCompositeFieldContainer[DeployedHandler]
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[str] = ..., handlers: _Optional[_Iterable[_Union[DeployedHandler, _Mapping]]] = ...) -> None: ...

class Deployment(_message.Message):
    __slots__ = ("id", "url", "protocol_mode", "min_protocol_version", "max_protocol_version", "services", "registered_at_ms", "server", "http_version")
    ID_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_MODE_FIELD_NUMBER: _ClassVar[int]
    MIN_PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    MAX_PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    SERVICES_FIELD_NUMBER: _ClassVar[int]
    REGISTERED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    SERVER_FIELD_NUMBER: _ClassVar[int]
    HTTP_VERSION_FIELD_NUMBER: _ClassVar[int]
    id: str
    url: str
    protocol_mode: str
    min_protocol_version: int
    max_protocol_version: int
    services: _containers.RepeatedCompositeFieldContainer[DeployedService]
    registered_at_ms: int
    server: str
    http_version: str
    def __init__(self, id: _Optional[str] = ..., url: _Optional[str] = ..., protocol_mode: _Optional[str] = ..., min_protocol_version: _Optional[int] = ..., max_protocol_version: _Optional[int] = ..., services: _Optional[_Iterable[_Union[DeployedService, _Mapping]]] = ..., registered_at_ms: _Optional[int] = ..., server: _Optional[str] = ..., http_version: _Optional[str] = ...) -> None: ...

class RegisterDeploymentRequest(_message.Message):
    __slots__ = ("url",)
    URL_FIELD_NUMBER: _ClassVar[int]
    url: str
    def __init__(self, url: _Optional[str] = ...) -> None: ...

class RegisterDeploymentResponse(_message.Message):
    __slots__ = ("deployment",)
    DEPLOYMENT_FIELD_NUMBER: _ClassVar[int]
    deployment: Deployment
    def __init__(self, deployment: _Optional[_Union[Deployment, _Mapping]] = ...) -> None: ...

class ListDeploymentsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListDeploymentsResponse(_message.Message):
    __slots__ = ("deployments",)
    DEPLOYMENTS_FIELD_NUMBER: _ClassVar[int]
    deployments: _containers.RepeatedCompositeFieldContainer[Deployment]
    def __init__(self, deployments: _Optional[_Iterable[_Union[Deployment, _Mapping]]] = ...) -> None: ...

class RemoveDeploymentRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class RemoveDeploymentResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Subscription(_message.Message):
    __slots__ = ("id", "stream", "consumer", "filter_subject", "service", "handler", "dead_letter_stream", "reply_stream", "start", "created_at_ms")
    ID_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_FIELD_NUMBER: _ClassVar[int]
    FILTER_SUBJECT_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    HANDLER_FIELD_NUMBER: _ClassVar[int]
    DEAD_LETTER_STREAM_FIELD_NUMBER: _ClassVar[int]
    REPLY_STREAM_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    id: str
    stream: str
    consumer: str
    filter_subject: str
    service: str
    handler: str
    dead_letter_stream: str
    reply_stream: str
    start: str
    created_at_ms: int
    def __init__(self, id: _Optional[str] = ..., stream: _Optional[str] = ..., consumer: _Optional[str] = ..., filter_subject: _Optional[str] = ..., service: _Optional[str] = ..., handler: _Optional[str] = ..., dead_letter_stream: _Optional[str] = ..., reply_stream: _Optional[str] = ..., start: _Optional[str] = ..., created_at_ms: _Optional[int] = ...) -> None: ...

class CreateSubscriptionRequest(_message.Message):
    __slots__ = ("subscription",)
    SUBSCRIPTION_FIELD_NUMBER: _ClassVar[int]
    subscription: Subscription
    def __init__(self, subscription: _Optional[_Union[Subscription, _Mapping]] = ...) -> None: ...

class CreateSubscriptionResponse(_message.Message):
    __slots__ = ("subscription",)
    SUBSCRIPTION_FIELD_NUMBER: _ClassVar[int]
    subscription: Subscription
    def __init__(self, subscription: _Optional[_Union[Subscription, _Mapping]] = ...) -> None: ...

class ListSubscriptionsRequest(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class ListSubscriptionsResponse(_message.Message):
    __slots__ = ("subscriptions",)
    SUBSCRIPTIONS_FIELD_NUMBER: _ClassVar[int]
    subscriptions: _containers.RepeatedCompositeFieldContainer[Subscription]
    def __init__(self, subscriptions: _Optional[_Iterable[_Union[Subscription, _Mapping]]] = ...) -> None: ...

class DeleteSubscriptionRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class DeleteSubscriptionResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class InvocationFailure(_message.Message):
    __slots__ = ("code", "message")
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    code: int
    message: str
    def __init__(self, code: _Optional[int] = ..., message: _Optional[str] = ...) -> None: ...

class Invocation(_message.Message):
    __slots__ = ("id", "service", "handler", "key", "status", "attempts", "last_failure", "next_retry_at_ms", "waiting_on_entries", "wake_up_at_ms", "created_at_ms", "modified_at_ms", "journal_length", "output", "failure", "subscription_id", "source_stream", "source_partition", "source_seq", "parent_id", "parent_entry_index", "parent_awaits", "deployment_id", "not_before_ms", "source_subject", "input", "headers", "ingest_order")
    ID_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    HANDLER_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    LAST_FAILURE_FIELD_NUMBER: _ClassVar[int]
    NEXT_RETRY_AT_MS_FIELD_NUMBER: _ClassVar[int]
    WAITING_ON_ENTRIES_FIELD_NUMBER: _ClassVar[int]
    WAKE_UP_AT_MS_FIELD_NUMBER: _ClassVar[int]
    CREATED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    MODIFIED_AT_MS_FIELD_NUMBER: _ClassVar[int]
    JOURNAL_LENGTH_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    SUBSCRIPTION_ID_FIELD_NUMBER: _ClassVar[int]
    SOURCE_STREAM_FIELD_NUMBER: _ClassVar[int]
    SOURCE_PARTITION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SEQ_FIELD_NUMBER: _ClassVar[int]
    PARENT_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_ENTRY_INDEX_FIELD_NUMBER: _ClassVar[int]
    PARENT_AWAITS_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_ID_FIELD_NUMBER: _ClassVar[int]
    NOT_BEFORE_MS_FIELD_NUMBER: _ClassVar[int]
    SOURCE_SUBJECT_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    INGEST_ORDER_FIELD_NUMBER: _ClassVar[int]
    id: str
    service: str
    handler: str
    key: str
    status: InvocationStatus
    attempts: int
    last_failure: str
    next_retry_at_ms: int
    waiting_on_entries: _containers.RepeatedScalarFieldContainer[int]
    wake_up_at_ms: int
    created_at_ms: int
    modified_at_ms: int
    journal_length: int
    output: bytes
    failure: InvocationFailure
    subscription_id: str
    source_stream: str
    source_partition: int
    source_seq: int
    parent_id: str
    parent_entry_index: int
    parent_awaits: bool
    deployment_id: str
    not_before_ms: int
    source_subject: str
    input: bytes
    headers: _containers.RepeatedCompositeFieldContainer[_types_pb2.Header]
    ingest_order: int
    def __init__(self, id: _Optional[str] = ..., service: _Optional[str] = ..., handler: _Optional[str] = ..., key: _Optional[str] = ..., status: _Optional[_Union[InvocationStatus, str]] = ..., attempts: _Optional[int] = ..., last_failure: _Optional[str] = ..., next_retry_at_ms: _Optional[int] = ..., waiting_on_entries: _Optional[_Iterable[int]] = ..., wake_up_at_ms: _Optional[int] = ..., created_at_ms: _Optional[int] = ..., modified_at_ms: _Optional[int] = ..., journal_length: _Optional[int] = ..., output: _Optional[bytes] = ..., failure: _Optional[_Union[InvocationFailure, _Mapping]] = ..., subscription_id: _Optional[str] = ..., source_stream: _Optional[str] = ..., source_partition: _Optional[int] = ..., source_seq: _Optional[int] = ..., parent_id: _Optional[str] = ..., parent_entry_index: _Optional[int] = ..., parent_awaits: bool = ..., deployment_id: _Optional[str] = ..., not_before_ms: _Optional[int] = ..., source_subject: _Optional[str] = ..., input: _Optional[bytes] = ..., headers: _Optional[_Iterable[_Union[_types_pb2.Header, _Mapping]]] = ..., ingest_order: _Optional[int] = ...) -> None: ...

class JournalEntry(_message.Message):
    __slots__ = ("index", "type", "type_name", "name", "completed", "summary", "message")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TYPE_NAME_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    COMPLETED_FIELD_NUMBER: _ClassVar[int]
    SUMMARY_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    index: int
    type: int
    type_name: str
    name: str
    completed: bool
    summary: str
    message: bytes
    def __init__(self, index: _Optional[int] = ..., type: _Optional[int] = ..., type_name: _Optional[str] = ..., name: _Optional[str] = ..., completed: bool = ..., summary: _Optional[str] = ..., message: _Optional[bytes] = ...) -> None: ...

class ListInvocationsRequest(_message.Message):
    __slots__ = ("status", "service", "limit")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    LIMIT_FIELD_NUMBER: _ClassVar[int]
    status: InvocationStatus
    service: str
    limit: int
    def __init__(self, status: _Optional[_Union[InvocationStatus, str]] = ..., service: _Optional[str] = ..., limit: _Optional[int] = ...) -> None: ...

class ListInvocationsResponse(_message.Message):
    __slots__ = ("invocations", "truncated")
    INVOCATIONS_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    invocations: _containers.RepeatedCompositeFieldContainer[Invocation]
    truncated: bool
    def __init__(self, invocations: _Optional[_Iterable[_Union[Invocation, _Mapping]]] = ..., truncated: bool = ...) -> None: ...

class GetInvocationRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class GetInvocationResponse(_message.Message):
    __slots__ = ("invocation", "journal")
    INVOCATION_FIELD_NUMBER: _ClassVar[int]
    JOURNAL_FIELD_NUMBER: _ClassVar[int]
    invocation: Invocation
    journal: _containers.RepeatedCompositeFieldContainer[JournalEntry]
    def __init__(self, invocation: _Optional[_Union[Invocation, _Mapping]] = ..., journal: _Optional[_Iterable[_Union[JournalEntry, _Mapping]]] = ...) -> None: ...

class CancelInvocationRequest(_message.Message):
    __slots__ = ("id",)
    ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    def __init__(self, id: _Optional[str] = ...) -> None: ...

class CancelInvocationResponse(_message.Message):
    __slots__ = ("invocation",)
    INVOCATION_FIELD_NUMBER: _ClassVar[int]
    invocation: Invocation
    def __init__(self, invocation: _Optional[_Union[Invocation, _Mapping]] = ...) -> None: ...

class InvokeRequest(_message.Message):
    __slots__ = ("service", "handler", "key", "input", "headers", "idempotency_key")
    SERVICE_FIELD_NUMBER: _ClassVar[int]
    HANDLER_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    HEADERS_FIELD_NUMBER: _ClassVar[int]
    IDEMPOTENCY_KEY_FIELD_NUMBER: _ClassVar[int]
    service: str
    handler: str
    key: str
    input: bytes
    headers: _containers.RepeatedCompositeFieldContainer[_types_pb2.Header]
    idempotency_key: str
    def __init__(self, service: _Optional[str] = ..., handler: _Optional[str] = ..., key: _Optional[str] = ..., input: _Optional[bytes] = ..., headers: _Optional[_Iterable[_Union[_types_pb2.Header, _Mapping]]] = ..., idempotency_key: _Optional[str] = ...) -> None: ...

class InvokeResponse(_message.Message):
    __slots__ = ("invocation",)
    INVOCATION_FIELD_NUMBER: _ClassVar[int]
    invocation: Invocation
    def __init__(self, invocation: _Optional[_Union[Invocation, _Mapping]] = ...) -> None: ...

class CompleteAwakeableRequest(_message.Message):
    __slots__ = ("id", "value", "failure")
    ID_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_FIELD_NUMBER: _ClassVar[int]
    id: str
    value: bytes
    failure: InvocationFailure
    def __init__(self, id: _Optional[str] = ..., value: _Optional[bytes] = ..., failure: _Optional[_Union[InvocationFailure, _Mapping]] = ...) -> None: ...

class CompleteAwakeableResponse(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...
