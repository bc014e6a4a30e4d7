"""spark-analytics end to end (slow tier: each test starts a real Spark session, ~20-30 s here).

A real local cluster runs a known workload; the analytics job (a real `python -m weir_analytics`
process) reads the nodes' change feeds through the `weir` Python Data Source, once with Spark
`local[*]` and once on a Spark standalone cluster (a master and two workers started from the
installed pyspark, the job submitted to `spark://127.0.0.1:<port>`). On both, every figure it
computes is checked against ground truth taken from the workload itself (counts, acks, naks, the
dead letter, the stopped replicator) or, for byte sizes and consumer floors, from the nodes' own
reports.

On `local[*]` the job runs as `weir cluster up --analytics` starts it, is SIGKILLed between
micro-batches and restarted from its checkpoint (the last test counts every change of every feed:
none twice, none missing). On the standalone master it runs once, over the whole workload, in
several micro-batches: one Spark session instead of two (the restart is the driver's, whatever the
master; each standalone session costs a minute here).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from weir.client import NodeClient, consumer_config, stream_config
from weir.cluster import WeirClient
from weir.cluster_info import ClusterStats
from weir.info import ConsumerInfo
from weir.v1 import types_pb2
from weir_cli.launcher import LocalCluster
from weir_cli.spark_standalone import SparkStandalone
from weir_server.analytics import DEFAULT_STATS_STREAM
from weir_server.internal_clients import ChangeFeedClient

from tests.conftest import (
    CLUSTER_NODE_ENV,
    CLUSTER_REPLICATOR_ENV,
    CLUSTER_ROUTER_ENV,
    eventually,
    http_get,
    needs_own_processes,
)
from tests.system_tools import needs_java

pytestmark = pytest.mark.slow

WINDOW_MS = 1000
JOB_TIMEOUT_S = 300
SPARK_ON_LOOPBACK = {"SPARK_LOCAL_IP": "127.0.0.1"}  # the driver, as the standalone daemons, on loopback
LOCAL_MASTER = "local[*]"


@pytest.fixture(scope="module", params=["local", "standalone"])
def spark_master(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The Spark master the module's jobs run on: local[*], or a standalone master with two
    workers (one core, 1 GiB each) on loopback ports."""
    needs_java()
    if request.param == "local":
        yield LOCAL_MASTER
        return
    cluster = SparkStandalone.start(tmp_path_factory.mktemp("spark-standalone"), workers=2)
    try:
        yield cluster.master_url
    finally:
        cluster.stop()


def job_settings(**settings: str) -> dict[str, str]:
    """WEIR_ANALYTICS_* settings of the test jobs (short windows and triggers) plus `settings`."""
    values = {"WINDOW_MS": str(WINDOW_MS), "TRIGGER_INTERVAL_MS": "500", **settings}
    return {f"WEIR_ANALYTICS_{key.upper()}": value for key, value in values.items()}


@pytest.fixture(scope="module")
def analytics_cluster(tmp_path_factory: pytest.TempPathFactory, spark_master: str) -> Iterator[LocalCluster]:
    """A local cluster; on local[*] started with its analytics job (what `weir cluster up
    --analytics` does), the job reading ten changes per micro-batch (on the standalone master the
    job runs once, after the workload: `analytics_run`). Skipped (with the install command) without
    Java 17+."""
    needs_own_processes()
    needs_java()
    cluster = LocalCluster.start(
        tmp_path_factory.mktemp("analytics-cluster"),
        nodes=3,
        routers=2,
        replicators=1,
        node_env=CLUSTER_NODE_ENV,
        router_env=CLUSTER_ROUTER_ENV,
        replicator_env=CLUSTER_REPLICATOR_ENV,
        analytics=spark_master == LOCAL_MASTER,
        analytics_env={**job_settings(MAX_CHANGES_PER_TRIGGER="10", SPARK_MASTER=spark_master), **SPARK_ON_LOOPBACK},
    )
    yield cluster
    cluster.stop()


def job_env(cluster: LocalCluster, data_dir: Path, **settings: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("WEIR_ANALYTICS_")}
    env.update(
        WEIR_ANALYTICS_ROUTER=",".join(cluster.router_addresses),
        WEIR_ANALYTICS_DATA_DIR=str(data_dir),
        WEIR_ANALYTICS_METRICS_PORT="0",
        WEIR_ANALYTICS_PLAINTEXT="true",  # as the launcher starts the cluster's processes
    )
    env.update(job_settings(**settings))
    env.update(SPARK_ON_LOOPBACK)
    return env


def run_job_once(cluster: LocalCluster, data_dir: Path, **settings: str) -> str:
    """Run the job with Trigger.AvailableNow until it has read what the feeds hold; returns its log."""
    completed = subprocess.run(
        [sys.executable, "-m", "weir_analytics"],
        env=job_env(cluster, data_dir, ONCE="true", **settings),
        capture_output=True,
        text=True,
        timeout=JOB_TIMEOUT_S,
        check=False,
    )
    log = completed.stdout + completed.stderr
    assert completed.returncode == 0, log[-4000:]
    return log


async def feed_changes(internal_address: str, end: int) -> list[int]:
    """Every change seq below `end` on a node's feed, read directly."""
    seqs: list[int] = []
    async with ChangeFeedClient(internal_address) as feed:
        cursor = 1
        while cursor < end:
            response = await feed.read_changes(cursor, 10_000)
            seqs.extend(change.change_seq for change in response.changes if change.change_seq < end)
            if response.next_change_seq <= cursor:
                break
            cursor = response.next_change_seq
    return seqs


def parquet_rows(data_dir: Path, table: str) -> list[dict[str, object]]:
    directory = data_dir / "parquet" / table
    rows: list[dict[str, object]] = []
    for path in sorted(directory.glob("batch_id=*/part-0.parquet")):
        batch_id = int(path.parent.name.split("=")[1])
        rows.extend({**row, "batch_id": batch_id} for row in pq.read_table(path).to_pylist())
    return rows


async def run_workload(cluster: LocalCluster) -> dict[str, object]:
    """Streams, publishes, acks, a nak (redelivery), a dead letter and a lagging replica; returns
    what the workload did."""
    async with WeirClient(cluster.router_addresses) as client:
        await client.create_stream(stream_config("orders", subjects=["orders.>"], partitions=2, replicas=2))
        await client.create_stream(stream_config("events", subjects=["events.>", "dlq.>"], partitions=1, replicas=1))
        for index in range(30):
            await client.publish("orders", "orders.created", b"o" * (100 + index), partition=0)
        for index in range(20):
            await client.publish("orders", "orders.created", b"p" * (50 + index), partition=1)
        for _ in range(5):
            await client.publish("events", "events.login", b"e" * 10, partition=0)

        # billing: 10 delivered from orders/0, 1..6 acked, 7 nak'ed and redelivered, then acked
        await client.create_consumer("orders", consumer_config("billing", ack_wait_ms=60_000))
        first = await client.fetch("orders", "billing", 0, batch_size=10)
        assert [message.seq for message in first] == list(range(1, 11))
        assert await client.ack_batch("orders", "billing", 0, [1, 2, 3, 4, 5, 6]) == ["ok"] * 6
        await client.nak("orders", "billing", 0, 7)
        again = await client.fetch("orders", "billing", 0, batch_size=1)
        assert [message.seq for message in again] == [7]
        assert await client.ack_batch("orders", "billing", 0, [7]) == ["ok"]

        # audit: seq 1 of events is never acked; after max_deliver=2 it is dead-lettered to dlq.events
        await client.create_consumer(
            "events",
            consumer_config(
                "audit", filter_subject="events.>", ack_wait_ms=300, max_deliver=2, dead_letter_subject="dlq.events"
            ),
        )
        delivered = await client.fetch("events", "audit", 0, batch_size=10)
        assert [message.seq for message in delivered] == [1, 2, 3, 4, 5]
        assert await client.ack_batch("events", "audit", 0, [2, 3, 4, 5]) == ["ok"] * 4
        await asyncio.sleep(0.4)
        redelivered = await client.fetch("events", "audit", 0, batch_size=10, max_wait_ms=2000)
        assert [message.seq for message in redelivered] == [1]

        async def dead_lettered() -> bool:
            await client.fetch("events", "audit", 0, batch_size=10, max_wait_ms=200)
            return (await client.consumer_info("events", "audit")).dead_lettered_total == 1

        await eventually(dead_lettered, 10.0, "audit dead-lettered seq 1")

        async def floor_past_the_dead_letter() -> bool:  # seq 6 (dlq.events) is outside audit's filter
            await client.fetch("events", "audit", 0, batch_size=10, max_wait_ms=100)
            return (await client.consumer_info("events", "audit")).partitions[0].ack_floor == 6

        # a fetch scans past seq 6 and moves the floor over it; the one that dead-lettered seq 1 may
        # have run before the dead letter was stored (a busy machine)
        await eventually(floor_past_the_dead_letter, 10.0, "audit's floor past the dead letter")
        # after audit's floor and outside its filter: no lag for audit, though seqs past its floor
        for _ in range(3):
            await client.publish("events", "dlq.other", b"x" * 8, partition=0)

        # the replicator stops: 5 more on orders/1 reach its primary only
        async def replicated() -> bool:
            info = await client.stream_info("orders")
            return all(stats.high_watermark == stats.last_seq for stats in info.partitions)

        await eventually(replicated, 10.0, "orders replicated to its high watermark")
        for replicator in cluster.replicators:
            replicator.stop()
        for _ in range(5):
            await client.publish("orders", "orders.late", b"l" * 40, partition=1)
        # clicks: 90 more publishes (60 before the job starts, 30 while it runs; see the fixture)
        await client.create_stream(stream_config("clicks", subjects=["clicks.>"], partitions=3, replicas=1))
        for index in range(60):
            await client.publish("clicks", "clicks.page", f"{index}".encode(), partition=index % 3)
    published = {("orders", 0): 30, ("orders", 1): 25, ("events", 0): 9, ("clicks", 0): 30, ("clicks", 1): 30}
    published[("clicks", 2)] = 30
    return {"published": published, "unreplicated": {("orders", 1): 5}}


@dataclass
class AnalyticsRun:
    """What the shared run produced: the workload's truth, the job's outputs, the cluster's view."""

    cluster: LocalCluster
    data_dir: Path
    truth: dict[str, object]
    state_before_kill: dict[str, Any] | None  # None: the job ran once (the standalone master)
    scraped_before_kill: str | None
    resumed_log: str  # the log of the run with Trigger.AvailableNow
    stats: ClusterStats
    infos: dict[str, ConsumerInfo]
    messages: dict[tuple[str, int], list[types_pb2.Message]]


@pytest.fixture(scope="module")
async def analytics_run(analytics_cluster: LocalCluster, spark_master: str) -> AnalyticsRun:
    """The workload, then the job. On local[*]: the cluster's job runs until it folded in at least
    two batches; 30 more publishes; SIGKILL; then the job again from its checkpoint with
    Trigger.AvailableNow (two Spark sessions, each ~30 s to start here). On the standalone master:
    30 more publishes, then the job once with Trigger.AvailableNow (one session)."""
    cluster = analytics_cluster
    truth = await run_workload(cluster)
    before: dict[str, Any] | None = None
    scraped: str | None = None
    if spark_master == LOCAL_MASTER:
        assert cluster.analytics is not None
        data_dir = cluster.analytics.data_dir
        before, scraped = await kill_between_batches(cluster)
        log = await asyncio.to_thread(
            run_job_once, cluster, data_dir, MAX_CHANGES_PER_TRIGGER="60", SPARK_MASTER=spark_master
        )
    else:
        data_dir = cluster.data_dir / "analytics-once"
        await publish_late_clicks(cluster)
        log = await asyncio.to_thread(
            run_job_once, cluster, data_dir, MAX_CHANGES_PER_TRIGGER="40", SPARK_MASTER=spark_master
        )
    stats, infos, messages = await cluster_view(cluster, truth)
    return AnalyticsRun(cluster, data_dir, truth, before, scraped, log, stats, infos, messages)


async def publish_late_clicks(cluster: LocalCluster) -> None:
    """The last 30 of the workload's 90 clicks (while the job runs, on local[*])."""
    async with WeirClient(cluster.router_addresses) as client:
        for index in range(30):
            await client.publish("clicks", "clicks.page", f"late-{index}".encode(), partition=index % 3)


async def kill_between_batches(cluster: LocalCluster) -> tuple[dict[str, Any], str]:
    """Wait until the cluster's job folded in at least two batches, scrape its metrics, publish the
    late clicks and SIGKILL it: (its state.json then, the scrape)."""
    job = cluster.analytics
    assert job is not None
    state_path = job.data_dir / "state.json"
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while time.monotonic() < deadline:
        assert job.process is not None and job.process.poll() is None, job.log_tail()
        if state_path.exists() and json.loads(state_path.read_text())["batch_id"] >= 1:
            break
        await asyncio.sleep(0.2)
    else:
        raise AssertionError(f"the job folded in no batches in time:\n{job.log_tail()}")
    scraped = await asyncio.to_thread(http_get, f"http://127.0.0.1:{job.metrics_port}/metrics")
    # more changes arrive while it runs; then it dies without warning
    await publish_late_clicks(cluster)
    job.kill()
    # The batch planned before the kill is replayed with its recorded offsets; the rest of the
    # backlog goes in larger batches.
    return json.loads(state_path.read_text()), scraped


StoredMessages = dict[tuple[str, int], list[types_pb2.Message]]


async def cluster_view(
    cluster: LocalCluster, truth: dict[str, object]
) -> tuple[ClusterStats, dict[str, ConsumerInfo], StoredMessages]:
    """The cluster's stream stats (with the job's ClusterAnalytics), the two consumers' infos, and
    every stored message of the workload's partitions, read from their primaries."""
    async with WeirClient(cluster.router_addresses) as client:
        stats = await client.cluster_stats()
        infos = {
            name: await client.consumer_info(stream, name)
            for stream, name in (("orders", "billing"), ("events", "audit"))
        }
        per_stream = {entry.name: entry for entry in stats.streams}
        messages: StoredMessages = {}
        for stream, partition in truth["published"]:  # type: ignore[attr-defined]
            primary = per_stream[stream].primary_node_ids[partition]
            address = next(node.client_address for node in cluster.nodes if node.node_id == primary)
            async with NodeClient(address) as node_client:
                messages[(stream, partition)] = [m async for m in node_client.read_all(stream, partition)]
    return stats, infos, messages


def published_of(run: AnalyticsRun) -> dict[tuple[str, int], int]:
    """Messages the workload published, by (stream, partition)."""
    published: dict[tuple[str, int], int] = run.truth["published"]  # type: ignore[assignment]
    return published


def analytics_of(run: AnalyticsRun) -> tuple[Any, dict[str, Any]]:
    """The ClusterAnalytics the job published, and the cluster's stream stats by name."""
    assert run.stats.analytics is not None, "the job published no ClusterAnalytics to the stats stream"
    return run.stats.analytics, {entry.name: entry for entry in run.stats.streams}


async def test_job_partition_figures_match_the_workload(analytics_run: AnalyticsRun) -> None:
    """Counts from the workload, bytes and last seq as the primaries store them."""
    published = published_of(analytics_run)
    analytics, per_stream = analytics_of(analytics_run)
    figures = {(p.stream, p.partition): p for p in analytics.partitions}
    assert set(figures) == set(published), "the stats stream itself must be left out"
    for key, count in published.items():
        stream, partition = key
        node_stats = per_stream[stream].partition_stats[partition]
        assert figures[key].published_messages == count == node_stats.msg_count
        assert figures[key].last_seq == count
        assert figures[key].published_bytes == node_stats.bytes
        assert figures[key].primary_node_id == per_stream[stream].primary_node_ids[partition]


async def test_job_consumer_figures_match_the_workload(analytics_run: AnalyticsRun) -> None:
    """Acks, naks and the dead letter from the workload; floors as the primaries report them."""
    infos = analytics_run.infos
    analytics, per_stream = analytics_of(analytics_run)
    consumers = {(c.stream, c.consumer): c for c in analytics.consumers}
    billing, audit = consumers[("orders", "billing")], consumers[("events", "audit")]
    assert (billing.acked, billing.redelivered, billing.dead_lettered, billing.naked) == (7, 1, 0, 1)
    assert billing.pending_count == 3 == infos["billing"].num_ack_pending
    assert billing.delivered == infos["billing"].delivered_total == 10  # redeliveries are counted apart
    assert (audit.acked, audit.redelivered, audit.dead_lettered) == (4, 1, 1)
    assert audit.delivered == infos["audit"].delivered_total == 5
    stream = infos["billing"].stream
    expected_lag = 0
    for partition in range(per_stream[stream].partitions):
        floor = next((s.ack_floor for s in infos["billing"].partitions if s.partition == partition), 0)
        expected_lag += per_stream[stream].partition_stats[partition].last_seq - floor
    assert billing.lag_messages == expected_lag == (30 - 7) + 25
    # audit's filter (events.>) matches none of the 3 dlq.other published after its floor: its lag counts
    # the matching messages not acknowledged, as the primaries count them, not every seq past the floor
    assert audit.lag_messages == infos["audit"].num_pending + infos["audit"].num_ack_pending == 0
    assert per_stream["events"].partition_stats[0].last_seq - infos["audit"].partitions[0].ack_floor == 3


async def test_job_replica_lag_counts_what_a_secondary_misses(analytics_run: AnalyticsRun) -> None:
    """orders/1's secondary misses exactly the 5 published after the replicator stopped."""
    truth, published = analytics_run.truth, published_of(analytics_run)
    analytics, per_stream = analytics_of(analytics_run)
    replicas = {(r.stream, r.partition, r.node_id): r for r in analytics.replicas}
    for (stream, partition), count in published.items():
        copies = [r for key, r in replicas.items() if key[:2] == (stream, partition)]
        assert len(copies) == (2 if stream == "orders" else 1)
        primary = per_stream[stream].primary_node_ids[partition]
        for copy in copies:
            behind = truth["unreplicated"].get((stream, partition), 0) if copy.node_id != primary else 0  # type: ignore[attr-defined]
            assert copy.lag_messages == behind, (stream, partition, copy.node_id)
            assert copy.last_seq == count - behind


async def test_job_node_figures_and_skew_match_the_placement(analytics_run: AnalyticsRun) -> None:
    """Partitions led, messages stored and skew from the placement and the workload."""
    cluster, published = analytics_run.cluster, published_of(analytics_run)
    analytics, per_stream = analytics_of(analytics_run)
    led: Counter[str] = Counter()
    stored: Counter[str] = Counter()
    for (stream, partition), count in published.items():
        primary = per_stream[stream].primary_node_ids[partition]
        led[primary] += 1
        stored[primary] += count
    nodes = {node.node_id: node for node in analytics.nodes}
    assert set(nodes) == {node.node_id for node in cluster.nodes}
    for node_id, node in nodes.items():
        assert (node.partitions_led, node.message_count) == (led[node_id], stored[node_id]), node_id
        assert node.published_messages == stored[node_id]
    all_led = [led[node_id] for node_id in nodes]
    all_stored = [stored[node_id] for node_id in nodes]
    assert analytics.skew_partitions == max(all_led) - min(all_led)
    assert analytics.skew_message_count == max(all_stored) - min(all_stored)


async def test_job_windows_count_the_messages_by_their_time(analytics_run: AnalyticsRun) -> None:
    """Parquet history: per window, the messages whose ts_ms falls in it."""
    data_dir, messages = analytics_run.data_dir, analytics_run.messages
    windows: Counter[tuple[str, int, int]] = Counter()
    for row in parquet_rows(data_dir, "publish_windows"):
        windows[(str(row["stream"]), int(row["partition"]), int(row["window_start_ms"]))] += int(row["messages"])  # type: ignore[call-overload]
    expected_windows: Counter[tuple[str, int, int]] = Counter()
    for (stream, partition), stored_messages in messages.items():
        for message in stored_messages:
            expected_windows[(stream, partition, message.ts_ms // WINDOW_MS * WINDOW_MS)] += 1
    assert windows == expected_windows


async def test_job_counts_every_change_once_and_the_cli_prints_the_same(analytics_run: AnalyticsRun) -> None:
    """Every change of every feed counted once; `weir stats --analytics` prints the job's figures."""
    cluster, data_dir, published = analytics_run.cluster, analytics_run.data_dir, published_of(analytics_run)
    analytics, _ = analytics_of(analytics_run)
    positions = {position.node_id: position for position in analytics.feed_positions}
    for handle in cluster.nodes:
        position = positions[handle.node_id]
        seqs = await feed_changes(handle.internal_address, position.next_change_seq)
        assert position.changes == len(seqs) > 0
    # `weir stats --analytics` prints the same figures
    completed = await asyncio.to_thread(
        subprocess.run,
        [
            sys.executable,
            "-m",
            "weir_cli.cli",
            "--json",
            "stats",
            "--analytics",
            "--router",
            cluster.router_addresses[0],
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    printed = json.loads(completed.stdout)
    assert int(printed["batch_id"]) == analytics.batch_id
    assert {(p["stream"], p["partition"]): int(p["published_messages"]) for p in printed["partitions"]} == published

    batches = {int(row["batch_id"]) for row in parquet_rows(data_dir, "feed_coverage")}  # type: ignore[call-overload]
    assert len(batches) >= 3, "expected the backlog to take several micro-batches"


@pytest.mark.parametrize("spark_master", ["local"], indirect=True)  # where the job was killed and restarted
async def test_restart_from_checkpoint_repeats_and_skips_nothing(analytics_run: AnalyticsRun) -> None:
    cluster, data_dir, stats = analytics_run.cluster, analytics_run.data_dir, analytics_run.stats
    assert stats.analytics is not None
    before = analytics_run.state_before_kill
    assert before is not None and analytics_run.scraped_before_kill is not None
    changes_before = sum(feed["changes"] for feed in before["feeds"].values())
    assert "weir_analytics_feed_next_change_seq{" in analytics_run.scraped_before_kill
    assert "weir_analytics_batches_total" in analytics_run.scraped_before_kill
    assert f"resuming after batch {before['batch_id']}" in analytics_run.resumed_log
    after = json.loads((data_dir / "state.json").read_text())
    assert after["batch_id"] > before["batch_id"]
    assert sum(feed["changes"] for feed in after["feeds"].values()) > changes_before

    clicks = {p.partition: p for p in stats.analytics.partitions if p.stream == "clicks"}
    assert {partition: entry.published_messages for partition, entry in clicks.items()} == {0: 30, 1: 30, 2: 30}

    coverage = parquet_rows(data_dir, "feed_coverage")
    for node in cluster.nodes:
        feed = after["feeds"][node.node_id]
        assert feed["repeated_changes"] == 0 and feed["skipped_changes"] == 0
        seqs = await feed_changes(node.internal_address, feed["next_change_seq"])
        assert feed["changes"] == len(seqs), node.node_id
        # the batches' ranges tile the feed: disjoint, in order, and their counts add up
        ranges = sorted(
            (int(row["first_change_seq"]), int(row["last_change_seq"]), int(row["changes"]))  # type: ignore[call-overload]
            for row in coverage
            if row["node_id"] == node.node_id and int(row["changes"]) > 0  # type: ignore[call-overload]
        )
        for (_, previous_last, _), (next_first, _, _) in itertools.pairwise(ranges):
            assert next_first > previous_last, (node.node_id, ranges)
        assert sum(count for _, _, count in ranges) == len(seqs)
        assert ranges[0][0] == seqs[0] and ranges[-1][1] == seqs[-1]
    assert DEFAULT_STATS_STREAM not in {p.stream for p in stats.analytics.partitions}
