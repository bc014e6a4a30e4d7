"""Between Weir and RocketMQ v2's messages and statuses (apache.rocketmq.v2 definition.proto): a stored
Weir message as a v2 `Message` (ReceiveMessage, RecoverOrphanedTransactionCommand), a v2 `Message`
to send as the v1 door's `OutgoingMessage` (the same headers, so either door reads what the other
stored), and Weir's errors as v2 `Status` codes.

A stored message: topic from the stream name; message_id = the Weir msg_id; tag, keys, message_type
(NORMAL when the header is missing: a message a Weir publisher stored), born_timestamp (the stored
time when the sender gave none), born_host, delivery_timestamp (DELAY), message_group (FIFO),
trace_context and orphaned_transaction_recovery_duration from their `x-rocketmq-*` headers;
store_timestamp = the stored ts_ms, store_host = the gateway tier, queue_id = the Weir partition,
queue_offset = seq - 1; body_digest = CRC32 of the body as the v2 clients check it (8 upper-case hex
digits), body_encoding IDENTITY (bodies are stored decoded); receipt_handle, invisible_duration and
delivery_attempt (= deliver_count, 1-based) for a received message. Every other header but Weir's
own `x-weir-*` is a user property.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Mapping

import grpc
from weir.errors import InvalidArgumentError, NoSuchConsumerError, NoSuchStreamError, WeirError
from weir.v1 import types_pb2

from weir_gateway.rocketmq_v1 import mapping
from weir_gateway.rocketmq_v1.core import OutgoingMessage
from weir_gateway.rocketmq_v1.encoding import STORE_HOST, WEIR_HEADER_PREFIX, duration_of, timestamp_of
from weir_gateway.rocketmq_v1.errors import GatewayStatusError, StaleReceiptError
from weir_gateway.rocketmq_v2.pb import definition_pb2

SENDABLE_TYPES = ("NORMAL", "FIFO", "DELAY", "TRANSACTION")  # LITE and PRIORITY topics: not served
# gRPC status of a Weir error -> the v2 Code the clients know (messaging_result_checker in each SDK).
CODES = {
    grpc.StatusCode.INVALID_ARGUMENT: definition_pb2.BAD_REQUEST,
    grpc.StatusCode.NOT_FOUND: definition_pb2.NOT_FOUND,
    grpc.StatusCode.ALREADY_EXISTS: definition_pb2.BAD_REQUEST,
    grpc.StatusCode.FAILED_PRECONDITION: definition_pb2.PRECONDITION_FAILED,
    grpc.StatusCode.OUT_OF_RANGE: definition_pb2.ILLEGAL_OFFSET,
    grpc.StatusCode.RESOURCE_EXHAUSTED: definition_pb2.TOO_MANY_REQUESTS,
    grpc.StatusCode.PERMISSION_DENIED: definition_pb2.FORBIDDEN,
    grpc.StatusCode.UNAUTHENTICATED: definition_pb2.UNAUTHORIZED,
    grpc.StatusCode.DEADLINE_EXCEEDED: definition_pb2.PROXY_TIMEOUT,
    grpc.StatusCode.UNIMPLEMENTED: definition_pb2.NOT_IMPLEMENTED,
    grpc.StatusCode.UNAVAILABLE: definition_pb2.INTERNAL_SERVER_ERROR,
}


def ok_status() -> definition_pb2.Status:
    return definition_pb2.Status(code=definition_pb2.OK, message="OK")


def status_of_error(error: Exception) -> definition_pb2.Status:
    """The v2 Status of a failure: TOPIC_NOT_FOUND / CONSUMER_GROUP_NOT_FOUND for an unknown stream /
    group, INVALID_RECEIPT_HANDLE for a settled or redelivered message's handle, else by the error's
    gRPC status (CODES: INVALID_ARGUMENT -> BAD_REQUEST, ...); INTERNAL_SERVER_ERROR for anything else."""
    if isinstance(error, NoSuchStreamError):
        return definition_pb2.Status(code=definition_pb2.TOPIC_NOT_FOUND, message=error.message)
    if isinstance(error, NoSuchConsumerError):
        return definition_pb2.Status(code=definition_pb2.CONSUMER_GROUP_NOT_FOUND, message=error.message)
    if isinstance(error, StaleReceiptError):
        return definition_pb2.Status(code=definition_pb2.INVALID_RECEIPT_HANDLE, message=str(error))
    if isinstance(error, GatewayStatusError):
        code = CODES.get(_grpc_code(error.code), definition_pb2.INTERNAL_SERVER_ERROR)
        return definition_pb2.Status(code=code, message=str(error))
    if isinstance(error, WeirError):
        code = CODES.get(error.status_code, definition_pb2.INTERNAL_SERVER_ERROR)
        return definition_pb2.Status(code=code, message=f"{error.message} ({error.result_code.value})")
    return definition_pb2.Status(code=definition_pb2.INTERNAL_SERVER_ERROR, message=f"{type(error).__name__}: {error}")


def _grpc_code(google_code: int) -> grpc.StatusCode:
    return next((code for code in grpc.StatusCode if code.value[0] == google_code), grpc.StatusCode.INTERNAL)


def enum_name(enum: object, value: int, field: str) -> str:
    """The name of `value` in a generated enum. Errors: InvalidArgumentError for an unknown value."""
    try:
        return str(enum.Name(value))  # type: ignore[attr-defined]
    except ValueError:
        raise InvalidArgumentError(f"{field}: unknown value {value}") from None


def milliseconds_of(timestamp: object, what: str) -> int:
    """A google.protobuf.Timestamp in ms since the epoch. Errors: InvalidArgumentError outside years
    1-9999 or with nanos outside [0, 1e9) (as the type defines)."""
    seconds, nanos = timestamp.seconds, timestamp.nanos  # type: ignore[attr-defined]
    if not -62_135_596_800 <= seconds <= 253_402_300_799 or not 0 <= nanos < 1_000_000_000:
        raise InvalidArgumentError(f"{what}: not a valid timestamp (seconds {seconds}, nanos {nanos}; years 1-9999)")
    return int(seconds * 1000 + nanos // 1_000_000)


def outgoing_of(message: definition_pb2.Message, namespace: str) -> OutgoingMessage:
    """A SendMessageRequest's message as the core sends it. Its partition is the core's choice (a
    FIFO message's by its message_group): v2 clients pick a queue but do not say which. Errors:
    InvalidArgumentError for a message type this door does not serve (LITE, PRIORITY, unspecified),
    an unknown encoding or digest type, a bad timestamp; the core checks the rest."""
    system = message.system_properties
    message_type = enum_name(definition_pb2.MessageType, system.message_type, "system_properties.message_type")
    if message_type not in SENDABLE_TYPES:
        raise InvalidArgumentError(
            f"system_properties.message_type: {message_type} is not served here (one of {', '.join(SENDABLE_TYPES)})"
        )
    encoding = enum_name(definition_pb2.Encoding, system.body_encoding, "system_properties.body_encoding")
    digest = enum_name(definition_pb2.DigestType, system.body_digest.type, "system_properties.body_digest.type")
    recovery_ms = None
    if system.HasField("orphaned_transaction_recovery_duration"):
        recovery_ms = max(0, system.orphaned_transaction_recovery_duration.ToMilliseconds())
    return OutgoingMessage(
        namespace=namespace,
        topic=message.topic.name,
        message_id=system.message_id,
        message_type=message_type,
        body=message.body,
        body_encoding="IDENTITY" if encoding == "ENCODING_UNSPECIFIED" else encoding,
        digest_type="CRC32" if digest == "DIGEST_TYPE_UNSPECIFIED" else digest,
        checksum=system.body_digest.checksum,
        tag=system.tag,
        keys=list(system.keys),
        user_attributes=dict(message.user_properties),
        delivery_timestamp_ms=milliseconds_of(system.delivery_timestamp, "system_properties.delivery_timestamp")
        if system.HasField("delivery_timestamp")
        else None,
        born_timestamp_ms=milliseconds_of(system.born_timestamp, "system_properties.born_timestamp")
        if system.HasField("born_timestamp")
        else 0,
        born_host=system.born_host,
        trace_context=system.trace_context,
        message_group=system.message_group,
        recovery_period_ms=recovery_ms,
    )


def message_of(
    stream: str, message: types_pb2.Message, *, receipt_handle: str = "", invisible_ms: int = 0
) -> definition_pb2.Message:
    """The v2 Message of `message` (stored in `stream`), as the module docstring maps it."""
    headers = {header.key: header.value for header in message.headers}
    system = definition_pb2.SystemProperties(
        message_id=message.msg_id,
        body_digest=definition_pb2.Digest(
            type=definition_pb2.CRC32, checksum=format(zlib.crc32(message.payload) & 0xFFFFFFFF, "08X")
        ),
        body_encoding=definition_pb2.IDENTITY,
        message_type=_message_type(headers.get(mapping.HEADER_MESSAGE_TYPE, "NORMAL")),
        born_timestamp=timestamp_of(_int_header(headers, mapping.HEADER_BORN_TIMESTAMP_MS) or message.ts_ms),
        born_host=headers.get(mapping.HEADER_BORN_HOST, ""),
        store_timestamp=timestamp_of(message.ts_ms),
        store_host=STORE_HOST,
        queue_id=message.partition,
        queue_offset=mapping.offset_of(message.seq),
        delivery_attempt=max(1, message.deliver_count),
    )
    _optional_properties(system, headers)
    if receipt_handle:
        system.receipt_handle = receipt_handle
    if invisible_ms:
        system.invisible_duration.CopyFrom(duration_of(invisible_ms))
    resource_namespace, name = mapping.resource_of(stream)
    return definition_pb2.Message(
        topic=definition_pb2.Resource(resource_namespace=resource_namespace, name=name),
        user_properties={
            key: value
            for key, value in headers.items()
            if not key.lower().startswith((mapping.HEADER_PREFIX, WEIR_HEADER_PREFIX))
        },
        system_properties=system,
        body=message.payload,
    )


def _optional_properties(system: definition_pb2.SystemProperties, headers: Mapping[str, str]) -> None:
    """The system properties a message has only when its headers say so."""
    for header, field in (
        (mapping.HEADER_TAG, "tag"),
        (mapping.HEADER_MESSAGE_GROUP, "message_group"),
        (mapping.HEADER_TRACE_CONTEXT, "trace_context"),
    ):
        if headers.get(header):
            setattr(system, field, headers[header])
    if mapping.HEADER_KEYS in headers:
        try:
            system.keys.extend(mapping.keys_of(headers[mapping.HEADER_KEYS]))
        except (ValueError, TypeError, json.JSONDecodeError):
            system.keys.append(headers[mapping.HEADER_KEYS])  # not the gateway's JSON: one key as written
    delivery_ms = _int_header(headers, mapping.HEADER_DELIVERY_TIMESTAMP_MS)
    if delivery_ms is not None:
        system.delivery_timestamp.CopyFrom(timestamp_of(delivery_ms))
    recovery_ms = _int_header(headers, mapping.HEADER_RECOVERY_PERIOD_MS)
    if recovery_ms is not None:
        system.orphaned_transaction_recovery_duration.CopyFrom(duration_of(recovery_ms))


def _int_header(headers: Mapping[str, str], name: str) -> int | None:
    try:
        return int(headers[name])
    except (KeyError, ValueError):
        return None


def _message_type(name: str) -> definition_pb2.MessageType:
    """The v2 MessageType named `name` (the x-rocketmq-message-type header), NORMAL when unknown."""
    try:
        return definition_pb2.MessageType.Value(name)  # type: ignore[return-value]  # the stubs' enum is an int
    except ValueError:
        return definition_pb2.NORMAL
