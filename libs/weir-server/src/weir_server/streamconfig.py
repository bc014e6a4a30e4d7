"""Stream config rules as pure functions: validation with defaults, partial update, limits.

Shared by the partition node (which applies them to every config it stores) and the router (which
applies them before it places anything, so a bad config costs no placement work: issue 22).

Source: the streams seed's StreamConfigPb / UpdateStreamRequest semantics (unset Limits bound = no
limit; on update a bound set to 0 clears it; immutable fields need delete + recreate); the duplicate
window follows JetStream's `duplicate_window` (default 2 minutes, at most max_age).
"""

from __future__ import annotations

from weir.errors import InvalidConfigError
from weir.subjects import validate_name, validate_pattern
from weir.v1 import streams_pb2, types_pb2

from weir_server.replication import default_min_insync
from weir_server.sources import validate_sources

DEFAULT_DUPLICATE_WINDOW_MS = 120_000
MAX_DUPLICATE_WINDOW_MS = 86_400_000
DEFAULT_DUPLICATE_WINDOW_MAX_MSGS = 100_000
MAX_DUPLICATE_WINDOW_MAX_MSGS = 1_000_000
MAX_MESSAGE_BYTES = 16 * 1024 * 1024  # no node accepts a larger message (WEIR_NODE_MAX_MESSAGE_BYTES's bound)

MAX_PARTITIONS = 1024
MAX_REPLICAS = 5
MAX_SUBJECT_PATTERNS = 256
_LIMIT_FIELDS = ("max_age_ms", "max_msgs", "max_bytes", "max_msgs_per_subject")


def normalize_config(
    config: types_pb2.StreamConfig, node_max_message_bytes: int, *, clustered: bool = False
) -> types_pb2.StreamConfig:
    """The effective config: validated, defaults filled in. Raises InvalidNameError /
    InvalidConfigError / InvalidSubjectError naming the offending field. The router, which does
    not know the nodes' maximum, passes MAX_MESSAGE_BYTES (the node checks its own again)."""
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
    with_defaults(effective)
    _check_duplicate_window(effective)
    validate_sources(effective)
    return effective


def with_defaults(config: types_pb2.StreamConfig) -> types_pb2.StreamConfig:
    """Fill the defaults of fields added after a config may have been stored (0 = default), in
    place; returns `config`. A stream stored before them compares equal to one created now. The
    default duplicate window is 2 minutes, or max_age_ms when that is shorter (as JetStream does)."""
    if not config.duplicate_window_ms:
        default_ms = DEFAULT_DUPLICATE_WINDOW_MS
        if config.limits.HasField("max_age_ms"):
            default_ms = min(default_ms, config.limits.max_age_ms)
        config.duplicate_window_ms = default_ms
    if not config.duplicate_window_max_msgs:
        config.duplicate_window_max_msgs = DEFAULT_DUPLICATE_WINDOW_MAX_MSGS
    return config


def _check_duplicate_window(config: types_pb2.StreamConfig) -> None:
    window_ms = config.duplicate_window_ms
    if window_ms > MAX_DUPLICATE_WINDOW_MS:
        raise InvalidConfigError(f"duplicate_window_ms: at most {MAX_DUPLICATE_WINDOW_MS} (1 day), got {window_ms}")
    if config.limits.HasField("max_age_ms") and window_ms > config.limits.max_age_ms:
        raise InvalidConfigError(
            f"duplicate_window_ms: {window_ms} is longer than max_age_ms ({config.limits.max_age_ms}); "
            "set it to max_age_ms or less"
        )
    max_msgs = config.duplicate_window_max_msgs
    if max_msgs > MAX_DUPLICATE_WINDOW_MAX_MSGS:
        raise InvalidConfigError(f"duplicate_window_max_msgs: at most {MAX_DUPLICATE_WINDOW_MAX_MSGS}, got {max_msgs}")


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
    if update.HasField("duplicate_window_ms"):
        updated.duplicate_window_ms = update.duplicate_window_ms
    elif updated.limits.HasField("max_age_ms") and updated.duplicate_window_ms > updated.limits.max_age_ms:
        updated.duplicate_window_ms = updated.limits.max_age_ms  # a shorter max_age_ms takes the window along
    if update.HasField("duplicate_window_max_msgs"):
        updated.duplicate_window_max_msgs = update.duplicate_window_max_msgs
    _check_limits(updated.limits)
    with_defaults(updated)
    _check_duplicate_window(updated)
    return updated


MUTABLE_FIELDS = ("limits", "max_msg_bytes", "duplicate_window_ms", "duplicate_window_max_msgs")


def differs_in_immutable_fields(current: types_pb2.StreamConfig, proposed: types_pb2.StreamConfig) -> bool:
    """Whether `proposed` changes more than the mutable fields of `current`."""
    mutable_only = types_pb2.StreamConfig()
    mutable_only.CopyFrom(current)
    for name in MUTABLE_FIELDS:
        if name == "limits":
            mutable_only.limits.CopyFrom(proposed.limits)
        else:
            setattr(mutable_only, name, getattr(proposed, name))
    return mutable_only != proposed
