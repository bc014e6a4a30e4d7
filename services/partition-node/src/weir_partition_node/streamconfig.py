"""Stream config rules as pure functions: validation with defaults, partial update, limits.

Source: the streams seed's StreamConfigPb / UpdateStreamRequest semantics (unset Limits bound = no
limit; on update a bound set to 0 clears it; immutable fields need delete + recreate).
"""

from __future__ import annotations

from weir.errors import InvalidConfigError
from weir.replication import default_min_insync
from weir.subjects import validate_name, validate_pattern
from weir.v1 import streams_pb2, types_pb2

from weir_partition_node.retention import LimitsBounds

MAX_PARTITIONS = 1024
MAX_REPLICAS = 5
MAX_SUBJECT_PATTERNS = 256
_LIMIT_FIELDS = ("max_age_ms", "max_msgs", "max_bytes", "max_msgs_per_subject")


def normalize_config(
    config: types_pb2.StreamConfig, node_max_message_bytes: int, *, clustered: bool = False
) -> types_pb2.StreamConfig:
    """The effective config: validated, defaults filled in. Raises InvalidNameError /
    InvalidConfigError / InvalidSubjectError naming the offending field."""
    validate_name(config.name)
    effective = types_pb2.StreamConfig()
    effective.CopyFrom(config)
    if len(config.subjects) > MAX_SUBJECT_PATTERNS:
        raise InvalidConfigError(f"subjects: at most {MAX_SUBJECT_PATTERNS} patterns, got {len(config.subjects)}")
    unique: list[str] = []
    for pattern in config.subjects:
        validate_pattern(pattern)
        if pattern not in unique:
            unique.append(pattern)
    del effective.subjects[:]
    effective.subjects.extend(unique)
    if config.retention not in types_pb2.RetentionPolicy.values():
        raise InvalidConfigError(f"retention: unknown policy {config.retention}")
    if config.storage not in types_pb2.StorageKind.values():
        raise InvalidConfigError(f"storage: unknown kind {config.storage}")
    for field in _LIMIT_FIELDS:
        if effective.limits.HasField(field) and getattr(effective.limits, field) == 0:
            effective.limits.ClearField(field)  # 0 = no bound; keep "unset" as the single spelling
    _check_limits(effective.limits)
    effective.max_msg_bytes = _effective_max_msg_bytes(config.max_msg_bytes, node_max_message_bytes)
    effective.partitions = config.partitions or 1
    if effective.partitions > MAX_PARTITIONS:
        raise InvalidConfigError(f"partitions: at most {MAX_PARTITIONS}, got {config.partitions}")
    effective.replicas = config.replicas or 1
    if effective.replicas > MAX_REPLICAS:
        raise InvalidConfigError(f"replicas: at most {MAX_REPLICAS}, got {config.replicas}")
    if effective.replicas > 1 and not clustered:
        raise InvalidConfigError(
            f"replicas: {effective.replicas} requested, but this node runs standalone; "
            "replicated streams are placed by the router across nodes"
        )
    effective.min_insync_replicas = config.min_insync_replicas or default_min_insync(effective.replicas)
    if effective.min_insync_replicas > effective.replicas:
        raise InvalidConfigError(
            f"min_insync_replicas: {config.min_insync_replicas} is more than replicas ({effective.replicas})"
        )
    return effective


def _effective_max_msg_bytes(requested: int, node_max_message_bytes: int) -> int:
    if requested == 0:
        return node_max_message_bytes
    if requested > node_max_message_bytes:
        raise InvalidConfigError(
            f"max_msg_bytes: {requested} exceeds the node maximum of {node_max_message_bytes} bytes"
        )
    if requested < 64:
        raise InvalidConfigError(f"max_msg_bytes: {requested} is below the minimum of 64 bytes")
    return requested


MAX_LIMIT = 2**63 - 1


def _check_limits(limits: types_pb2.Limits) -> None:
    for field in _LIMIT_FIELDS:
        value = getattr(limits, field)
        if value > MAX_LIMIT:
            raise InvalidConfigError(f"{field}: {value} is above the maximum of {MAX_LIMIT}")
    if limits.HasField("max_age_ms") and limits.max_age_ms > 100 * 365 * 24 * 3600 * 1000:
        raise InvalidConfigError(f"max_age_ms: {limits.max_age_ms} is more than 100 years")


def apply_update(
    config: types_pb2.StreamConfig, update: streams_pb2.UpdateStreamRequest, node_max_message_bytes: int
) -> types_pb2.StreamConfig:
    """`config` with the fields set in `update` applied (partial update). Raises InvalidConfigError."""
    updated = types_pb2.StreamConfig()
    updated.CopyFrom(config)
    for field in _LIMIT_FIELDS:
        if update.HasField(field):
            value = getattr(update, field)
            if value == 0:
                updated.limits.ClearField(field)
            else:
                setattr(updated.limits, field, value)
    if update.HasField("max_msg_bytes"):
        updated.max_msg_bytes = _effective_max_msg_bytes(update.max_msg_bytes, node_max_message_bytes)
    _check_limits(updated.limits)
    return updated


def bounds_of(config: types_pb2.StreamConfig) -> LimitsBounds:
    limits = config.limits
    return LimitsBounds(
        max_age_ms=limits.max_age_ms,
        max_msgs=limits.max_msgs,
        max_bytes=limits.max_bytes,
        max_msgs_per_subject=limits.max_msgs_per_subject,
    )


def check_placement(config: types_pb2.StreamConfig, placement: types_pb2.StreamPlacement, node_id: str) -> None:
    """A placement from the router must name every partition once, in order, with `replicas`
    distinct nodes each, and include this node. Errors: InvalidConfigError."""
    if len(placement.partitions) != config.partitions:
        raise InvalidConfigError(
            f"placement: {len(placement.partitions)} partition(s) placed, the stream has {config.partitions}"
        )
    involved = False
    for index, entry in enumerate(placement.partitions):
        nodes = [entry.primary_node_id, *entry.secondary_node_ids]
        if entry.partition != index or not entry.primary_node_id:
            raise InvalidConfigError(f"placement: entry {index} must place partition {index} with a primary")
        if len(set(nodes)) != len(nodes) or len(nodes) != config.replicas:
            raise InvalidConfigError(
                f"placement: partition {index} needs {config.replicas} distinct node(s), got {nodes}"
            )
        involved = involved or node_id in nodes
    if not involved:
        raise InvalidConfigError(f"placement: node {node_id!r} hosts no partition of stream {config.name!r}")


def hosted_partitions(
    config: types_pb2.StreamConfig, placement: types_pb2.StreamPlacement | None, node_id: str
) -> tuple[list[int], list[int]]:
    """(partitions this node hosts, partitions it leads), ascending. Standalone: all and all."""
    if placement is None:
        every = list(range(config.partitions))
        return every, every
    hosted = [
        entry.partition
        for entry in placement.partitions
        if entry.primary_node_id == node_id or node_id in entry.secondary_node_ids
    ]
    led = [entry.partition for entry in placement.partitions if entry.primary_node_id == node_id]
    return hosted, led
