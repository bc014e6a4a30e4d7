"""The metadata store without a single point of failure (issue 54): `LocalCluster.start(ha=True)`
(`weir cluster up --ha`) runs the metadata Redis with two replicas and three Redis Sentinels, and
every service reaches it through the sentinels (`redis+sentinel://...`).

Under the ack-all load of the fault matrices (tests/fault_matrix.py), the test SIGKILLs the Redis
primary: the sentinels promote a replica, and the services follow without a restart. Then it
SIGKILLs a partition's primary node: the controller, now writing to the promoted Redis, still fails
it over. Nothing acknowledged is lost, duplicated or divergent, and every acknowledged message
published again is answered as a duplicate at its seq.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from weir.client import stream_config
from weir.cluster import WeirClient
from weir_cli.launcher import LocalCluster, pid_alive, read_cluster_state, stop_pids

from tests.conftest import (
    CLUSTER_NODE_ENV,
    CLUSTER_REPLICATOR_ENV,
    CLUSTER_ROUTER_ENV,
    eventually,
    needs_own_processes,
)
from tests.fault_matrix import (
    PARTITIONS,
    Load,
    Row,
    assert_repeats_are_duplicates,
    assign_to_rows,
    by_name,
    copies,
    create_matrix_stream,
    settled,
    stream_record,
    tabulate,
)
from tests.test_cli_cluster import ok, pids_using, state_pids, weir

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]


async def test_the_cluster_fails_over_nodes_after_its_redis_primary_was_killed(tmp_path: Path) -> None:
    needs_own_processes()
    cluster = LocalCluster.start(
        tmp_path / "cluster",
        ha=True,
        node_env=CLUSTER_NODE_ENV,
        router_env=CLUSTER_ROUTER_ENV,
        replicator_env=CLUSTER_REPLICATOR_ENV,
    )
    load = Load(cluster.router_addresses)
    rows = [Row("steady state"), Row("Redis primary SIGKILLed"), Row("then a partition's primary node SIGKILLed")]
    try:
        assert cluster.metadata_address.startswith("redis+sentinel://")
        async with WeirClient(cluster.router_addresses) as admin:
            await create_matrix_stream(admin, cluster)
            rows[0].started = time.monotonic()
            await load.start()
            await asyncio.sleep(2)

            rows[1].started = time.monotonic()
            old_redis = (cluster.redis.placement.host, cluster.redis.port)
            cluster.redis.kill()
            await eventually(lambda: _promoted_away(cluster, old_redis), 20, "the sentinels promoted a Redis replica")
            print(f"Redis failover after {time.monotonic() - rows[1].started:.2f} s")
            acked = sum(1 for publish in load.publishes if publish.seq)
            await eventually(lambda: _more_acks(load, acked + 200), 30, "200 acks after the Redis failover")

            rows[2].started = time.monotonic()
            record = await stream_record(cluster)
            victim = by_name(cluster, record.placement.partitions[0].primary_node_id)
            epoch = record.placement.partitions[0].leader_epoch
            victim.kill()
            await eventually(lambda: _failed_over(cluster, victim.name, epoch), 20, "the node failed over")
            print(f"node failover after {time.monotonic() - rows[2].started:.2f} s")
            acked = sum(1 for publish in load.publishes if publish.seq)
            await eventually(lambda: _more_acks(load, acked + 200), 30, "200 acks after the node failover")
            await load.stop()
            victim.start(reuse_ports=True)
            await eventually(lambda: settled(cluster, equal_copies=True), 60, "every copy equal and in sync")

            assign_to_rows(load.publishes, rows)
            stored = {partition: await copies(cluster, partition) for partition in range(PARTITIONS)}
            lines = tabulate(rows, stored)
            for line in lines:
                print(line)
            await assert_repeats_are_duplicates(admin, [p for p in load.publishes if p.seq], rows, stored)
    finally:
        if not load._stop.is_set():
            await load.stop()
        cluster.stop()
    for line in lines:
        assert (line["lost"], line["duplicated"], line["divergent"], line["failed"]) == (0, 0, 0, 0), line
        assert line["acknowledged"], line


async def _promoted_away(cluster: LocalCluster, old: tuple[str, int]) -> bool:
    named = [await asyncio.to_thread(sentinel.primary_address) for sentinel in cluster.sentinels]
    return sum(1 for address in named if address is not None and address != old) >= 2


async def _more_acks(load: Load, count: int) -> bool:
    return sum(1 for publish in load.publishes if publish.seq) >= count


async def _failed_over(cluster: LocalCluster, node_id: str, epoch: int) -> bool:
    try:
        entry = (await stream_record(cluster)).placement.partitions[0]
    except (AssertionError, OSError):
        return False
    return entry.primary_node_id != node_id and entry.leader_epoch > epoch


def test_cluster_up_ha_runs_sentinels_and_cluster_down_stops_every_process(tmp_path: Path) -> None:
    """`weir cluster up --ha`: the services get the sentinels' URL, cluster.json lists the replicas and
    sentinels, and `weir cluster down` stops them all (none is left behind)."""
    needs_own_processes()
    data_dir = tmp_path / "D"
    known: set[int] = set()
    try:
        up = weir("--json", "cluster", "up", "--ha", "--data-dir", str(data_dir), cwd=tmp_path)
        state = read_cluster_state(data_dir) or {}
        known.update(state_pids(state) + [int(entry["pid"]) for entry in state.get("metadata_processes", [])])
        summary = json.loads(ok(up))
        assert summary["redis"]["url"].startswith("redis+sentinel://")
        names = sorted(entry["name"] for entry in summary["metadata_processes"])
        assert names == ["redis-2", "redis-3", "sentinel-1", "sentinel-2", "sentinel-3"]
        assert all(pid_alive(pid) for pid in known)
        assert ok(weir("stream", "create", "ha-check", "--replicas", "3", cwd=tmp_path))
    finally:
        down = weir("--json", "cluster", "down", "--data-dir", str(data_dir), cwd=tmp_path)
        leftover = sorted(pid for pid in known | set(pids_using(data_dir)) if pid_alive(pid))
        if leftover:
            stop_pids(leftover, timeout_s=5)
    assert down.returncode == 0, down.stderr
    assert leftover == [], f"processes still running after weir cluster down: {leftover}"


async def test_a_tls_cluster_reaches_its_sentinels_over_tls_and_survives_a_redis_failover(tmp_path: Path) -> None:
    """`weir cluster up --ha --tls`, as the compose deployment runs it: every redis-server and
    sentinel serves TLS only (a plaintext client is refused), the services reach them through
    `rediss+sentinel://`, and after the Redis primary's SIGKILL the sentinels promote a replica over
    TLS and a metadata write (a new stream) and a publish succeed."""
    import redis as redis_sync

    needs_own_processes()
    cluster = LocalCluster.start(
        tmp_path / "cluster",
        tls=True,
        ha=True,
        node_env=CLUSTER_NODE_ENV,
        router_env=CLUSTER_ROUTER_ENV,
        replicator_env=CLUSTER_REPLICATOR_ENV,
    )
    try:
        assert cluster.redis.tls, "this redis-server was built without TLS"
        assert cluster.metadata_address.startswith("rediss+sentinel://")
        password = cluster.redis.password_file.read_text().strip()
        for port in [cluster.sentinels[0].port, cluster.redis_replicas[0].port]:
            plain = redis_sync.Redis("127.0.0.1", port, password=password, socket_timeout=1)
            with pytest.raises((redis_sync.ConnectionError, redis_sync.TimeoutError)):
                plain.ping()
            plain.close()
        async with WeirClient(cluster.router_addresses, tls=cluster.client_security()) as client:
            await client.create_stream(stream_config("before", replicas=3))
            primary = cluster.sentinels[0].primary_address()
            cluster.redis.kill()

            async def promoted() -> bool:
                return all(sentinel.primary_address() not in (None, primary) for sentinel in cluster.sentinels)

            await eventually(promoted, 30, "the sentinels promoted a replica over TLS")

            async def every_node_alive() -> bool:  # their heartbeats lapsed while no primary took them
                return sum(node.alive for node in (await client.cluster_info()).nodes) == 3

            await eventually(every_node_alive, 30, "the nodes heartbeating to the promoted Redis")
            await client.create_stream(stream_config("after", replicas=3))
            ack = await client.publish("after", "s", b"x", ack_level="all")
            assert ack.seq == 1
    finally:
        cluster.stop()
