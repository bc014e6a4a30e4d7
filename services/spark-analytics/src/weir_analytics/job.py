"""The analytics job: a structured-streaming query over `format("weir")` whose foreachBatch folds
each micro-batch into the cluster stats and writes them out (DESIGN §6).

Per micro-batch, in order:
1. skip it when the saved state already holds it (Spark re-runs the last batch after a crash;
   this is what makes the output exactly-once, like Spark's own file sink);
2. reduce the changes with Spark (`aggregate.aggregate_batch`) and fold them into the state;
3. write the batch's Parquet history, then save the state with the batch id (atomic rename);
4. publish the new ClusterAnalytics to the stats stream when the batch held changes other than
   the stats stream's own (so the job's output never keeps it busy) or the reported window moved
   (an idle stream's rates fall to zero there too), log one progress line.

The source's offsets carry the nodes' change-feed watermarks, so a batch runs every trigger even
when nothing changed: that is what lets the window figures move on (with zeros) on an idle cluster.
Such a batch writes no Parquet snapshot and logs at debug level.

`StatsPublisher` owns an asyncio loop in a thread for the Weir SDK client, since foreachBatch is
called synchronously on a Spark thread.
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming.query import StreamingQuery
from weir.client import stream_config
from weir.cluster import WeirClient
from weir.errors import WeirError
from weir.info import ConsumerInfo
from weir.v1 import types_pb2
from weir_server.analytics import STATS_SUBJECT

from weir_analytics import aggregate, history, metrics, state
from weir_analytics.settings import AnalyticsSettings, spark_conf_pairs
from weir_analytics.source import WeirDataSource
from weir_analytics.state import ClusterStats

logger = logging.getLogger("weir_analytics")

T = TypeVar("T")
DRIVER_JAVA_OPTIONS = "-XX:+UseSerialGC -XX:ReservedCodeCacheSize=64m -XX:TieredStopAtLevel=1"
LAG_QUERY_TIMEOUT_S = 2.0


def now_ms() -> int:
    return int(time.time() * 1000)


class StatsPublisher:
    """Publishes ClusterAnalytics snapshots to the stats stream through the Weir SDK."""

    def __init__(self, settings: AnalyticsSettings) -> None:
        self.settings = settings
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="weir-stats-publisher", daemon=True)
        self._thread.start()
        routers = [part.strip() for part in settings.router.split(",") if part.strip()]
        self._client: WeirClient = self._run(self._make_client(routers))
        self._ready = False

    async def _make_client(self, routers: list[str]) -> WeirClient:
        return WeirClient(routers, linger_ms=0, timeout_s=self.settings.node_timeout_ms / 1000)

    def _run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(
            timeout=3 * self.settings.node_timeout_ms / 1000
        )

    async def _ensure_stream(self) -> None:
        replicas = self.settings.stats_stream_replicas
        if replicas == 0:
            alive = [node for node in (await self._client.cluster_info()).nodes if node.alive]
            replicas = max(1, min(3, len(alive)))
        config = stream_config(
            self.settings.stats_stream,
            subjects=[STATS_SUBJECT],
            replicas=replicas,
            max_msgs=self.settings.stats_stream_max_messages,
        )
        try:
            await self._client.create_stream(config)
        except WeirError as error:
            if error.result_code != "already_exists":
                raise
            logger.info("stats stream %s exists with another config; publishing to it", self.settings.stats_stream)

    def consumer_info(self, stream: str, consumer: str) -> ConsumerInfo:
        """The consumer as the routers report it (totals over the partitions' primaries), within
        LAG_QUERY_TIMEOUT_S (a batch never waits long for a figure). Errors: WeirError, TimeoutError."""
        return self._run(asyncio.wait_for(self._client.consumer_info(stream, consumer), LAG_QUERY_TIMEOUT_S))

    def publish(self, snapshot: types_pb2.ClusterAnalytics) -> None:
        """Create the stats stream when needed, then publish (ack=leader). Errors: WeirError."""

        async def send() -> None:
            if not self._ready:
                await self._ensure_stream()
                self._ready = True
            await self._client.publish(
                self.settings.stats_stream, STATS_SUBJECT, snapshot.SerializeToString(), partition=0
            )

        self._run(send())

    def close(self) -> None:
        try:
            self._run(self._client.close())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)


class AnalyticsJob:
    """The running state and what each micro-batch does with it (see the module docstring)."""

    def __init__(self, settings: AnalyticsSettings, publisher: StatsPublisher | None) -> None:
        self.settings = settings
        self.data_dir = settings.data_dir.resolve()
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.stats = history.load_state(self.data_dir, settings.window_ms, settings.windows_kept)
        self.publisher = publisher
        self._lock = threading.Lock()
        self._published_window: int | None = None  # window_start_ms of the last snapshot published
        # Filtered consumers' lag, counted by the partitions' primaries (the feed cannot: its appends
        # do not say which subjects they hold): (stream, consumer) -> its filter subject, and -> lag.
        self._filters: dict[tuple[str, str], str] = {}
        self._filtered_lag: dict[tuple[str, str], int] = {}
        if self.stats.batch_id >= 0 and not (self.data_dir / "checkpoint" / "offsets").is_dir():
            # A new query would number its batches from 0 again and every batch up to the saved
            # one would be skipped as "already folded in": refuse instead of losing them.
            raise RuntimeError(
                f"{self.data_dir / history.STATE_FILE} holds batches up to {self.stats.batch_id} but the Spark "
                f"checkpoint {self.data_dir / 'checkpoint'} is gone; restore it, or remove {history.STATE_FILE} "
                "and parquet/ to start over from WEIR_ANALYTICS_STARTING_OFFSETS"
            )
        if self.stats.batch_id >= 0:
            logger.info(
                "resuming after batch %d (%d changes read so far)",
                self.stats.batch_id,
                sum(feed.changes for feed in self.stats.feeds.values()),
            )

    def snapshot(self) -> types_pb2.ClusterAnalytics | None:
        """The figures as of now (None before the first batch)."""
        with self._lock:
            if self.stats.batch_id < 0:
                return None
            return self.stats.snapshot(now_ms(), self._filtered_lag)

    def _refresh_filtered_lag(self, stats: ClusterStats, aggregates: state.BatchAggregates) -> None:
        """Ask the routers for the lag of every consumer with a filter subject (messages matching it
        not yet acknowledged: num_pending + num_ack_pending); learn each consumer's filter once (a
        consumer created or deleted in the batch is asked again)."""
        if self.publisher is None:
            return
        for event in aggregates.lifecycle:
            if event.consumer:
                self._filters.pop((event.stream, event.consumer), None)
        lags: dict[tuple[str, str], int] = {}
        for key in stats.consumers:
            if self._filters.get(key, None) == "":
                continue
            try:
                info = self.publisher.consumer_info(*key)
            except (WeirError, TimeoutError) as error:
                logger.debug("lag of %s/%s not refreshed: %s", *key, error)
                if key in self._filtered_lag:
                    lags[key] = self._filtered_lag[key]
                continue
            self._filters[key] = info.config.filter_subject
            if info.config.filter_subject:
                lags[key] = int(info.num_pending + info.num_ack_pending)
        with self._lock:
            self._filtered_lag = lags

    def process_batch(self, changes: DataFrame, batch_id: int) -> None:
        """foreachBatch: fold one micro-batch in exactly once."""
        if batch_id <= self.stats.batch_id:
            logger.info("batch %d: already folded in before a restart, skipped", batch_id)
            return
        started = time.monotonic()
        cached = changes.persist()  # the aggregates scan the batch several times: read the feeds once
        try:
            cached.count()
            aggregates, counted = aggregate.aggregate_batch(
                cached, batch_id, window_ms=self.settings.window_ms, excluded_streams=[self.settings.stats_stream]
            )
        finally:
            cached.unpersist()
        with self._lock:
            updated = ClusterStats.from_json(self.stats.to_json())
            updated.apply(aggregates)
        self._refresh_filtered_lag(updated, aggregates)
        with self._lock:
            snapshot = updated.snapshot(now_ms(), self._filtered_lag)
        history.write_history(self.data_dir, aggregates, snapshot if counted else None)
        history.save_state(self.data_dir, updated)
        with self._lock:
            self.stats = updated
        if (counted or snapshot.window_start_ms != self._published_window) and self.publisher is not None:
            try:
                self.publisher.publish(snapshot)
                self._published_window = snapshot.window_start_ms
            except (WeirError, TimeoutError) as error:
                metrics.PUBLISH_FAILURES.inc()
                logger.warning("batch %d: stats not published to %s: %s", batch_id, self.settings.stats_stream, error)
        elapsed = time.monotonic() - started
        metrics.BATCHES.inc()
        metrics.BATCH_CHANGES.inc(aggregates.changes)
        metrics.BATCH_SECONDS.observe(elapsed)
        metrics.LAST_BATCH.set(time.time())
        positions = ", ".join(f"{feed.node_id}@{feed.next_change_seq}" for feed in snapshot.feed_positions)
        logger.log(
            logging.INFO if aggregates.changes else logging.DEBUG,
            "batch %d: %d changes (%d counted) in %.2fs; feeds at %s; %d partitions, %d consumers",
            batch_id,
            aggregates.changes,
            counted,
            elapsed,
            positions or "-",
            len(snapshot.partitions),
            len(snapshot.consumers),
        )


def build_session(settings: AnalyticsSettings) -> SparkSession:
    """A SparkSession for the job (master from the settings) with the weir source registered."""
    builder = (
        SparkSession.builder.master(settings.spark_master)
        .appName("weir-analytics")
        .config("spark.ui.enabled", str(settings.spark_ui).lower())
        .config("spark.sql.shuffle.partitions", str(settings.spark_shuffle_partitions))
        .config("spark.driver.memory", settings.spark_driver_memory)
        .config("spark.sql.streaming.stopGracefullyOnShutdown", "true")
        .config("spark.ui.showConsoleProgress", "false")
        # micro-batches are small: adaptive execution's extra planning jobs cost more than they save
        .config("spark.sql.adaptive.enabled", "false")
        # a small driver JVM (bench.analytics_bench: 855 -> 574 MB, freshness unchanged): the serial
        # collector, a smaller code cache and the C1 compiler only; the job's work is light
        .config("spark.driver.extraJavaOptions", DRIVER_JAVA_OPTIONS)
    )
    for key, value in spark_conf_pairs(settings.spark_conf).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("WARN")
    session.dataSource.register(WeirDataSource)
    return session


def start_query(session: SparkSession, settings: AnalyticsSettings, job: AnalyticsJob) -> StreamingQuery:
    """The structured-streaming query: weir change feeds -> foreachBatch(job.process_batch)."""
    reader = (
        session.readStream.format("weir")
        .option("router", settings.router)
        .option("startingOffsets", settings.starting_offsets)
        .option("maxChangesPerTrigger", str(settings.max_changes_per_trigger))
        .option("failOnDataLoss", str(settings.fail_on_data_loss).lower())
        .option("timeoutMs", str(settings.node_timeout_ms))
    )
    writer = (
        reader.load()
        .writeStream.queryName("weir-analytics")
        .foreachBatch(job.process_batch)
        .option("checkpointLocation", str(Path(job.data_dir) / "checkpoint"))
    )
    if settings.once:
        writer = writer.trigger(availableNow=True)
    else:
        writer = writer.trigger(processingTime=f"{settings.trigger_interval_ms} milliseconds")
    return writer.start()
