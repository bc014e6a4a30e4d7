"""The Spark side of a micro-batch: reduce the batch's change rows to `state.BatchAggregates`.

Every figure is computed by Spark from the rows of `rows.CHANGE_SCHEMA`; the result is a few rows
per partition copy, consumer, window and node, which are collected to the driver in one Spark job
(the aggregates are unioned as JSON rows, so one action plans and runs them all) and folded into
the running state by `state.ClusterStats.apply`.

Rules:
- published = appends on the partition's primary (role "primary"); a secondary's appends are
  replication, counted for its copy only;
- per partition copy and per consumer, only the changes after the node's last stream_deleted
  (and consumer_deleted) in the batch count, so a stream deleted and created again within one
  batch starts from zero;
- windows are tumbling, `window_ms` long, aligned to the Unix epoch, by the change's ts_ms;
- the stats stream itself (and `excluded_streams`) is left out of every figure, but its changes
  count in the feed coverage.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from weir_analytics import rows, state
from weir_analytics.source import FEED_GAP

_LIFECYCLE = (rows.STREAM_CREATED, rows.STREAM_DELETED, rows.CONSUMER_CREATED, rows.CONSUMER_DELETED)
_CONSUMER_SUMS = ("delivered", "redelivered", "acked", "naked", "termed", "dead_lettered", "dropped")


def _sum_when(condition: Column, value: str | Column) -> Column:
    column = F.col(value) if isinstance(value, str) else value
    return F.coalesce(F.sum(F.when(condition, column).otherwise(F.lit(0))), F.lit(0)).cast("long")


def _as_json(table: str, frame: DataFrame) -> DataFrame:
    return frame.select(F.lit(table).alias("table"), F.to_json(F.struct(*frame.columns)).alias("row"))


def aggregate_batch(
    changes: DataFrame, batch_id: int, *, window_ms: int, excluded_streams: Sequence[str]
) -> tuple[state.BatchAggregates, int]:
    """(the batch's aggregates, how many of its changes fall outside the excluded streams)."""
    kind = F.col("kind")
    coverage = changes.groupBy("node_id").agg(
        _sum_when(kind != FEED_GAP, F.lit(1)).alias("changes"),
        F.coalesce(F.min(F.when(kind != FEED_GAP, F.col("change_seq"))), F.lit(0)).alias("first_change_seq"),
        F.coalesce(F.max(F.when(kind != FEED_GAP, F.col("change_seq"))), F.lit(0)).alias("last_change_seq"),
        _sum_when(kind == FEED_GAP, "message_count").alias("skipped_changes"),
        F.max(F.when(kind == FEED_GAP, F.col("last_seq")).otherwise(F.col("change_seq"))).alias("end_change_seq"),
    )
    counted = changes.filter((kind != FEED_GAP) & ~F.col("stream").isin(*excluded_streams))
    stream_deletes = (
        counted.filter(kind == rows.STREAM_DELETED)
        .groupBy("node_id", "stream")
        .agg(F.max("change_seq").alias("stream_deleted_at"))
    )
    live = counted.join(F.broadcast(stream_deletes), ["node_id", "stream"], "left").filter(
        F.col("stream_deleted_at").isNull() | (F.col("change_seq") > F.col("stream_deleted_at"))
    )
    append = kind == rows.APPEND
    primary = F.col("role") == rows.PRIMARY
    replicas = (
        live.filter(kind.isin(rows.APPEND, rows.TRUNCATE, rows.REMOVE, rows.CONSUMER_STATE))
        .groupBy("node_id", "stream", "partition")
        .agg(
            F.max_by("role", "change_seq").alias("role"),
            F.max("ts_ms").alias("last_ts_ms"),
            F.coalesce(F.max(F.when(append, F.col("last_seq"))), F.lit(0)).alias("last_seq"),
            F.coalesce(F.max(F.when(kind == rows.TRUNCATE, F.col("first_seq"))), F.lit(0)).alias("first_seq"),
            _sum_when(append, "message_count").alias("appended_messages"),
            _sum_when(append, "bytes").alias("appended_bytes"),
            _sum_when(kind.isin(rows.TRUNCATE, rows.REMOVE), "message_count").alias("removed_messages"),
            _sum_when(kind.isin(rows.TRUNCATE, rows.REMOVE), "bytes").alias("removed_bytes"),
            _sum_when(append & primary, "message_count").alias("published_messages"),
            _sum_when(append & primary, "bytes").alias("published_bytes"),
        )
    )
    consumer_deletes = (
        counted.filter(kind == rows.CONSUMER_DELETED)
        .groupBy("node_id", "stream", "consumer")
        .agg(F.max("change_seq").alias("consumer_deleted_at"))
    )
    consumer_changes = (
        live.filter((kind == rows.CONSUMER_STATE) & primary)
        .join(F.broadcast(consumer_deletes), ["node_id", "stream", "consumer"], "left")
        .filter(F.col("consumer_deleted_at").isNull() | (F.col("change_seq") > F.col("consumer_deleted_at")))
    )
    consumers = consumer_changes.groupBy("node_id", "stream", "consumer", "partition").agg(
        F.max("ts_ms").alias("last_ts_ms"),
        F.max_by("ack_floor", "change_seq").alias("ack_floor"),
        F.max_by("last_delivered", "change_seq").alias("last_delivered"),
        F.max_by("pending_count", "change_seq").alias("pending_count"),
        *(_sum_when(F.lit(True), name).alias(name) for name in _CONSUMER_SUMS),
    )
    lifecycle = counted.filter(kind.isin(*_LIFECYCLE)).select(
        "node_id",
        "change_seq",
        "ts_ms",
        "kind",
        "stream",
        F.coalesce(F.col("consumer"), F.lit("")).alias("consumer"),
        F.coalesce(F.col("partitions"), F.lit(0)).alias("partitions"),
    )
    window_start = (F.floor(F.col("ts_ms") / window_ms) * window_ms).cast("long").alias("window_start_ms")
    publish_windows = (
        counted.filter(append & primary)
        .groupBy(window_start, "stream", "partition", "node_id")
        .agg(_sum_when(F.lit(True), "message_count").alias("messages"), _sum_when(F.lit(True), "bytes").alias("bytes"))
    )
    consumer_windows = (
        counted.filter((kind == rows.CONSUMER_STATE) & primary)
        .groupBy(window_start, "stream", "consumer")
        .agg(*(_sum_when(F.lit(True), name).alias(name) for name in ("acked", "redelivered", "dead_lettered", "dropped")))
    )
    counted_total = counted.groupBy().agg(F.count(F.lit(1)).alias("changes"))
    tables: list[DataFrame] = [
        _as_json("coverage", coverage),
        _as_json("replicas", replicas),
        _as_json("consumers", consumers),
        _as_json("lifecycle", lifecycle),
        _as_json("publish_windows", publish_windows),
        _as_json("consumer_windows", consumer_windows),
        _as_json("counted", counted_total),
    ]
    union = tables[0]
    for table in tables[1:]:
        union = union.unionByName(table)
    collected: dict[str, list[dict[str, Any]]] = {}
    for row in union.collect():
        collected.setdefault(row["table"], []).append(json.loads(row["row"]))
    return _to_aggregates(batch_id, collected), int(sum(entry["changes"] for entry in collected.get("counted", [])))


def _to_aggregates(batch_id: int, collected: dict[str, list[dict[str, Any]]]) -> state.BatchAggregates:
    coverage = collected.get("coverage", [])
    return state.BatchAggregates(
        batch_id=batch_id,
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
