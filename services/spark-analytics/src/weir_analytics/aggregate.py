"""The Spark side of a micro-batch: reduce the batch's change rows to `state.BatchAggregates`.

Every figure is computed by Spark from the rows of `rows.CHANGE_SCHEMA`; the result is a few rows
per partition copy, consumer, window, node and lifecycle change, which are collected to the
driver by one Spark SQL query (one job; see `batch_sql`) and folded into the running state by
`state.ClusterStats.apply`.

Rules:
- published = appends on the partition's primary (role "primary"); a secondary's appends are
  replication, counted for its copy only;
- per partition copy and per consumer, only the changes after the node's last stream_deleted
  (and consumer_deleted) in the batch count, so a stream deleted and created again within one
  batch starts from zero;
- windows are tumbling, `window_ms` long, aligned to the Unix epoch, by the change's ts_ms;
- the stats stream itself (and `excluded_streams`) is left out of every figure, but its changes
  count in the feed coverage;
- the source's `watermark` row (node_id "") is no change: it only gives the batch's watermark.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame

from weir_analytics import rows, state
from weir_analytics.source import FEED_GAP, WATERMARK

_LIFECYCLE = (rows.STREAM_CREATED, rows.STREAM_DELETED, rows.CONSUMER_CREATED, rows.CONSUMER_DELETED)
_CONSUMER_SUMS = ("delivered", "redelivered", "acked", "naked", "termed", "dead_lettered", "dropped")


def aggregate_batch(
    changes: DataFrame, batch_id: int, *, window_ms: int, excluded_streams: Sequence[str]
) -> tuple[state.BatchAggregates, int]:
    """(the batch's aggregates, how many of its changes fall outside the excluded streams).

    One Spark SQL query, one job: window functions find each node's last stream / consumer delete
    in the batch, and GROUPING SETS computes every table's aggregates in a single shuffle (each
    result row belongs to one set, told by grouping_id). The query is one SQL text rather than
    DataFrame calls because every DataFrame call is a round trip to the JVM, and with ~50
    expressions those round trips cost more than the query itself on a small batch."""
    view = f"weir_batch_{batch_id}"
    changes.createOrReplaceTempView(view)
    try:
        result = changes.sparkSession.sql(batch_sql(view, window_ms, excluded_streams)).collect()
    finally:
        changes.sparkSession.catalog.dropTempView(view)
    set_of = {_grouping_id(key): table for table, key in _GROUPING_SETS.items()}
    collected: dict[str, list[dict[str, Any]]] = {}
    for row in result:
        entry = row.asDict()
        table = set_of[entry["grouping_id"]]
        collected.setdefault(table, []).append(_pick(table, entry))
    counted = int(sum(entry["counted"] for entry in collected.get("coverage", [])))
    return _to_aggregates(batch_id, collected), counted


_KEY_COLUMNS = ("node_id", "stream", "partition", "consumer", "window_start_ms", "change_seq")
_GROUPING_SETS: dict[str, tuple[str, ...]] = {
    "coverage": ("node_id",),
    "replicas": ("node_id", "stream", "partition"),
    "consumers": ("node_id", "stream", "consumer", "partition"),
    "publish_windows": ("window_start_ms", "stream", "partition", "node_id"),
    "consumer_windows": ("window_start_ms", "stream", "consumer"),
    "lifecycle": ("node_id", "change_seq"),
}
# a grouping set's rows are kept only when some change of the batch counts for its table
_RELEVANT = {
    "coverage": "TRUE",
    "replicas": "replica_rows > 0",
    "consumers": "consumer_rows > 0",
    "publish_windows": "publish_window_rows > 0",
    "consumer_windows": "consumer_window_rows > 0",
    "lifecycle": "lifecycle_rows > 0",
}
_WINDOW_SUMS = ("acked", "redelivered", "dead_lettered", "dropped")


def _quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


# the feed gap and the watermark rows are no change of the log: they only say what the batch covers
_NO_CHANGE = f"kind IN ({_quote(FEED_GAP)}, {_quote(WATERMARK)})"


def batch_sql(view: str, window_ms: int, excluded_streams: Sequence[str]) -> str:
    """The Spark SQL text of one micro-batch's aggregation over the temporary view `view`: the rows
    marked with the tables they count for (`_marked_rows`), then every table's aggregates in one
    GROUP BY GROUPING SETS (`_aggregate_columns`), keeping a set's rows only where they are relevant."""
    sets = ", ".join("(" + ", ".join(key) + ")" for key in _GROUPING_SETS.values())
    relevant = " OR ".join(
        f"(grouping_id = {_grouping_id(_GROUPING_SETS[table])} AND {condition})"
        for table, condition in _RELEVANT.items()
    )
    return f"""
WITH {_marked_rows(view, window_ms, excluded_streams)}, grouped AS (
  SELECT GROUPING_ID() AS grouping_id, {", ".join(_KEY_COLUMNS)},
{_aggregate_columns()}
  FROM marked
  GROUP BY GROUPING SETS ({sets})
)
SELECT * FROM grouped WHERE {relevant}
"""


def _marked_rows(view: str, window_ms: int, excluded_streams: Sequence[str]) -> str:
    """The CTEs flagged, deletes and marked: each row's window, whether it counts at all, the node's
    last stream / consumer delete in the batch, and one flag per table the row counts for."""
    excluded = f"stream IN ({', '.join(_quote(name) for name in excluded_streams)})" if excluded_streams else "FALSE"
    lifecycle_kinds = ", ".join(_quote(kind) for kind in _LIFECYCLE)
    partition_kinds = ", ".join(_quote(kind) for kind in (rows.APPEND, rows.TRUNCATE, rows.REMOVE, rows.CONSUMER_STATE))
    append, consumer_state, primary = _quote(rows.APPEND), _quote(rows.CONSUMER_STATE), _quote(rows.PRIMARY)
    return f"""flagged AS (
  SELECT *,
    CAST(FLOOR(ts_ms / {window_ms}) * {window_ms} AS BIGINT) AS window_start_ms,
    (NOT {_NO_CHANGE} AND NOT {excluded}) AS is_counted
  FROM {view}
), deletes AS (
  SELECT *,
    COALESCE(MAX(CASE WHEN is_counted AND kind = {_quote(rows.STREAM_DELETED)} THEN change_seq END)
      OVER (PARTITION BY node_id, stream), 0) AS stream_deleted_at,
    COALESCE(MAX(CASE WHEN is_counted AND kind = {_quote(rows.CONSUMER_DELETED)} THEN change_seq END)
      OVER (PARTITION BY node_id, stream, consumer), 0) AS consumer_deleted_at
  FROM flagged
), marked AS (
  SELECT *,
    is_counted AND change_seq > stream_deleted_at AND kind IN ({partition_kinds}) AS for_replica,
    is_counted AND change_seq > stream_deleted_at AND change_seq > consumer_deleted_at
      AND kind = {consumer_state} AND role = {primary} AS for_consumer,
    is_counted AND kind = {append} AND role = {primary} AS for_publish_window,
    is_counted AND kind = {consumer_state} AND role = {primary} AS for_consumer_window,
    is_counted AND kind IN ({lifecycle_kinds}) AS for_lifecycle
  FROM deletes
)"""


def _aggregate_columns() -> str:
    """The grouped SELECT's aggregate columns over the marked rows: feed coverage, then per partition
    copy, per consumer, per window and per lifecycle change (each `for_*` flag picks its rows)."""
    gap, append, truncate = _quote(FEED_GAP), _quote(rows.APPEND), _quote(rows.TRUNCATE)
    watermark, primary = _quote(WATERMARK), _quote(rows.PRIMARY)
    no_change = _NO_CHANGE
    removal = f"kind IN ({_quote(rows.TRUNCATE)}, {_quote(rows.REMOVE)})"
    consumer_latest = ",\n".join(
        f"    MAX_BY(CASE WHEN for_consumer THEN {name} END, CASE WHEN for_consumer THEN change_seq END) AS {name}"
        for name in ("ack_floor", "last_delivered", "pending_count")
    )
    consumer_sums = ",\n".join(
        f"    SUM(CASE WHEN for_consumer THEN {name} ELSE 0 END) AS {name}" for name in _CONSUMER_SUMS
    )
    window_sums = ",\n".join(
        f"    SUM(CASE WHEN for_consumer_window THEN {name} ELSE 0 END) AS window_{name}" for name in _WINDOW_SUMS
    )
    return f"""    SUM(CASE WHEN NOT {no_change} THEN 1 ELSE 0 END) AS changes,
    SUM(CASE WHEN is_counted THEN 1 ELSE 0 END) AS counted,
    COALESCE(MIN(CASE WHEN NOT {no_change} THEN change_seq END), 0) AS first_change_seq,
    COALESCE(MAX(CASE WHEN NOT {no_change} THEN change_seq END), 0) AS last_change_seq,
    SUM(CASE WHEN kind = {gap} THEN message_count ELSE 0 END) AS skipped_changes,
    MAX(CASE WHEN kind = {gap} THEN last_seq WHEN kind = {watermark} THEN NULL ELSE change_seq END)
      AS end_change_seq,
    COALESCE(MAX(CASE WHEN kind = {watermark} THEN ts_ms END), 0) AS watermark_ms,
    SUM(CASE WHEN for_replica THEN 1 ELSE 0 END) AS replica_rows,
    MAX_BY(CASE WHEN for_replica THEN role END, CASE WHEN for_replica THEN change_seq END) AS role,
    MAX(CASE WHEN for_replica THEN ts_ms END) AS replica_last_ts_ms,
    COALESCE(MAX(CASE WHEN for_replica AND kind = {append} THEN last_seq END), 0) AS last_seq,
    COALESCE(MAX(CASE WHEN for_replica AND kind = {truncate} THEN first_seq END), 0) AS first_seq,
    SUM(CASE WHEN for_replica AND kind = {append} THEN message_count ELSE 0 END) AS appended_messages,
    SUM(CASE WHEN for_replica AND kind = {append} THEN bytes ELSE 0 END) AS appended_bytes,
    SUM(CASE WHEN for_replica AND {removal} THEN message_count ELSE 0 END) AS removed_messages,
    SUM(CASE WHEN for_replica AND {removal} THEN bytes ELSE 0 END) AS removed_bytes,
    SUM(CASE WHEN for_replica AND kind = {append} AND role = {primary} THEN message_count ELSE 0 END)
      AS published_messages,
    SUM(CASE WHEN for_replica AND kind = {append} AND role = {primary} THEN bytes ELSE 0 END) AS published_bytes,
    SUM(CASE WHEN for_consumer THEN 1 ELSE 0 END) AS consumer_rows,
    MAX(CASE WHEN for_consumer THEN ts_ms END) AS consumer_last_ts_ms,
{consumer_latest},
{consumer_sums},
    SUM(CASE WHEN for_publish_window THEN 1 ELSE 0 END) AS publish_window_rows,
    SUM(CASE WHEN for_publish_window THEN message_count ELSE 0 END) AS messages,
    SUM(CASE WHEN for_publish_window THEN bytes ELSE 0 END) AS window_bytes,
    SUM(CASE WHEN for_consumer_window THEN 1 ELSE 0 END) AS consumer_window_rows,
{window_sums},
    SUM(CASE WHEN for_lifecycle THEN 1 ELSE 0 END) AS lifecycle_rows,
    MAX(CASE WHEN for_lifecycle THEN ts_ms END) AS lifecycle_ts_ms,
    MAX(CASE WHEN for_lifecycle THEN kind END) AS lifecycle_kind,
    MAX(CASE WHEN for_lifecycle THEN stream END) AS lifecycle_stream,
    MAX(CASE WHEN for_lifecycle THEN COALESCE(consumer, '') END) AS lifecycle_consumer,
    MAX(CASE WHEN for_lifecycle THEN COALESCE(partitions, 0) END) AS lifecycle_partitions"""


def _grouping_id(key: tuple[str, ...]) -> int:
    """Spark's grouping_id for a set: one bit per key column, first column highest, 1 = not grouped."""
    value = 0
    for column in _KEY_COLUMNS:
        value = (value << 1) | (0 if column in key else 1)
    return value


def _pick(table: str, entry: dict[str, Any]) -> dict[str, Any]:
    """The columns of `table` from one grouping-sets row."""
    key = {name: entry[name] for name in _GROUPING_SETS[table]}
    if table == "coverage":
        names: tuple[str, ...] = ("changes", "counted", "first_change_seq", "last_change_seq", "skipped_changes")
        names += ("end_change_seq", "watermark_ms")
        return {**key, **{name: entry[name] for name in names}}
    if table == "replicas":
        names = ("role", "last_seq", "first_seq", "appended_messages", "appended_bytes", "removed_messages")
        names += ("removed_bytes", "published_messages", "published_bytes")
        return {**key, "last_ts_ms": entry["replica_last_ts_ms"], **{name: entry[name] for name in names}}
    if table == "consumers":
        names = ("ack_floor", "last_delivered", "pending_count", *_CONSUMER_SUMS)
        return {**key, "last_ts_ms": entry["consumer_last_ts_ms"], **{name: entry[name] or 0 for name in names}}
    if table == "publish_windows":
        return {**key, "messages": entry["messages"], "bytes": entry["window_bytes"]}
    if table == "consumer_windows":
        return {**key, **{name: entry[f"window_{name}"] for name in _WINDOW_SUMS}}
    return {
        "node_id": entry["node_id"],
        "change_seq": entry["change_seq"],
        "ts_ms": entry["lifecycle_ts_ms"],
        "kind": entry["lifecycle_kind"],
        "stream": entry["lifecycle_stream"],
        "consumer": entry["lifecycle_consumer"],
        "partitions": entry["lifecycle_partitions"],
    }


def _to_aggregates(batch_id: int, collected: dict[str, list[dict[str, Any]]]) -> state.BatchAggregates:
    everything = collected.get("coverage", [])
    coverage = [entry for entry in everything if entry["node_id"]]  # node_id "": the watermark row
    return state.BatchAggregates(
        batch_id=batch_id,
        watermark_ms=max((int(entry["watermark_ms"]) for entry in everything if not entry["node_id"]), default=0),
        end_offsets={entry["node_id"]: int(entry["end_change_seq"]) + 1 for entry in coverage},
        coverage=[
            state.FeedCoverage(
                node_id=entry["node_id"],
                changes=entry["changes"],
                first_change_seq=entry["first_change_seq"],
                last_change_seq=entry["last_change_seq"],
                skipped_changes=entry["skipped_changes"],
            )
            for entry in coverage
        ],
        replicas=[state.ReplicaDelta(**entry) for entry in collected.get("replicas", [])],
        consumers=[state.ConsumerDelta(**_no_nulls(entry)) for entry in collected.get("consumers", [])],
        lifecycle=[state.LifecycleEvent(**entry) for entry in collected.get("lifecycle", [])],
        publish_windows=[state.PublishWindow(**entry) for entry in collected.get("publish_windows", [])],
        consumer_windows=[state.ConsumerWindow(**entry) for entry in collected.get("consumer_windows", [])],
    )


def _no_nulls(entry: dict[str, Any]) -> dict[str, Any]:
    return {key: (0 if value is None else value) for key, value in entry.items()}
