import datetime

from google.protobuf import duration_pb2 as _duration_pb2
from google.protobuf import timestamp_pb2 as _timestamp_pb2
from google.rpc import error_details_pb2 as _error_details_pb2
from google.rpc import status_pb2 as _status_pb2
from weir_gateway.rocketmq_v1.pb import definition_pb2 as _definition_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ResponseCommon(_message.Message):
    __slots__ = ("status", "request_info", "help", "retry_info", "debug_info", "error_info")
    STATUS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_INFO_FIELD_NUMBER: _ClassVar[int]
    HELP_FIELD_NUMBER: _ClassVar[int]
    RETRY_INFO_FIELD_NUMBER: _ClassVar[int]
    DEBUG_INFO_FIELD_NUMBER: _ClassVar[int]
    ERROR_INFO_FIELD_NUMBER: _ClassVar[int]
    status: _status_pb2.Status
    request_info: _error_details_pb2.RequestInfo
    help: _error_details_pb2.Help
    retry_info: _error_details_pb2.RetryInfo
    debug_info: _error_details_pb2.DebugInfo
    error_info: _error_details_pb2.ErrorInfo
    def __init__(self, status: _Optional[_Union[_status_pb2.Status, _Mapping]] = ..., request_info: _Optional[_Union[_error_details_pb2.RequestInfo, _Mapping]] = ..., help: _Optional[_Union[_error_details_pb2.Help, _Mapping]] = ..., retry_info: _Optional[_Union[_error_details_pb2.RetryInfo, _Mapping]] = ..., debug_info: _Optional[_Union[_error_details_pb2.DebugInfo, _Mapping]] = ..., error_info: _Optional[_Union[_error_details_pb2.ErrorInfo, _Mapping]] = ...) -> None: ...

class QueryRouteRequest(_message.Message):
    __slots__ = ("topic", "endpoints")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    ENDPOINTS_FIELD_NUMBER: _ClassVar[int]
    topic: _definition_pb2.Resource
    endpoints: _definition_pb2.Endpoints
    def __init__(self, topic: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., endpoints: _Optional[_Union[_definition_pb2.Endpoints, _Mapping]] = ...) -> None: ...

class QueryRouteResponse(_message.Message):
    __slots__ = ("common", "partitions")
    COMMON_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    common: ResponseCommon
    partitions: _containers.RepeatedCompositeFieldContainer[_definition_pb2.Partition]
    def __init__(self, common: _Optional[_Union[ResponseCommon, _Mapping]] = ..., partitions: _Optional[_Iterable[_Union[_definition_pb2.Partition, _Mapping]]] = ...) -> None: ...

class SendMessageRequest(_message.Message):
    __slots__ = ("message", "partition")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    message: _definition_pb2.Message
    partition: _definition_pb2.Partition
    def __init__(self, message: _Optional[_Union[_definition_pb2.Message, _Mapping]] = ..., partition: _Optional[_Union[_definition_pb2.Partition, _Mapping]] = ...) -> None: ...

class SendMessageResponse(_message.Message):
    __slots__ = ("common", "message_id", "transaction_id")
    COMMON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    TRANSACTION_ID_FIELD_NUMBER: _ClassVar[int]
    common: ResponseCommon
    message_id: str
    transaction_id: str
    def __init__(self, common: _Optional[_Union[ResponseCommon, _Mapping]] = ..., message_id: _Optional[str] = ..., transaction_id: _Optional[str] = ...) -> None: ...

class QueryAssignmentRequest(_message.Message):
    __slots__ = ("topic", "group", "client_id", "endpoints")
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    GROUP_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    ENDPOINTS_FIELD_NUMBER: _ClassVar[int]
    topic: _definition_pb2.Resource
    group: _definition_pb2.Resource
    client_id: str
    endpoints: _definition_pb2.Endpoints
    def __init__(self, topic: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., client_id: _Optional[str] = ..., endpoints: _Optional[_Union[_definition_pb2.Endpoints, _Mapping]] = ...) -> None: ...

class QueryAssignmentResponse(_message.Message):
    __slots__ = ("common", "assignments")
    COMMON_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENTS_FIELD_NUMBER: _ClassVar[int]
    common: ResponseCommon
    assignments: _containers.RepeatedCompositeFieldContainer[_definition_pb2.Assignment]
    def __init__(self, common: _Optional[_Union[ResponseCommon, _Mapping]] = ..., assignments: _Optional[_Iterable[_Union[_definition_pb2.Assignment, _Mapping]]] = ...) -> None: ...

class ReceiveMessageRequest(_message.Message):
    __slots__ = ("group", "client_id", "partition", "filter_expression", "consume_policy", "initialization_timestamp", "batch_size", "invisible_duration", "await_time", "fifo_flag")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    FILTER_EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    CONSUME_POLICY_FIELD_NUMBER: _ClassVar[int]
    INITIALIZATION_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    INVISIBLE_DURATION_FIELD_NUMBER: _ClassVar[int]
    AWAIT_TIME_FIELD_NUMBER: _ClassVar[int]
    FIFO_FLAG_FIELD_NUMBER: _ClassVar[int]
    group: _definition_pb2.Resource
    client_id: str
    partition: _definition_pb2.Partition
    filter_expression: _definition_pb2.FilterExpression
    consume_policy: _definition_pb2.ConsumePolicy
    initialization_timestamp: _timestamp_pb2.Timestamp
    batch_size: int
    invisible_duration: _duration_pb2.Duration
    await_time: _duration_pb2.Duration
    fifo_flag: bool
    def __init__(self, group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., client_id: _Optional[str] = ..., partition: _Optional[_Union[_definition_pb2.Partition, _Mapping]] = ..., filter_expression: _Optional[_Union[_definition_pb2.FilterExpression, _Mapping]] = ..., consume_policy: _Optional[_Union[_definition_pb2.ConsumePolicy, str]] = ..., initialization_timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., batch_size: _Optional[int] = ..., invisible_duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., await_time: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., fifo_flag: _Optional[bool] = ...) -> None: ...

class ReceiveMessageResponse(_message.Message):
    __slots__ = ("common", "messages", "delivery_timestamp", "invisible_duration")
    COMMON_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    INVISIBLE_DURATION_FIELD_NUMBER: _ClassVar[int]
    common: ResponseCommon
    messages: _containers.RepeatedCompositeFieldContainer[_definition_pb2.Message]
    delivery_timestamp: _timestamp_pb2.Timestamp
    invisible_duration: _duration_pb2.Duration
    def __init__(self, common: _Optional[_Union[ResponseCommon, _Mapping]] = ..., messages: _Optional[_Iterable[_Union[_definition_pb2.Message, _Mapping]]] = ..., delivery_timestamp: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ..., invisible_duration: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ...) -> None: ...

class AckMessageRequest(_message.Message):
    __slots__ = ("group", "topic", "client_id", "receipt_handle", "offset", "message_id")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_HANDLE_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    group: _definition_pb2.Resource
    topic: _definition_pb2.Resource
    client_id: str
    receipt_handle: str
    offset: int
    message_id: str
    def __init__(self, group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., topic: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., client_id: _Optional[str] = ..., receipt_handle: _Optional[str] = ..., offset: _Optional[int] = ..., message_id: _Optional[str] = ...) -> None: ...

class AckMessageResponse(_message.Message):
    __slots__ = ("common",)
    COMMON_FIELD_NUMBER: _ClassVar[int]
    common: ResponseCommon
    def __init__(self, common: _Optional[_Union[ResponseCommon, _Mapping]] = ...) -> None: ...

class NackMessageRequest(_message.Message):
    __slots__ = ("group", "topic", "client_id", "receipt_handle", "message_id", "delivery_attempt", "max_delivery_attempts")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_HANDLE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    MAX_DELIVERY_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    group: _definition_pb2.Resource
    topic: _definition_pb2.Resource
    client_id: str
    receipt_handle: str
    message_id: str
    delivery_attempt: int
    max_delivery_attempts: int
    def __init__(self, group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., topic: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., client_id: _Optional[str] = ..., receipt_handle: _Optional[str] = ..., message_id: _Optional[str] = ..., delivery_attempt: _Optional[int] = ..., max_delivery_attempts: _Optional[int] = ...) -> None: ...

class NackMessageResponse(_message.Message):
    __slots__ = ("common",)
    COMMON_FIELD_NUMBER: _ClassVar[int]
    common: ResponseCommon
    def __init__(self, common: _Optional[_Union[ResponseCommon, _Mapping]] = ...) -> None: ...

class ForwardMessageToDeadLetterQueueRequest(_message.Message):
    __slots__ = ("group", "topic", "client_id", "receipt_handle", "message_id", "delivery_attempt", "max_delivery_attempts")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    TOPIC_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    RECEIPT_HANDLE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    DELIVERY_ATTEMPT_FIELD_NUMBER: _ClassVar[int]
    MAX_DELIVERY_ATTEMPTS_FIELD_NUMBER: _ClassVar[int]
    group: _definition_pb2.Resource
    topic: _definition_pb2.Resource
    client_id: str
    receipt_handle: str
    message_id: str
    delivery_attempt: int
    max_delivery_attempts: int
    def __init__(self, group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., topic: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., client_id: _Optional[str] = ..., receipt_handle: _Optional[str] = ..., message_id: _Optional[str] = ..., delivery_attempt: _Optional[int] = ..., max_delivery_attempts: _Optional[int] = ...) -> None: ...

class ForwardMessageToDeadLetterQueueResponse(_message.Message):
    __slots__ = ("common",)
    COMMON_FIELD_NUMBER: _ClassVar[int]
    common: ResponseCommon
    def __init__(self, common: _Optional[_Union[ResponseCommon, _Mapping]] = ...) -> None: ...

class HeartbeatRequest(_message.Message):
    __slots__ = ("client_id", "producer_data", "consumer_data", "fifo_flag")
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_DATA_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_DATA_FIELD_NUMBER: _ClassVar[int]
    FIFO_FLAG_FIELD_NUMBER: _ClassVar[int]
    client_id: str
    producer_data: _definition_pb2.ProducerData
    consumer_data: _definition_pb2.ConsumerData
    fifo_flag: bool
    def __init__(self, client_id: _Optional[str] = ..., producer_data: _Optional[_Union[_definition_pb2.ProducerData, _Mapping]] = ..., consumer_data: _Optional[_Union[_definition_pb2.ConsumerData, _Mapping]] = ..., fifo_flag: _Optional[bool] = ...) -> None: ...

class HeartbeatResponse(_message.Message):
    __slots__ = ("common",)
    COMMON_FIELD_NUMBER: _ClassVar[int]
    common: ResponseCommon
    def __init__(self, common: _Optional[_Union[ResponseCommon, _Mapping]] = ...) -> None: ...

class HealthCheckRequest(_message.Message):
    __slots__ = ("group", "client_host")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    CLIENT_HOST_FIELD_NUMBER: _ClassVar[int]
    group: _definition_pb2.Resource
    client_host: str
    def __init__(self, group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., client_host: _Optional[str] = ...) -> None: ...

class HealthCheckResponse(_message.Message):
    __slots__ = ("common",)
    COMMON_FIELD_NUMBER: _ClassVar[int]
    common: ResponseCommon
    def __init__(self, common: _Optional[_Union[ResponseCommon, _Mapping]] = ...) -> None: ...

class EndTransactionRequest(_message.Message):
    __slots__ = ("group", "message_id", "transaction_id", "resolution", "source", "trace_context")
    class TransactionResolution(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        COMMIT: _ClassVar[EndTransactionRequest.TransactionResolution]
        ROLLBACK: _ClassVar[EndTransactionRequest.TransactionResolution]
    COMMIT: EndTransactionRequest.TransactionResolution
    ROLLBACK: EndTransactionRequest.TransactionResolution
    class Source(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = ()
        CLIENT: _ClassVar[EndTransactionRequest.Source]
        SERVER_CHECK: _ClassVar[EndTransactionRequest.Source]
    CLIENT: EndTransactionRequest.Source
    SERVER_CHECK: EndTransactionRequest.Source
    GROUP_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    TRANSACTION_ID_FIELD_NUMBER: _ClassVar[int]
    RESOLUTION_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    TRACE_CONTEXT_FIELD_NUMBER: _ClassVar[int]
    group: _definition_pb2.Resource
    message_id: str
    transaction_id: str
    resolution: EndTransactionRequest.TransactionResolution
    source: EndTransactionRequest.Source
    trace_context: str
    def __init__(self, group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., message_id: _Optional[str] = ..., transaction_id: _Optional[str] = ..., resolution: _Optional[_Union[EndTransactionRequest.TransactionResolution, str]] = ..., source: _Optional[_Union[EndTransactionRequest.Source, str]] = ..., trace_context: _Optional[str] = ...) -> None: ...

class EndTransactionResponse(_message.Message):
    __slots__ = ("common",)
    COMMON_FIELD_NUMBER: _ClassVar[int]
    common: ResponseCommon
    def __init__(self, common: _Optional[_Union[ResponseCommon, _Mapping]] = ...) -> None: ...

class QueryOffsetRequest(_message.Message):
    __slots__ = ("partition", "policy", "time_point")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    POLICY_FIELD_NUMBER: _ClassVar[int]
    TIME_POINT_FIELD_NUMBER: _ClassVar[int]
    partition: _definition_pb2.Partition
    policy: _definition_pb2.QueryOffsetPolicy
    time_point: _timestamp_pb2.Timestamp
    def __init__(self, partition: _Optional[_Union[_definition_pb2.Partition, _Mapping]] = ..., policy: _Optional[_Union[_definition_pb2.QueryOffsetPolicy, str]] = ..., time_point: _Optional[_Union[datetime.datetime, _timestamp_pb2.Timestamp, _Mapping]] = ...) -> None: ...

class QueryOffsetResponse(_message.Message):
    __slots__ = ("common", "offset")
    COMMON_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    common: ResponseCommon
    offset: int
    def __init__(self, common: _Optional[_Union[ResponseCommon, _Mapping]] = ..., offset: _Optional[int] = ...) -> None: ...

class PullMessageRequest(_message.Message):
    __slots__ = ("group", "partition", "offset", "batch_size", "await_time", "filter_expression", "client_id")
    GROUP_FIELD_NUMBER: _ClassVar[int]
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    BATCH_SIZE_FIELD_NUMBER: _ClassVar[int]
    AWAIT_TIME_FIELD_NUMBER: _ClassVar[int]
    FILTER_EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    group: _definition_pb2.Resource
    partition: _definition_pb2.Partition
    offset: int
    batch_size: int
    await_time: _duration_pb2.Duration
    filter_expression: _definition_pb2.FilterExpression
    client_id: str
    def __init__(self, group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., partition: _Optional[_Union[_definition_pb2.Partition, _Mapping]] = ..., offset: _Optional[int] = ..., batch_size: _Optional[int] = ..., await_time: _Optional[_Union[datetime.timedelta, _duration_pb2.Duration, _Mapping]] = ..., filter_expression: _Optional[_Union[_definition_pb2.FilterExpression, _Mapping]] = ..., client_id: _Optional[str] = ...) -> None: ...

class PullMessageResponse(_message.Message):
    __slots__ = ("common", "min_offset", "next_offset", "max_offset", "messages")
    COMMON_FIELD_NUMBER: _ClassVar[int]
    MIN_OFFSET_FIELD_NUMBER: _ClassVar[int]
    NEXT_OFFSET_FIELD_NUMBER: _ClassVar[int]
    MAX_OFFSET_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    common: ResponseCommon
    min_offset: int
    next_offset: int
    max_offset: int
    messages: _containers.RepeatedCompositeFieldContainer[_definition_pb2.Message]
    def __init__(self, common: _Optional[_Union[ResponseCommon, _Mapping]] = ..., min_offset: _Optional[int] = ..., next_offset: _Optional[int] = ..., max_offset: _Optional[int] = ..., messages: _Optional[_Iterable[_Union[_definition_pb2.Message, _Mapping]]] = ...) -> None: ...

class GenericPollingRequest(_message.Message):
    __slots__ = ("client_id", "topics", "producer_group", "consumer_group")
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    TOPICS_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_GROUP_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_GROUP_FIELD_NUMBER: _ClassVar[int]
    client_id: str
    topics: _containers.RepeatedCompositeFieldContainer[_definition_pb2.Resource]
    producer_group: _definition_pb2.Resource
    consumer_group: _definition_pb2.Resource
    def __init__(self, client_id: _Optional[str] = ..., topics: _Optional[_Iterable[_Union[_definition_pb2.Resource, _Mapping]]] = ..., producer_group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., consumer_group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ...) -> None: ...

class GenericPollingResponse(_message.Message):
    __slots__ = ("common",)
    COMMON_FIELD_NUMBER: _ClassVar[int]
    common: ResponseCommon
    def __init__(self, common: _Optional[_Union[ResponseCommon, _Mapping]] = ...) -> None: ...

class PrintThreadStackRequest(_message.Message):
    __slots__ = ("mid",)
    MID_FIELD_NUMBER: _ClassVar[int]
    mid: str
    def __init__(self, mid: _Optional[str] = ...) -> None: ...

class PrintThreadStackResponse(_message.Message):
    __slots__ = ("common", "mid", "stack_trace")
    COMMON_FIELD_NUMBER: _ClassVar[int]
    MID_FIELD_NUMBER: _ClassVar[int]
    STACK_TRACE_FIELD_NUMBER: _ClassVar[int]
    common: ResponseCommon
    mid: str
    stack_trace: str
    def __init__(self, common: _Optional[_Union[ResponseCommon, _Mapping]] = ..., mid: _Optional[str] = ..., stack_trace: _Optional[str] = ...) -> None: ...

class VerifyMessageConsumptionRequest(_message.Message):
    __slots__ = ("mid", "message")
    MID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    mid: str
    message: _definition_pb2.Message
    def __init__(self, mid: _Optional[str] = ..., message: _Optional[_Union[_definition_pb2.Message, _Mapping]] = ...) -> None: ...

class VerifyMessageConsumptionResponse(_message.Message):
    __slots__ = ("mid", "common")
    MID_FIELD_NUMBER: _ClassVar[int]
    COMMON_FIELD_NUMBER: _ClassVar[int]
    mid: str
    common: ResponseCommon
    def __init__(self, mid: _Optional[str] = ..., common: _Optional[_Union[ResponseCommon, _Mapping]] = ...) -> None: ...

class RecoverOrphanedTransactionRequest(_message.Message):
    __slots__ = ("orphaned_transactional_message", "transaction_id")
    ORPHANED_TRANSACTIONAL_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TRANSACTION_ID_FIELD_NUMBER: _ClassVar[int]
    orphaned_transactional_message: _definition_pb2.Message
    transaction_id: str
    def __init__(self, orphaned_transactional_message: _Optional[_Union[_definition_pb2.Message, _Mapping]] = ..., transaction_id: _Optional[str] = ...) -> None: ...

class MultiplexingRequest(_message.Message):
    __slots__ = ("polling_request", "print_thread_stack_response", "verify_message_consumption_response")
    POLLING_REQUEST_FIELD_NUMBER: _ClassVar[int]
    PRINT_THREAD_STACK_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    VERIFY_MESSAGE_CONSUMPTION_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    polling_request: GenericPollingRequest
    print_thread_stack_response: PrintThreadStackResponse
    verify_message_consumption_response: VerifyMessageConsumptionResponse
    def __init__(self, polling_request: _Optional[_Union[GenericPollingRequest, _Mapping]] = ..., print_thread_stack_response: _Optional[_Union[PrintThreadStackResponse, _Mapping]] = ..., verify_message_consumption_response: _Optional[_Union[VerifyMessageConsumptionResponse, _Mapping]] = ...) -> None: ...

class MultiplexingResponse(_message.Message):
    __slots__ = ("polling_response", "print_thread_stack_request", "verify_message_consumption_request", "recover_orphaned_transaction_request")
    POLLING_RESPONSE_FIELD_NUMBER: _ClassVar[int]
    PRINT_THREAD_STACK_REQUEST_FIELD_NUMBER: _ClassVar[int]
    VERIFY_MESSAGE_CONSUMPTION_REQUEST_FIELD_NUMBER: _ClassVar[int]
    RECOVER_ORPHANED_TRANSACTION_REQUEST_FIELD_NUMBER: _ClassVar[int]
    polling_response: GenericPollingResponse
    print_thread_stack_request: PrintThreadStackRequest
    verify_message_consumption_request: VerifyMessageConsumptionRequest
    recover_orphaned_transaction_request: RecoverOrphanedTransactionRequest
    def __init__(self, polling_response: _Optional[_Union[GenericPollingResponse, _Mapping]] = ..., print_thread_stack_request: _Optional[_Union[PrintThreadStackRequest, _Mapping]] = ..., verify_message_consumption_request: _Optional[_Union[VerifyMessageConsumptionRequest, _Mapping]] = ..., recover_orphaned_transaction_request: _Optional[_Union[RecoverOrphanedTransactionRequest, _Mapping]] = ...) -> None: ...

class NotifyClientTerminationRequest(_message.Message):
    __slots__ = ("producer_group", "consumer_group", "client_id")
    PRODUCER_GROUP_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_GROUP_FIELD_NUMBER: _ClassVar[int]
    CLIENT_ID_FIELD_NUMBER: _ClassVar[int]
    producer_group: _definition_pb2.Resource
    consumer_group: _definition_pb2.Resource
    client_id: str
    def __init__(self, producer_group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., consumer_group: _Optional[_Union[_definition_pb2.Resource, _Mapping]] = ..., client_id: _Optional[str] = ...) -> None: ...

class NotifyClientTerminationResponse(_message.Message):
    __slots__ = ("common",)
    COMMON_FIELD_NUMBER: _ClassVar[int]
    common: ResponseCommon
    def __init__(self, common: _Optional[_Union[ResponseCommon, _Mapping]] = ...) -> None: ...
