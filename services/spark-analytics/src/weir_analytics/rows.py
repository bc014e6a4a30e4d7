"""The row shape of the `weir` data source: one flat row per change-feed entry (weir.v1.Change).

Every change kind is flattened into the same columns, so Spark can aggregate without parsing
protobuf: the columns a kind does not use are null. Source: the Change message in
proto/weir/v1/types.proto (DESIGN §6).
"""

from __future__ import annotations

from typing import Any

from weir.v1 import types_pb2

# kind values (the Change.kind oneof field names)
APPEND = "append"
TRUNCATE = "truncate"
REMOVE = "remove"
STREAM_CREATED = "stream_created"
STREAM_UPDATED = "stream_updated"
STREAM_DELETED = "stream_deleted"
CONSUMER_CREATED = "consumer_created"
CONSUMER_DELETED = "consumer_deleted"
CONSUMER_STATE = "consumer_state"

PRIMARY = "primary"
SECONDARY = "secondary"

CHANGE_SCHEMA = ", ".join(
    (
        "node_id string",
        "change_seq long",
        "ts_ms long",
        "stream string",
        "partition int",
        "role string",
        "kind string",
        # append: first_seq..last_seq, message_count, bytes; truncate: first_seq, removed in
        # message_count/bytes; remove: message_count = removed seqs, bytes = removed bytes
        "first_seq long",
        "last_seq long",
        "message_count long",
        "bytes long",
        # truncate / remove reason
        "reason string",
        # stream_created / stream_updated: partitions of the config
        "partitions int",
        # consumer_* kinds
        "consumer string",
        "ack_floor long",
        "last_delivered long",
        "pending_count long",
        "delivered long",
        "redelivered long",
        "acked long",
        "naked long",
        "termed long",
        "dead_lettered long",
        "dropped long",
    )
)

COLUMNS = [column.split(" ")[0] for column in CHANGE_SCHEMA.split(", ")]


def change_row(node_id: str, change: types_pb2.Change) -> tuple[Any, ...]:
    """One Change as a tuple in CHANGE_SCHEMA column order."""
    row: dict[str, Any] = {
        "node_id": node_id,
        "change_seq": change.change_seq,
        "ts_ms": change.ts_ms,
        "stream": change.stream,
        "partition": change.partition,
        "role": SECONDARY if change.role == types_pb2.PARTITION_ROLE_SECONDARY else PRIMARY,
        "kind": change.WhichOneof("kind") or "",
    }
    kind = row["kind"]
    if kind == APPEND:
        row.update(
            first_seq=change.append.first_seq,
            last_seq=change.append.last_seq,
            message_count=change.append.message_count,
            bytes=change.append.bytes,
        )
    elif kind == TRUNCATE:
        row.update(
            first_seq=change.truncate.first_seq,
            message_count=change.truncate.removed_count,
            bytes=change.truncate.removed_bytes,
            reason=change.truncate.reason,
        )
    elif kind == REMOVE:
        row.update(
            message_count=len(change.remove.seqs), bytes=change.remove.removed_bytes, reason=change.remove.reason
        )
    elif kind in (STREAM_CREATED, STREAM_UPDATED):
        row["partitions"] = getattr(change, kind).config.partitions
    elif kind == CONSUMER_CREATED:
        row["consumer"] = change.consumer_created.config.name
    elif kind == CONSUMER_DELETED:
        row["consumer"] = change.consumer_deleted.consumer
    elif kind == CONSUMER_STATE:
        state = change.consumer_state
        row.update(
            consumer=state.consumer,
            ack_floor=state.ack_floor,
            last_delivered=state.last_delivered,
            pending_count=state.pending_count,
            delivered=state.delivered,
            redelivered=state.redelivered,
            acked=state.acked,
            naked=state.naked,
            termed=state.termed,
            dead_lettered=state.dead_lettered,
            dropped=state.dropped,
        )
    return tuple(row.get(column) for column in COLUMNS)
