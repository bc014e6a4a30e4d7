"""A stored Weir message as a RocketMQ v1 `Message` (definition.proto): what ReceiveMessage,
PullMessage and RecoverOrphanedTransactionRequest hand out. The inverse of SendMessage's
`core.headers_of`: `x-rocketmq-*` headers become system attributes, every other header (but Weir's
own `x-weir-*`) a user attribute.

System attributes: topic from the stream name (`mapping.resource_of`); message_id = the Weir msg_id;
tag, keys, message_type (NORMAL when the header is missing: a message a Weir publisher stored),
born_timestamp, born_host, delivery_timestamp (DELAY), producer_group, message_group (FIFO) and
trace_context from their headers; store_timestamp = the stored ts_ms, store_host = the gateway tier;
partition_id = the Weir partition, partition_offset = seq - 1; body_digest = CRC32 of the body as
the v1 client checks it (upper-case hex, `UtilAll.crc32`), body_encoding IDENTITY (bodies are stored
decoded); receipt_handle, invisible_period and delivery_attempt (= deliver_count, 1-based) for a
received message.
"""

from __future__ import annotations

import json
import zlib

from google.protobuf import duration_pb2, timestamp_pb2
from weir.v1 import types_pb2

from weir_gateway.rocketmq_v1 import mapping
from weir_gateway.rocketmq_v1.pb import definition_pb2

STORE_HOST = "weir-gateway"
WEIR_HEADER_PREFIX = "x-weir-"


def timestamp_of(ms: int) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromMilliseconds(ms)
    return stamp


def duration_of(ms: int) -> duration_pb2.Duration:
    duration = duration_pb2.Duration()
    duration.FromMilliseconds(ms)
    return duration


def resource_of(weir_name: str) -> definition_pb2.Resource:
    namespace, name = mapping.resource_of(weir_name)
    return definition_pb2.Resource(resource_namespace=namespace, name=name)


def _int_header(headers: dict[str, str], name: str) -> int | None:
    try:
        return int(headers[name])
    except (KeyError, ValueError):
        return None


def message_of(
    stream: str,
    message: types_pb2.Message,
    *,
    receipt_handle: str = "",
    invisible_ms: int = 0,
) -> definition_pb2.Message:
    """The RocketMQ Message of `message` (stored in `stream`), as the module docstring maps it."""
    headers = {header.key: header.value for header in message.headers}
    system = definition_pb2.SystemAttribute(
        tag=headers.get(mapping.HEADER_TAG, ""),
        message_id=message.msg_id,
        body_digest=definition_pb2.Digest(type=definition_pb2.CRC32, checksum=format(zlib.crc32(message.payload), "X")),
        body_encoding=definition_pb2.IDENTITY,
        message_type=_message_type(headers.get(mapping.HEADER_MESSAGE_TYPE, "NORMAL")),
        born_host=headers.get(mapping.HEADER_BORN_HOST, ""),
        store_timestamp=timestamp_of(message.ts_ms),
        store_host=STORE_HOST,
        receipt_handle=receipt_handle,
        partition_id=message.partition,
        partition_offset=mapping.offset_of(message.seq),
        delivery_attempt=max(1, message.deliver_count),
        message_group=headers.get(mapping.HEADER_MESSAGE_GROUP, ""),
        trace_context=headers.get(mapping.HEADER_TRACE_CONTEXT, ""),
    )
    if mapping.HEADER_KEYS in headers:
        try:
            system.keys.extend(mapping.keys_of(headers[mapping.HEADER_KEYS]))
        except (ValueError, TypeError, json.JSONDecodeError):
            system.keys.append(headers[mapping.HEADER_KEYS])  # not the gateway's JSON: one key as written
    born_ms = _int_header(headers, mapping.HEADER_BORN_TIMESTAMP_MS)
    if born_ms is not None:
        system.born_timestamp.CopyFrom(timestamp_of(born_ms))
    delivery_ms = _int_header(headers, mapping.HEADER_DELIVERY_TIMESTAMP_MS)
    if delivery_ms is not None:
        system.delivery_timestamp.CopyFrom(timestamp_of(delivery_ms))
    if invisible_ms:
        system.invisible_period.CopyFrom(duration_of(invisible_ms))
    if headers.get(mapping.HEADER_PRODUCER_GROUP):
        system.producer_group.CopyFrom(resource_of(headers[mapping.HEADER_PRODUCER_GROUP]))
    recovery_ms = _int_header(headers, mapping.HEADER_RECOVERY_PERIOD_MS)
    if recovery_ms is not None:
        system.orphaned_transaction_recovery_period.CopyFrom(duration_of(recovery_ms))
    user_attributes = {
        key: value
        for key, value in headers.items()
        if not key.lower().startswith((mapping.HEADER_PREFIX, WEIR_HEADER_PREFIX))
    }
    return definition_pb2.Message(
        topic=resource_of(stream), user_attribute=user_attributes, system_attribute=system, body=message.payload
    )


def _message_type(name: str) -> definition_pb2.MessageType:
    """The MessageType named `name` (the x-rocketmq-message-type header), NORMAL when unknown."""
    try:
        return definition_pb2.MessageType.Value(name)  # type: ignore[return-value]  # the stubs' enum is an int
    except ValueError:
        return definition_pb2.NORMAL
