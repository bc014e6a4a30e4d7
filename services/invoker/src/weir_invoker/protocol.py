"""The Restate service protocol V2's message framing and types (pure).

Source: the seed `dev.restate.service.protocol` (proto/invoker/weir_invoker/restate/pb/protocol.proto)
and the protocol's specification (`service-invocation-protocol.md`, "Message header" and "Journal
entries reference"). Each message on an invocation's HTTP stream is an 8-byte header, big-endian:
type (16 bits), flags (16 bits), length of the serialized protobuf message (32 bits), then the
message. For journal entries the flags' top bit is REQUIRES_ACK and the lowest COMPLETED. The state
message ids are the seed's (SetState 0x0801, ClearState 0x0802, ClearAllState 0x0803), which the
specification's table gets wrong (its erratum).
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Iterator
from dataclasses import dataclass

from google.protobuf.message import DecodeError, Message

from weir_invoker.restate.pb import protocol_pb2 as pb

HEADER = struct.Struct(">HHI")
HEADER_BYTES = HEADER.size
REQUIRES_ACK_FLAG = 0x8000
COMPLETED_FLAG = 0x0001
CONTENT_TYPE = "application/vnd.restate.invocation.v2"
PROTOCOL_VERSION = 2
MAX_MESSAGE_BYTES = 32 * 1024 * 1024  # a longer message is a protocol violation (bounds what one frame allocates)


class MessageType(enum.IntEnum):
    START = 0x0000
    COMPLETION = 0x0001
    SUSPENSION = 0x0002
    ERROR = 0x0003
    ENTRY_ACK = 0x0004
    END = 0x0005
    INPUT = 0x0400
    OUTPUT = 0x0401
    GET_STATE = 0x0800
    SET_STATE = 0x0801
    CLEAR_STATE = 0x0802
    CLEAR_ALL_STATE = 0x0803
    GET_STATE_KEYS = 0x0804
    GET_PROMISE = 0x0808
    PEEK_PROMISE = 0x0809
    COMPLETE_PROMISE = 0x080A
    SLEEP = 0x0C00
    CALL = 0x0C01
    ONE_WAY_CALL = 0x0C02
    AWAKEABLE = 0x0C03
    COMPLETE_AWAKEABLE = 0x0C04
    RUN = 0x0C05


CUSTOM_ENTRY_MIN = 0xFC00  # types from here on are an SDK's own entries: stored and replayed as they are

MESSAGE_CLASSES: dict[int, type[Message]] = {
    MessageType.START: pb.StartMessage,
    MessageType.COMPLETION: pb.CompletionMessage,
    MessageType.SUSPENSION: pb.SuspensionMessage,
    MessageType.ERROR: pb.ErrorMessage,
    MessageType.ENTRY_ACK: pb.EntryAckMessage,
    MessageType.END: pb.EndMessage,
    MessageType.INPUT: pb.InputEntryMessage,
    MessageType.OUTPUT: pb.OutputEntryMessage,
    MessageType.GET_STATE: pb.GetStateEntryMessage,
    MessageType.SET_STATE: pb.SetStateEntryMessage,
    MessageType.CLEAR_STATE: pb.ClearStateEntryMessage,
    MessageType.CLEAR_ALL_STATE: pb.ClearAllStateEntryMessage,
    MessageType.GET_STATE_KEYS: pb.GetStateKeysEntryMessage,
    MessageType.GET_PROMISE: pb.GetPromiseEntryMessage,
    MessageType.PEEK_PROMISE: pb.PeekPromiseEntryMessage,
    MessageType.COMPLETE_PROMISE: pb.CompletePromiseEntryMessage,
    MessageType.SLEEP: pb.SleepEntryMessage,
    MessageType.CALL: pb.CallEntryMessage,
    MessageType.ONE_WAY_CALL: pb.OneWayCallEntryMessage,
    MessageType.AWAKEABLE: pb.AwakeableEntryMessage,
    MessageType.COMPLETE_AWAKEABLE: pb.CompleteAwakeableEntryMessage,
    MessageType.RUN: pb.RunEntryMessage,
}

# Entries the runtime completes (the "Completable" column); a completion fills their `result`.
COMPLETABLE = frozenset(
    {
        MessageType.GET_STATE,
        MessageType.GET_STATE_KEYS,
        MessageType.GET_PROMISE,
        MessageType.PEEK_PROMISE,
        MessageType.COMPLETE_PROMISE,
        MessageType.SLEEP,
        MessageType.CALL,
        MessageType.AWAKEABLE,
    }
)

ENTRY_NAMES: dict[int, str] = {
    MessageType.INPUT: "Input",
    MessageType.OUTPUT: "Output",
    MessageType.GET_STATE: "GetState",
    MessageType.SET_STATE: "SetState",
    MessageType.CLEAR_STATE: "ClearState",
    MessageType.CLEAR_ALL_STATE: "ClearAllState",
    MessageType.GET_STATE_KEYS: "GetStateKeys",
    MessageType.GET_PROMISE: "GetPromise",
    MessageType.PEEK_PROMISE: "PeekPromise",
    MessageType.COMPLETE_PROMISE: "CompletePromise",
    MessageType.SLEEP: "Sleep",
    MessageType.CALL: "Call",
    MessageType.ONE_WAY_CALL: "OneWayCall",
    MessageType.AWAKEABLE: "Awakeable",
    MessageType.COMPLETE_AWAKEABLE: "CompleteAwakeable",
    MessageType.RUN: "Run",
}


class ProtocolViolation(Exception):
    """The deployment broke the protocol (a bad header, an unknown type, a message that does not
    decode): the attempt fails and is retried, as the specification's PROTOCOL_VIOLATION (571)."""


def is_entry(message_type: int) -> bool:
    """A journal entry (input/output, state, syscalls, or an SDK's custom entry)."""
    return message_type >= MessageType.INPUT


def type_name(message_type: int) -> str:
    if message_type >= CUSTOM_ENTRY_MIN:
        return f"Custom(0x{message_type:04X})"
    return ENTRY_NAMES.get(message_type, f"0x{message_type:04X}")


def encode(message_type: int, message: Message | bytes, flags: int = 0) -> bytes:
    """One framed message: the 8-byte header and the serialized message."""
    body = message if isinstance(message, bytes) else message.SerializeToString()
    return HEADER.pack(message_type, flags, len(body)) + body


@dataclass(frozen=True)
class Frame:
    """One message read from a stream: its type, header flags and serialized body."""

    type: int
    flags: int
    body: bytes

    @property
    def requires_ack(self) -> bool:
        return bool(self.flags & REQUIRES_ACK_FLAG)

    @property
    def completed(self) -> bool:
        return bool(self.flags & COMPLETED_FLAG)

    def decode(self) -> Message:
        """The message as its protobuf class. Errors: ProtocolViolation (unknown type, bad body)."""
        cls = MESSAGE_CLASSES.get(self.type)
        if cls is None:
            raise ProtocolViolation(f"message type 0x{self.type:04X} is not one this runtime knows")
        try:
            return cls.FromString(self.body)
        except DecodeError as error:
            raise ProtocolViolation(f"{type_name(self.type)} message does not decode: {error}") from None


def parse_header(header: bytes) -> tuple[int, int, int]:
    """(type, flags, length) of an 8-byte header. Errors: ProtocolViolation (a length over
    MAX_MESSAGE_BYTES, before anything that size is read)."""
    message_type, flags, length = HEADER.unpack(header)
    if length > MAX_MESSAGE_BYTES:
        raise ProtocolViolation(f"a {type_name(message_type)} message of {length} bytes is over {MAX_MESSAGE_BYTES}")
    return message_type, flags, length


class FrameDecoder:
    """Frames from a byte stream that arrives in arbitrary chunks (a request-response body)."""

    def __init__(self) -> None:
        self._buffer = bytearray()

    def feed(self, data: bytes) -> Iterator[Frame]:
        self._buffer += data
        while len(self._buffer) >= HEADER_BYTES:
            message_type, flags, length = parse_header(bytes(self._buffer[:HEADER_BYTES]))
            if len(self._buffer) < HEADER_BYTES + length:
                return
            body = bytes(self._buffer[HEADER_BYTES : HEADER_BYTES + length])
            del self._buffer[: HEADER_BYTES + length]
            yield Frame(message_type, flags, body)

    @property
    def pending_bytes(self) -> int:
        """Bytes of an incomplete frame (non-zero at the end of a stream: it was cut)."""
        return len(self._buffer)


def complete_entry(frame: Frame, completion: pb.CompletionMessage) -> Frame:
    """The entry `frame` with the completion's result filled in and the COMPLETED flag set, as a
    replay sends a completed entry (the result fields share the numbers 13..15). Errors:
    ProtocolViolation (an entry that is not completable)."""
    if frame.type not in COMPLETABLE:
        raise ProtocolViolation(f"a completion for entry type {type_name(frame.type)}, which is not completable")
    entry = frame.decode()
    which = completion.WhichOneof("result")
    if which == "empty":
        _set_result(entry, "empty", pb.Empty())
    elif which == "value":
        if frame.type == MessageType.GET_STATE_KEYS:
            entry.value.CopyFrom(pb.GetStateKeysEntryMessage.StateKeys.FromString(completion.value))  # type: ignore[attr-defined]
        else:
            _set_result(entry, "value", completion.value)
    elif which == "failure":
        _set_result(entry, "failure", completion.failure)
    return Frame(frame.type, frame.flags | COMPLETED_FLAG, entry.SerializeToString())


def _set_result(entry: Message, field: str, value: object) -> None:
    descriptor = entry.DESCRIPTOR.fields_by_name.get(field)
    if descriptor is None:
        raise ProtocolViolation(f"{entry.DESCRIPTOR.name} has no {field} result")
    if isinstance(value, Message):
        getattr(entry, field).CopyFrom(value)
    else:
        setattr(entry, field, value)


def entry_result(frame: Frame) -> pb.CompletionMessage | None:
    """The result a completed entry carries, as a completion (None when it has none)."""
    if frame.type not in COMPLETABLE:
        return None
    entry = frame.decode()
    which = entry.WhichOneof("result")
    if which is None:
        return None
    completion = pb.CompletionMessage()
    if which == "empty":
        completion.empty.SetInParent()
    elif which == "value":
        value = entry.value  # type: ignore[attr-defined]
        completion.value = value.SerializeToString() if isinstance(value, Message) else value
    else:
        completion.failure.CopyFrom(entry.failure)  # type: ignore[attr-defined]
    return completion
