"""What the CLI prints: for people by default (aligned tables, one line per message with its payload
as text when it is UTF-8), or with `--json` one JSON value per line with numbers as numbers and
payloads decoded (`payload` when UTF-8 text, else `payload_base64`; the same for `key`)."""

from __future__ import annotations

import base64
import datetime
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # protobuf and the stubs load when something is printed, not when a command is parsed
    from google.protobuf.message import Message as ProtoMessage
    from weir.info import ConsumerInfo, StreamInfo
    from weir.message import Message

# google.protobuf.descriptor.FieldDescriptor's type numbers (descriptor.proto's FieldDescriptorProto.Type)
_INT64_TYPES = {3, 4, 6, 16, 18}  # TYPE_INT64, TYPE_UINT64, TYPE_FIXED64, TYPE_SFIXED64, TYPE_SINT64
_TYPE_MESSAGE = 11
MAX_TEXT_PAYLOAD_CHARS = 200  # a human line shows at most this much of a payload


def proto_dict(message: ProtoMessage) -> dict[str, Any]:
    """A protobuf message as a dict with field names as in the .proto and 64-bit numbers as numbers
    (protobuf's JSON mapping writes them as strings)."""
    from google.protobuf import json_format

    value = json_format.MessageToDict(
        message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
    )
    _numbers(message, value)
    return value


def _numbers(message: ProtoMessage, value: dict[str, Any]) -> None:
    for field in message.DESCRIPTOR.fields:
        if field.name not in value:
            continue
        if field.type in _INT64_TYPES:
            if field.is_repeated:
                value[field.name] = [int(item) for item in value[field.name]]
            else:
                value[field.name] = int(value[field.name])
        elif field.type == _TYPE_MESSAGE and field.message_type is not None:
            if field.message_type.GetOptions().map_entry:
                continue
            child = getattr(message, field.name)
            if field.is_repeated:
                for item, item_value in zip(child, value[field.name], strict=True):
                    _numbers(item, item_value)
            else:
                _numbers(child, value[field.name])


def _bytes_fields(name: str, data: bytes | None) -> dict[str, str]:
    if data is None:
        return {}
    try:
        return {name: data.decode("utf-8")}
    except UnicodeDecodeError:
        return {f"{name}_base64": base64.b64encode(data).decode()}


def message_dict(message: Message) -> dict[str, Any]:
    """A message for --json: payload and key as text when UTF-8, else base64 under *_base64."""
    value: dict[str, Any] = {"stream": message.stream, "partition": message.partition, "seq": message.seq}
    value["subject"] = message.subject
    value.update(_bytes_fields("key", message.key))
    value.update(_bytes_fields("payload", message.payload))
    value["headers"] = message.headers
    value["timestamp_ms"] = message.timestamp_ms
    if message.deliver_count:
        value["deliver_count"] = message.deliver_count
    return value


def show_payload(data: bytes) -> str:
    """The payload for a person: its text when UTF-8 (cut at MAX_TEXT_PAYLOAD_CHARS), else its size
    and first bytes in hex."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return f"<{len(data)} bytes: {data[:16].hex()}{'...' if len(data) > 16 else ''}>"
    if len(text) > MAX_TEXT_PAYLOAD_CHARS:
        return text[:MAX_TEXT_PAYLOAD_CHARS] + f"... ({len(data)} bytes)"
    return text


def timestamp(ms: int) -> str:
    """Milliseconds since the epoch as local time, to the millisecond ("-" for 0)."""
    if ms <= 0:
        return "-"
    moment = datetime.datetime.fromtimestamp(ms / 1000).astimezone()
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"


def message_line(message: Message) -> str:
    """`stream[partition] #seq  time  subject  key=...  (delivery n)  payload`."""
    parts = [f"{message.stream}[{message.partition}] #{message.seq}", timestamp(message.timestamp_ms), message.subject]
    if message.key is not None:
        parts.append(f"key={show_payload(message.key)}")
    if message.headers:
        parts.append(" ".join(f"{name}={value}" for name, value in message.headers.items()))
    if message.deliver_count > 1:
        parts.append(f"(delivery {message.deliver_count})")
    parts.append(show_payload(message.payload))
    return "  ".join(parts)


def emit_message(message: Message, as_json: bool) -> None:
    print(json.dumps(message_dict(message)) if as_json else message_line(message), flush=True)


def emit(value: Any, as_json: bool, human: str | None = None) -> None:
    """`value` as one JSON line with --json, else `human` (or the value as indented JSON). A
    protobuf message, or an SDK type with `to_proto` (weir.info), is written as the proto's JSON."""
    if hasattr(value, "to_proto"):  # weir.info's types: the JSON of the proto they follow
        value = value.to_proto()
    if hasattr(value, "DESCRIPTOR") and hasattr(value, "ListFields"):  # a protobuf message
        value = proto_dict(value)
    if as_json:
        print(json.dumps(value))
    else:
        print(human if human is not None else json.dumps(value, indent=2))


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """Left-aligned columns separated by two spaces."""
    cells = [[str(cell) for cell in row] for row in rows]
    widths = [max(len(header), *(len(row[index]) for row in cells)) for index, header in enumerate(headers)]
    lines = ["  ".join(header.ljust(width) for header, width in zip(headers, widths, strict=True)).rstrip()]
    lines += ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in cells]
    return "\n".join(lines)


def size(count: int) -> str:
    """Bytes for a person: 512 B, 1.5 KiB, 3.2 MiB, ..."""
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def stream_summary(info: StreamInfo, leaders: Mapping[int, str] | None = None) -> str:
    """A stream's info in a dozen lines: config essentials, totals, one row per partition (its
    leader, seq range, messages, bytes, in-sync replicas)."""
    config = info.config
    bounds = [
        f"{name} {getattr(config, name)}"
        for name in ("max_age_ms", "max_msgs", "max_bytes", "max_msgs_per_subject")
        if getattr(config, name) is not None
    ]
    lines = [
        f"stream {config.name}: {config.partitions} partition(s), replicas {config.replicas}, "
        f"retention {config.retention}, storage {config.storage}",
        f"subjects: {', '.join(config.subjects) or '(any)'}; limits: {', '.join(bounds) or 'none'}; "
        f"max message {size(config.max_msg_bytes)}",
        f"messages {info.msg_count}, {size(info.bytes)}; created {timestamp(info.created_at_ms)}",
        "",
    ]
    rows = [
        (
            entry.partition,
            (leaders or {}).get(entry.partition, "-"),
            f"{entry.first_seq}..{entry.last_seq}" if entry.msg_count else f"- (next {entry.last_seq + 1})",
            entry.msg_count,
            size(entry.bytes),
            ",".join(entry.in_sync_node_ids) or "-",
        )
        for entry in sorted(info.partitions, key=lambda entry: entry.partition)
    ]
    lines.append(table(["partition", "leader", "seqs", "messages", "bytes", "in-sync replicas"], rows))
    if info.sources_status:
        sources = [
            (
                f"{status.source_stream}/{status.source_partition}",
                status.last_sourced_seq,
                status.pulled_total,
                ("HALTED: " if status.halted else "") + (status.last_error or "-"),
            )
            for status in info.sources_status
        ]
        lines += ["", table(["source", "last sourced seq", "appended", "last error"], sources)]
    return "\n".join(lines)


def consumer_summary(info: ConsumerInfo) -> str:
    """A consumer's state: its config essentials and one row per partition."""
    config = info.config
    lines = [
        f"consumer {config.name} of {info.stream}: filter {config.filter_subject or '(all)'}, "
        f"ack_wait {config.ack_wait_ms} ms, max_deliver {config.max_deliver}",
        f"pending {info.num_pending} (not yet delivered), ack pending {info.num_ack_pending}; delivered "
        f"{info.delivered_total}, acked {info.acked_total}, redelivered {info.redelivered_total}",
        "",
        table(
            ["partition", "ack floor", "last delivered", "ack pending", "pending"],
            [
                (p.partition, p.ack_floor, p.last_delivered, p.num_ack_pending, p.num_pending)
                for p in sorted(info.partitions, key=lambda entry: entry.partition)
            ],
        ),
    ]
    return "\n".join(lines)


def progress(text: str) -> None:
    """A progress line on stderr."""
    print(text, file=sys.stderr, flush=True)


def text_or_size(value: bytes) -> str:
    """A value for a person: its text when it is UTF-8, else its size."""
    try:
        return value.decode()
    except UnicodeDecodeError:
        return f"<{len(value)} bytes, not UTF-8>"
