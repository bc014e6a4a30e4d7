"""Pure translations between the streams seed's wire types (`waymaker.streams`, the seed file
../shared/seeds/003 verbatim) and Weir's `weir.v1` types, and Weir errors as the seed's in-body
results (`success`, `result_code`, `message`).

A seed stream is a Weir stream with one partition: streams created here have one, and a stream
with more (created through weir.v1) is refused by the calls that address messages
(`MultiPartitionError`). What the seed describes and Weir stores differently:
- `block_size`: Weir stores per message, not in blocks; any value is accepted and 0 reported.
- `strict_limits`: Weir always prunes per message (the seed's strict mode, within the default
  approximate mode's bounds too); reported true, and an update of it changes nothing.
- `sources`: Weir's StreamConfig.sources, field for field; `start_time_ms` is reserved by the seed
  and refused when set (invalid_config), as the seed says.
- Object buckets: the seed's bucket `B` is the stream `obj:B`, as is Weir's; a CreateStream of such a
  name creates Weir's object bucket (`object_bucket_from_seed`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from weir.cluster_info import ClusterStats
from weir.errors import (
    InvalidArgumentError,
    InvalidConfigError,
    InvalidNameError,
    InvalidSubjectError,
    WeirError,
)
from weir.objects import MAX_CHUNK_BYTES, OBJECT_STREAM_PREFIX, ObjectMeta, revision_fields
from weir.v1 import streams_pb2, types_pb2

from weir_gateway.waymaker_streams.pb import waymaker_streams_pb2 as seed

DELIVER_POLICIES = {
    seed.DELIVERY_ALL: types_pb2.DELIVER_POLICY_ALL,
    seed.DELIVERY_LAST: types_pb2.DELIVER_POLICY_LAST,
    seed.DELIVERY_BY_START_SEQ: types_pb2.DELIVER_POLICY_BY_START_SEQ,
    seed.DELIVERY_BY_START_TIME: types_pb2.DELIVER_POLICY_BY_START_TIME,
}
SEED_DELIVER_POLICIES = {weir: seed_policy for seed_policy, weir in DELIVER_POLICIES.items()}
SCAN_DEFAULT_LIMIT = 1000  # the seed's ScanExactAtSubject default


class MultiPartitionError(InvalidArgumentError):
    """A seed call addressed a Weir stream with more than one partition."""


def stream_config_from_seed(config: seed.StreamConfigPb) -> types_pb2.StreamConfig:
    """The Weir stream a seed CreateStream asks for (one partition). Raises InvalidConfigError for
    a source with the seed's reserved start_time_ms."""
    weir = types_pb2.StreamConfig(
        name=config.name,
        subjects=config.subjects_filter,
        max_msg_bytes=config.max_msg_bytes,
        partitions=1,
        storage=types_pb2.STORAGE_KIND_MEMORY if config.ephemeral else types_pb2.STORAGE_KIND_FILE,
        sources=[source_from_seed(index, source) for index, source in enumerate(config.sources)],
    )
    kind = config.retention.WhichOneof("policy")
    if kind == "work_queue":
        weir.retention = types_pb2.RETENTION_POLICY_WORK_QUEUE
    elif kind == "interest":
        weir.retention = types_pb2.RETENTION_POLICY_INTEREST
    else:  # limits, or unset: the seed's default is Limits with no bounds
        weir.retention = types_pb2.RETENTION_POLICY_LIMITS
        limits = config.retention.limits
        for field in ("max_age_ms", "max_msgs", "max_bytes"):
            if limits.HasField(field):
                setattr(weir.limits, field, getattr(limits, field))
    if config.max_msgs_per_subject:
        weir.limits.max_msgs_per_subject = config.max_msgs_per_subject
    return weir


ON_DROP_POLICIES = {
    seed.ON_DROP_HALT: types_pb2.SOURCE_DROP_POLICY_HALT,
    seed.ON_DROP_SKIP_TO_FIRST_AVAILABLE: types_pb2.SOURCE_DROP_POLICY_SKIP_TO_FIRST_AVAILABLE,
}
SEED_ON_DROP_POLICIES = {weir: seed_policy for seed_policy, weir in ON_DROP_POLICIES.items()}


_SOURCE_FIELDS = ("source_stream", "filter_subject", "start_seq", "max_initial_backfill", "dlq_stream")


def _copy_source(source: Any, made: Any) -> Any:
    """The fields the seed's StreamSourceConfigPb and Weir's StreamSource share, copied."""
    for name in _SOURCE_FIELDS:
        setattr(made, name, getattr(source, name))
    if source.HasField("subject_transform"):
        made.subject_transform.source_pattern = source.subject_transform.source_pattern
        made.subject_transform.destination = source.subject_transform.destination
    return made


def source_from_seed(index: int, source: seed.StreamSourceConfigPb) -> types_pb2.StreamSource:
    """One seed source as Weir's (the node validates the rest). Errors: InvalidConfigError for
    start_time_ms (reserved by the seed) or an unknown on_drop."""
    if source.start_time_ms:
        raise InvalidConfigError(f"sources[{index}].start_time_ms is reserved (the seed rejects it); use start_seq")
    if source.on_drop not in ON_DROP_POLICIES:
        raise InvalidConfigError(f"sources[{index}].on_drop: unknown policy {source.on_drop}")
    made: types_pb2.StreamSource = _copy_source(
        source, types_pb2.StreamSource(on_drop=ON_DROP_POLICIES[source.on_drop])
    )
    return made


def source_to_seed(source: types_pb2.StreamSource) -> seed.StreamSourceConfigPb:
    made: seed.StreamSourceConfigPb = _copy_source(
        source, seed.StreamSourceConfigPb(on_drop=SEED_ON_DROP_POLICIES[source.on_drop])
    )
    return made


def source_status_to_seed(status: types_pb2.SourceStatus) -> seed.SourceStatusPb:
    return seed.SourceStatusPb(
        source_stream=status.source_stream,
        last_sourced_seq=status.last_sourced_seq,
        pulled_total=status.pulled_total,
        last_error=status.last_error,
        last_error_ts_ms=status.last_error_ts_ms,
    )


def stream_config_to_seed(config: types_pb2.StreamConfig) -> seed.StreamConfigPb:
    """A Weir stream's config as the seed reports it (block_size 0, strict_limits true)."""
    made = seed.StreamConfigPb(
        name=config.name,
        subjects_filter=config.subjects,
        max_msg_bytes=config.max_msg_bytes,
        ephemeral=config.storage == types_pb2.STORAGE_KIND_MEMORY,
        max_msgs_per_subject=config.limits.max_msgs_per_subject,
        sources=[source_to_seed(source) for source in config.sources],
    )
    if config.retention == types_pb2.RETENTION_POLICY_WORK_QUEUE:
        made.retention.work_queue.SetInParent()
    elif config.retention == types_pb2.RETENTION_POLICY_INTEREST:
        made.retention.interest.SetInParent()
    else:
        limits = made.retention.limits
        limits.strict_limits = True
        for field in ("max_age_ms", "max_msgs", "max_bytes"):
            if config.limits.HasField(field):
                setattr(limits, field, getattr(config.limits, field))
    return made


def stream_stats_to_seed(stats: types_pb2.StreamStats) -> seed.StreamStatsPb:
    last_seq = max((partition.last_seq for partition in stats.partitions), default=0)
    return seed.StreamStatsPb(last_seq=last_seq, msg_count=stats.msg_count, bytes=stats.bytes)


def update_from_seed(request: seed.UpdateStreamRequest) -> dict[str, int]:
    """The seed's partial update as `Client.update_stream`'s keyword arguments (the same optional
    fields, those set). `strict_limits` changes nothing: Weir always prunes per message, which
    meets the approximate mode's bounds too."""
    return {
        field: getattr(request, field)
        for field in ("max_age_ms", "max_msgs", "max_bytes", "max_msg_bytes")
        if request.HasField(field)
    }


def consumer_config_from_seed(config: seed.ConsumerConfigPb) -> types_pb2.ConsumerConfig:
    policy = config.delivery_policy
    if policy.type not in DELIVER_POLICIES:
        raise InvalidConfigError(f"delivery_policy.type: unknown value {policy.type}")
    return types_pb2.ConsumerConfig(
        name=config.name,
        filter_subject=config.filter_subject,
        deliver_policy=DELIVER_POLICIES[policy.type],
        start_seq=policy.start_seq,
        start_time_ms=policy.start_time_ms,
        ack_wait_ms=config.ack_wait_ms,
        max_deliver=config.max_deliver,
        deliver_group=config.deliver_group,
        dead_letter_subject=config.dead_letter_subject,
    )


def consumer_state_to_seed(info: types_pb2.ConsumerInfo) -> seed.ConsumerStatePb:
    config = info.config
    state = seed.ConsumerStatePb(
        config=seed.ConsumerConfigPb(
            name=config.name,
            filter_subject=config.filter_subject,
            delivery_policy=seed.DeliveryPolicyPb(
                type=SEED_DELIVER_POLICIES.get(config.deliver_policy, seed.DELIVERY_ALL),
                start_seq=config.start_seq,
                start_time_ms=config.start_time_ms,
            ),
            ack_wait_ms=config.ack_wait_ms,
            max_deliver=config.max_deliver,
            deliver_group=config.deliver_group,
            dead_letter_subject=config.dead_letter_subject,
        ),
        created_at_ms=info.created_at_ms,
        redelivered_dropped=info.dropped_total,
    )
    if info.partitions:
        state.ack_floor = info.partitions[0].ack_floor
        state.last_delivered = info.partitions[0].last_delivered
    return state


def message_to_seed(message: types_pb2.Message) -> seed.MessagePb:
    return seed.MessagePb(
        seq=message.seq,
        subject=message.subject,
        ts_ms=message.ts_ms,
        headers=[seed.MessageHeader(key=header.key, value=header.value) for header in message.headers],
        payload=message.payload,
        deliver_count=message.deliver_count,
    )


def object_bucket_from_seed(config: seed.StreamConfigPb) -> dict[str, Any] | None:
    """`ObjectStore.create_bucket`'s arguments for a seed CreateStream of `obj:<bucket>` (the seed's
    object bucket; None for any other name): `max_msgs_per_subject` is the metadata revisions kept
    per name (0 = Weir's 16, at most 64), the limits' `max_bytes` bounds the bucket, `ephemeral` keeps
    it in memory. Errors: InvalidConfigError for what would break the store's layout: a
    subjects_filter (the bucket takes the store's own subjects), age or count limits, a
    work-queue or interest retention (each would drop chunks of live objects), max_msg_bytes
    (chunks are bounded by the store) or sources."""
    if not config.name.startswith(OBJECT_STREAM_PREFIX):
        return None
    kind = config.retention.WhichOneof("policy")
    limits = config.retention.limits
    refused = [
        (bool(config.subjects_filter) and list(config.subjects_filter) != [">"], "subjects_filter"),
        (kind not in (None, "limits"), f"a {kind} retention"),
        (limits.HasField("max_age_ms") or limits.HasField("max_msgs"), "max_age_ms or max_msgs"),
        (bool(config.max_msg_bytes), "max_msg_bytes"),
        (bool(config.sources), "sources"),
    ]
    for wrong, what in refused:
        if wrong:
            raise InvalidConfigError(
                f"{config.name!r} is an object bucket (the seed's obj:<bucket>), whose stream holds the "
                f"object store's chunks and metadata: {what} would break it; leave it unset",
                name=config.name,
            )
    return {
        "bucket": config.name[len(OBJECT_STREAM_PREFIX) :],
        "history": config.max_msgs_per_subject,
        "max_bytes": limits.max_bytes,
        "ephemeral": config.ephemeral,
    }


def chunk_size_from_seed(chunk_size: int) -> int:
    """The chunk size Weir stores a seed object in: 0 stays 0 (Weir's default, 256 KiB), one above
    Weir's largest chunk (960 KiB, under the nodes' 1 MiB message) is that largest (the seed's own
    default is 1 MiB). ObjectInfo reports the size used."""
    return min(chunk_size, MAX_CHUNK_BYTES)


def object_headers_from_seed(headers: Sequence[Any]) -> dict[str, str]:
    """The seed's repeated MessageHeader as the store keeps them (one value per key, in order).
    Errors: InvalidArgumentError for a key given twice (it would not come back verbatim)."""
    found: dict[str, str] = {}
    for header in headers:
        if header.key in found:
            raise InvalidArgumentError(
                f"headers: key {header.key!r} is given twice; an object keeps one value per header key"
            )
        found[header.key] = header.value
    return found


def object_info_to_seed(meta: ObjectMeta) -> seed.ObjectInfo:
    headers = [seed.MessageHeader(key=key, value=value) for key, value in meta.headers.items()]
    return seed.ObjectInfo(**meta.info_fields(), headers=headers)


def revision_to_seed(revision: ObjectMeta | int) -> seed.ObjectRevisionEntry:
    return seed.ObjectRevisionEntry(**revision_fields(revision))


# Weir's codes for bad input, as the seed's RPCs name them (the rest keep Weir's own code, a
# superset the README lists).
_CONFIG_ERRORS = (InvalidConfigError, InvalidNameError, InvalidSubjectError, InvalidArgumentError)


OBJECT_METHODS = frozenset(
    {
        "PutObject",
        "GetObject",
        "DeleteObject",
        "GetObjectInfo",
        "ListObjects",
        "PutObjectStream",
        "GetObjectStream",
        "ListObjectRevisions",
        "GetObjectRange",
    }
)


def seed_result_code(method: str, error: WeirError) -> str:
    """The seed's result code for `error` raised by seed RPC `method` (the object calls' own codes,
    no_such_bucket, no_such_object, sha_mismatch and incomplete, are Weir's; a bad bucket name,
    object name or argument there is `invalid_argument`)."""
    if isinstance(error, MultiPartitionError):
        return "invalid_argument"
    if method in OBJECT_METHODS and isinstance(error, _CONFIG_ERRORS):
        return "invalid_argument"
    if method in ("CreateStream", "CreateConsumer", "UpdateStream") and isinstance(error, _CONFIG_ERRORS):
        return "invalid_config"
    if method == "Publish" and isinstance(error, InvalidSubjectError):
        return "subject_rejected"  # the seed's one code for a subject it will not store
    return error.result_code.value  # the seed's own codes (no_such_stream, wrong_revision, ...) are Weir's


def copies_of(info: streams_pb2.GetStreamInfoResponse) -> list[str]:
    """The node ids holding partition 0 of a stream (a router's GetStreamInfo), preferred first."""
    if not info.placement.partitions:
        return []
    entry = info.placement.partitions[0]
    return list(entry.replica_node_ids) or [entry.primary_node_id, *entry.secondary_node_ids]


@dataclass(frozen=True, slots=True)
class Authority:
    ring_owner_node_id: int  # the preferred leader's number (0 = not known)
    override: seed.StreamAuthorityOverride | None  # set while another node leads
    pinned: bool


def authority_of(info: streams_pb2.GetStreamInfoResponse, numbers: Mapping[str, int]) -> Authority:
    """The seed's routing view of a stream's partition 0 (see cluster_admin's docstring)."""
    copies = copies_of(info)
    if not copies:
        return Authority(0, None, False)
    entry = info.placement.partitions[0]
    override = None
    if entry.primary_node_id != copies[0]:
        override = seed.StreamAuthorityOverride(
            claimant_node_id=numbers.get(entry.primary_node_id, 0), fence_epoch=entry.leader_epoch
        )
    return Authority(numbers.get(copies[0], 0), override, 0 in info.pinned_partitions)


def _spread(values: list[int]) -> int:
    return max(values) - min(values) if values else 0


def cluster_stats_to_seed(figures: ClusterStats, numbers: Mapping[str, int]) -> seed.GetClusterStreamStatsResponse:
    """Weir's cluster stats as the seed's: nodes by number (a node that did not answer is
    "unreachable"), each stream owned by its partition 0's primary, stream-count skew over the
    nodes that answered."""
    answer = seed.GetClusterStreamStatsResponse(
        success=True,
        result_code="ok",
        total_stream_count=figures.total_stream_count,
        total_msg_count=figures.total_msg_count,
        total_bytes=figures.total_bytes,
        skew_bytes=figures.skew_bytes,
    )
    for node in figures.nodes:
        answer.nodes.add(
            node_id=numbers.get(node.node_id, 0),
            stream_count=node.stream_count,
            total_msg_count=node.total_msg_count,
            total_bytes=node.total_bytes,
            status="ok" if node.status == "ok" else "unreachable",
        )
    answer.skew_count = _spread([node.stream_count for node in figures.nodes if node.status == "ok"])
    for stream in figures.streams:
        answer.streams.add(
            name=stream.name,
            owner_node_id=numbers.get(stream.primary_node_ids[0], 0) if stream.primary_node_ids else 0,
            msg_count=stream.msg_count,
            bytes=stream.bytes,
            last_seq=stream.last_seq,
        )
    return answer
