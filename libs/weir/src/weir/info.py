"""What `weir.Client` takes and returns for streams and consumers: frozen dataclasses, not the
generated protobuf messages, so a program that uses the SDK never imports weir.v1.

- `StreamConfig` (and its `StreamSource`s): a stream as it is asked for (`weir.stream_config(...)`)
  and as it is (`StreamInfo.config`, what `Client.create_stream` returns).
- `StreamUpdate`: what `Client.update_stream` did (the effective config and the messages pruned).
- `StreamInfo`: a stream's config, totals, per-partition stats (`PartitionInfo`), sources' status
  (`SourceStatus`) and, through a router, its placement (`PartitionPlacement`) and pinned partitions.
- `ConsumerConfig` (`weir.consumer_config(...)`) and `ConsumerInfo`, with each partition's
  `ConsumerPartitionState`.

Each follows one message of proto/weir/v1/types.proto or streams.proto (its docstring names it), field
for field and with the same names (the proto's comments give each field's meaning); units are in
the names (`_ms`: milliseconds, since the Unix epoch for a time; `bytes`: bytes). The only changes
of shape: string Literals for enums (weir.options), None for an unset optional, tuples for repeated
fields, the `Limits` bounds as fields of `StreamConfig`, `StreamStats`'s totals and partitions as
fields of `StreamInfo`, a `(source_pattern, destination)` pair for a subject transform. Each has
`from_proto` and `to_proto` (pure; tests/test_info.py round-trips every field of every message).
Errors: `to_proto` raises InvalidOptionError (a ValueError) for a Literal field holding another
value; `from_proto` raises it for an enum number this SDK does not know (a newer server's).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Self, TypeVar

from google.protobuf.message import Message as ProtoMessage

from weir.errors import InvalidOptionError
from weir.options import DeliverPolicy, Retention, SourceDropPolicy, Storage
from weir.v1 import streams_pb2, types_pb2

Choice = TypeVar("Choice")
Name = TypeVar("Name", bound=str)

PartitionRole = Literal["primary", "secondary"]
"""A node's role for a partition (types.proto PartitionRole)."""


def option(choices: Mapping[Any, Choice], field: str, value: str) -> Choice:
    """`choices[value]`. Errors: InvalidOptionError (a ValueError and an InvalidArgumentError) naming
    `field`, the value given and the allowed ones (`retention="limtis"`: "retention: 'limtis' is not
    one of limits, work_queue, interest")."""
    try:
        return choices[value]
    except (KeyError, TypeError):
        raise InvalidOptionError(f"{field}: {value!r} is not one of {', '.join(choices)}") from None


def _name(choices: Mapping[Name, int], field: str, number: int) -> Name:
    """The option whose enum number is `number`. Errors: InvalidOptionError for a number this SDK
    does not know."""
    for name, value in choices.items():
        if value == number:
            return name
    raise InvalidOptionError(f"{field}: enum value {number} is unknown to this SDK (a newer server's?)")


RETENTION_POLICIES: dict[Retention, types_pb2.RetentionPolicy] = {
    "limits": types_pb2.RETENTION_POLICY_LIMITS,
    "work_queue": types_pb2.RETENTION_POLICY_WORK_QUEUE,
    "interest": types_pb2.RETENTION_POLICY_INTEREST,
}
STORAGE_KINDS: dict[Storage, types_pb2.StorageKind] = {
    "file": types_pb2.STORAGE_KIND_FILE,
    "memory": types_pb2.STORAGE_KIND_MEMORY,
}
SOURCE_DROP_POLICIES: dict[SourceDropPolicy, types_pb2.SourceDropPolicy] = {
    "halt": types_pb2.SOURCE_DROP_POLICY_HALT,
    "skip": types_pb2.SOURCE_DROP_POLICY_SKIP_TO_FIRST_AVAILABLE,
}
DELIVER_POLICIES: dict[DeliverPolicy, types_pb2.DeliverPolicy] = {
    "all": types_pb2.DELIVER_POLICY_ALL,
    "last": types_pb2.DELIVER_POLICY_LAST,
    "by_start_seq": types_pb2.DELIVER_POLICY_BY_START_SEQ,
    "by_start_time": types_pb2.DELIVER_POLICY_BY_START_TIME,
    "new": types_pb2.DELIVER_POLICY_NEW,
    "last_per_subject": types_pb2.DELIVER_POLICY_LAST_PER_SUBJECT,
}
PARTITION_ROLES: dict[PartitionRole, types_pb2.PartitionRole] = {
    "primary": types_pb2.PARTITION_ROLE_PRIMARY,
    "secondary": types_pb2.PARTITION_ROLE_SECONDARY,
}
LIMITS = ("max_age_ms", "max_msgs", "max_bytes", "max_msgs_per_subject")


class ProtoMirror:
    """A frozen dataclass that follows one protobuf message (`_proto`) field for field, under the
    same names. A field defaulting to () is a repeated one (a tuple); one defaulting to None is None
    while the message's field is unset; `_nested` names the class (anything with `from_proto` and
    `to_proto`) of a message field's values, `_enums` the {name: number} map of an enum field."""

    __slots__ = ()
    _proto: ClassVar[type[ProtoMessage]]
    _nested: ClassVar[Mapping[str, Any]] = {}
    _enums: ClassVar[Mapping[str, Mapping[Any, int]]] = {}

    @classmethod
    def from_proto(cls, proto: Any) -> Self:
        """The value a `_proto` message holds. Errors: InvalidOptionError for an enum number this
        SDK does not know (a newer server's)."""
        values: dict[str, Any] = {}
        for field in dataclasses.fields(cls):  # type: ignore[arg-type]
            name, raw = field.name, getattr(proto, field.name)
            nested = cls._nested.get(name)
            if field.default == ():
                values[name] = tuple(nested.from_proto(item) for item in raw) if nested else tuple(raw)
            elif field.default is None and not proto.HasField(name):
                values[name] = None
            elif nested is not None:
                values[name] = nested.from_proto(raw)
            elif name in cls._enums:
                values[name] = _name(cls._enums[name], name, raw)
            else:
                values[name] = raw
        return cls(**values)

    def to_proto(self) -> Any:
        """This value as its `_proto` message (a None field left unset). Errors: InvalidOptionError
        for a Literal field holding another value."""
        values: dict[str, Any] = {}
        for field in dataclasses.fields(self):  # type: ignore[arg-type]
            name, value = field.name, getattr(self, field.name)
            nested = self._nested.get(name)
            if value is None:
                continue
            if field.default == ():
                values[name] = [nested.to_proto(item) for item in value] if nested else list(value)
            elif nested is not None:
                values[name] = nested.to_proto(value)
            elif name in self._enums:
                values[name] = option(self._enums[name], name, value)
            else:
                values[name] = value
        return self._proto(**values)


# -- streams ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StreamSource:
    """One stream a sourcing stream reads (types.proto StreamSource; `weir.stream_source(...)`
    builds one): every partition of `source_stream`, only subjects matching `filter_subject` ("" =
    all), from `start_seq` (0 = its first stored message) or at most `max_initial_backfill` messages
    before its last seq (0 = no bound), rewritten by `subject_transform` ((source_pattern,
    destination), e.g. ("events.>", "audit.{{wildcard(1)}}"); None = unchanged). `on_drop`: what
    happens when retention removed messages not read yet ("halt" or "skip" to the first stored
    one); `dlq_stream`: where a JSON record of each error goes ("" = nowhere)."""

    source_stream: str
    filter_subject: str = ""
    start_seq: int = 0
    subject_transform: tuple[str, str] | None = None
    max_initial_backfill: int = 0
    on_drop: SourceDropPolicy = "halt"
    dlq_stream: str = ""

    @classmethod
    def from_proto(cls, proto: types_pb2.StreamSource) -> StreamSource:
        """The source a types_pb2.StreamSource describes."""
        transform = proto.subject_transform
        return cls(
            source_stream=proto.source_stream,
            filter_subject=proto.filter_subject,
            start_seq=proto.start_seq,
            subject_transform=(transform.source_pattern, transform.destination)
            if proto.HasField("subject_transform")
            else None,
            max_initial_backfill=proto.max_initial_backfill,
            on_drop=_name(SOURCE_DROP_POLICIES, "on_drop", proto.on_drop),
            dlq_stream=proto.dlq_stream,
        )

    def to_proto(self) -> types_pb2.StreamSource:
        """This source as a types_pb2.StreamSource. Errors: InvalidOptionError for an unknown on_drop."""
        proto = types_pb2.StreamSource(
            source_stream=self.source_stream,
            filter_subject=self.filter_subject,
            start_seq=self.start_seq,
            max_initial_backfill=self.max_initial_backfill,
            on_drop=option(SOURCE_DROP_POLICIES, "on_drop", self.on_drop),
            dlq_stream=self.dlq_stream,
        )
        if self.subject_transform is not None:
            proto.subject_transform.source_pattern, proto.subject_transform.destination = self.subject_transform
        return proto


@dataclass(frozen=True, slots=True)
class StreamConfig:
    """A stream's configuration (types.proto StreamConfig, its Limits as the four `max_*` bounds).

    `name`: 1..128 characters of [A-Za-z0-9_-:]; `subjects`: the subject patterns it accepts (empty:
    every subject); `retention`: "limits", "work_queue" or "interest"; the Limits bounds, None = no
    bound (per partition): `max_age_ms` (ms), `max_msgs`, `max_bytes` (stored record bytes),
    `max_msgs_per_subject`; `max_msg_bytes`: the largest message (bytes; 0 = the node's maximum);
    `partitions` and `replicas` (0 = 1); `storage`: "file" or "memory"; `min_insync_replicas` (0 =
    min(2, replicas)); `deliver_up_to_high_watermark`; the idempotent-publish window,
    `duplicate_window_ms` (ms; 0 = 120 000) and `duplicate_window_max_msgs` (0 = 100 000);
    `allow_scheduled_messages`; `sources` (a sourcing stream's, see StreamSource). The defaults are
    `weir.stream_config`'s; what a server returns has its defaults filled in.
    """

    name: str
    subjects: tuple[str, ...] = ()
    retention: Retention = "limits"
    max_age_ms: int | None = None
    max_msgs: int | None = None
    max_bytes: int | None = None
    max_msgs_per_subject: int | None = None
    max_msg_bytes: int = 0
    partitions: int = 1
    replicas: int = 1
    storage: Storage = "file"
    min_insync_replicas: int = 0
    deliver_up_to_high_watermark: bool = False
    duplicate_window_ms: int = 0
    duplicate_window_max_msgs: int = 0
    allow_scheduled_messages: bool = False
    sources: tuple[StreamSource, ...] = ()

    @classmethod
    def from_proto(cls, proto: types_pb2.StreamConfig) -> StreamConfig:
        """The config a types_pb2.StreamConfig describes (an unset Limits bound is None)."""
        limits = proto.limits
        return cls(
            name=proto.name,
            subjects=tuple(proto.subjects),
            retention=_name(RETENTION_POLICIES, "retention", proto.retention),
            max_age_ms=limits.max_age_ms if limits.HasField("max_age_ms") else None,
            max_msgs=limits.max_msgs if limits.HasField("max_msgs") else None,
            max_bytes=limits.max_bytes if limits.HasField("max_bytes") else None,
            max_msgs_per_subject=limits.max_msgs_per_subject if limits.HasField("max_msgs_per_subject") else None,
            max_msg_bytes=proto.max_msg_bytes,
            partitions=proto.partitions,
            replicas=proto.replicas,
            storage=_name(STORAGE_KINDS, "storage", proto.storage),
            min_insync_replicas=proto.min_insync_replicas,
            deliver_up_to_high_watermark=proto.deliver_up_to_high_watermark,
            duplicate_window_ms=proto.duplicate_window_ms,
            duplicate_window_max_msgs=proto.duplicate_window_max_msgs,
            allow_scheduled_messages=proto.allow_scheduled_messages,
            sources=tuple(StreamSource.from_proto(source) for source in proto.sources),
        )

    def to_proto(self) -> types_pb2.StreamConfig:
        """This config as a types_pb2.StreamConfig (its `limits` always set, with the bounds that are
        not None). Errors: InvalidOptionError for an unknown retention, storage or on_drop."""
        limits = types_pb2.Limits()
        for field in LIMITS:
            value = getattr(self, field)
            if value is not None:
                setattr(limits, field, value)
        return types_pb2.StreamConfig(
            name=self.name,
            subjects=self.subjects,
            retention=option(RETENTION_POLICIES, "retention", self.retention),
            limits=limits,
            max_msg_bytes=self.max_msg_bytes,
            partitions=self.partitions,
            replicas=self.replicas,
            storage=option(STORAGE_KINDS, "storage", self.storage),
            min_insync_replicas=self.min_insync_replicas,
            deliver_up_to_high_watermark=self.deliver_up_to_high_watermark,
            duplicate_window_ms=self.duplicate_window_ms,
            duplicate_window_max_msgs=self.duplicate_window_max_msgs,
            allow_scheduled_messages=self.allow_scheduled_messages,
            sources=[source.to_proto() for source in self.sources],
        )


@dataclass(frozen=True, slots=True)
class PartitionInfo(ProtoMirror):
    """One partition's stats on the node that answered (types.proto PartitionStats): its seqs
    `first_seq`..`last_seq` (first_seq = last_seq + 1 when empty), `msg_count`, `bytes` (stored
    record bytes); in a cluster that node's `role`, the `leader_epoch` it knows and, on the
    primary, the `high_watermark` (highest seq every in-sync replica holds) and `in_sync_node_ids`."""

    _proto = types_pb2.PartitionStats
    _enums: ClassVar[Mapping[str, Mapping[Any, int]]] = {"role": PARTITION_ROLES}

    partition: int
    first_seq: int = 0
    last_seq: int = 0
    msg_count: int = 0
    bytes: int = 0
    role: PartitionRole = "primary"
    leader_epoch: int = 0
    high_watermark: int = 0
    in_sync_node_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class SourceStatus(ProtoMirror):
    """How a sourcing stream's tail of one source partition is doing, from the sourcing stream's
    primary (types.proto SourceStatus): the `last_sourced_seq` read and settled, messages appended
    since the tail started (`pulled_total`), the latest error ("" when healthy) and when
    (`last_error_ts_ms`, ms since the Unix epoch), and whether on_drop "halt" stopped it."""

    _proto = types_pb2.SourceStatus

    source_stream: str
    source_partition: int = 0
    last_sourced_seq: int = 0
    pulled_total: int = 0
    last_error: str = ""
    last_error_ts_ms: int = 0
    halted: bool = False


@dataclass(frozen=True, slots=True)
class EpochStart(ProtoMirror):
    """The first seq (`start_seq`) a leader epoch's primary appended (types.proto EpochStart)."""

    _proto = types_pb2.EpochStart

    leader_epoch: int
    start_seq: int


@dataclass(frozen=True, slots=True)
class PartitionPlacement(ProtoMirror):
    """Where one partition lives (types.proto PartitionPlacement; node ids, not addresses): its
    primary, secondaries, `leader_epoch` (bumped on every change of primary), the in-sync set when
    the placement was written, each epoch's first seq, and `replica_node_ids`, the copies in
    preference order (the first is its preferred leader; empty on records older than it)."""

    _proto = types_pb2.PartitionPlacement
    _nested: ClassVar[Mapping[str, Any]] = {"epoch_starts": EpochStart}

    partition: int
    primary_node_id: str = ""
    secondary_node_ids: tuple[str, ...] = ()
    leader_epoch: int = 0
    in_sync_node_ids: tuple[str, ...] = ()
    epoch_starts: tuple[EpochStart, ...] = ()
    replica_node_ids: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class StreamInfo:
    """A stream as it is (streams.proto GetStreamInfoResponse, its StreamStats as `msg_count`,
    `bytes` and `partitions`): the effective `config`, `created_at_ms` (ms since the Unix epoch),
    the totals over every partition (`msg_count`, `bytes`), one PartitionInfo per partition,
    `sources_status` (a sourcing stream's tails, when the answering node leads its partition), and
    through a router its `placement` (one PartitionPlacement per partition, in partition order;
    empty from a node) and `pinned_partitions`."""

    config: StreamConfig
    created_at_ms: int = 0
    msg_count: int = 0
    bytes: int = 0
    partitions: tuple[PartitionInfo, ...] = ()
    sources_status: tuple[SourceStatus, ...] = ()
    placement: tuple[PartitionPlacement, ...] = ()
    pinned_partitions: tuple[int, ...] = ()

    @classmethod
    def from_proto(cls, proto: streams_pb2.GetStreamInfoResponse) -> StreamInfo:
        """The info a GetStreamInfoResponse holds."""
        return cls(
            config=StreamConfig.from_proto(proto.config),
            created_at_ms=proto.created_at_ms,
            msg_count=proto.stats.msg_count,
            bytes=proto.stats.bytes,
            partitions=tuple(PartitionInfo.from_proto(entry) for entry in proto.stats.partitions),
            sources_status=tuple(SourceStatus.from_proto(status) for status in proto.sources_status),
            placement=tuple(PartitionPlacement.from_proto(entry) for entry in proto.placement.partitions),
            pinned_partitions=tuple(proto.pinned_partitions),
        )

    def to_proto(self) -> streams_pb2.GetStreamInfoResponse:
        """This info as a GetStreamInfoResponse (`placement` set only when there is one)."""
        proto = streams_pb2.GetStreamInfoResponse(
            config=self.config.to_proto(),
            stats=types_pb2.StreamStats(
                msg_count=self.msg_count, bytes=self.bytes, partitions=[entry.to_proto() for entry in self.partitions]
            ),
            created_at_ms=self.created_at_ms,
            sources_status=[status.to_proto() for status in self.sources_status],
            pinned_partitions=self.pinned_partitions,
        )
        if self.placement:
            proto.placement.partitions.extend(entry.to_proto() for entry in self.placement)
        return proto


@dataclass(frozen=True, slots=True)
class StreamUpdate(ProtoMirror):
    """What `Client.update_stream` did (streams.proto UpdateStreamResponse): the stream's effective
    `config` after the change (defaults filled in) and `pruned`, the messages removed to bring every
    partition under the new bounds (0 when no bound was lowered)."""

    _proto = streams_pb2.UpdateStreamResponse
    _nested: ClassVar[Mapping[str, Any]] = {"config": StreamConfig}

    config: StreamConfig
    pruned: int = 0


@dataclass(frozen=True, slots=True)
class ConsumerConfig:
    """A durable consumer's configuration, the same in every partition (types.proto ConsumerConfig).

    `name`: 1..128 characters of [A-Za-z0-9_-:]; `filter_subject`: a subject pattern ("" = every
    message); `deliver_policy`: where it starts ("all", "last", "by_start_seq" from `start_seq`,
    "by_start_time" from `start_time_ms` (ms since the Unix epoch), "new", "last_per_subject");
    `ack_wait_ms`: how long a delivery may stay unacknowledged (ms; 0 = 30 000); `max_deliver`:
    deliveries before a message is dead-lettered or dropped (0 = 5); `dead_letter_subject` ("" =
    dropped); `max_ack_pending`: unacknowledged deliveries per partition (0 = 1 000);
    `deliver_group`: the push-delivery group ("" = one subscriber at a time). What a server returns
    has its defaults filled in.
    """

    name: str
    filter_subject: str = ""
    deliver_policy: DeliverPolicy = "all"
    start_seq: int = 0
    start_time_ms: int = 0
    ack_wait_ms: int = 0
    max_deliver: int = 0
    dead_letter_subject: str = ""
    max_ack_pending: int = 0
    deliver_group: str = ""

    @classmethod
    def from_proto(cls, proto: types_pb2.ConsumerConfig) -> ConsumerConfig:
        """The config a types_pb2.ConsumerConfig describes."""
        return cls(
            name=proto.name,
            filter_subject=proto.filter_subject,
            deliver_policy=_name(DELIVER_POLICIES, "deliver_policy", proto.deliver_policy),
            start_seq=proto.start_seq,
            start_time_ms=proto.start_time_ms,
            ack_wait_ms=proto.ack_wait_ms,
            max_deliver=proto.max_deliver,
            dead_letter_subject=proto.dead_letter_subject,
            max_ack_pending=proto.max_ack_pending,
            deliver_group=proto.deliver_group,
        )

    def to_proto(self) -> types_pb2.ConsumerConfig:
        """This config as a types_pb2.ConsumerConfig. Errors: InvalidOptionError for an unknown
        deliver_policy."""
        return types_pb2.ConsumerConfig(
            name=self.name,
            filter_subject=self.filter_subject,
            deliver_policy=option(DELIVER_POLICIES, "deliver_policy", self.deliver_policy),
            start_seq=self.start_seq,
            start_time_ms=self.start_time_ms,
            ack_wait_ms=self.ack_wait_ms,
            max_deliver=self.max_deliver,
            dead_letter_subject=self.dead_letter_subject,
            max_ack_pending=self.max_ack_pending,
            deliver_group=self.deliver_group,
        )


_TOTALS = (
    "delivered_total",
    "acked_total",
    "redelivered_total",
    "dead_lettered_total",
    "dropped_total",
    "termed_total",
)


@dataclass(frozen=True, slots=True)
class ConsumerPartitionState(ProtoMirror):
    """A consumer's state in one partition (types.proto ConsumerPartitionState): every seq <=
    `ack_floor` is settled; `last_delivered`: the highest seq delivered or skipped;
    `num_ack_pending`: delivered, not acknowledged; `num_pending`: stored, matching, not yet
    delivered; `num_redelivered`: pending ones delivered more than once; this partition's counts
    since creation (`*_total`); `last_per_subject_until`: with deliver_policy "last_per_subject",
    the partition's last seq when the consumer was created (0 otherwise)."""

    _proto = types_pb2.ConsumerPartitionState

    partition: int
    ack_floor: int = 0
    last_delivered: int = 0
    num_ack_pending: int = 0
    num_pending: int = 0
    num_redelivered: int = 0
    delivered_total: int = 0
    acked_total: int = 0
    redelivered_total: int = 0
    dead_lettered_total: int = 0
    dropped_total: int = 0
    termed_total: int = 0
    last_per_subject_until: int = 0


@dataclass(frozen=True, slots=True)
class ConsumerInfo:
    """A durable consumer as it is (types.proto ConsumerInfo): its `stream`, effective `config`,
    `created_at_ms` (ms since the Unix epoch), one ConsumerPartitionState per partition, and the
    totals over them (through a router each partition counted once, from its primary):
    `num_ack_pending`, `num_pending`, and since creation `delivered_total`, `acked_total`,
    `redelivered_total`, `dead_lettered_total`, `dropped_total` (max_deliver reached without a
    dead_letter_subject) and `termed_total`."""

    stream: str
    config: ConsumerConfig
    created_at_ms: int = 0
    partitions: tuple[ConsumerPartitionState, ...] = ()
    num_ack_pending: int = 0
    num_pending: int = 0
    delivered_total: int = 0
    acked_total: int = 0
    redelivered_total: int = 0
    dead_lettered_total: int = 0
    dropped_total: int = 0
    termed_total: int = 0

    @classmethod
    def from_proto(cls, proto: types_pb2.ConsumerInfo) -> ConsumerInfo:
        """The info a types_pb2.ConsumerInfo holds."""
        return cls(
            stream=proto.stream,
            config=ConsumerConfig.from_proto(proto.config),
            created_at_ms=proto.created_at_ms,
            partitions=tuple(ConsumerPartitionState.from_proto(state) for state in proto.partitions),
            num_ack_pending=proto.num_ack_pending,
            num_pending=proto.num_pending,
            **{total: getattr(proto, total) for total in _TOTALS},
        )

    def to_proto(self) -> types_pb2.ConsumerInfo:
        """This info as a types_pb2.ConsumerInfo."""
        return types_pb2.ConsumerInfo(
            stream=self.stream,
            config=self.config.to_proto(),
            created_at_ms=self.created_at_ms,
            partitions=[state.to_proto() for state in self.partitions],
            num_ack_pending=self.num_ack_pending,
            num_pending=self.num_pending,
            **{total: getattr(self, total) for total in _TOTALS},
        )


def stream_config_of(config: StreamConfig | types_pb2.StreamConfig) -> types_pb2.StreamConfig:
    """`config` as a types_pb2.StreamConfig (converted when it is the SDK's)."""
    return config.to_proto() if isinstance(config, StreamConfig) else config


def consumer_config_of(config: ConsumerConfig | types_pb2.ConsumerConfig) -> types_pb2.ConsumerConfig:
    """`config` as a types_pb2.ConsumerConfig (converted when it is the SDK's)."""
    return config.to_proto() if isinstance(config, ConsumerConfig) else config


__all__ = [
    "ConsumerConfig",
    "ConsumerInfo",
    "ConsumerPartitionState",
    "EpochStart",
    "PartitionInfo",
    "PartitionPlacement",
    "SourceStatus",
    "StreamConfig",
    "StreamInfo",
    "StreamSource",
    "StreamUpdate",
]
