"""The background scrub and the storage checks (issue 32): the pure pacing and findings, a SQLite
partition log's scrub step and integrity check on a file whose bytes were damaged, and a real
cluster whose node finds a flipped record on its own, reports it through `weir doctor`, and answers
DATA_LOSS for that record instead of serving it."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from weir import Client, CorruptRecordError, stream_config
from weir.client import NodeClient
from weir.v1 import types_pb2
from weir_cli.launcher import LocalCluster, NodeHandle
from weir_partition_node.scrub import Pacer, PartitionFindings, ScrubFindings
from weir_partition_node.storage import stored_batch
from weir_partition_node.storage.base import CommitBatch, checksum, make_record
from weir_partition_node.storage.sqlite import SqlitePartitionLog
from weir_server.internal_clients import ChangeFeedClient
from weir_server.metadata import NodeRecord

from tests.conftest import (
    CLUSTER_NODE_ENV,
    CLUSTER_REPLICATOR_ENV,
    CLUSTER_ROUTER_ENV,
    eventually,
    http_get,
    needs_own_processes,
)
from tests.stored_records import flip_stored_bytes, stored_record

PAYLOAD = b"p" * 1000


def test_the_pacer_keeps_the_average_rate_and_lets_idle_time_count() -> None:
    pacer = Pacer(bytes_per_second=1000)
    assert pacer.delay_s(500, now_s=10.0) == pytest.approx(0.5)
    assert pacer.delay_s(500, now_s=10.0) == pytest.approx(1.0)  # the second read waits behind the first
    assert pacer.delay_s(100, now_s=20.0) == pytest.approx(0.1)  # long idle: no debt carried
    with pytest.raises(ValueError, match="> 0"):
        Pacer(0)


def test_findings_keep_the_last_pass_and_log_each_corrupt_record_once() -> None:
    found = PartitionFindings()
    assert found.replace([7, 9], 2) == [7, 9]
    assert found.replace([7, 9, 11], 3) == [11]
    assert (found.corrupt_records, found.corrupt_seqs) == (3, [7, 9, 11])
    assert found.replace([], 0) == [] and found.corrupt_records == 0  # repaired: the next pass says so
    findings = ScrubFindings()
    findings.of("orders", 0).integrity = "*** in database main ***"
    findings.of("orders", 1).replace([4], 1)
    assert findings.corrupt_records == 1
    assert findings.integrity_problems == ["orders/0: *** in database main ***"]
    assert findings.forget({("orders", 1)}) == [("orders", "0")]


def test_a_nodes_damaged_partitions_travel_in_its_registration() -> None:
    record = NodeRecord(
        "n1", "a:1", "a:2", damaged_partitions=(("tenant::orders", 3), ("s", 0)), rebuilding_partitions=(("r", 2),)
    )
    values = record.to_hash()
    assert NodeRecord.from_hash(values) == record
    assert NodeRecord.from_hash({**values, "damaged_partitions": '["no-partition", "s/x", 5]'}).damaged_partitions == ()


def test_a_nodes_partitions_ahead_of_the_metadata_store_travel_in_its_registration() -> None:
    record = NodeRecord("n1", "a:1", "a:2", ahead_partitions=(("tenant::orders", 3, 7), ("s", 0, 2)))
    values = record.to_hash()
    assert NodeRecord.from_hash(values) == record
    garbled = '["s/0", "s/x@1", "@2", "s/1@", 5]'
    assert NodeRecord.from_hash({**values, "ahead_partitions": garbled}).ahead_partitions == ()


def write_log(directory: Path, count: int) -> SqlitePartitionLog:
    log = SqlitePartitionLog(directory, "orders", 0)
    records = []
    for seq in range(1, count + 1):
        encoded = types_pb2.Message(seq=seq, subject="s", ts_ms=seq, payload=PAYLOAD).SerializeToString()
        records.append(make_record(seq, seq, "s", encoded))
    log.commit(CommitBatch(records=records, last_seq=count))
    return log


def flip_a_bit(database: Path, seq: int) -> None:
    """Damage one stored record's bytes (not its checksum), as a bad disk would."""
    with sqlite3.connect(database) as db:
        flip_stored_bytes(db, seq, mask=0x10)


def test_a_scrub_step_finds_a_flipped_record_and_reads_refuse_it(tmp_path: Path) -> None:
    log = write_log(tmp_path / "p0", 100)
    try:
        flip_a_bit(tmp_path / "p0" / "log.sqlite", 37)
        pages, seq = [], 1
        while True:  # steps of ~10 records
            page = log.scrub(seq, 10_000)
            pages.append(page)
            if page.done:
                break
            seq = page.next_seq
        assert sum(page.checked_records for page in pages) == 100
        assert [bad for page in pages for bad in page.corrupt_seqs] == [37]
        assert 5 <= len(pages) <= 12
        with pytest.raises(CorruptRecordError, match="seq 37"):
            log.get(37)
        assert log.integrity(5.0) == "ok"  # the file is consistent: only a record's bytes changed
    finally:
        log.close()
    assert log.scrub(1, 10_000).done  # a closed log answers done


def test_a_repair_puts_back_only_bytes_that_match_the_stored_checksum(tmp_path: Path) -> None:
    log = write_log(tmp_path / "p0", 10)
    try:
        good = log.get(4)
        assert good is not None
        flip_a_bit(tmp_path / "p0" / "log.sqlite", 4)
        wrong = good.replace(PAYLOAD[:10], b"q" * 10)
        log.commit(CommitBatch(repairs=[(4, checksum(wrong), wrong)], last_seq=10))  # not what was stored
        assert log.scrub(4, 1).corrupt_seqs == (4,)
        log.commit(CommitBatch(repairs=[(4, checksum(good), good)], last_seq=10))
        assert log.scrub(4, 1).corrupt_seqs == () and log.get(4) == good
        assert log.state().msg_count == 10
    finally:
        log.close()


def test_the_storage_check_reports_a_damaged_file(tmp_path: Path) -> None:
    write_log(tmp_path / "p0", 400).close()
    database = tmp_path / "p0" / "log.sqlite"
    data = bytearray(database.read_bytes())
    page = 16 * 1024  # the log's page size
    assert len(data) > 8 * page and not (tmp_path / "p0" / "log.sqlite-wal").exists()
    for offset in range(5 * page, 5 * page + 64):  # scribble over a b-tree page's header and cell pointers
        data[offset] = 0xFF
    database.write_bytes(bytes(data))
    log = SqlitePartitionLog(tmp_path / "p0", "orders", 0)
    try:
        assert log.integrity(5.0) not in ("ok", "interrupted")
    finally:
        log.close()


@pytest.fixture
def scrubbed_cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    needs_own_processes()
    fast_scrub = {
        "WEIR_NODE_SCRUB_INTERVAL_MS": "200",
        "WEIR_NODE_SCRUB_BYTES_PER_SECOND": str(64 * 1024 * 1024),
        # reads go to the disk (a record still in the tail cache is served from memory, intact)
        "WEIR_NODE_TAIL_CACHE_BYTES": "0",
    }
    local = LocalCluster.start(
        tmp_path / "cluster",
        nodes=2,
        routers=1,
        replicators=1,
        node_env={**CLUSTER_NODE_ENV, **fast_scrub},
        router_env={**CLUSTER_ROUTER_ENV, "WEIR_ROUTER_LEADER_REBALANCE_INTERVAL_MS": "300"},
        replicator_env=CLUSTER_REPLICATOR_ENV,
    )
    yield local
    local.stop()


def run_doctor(cluster: LocalCluster) -> tuple[int, dict[str, object]]:
    command = [sys.executable, "-m", "weir_cli.cli", "--router", cluster.router_addresses[0], "--json", "doctor"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    return done.returncode, json.loads(done.stdout)


def corrupt_counts(cluster: LocalCluster) -> dict[str, object]:
    _, found = run_doctor(cluster)
    nodes: list[dict[str, object]] = found["nodes"]  # type: ignore[assignment]
    return {str(entry["node_id"]): entry["corrupt_records"] for entry in nodes}


async def storage_findings(address: str, stream: str) -> list[tuple[str, list[int]]]:
    """(finding, seqs) of the StorageFindingChange entries of `stream` in a node's change feed."""
    async with ChangeFeedClient(address) as feed:
        response = await feed.read_changes(0, 10_000)
    return [
        (change.storage_finding.finding, list(change.storage_finding.seqs))
        for change in response.changes
        if change.stream == stream and change.WhichOneof("kind") == "storage_finding"
    ]


async def published_on_one_copy(cluster: LocalCluster, stream: str, count: int) -> NodeHandle:
    """A 1-partition, 1-copy `stream` with `count` PAYLOAD messages published one by one; the node
    that holds it."""
    async with Client(cluster.router_addresses) as client:
        await client.create_stream(stream_config(stream, partitions=1, replicas=1))
        for _ in range(count):
            await client.publish(stream, "s", PAYLOAD, ack_level="all")
        primary_id = (await client.route(stream)).partitions[0].primary.node_id
    return next(node for node in cluster.nodes if node.name == primary_id)


def stored_intact(database: Path, seq: int) -> bool:
    with sqlite3.connect(database) as db:
        record, crc = stored_record(db, seq)
    return bool(checksum(record) == crc)


async def test_a_node_finds_a_flipped_record_reports_it_and_never_serves_it(scrubbed_cluster: LocalCluster) -> None:
    """A record damaged on its only copy: found, reported by `weir doctor`, answered DATA_LOSS,
    never served."""
    cluster = scrubbed_cluster
    node = await published_on_one_copy(cluster, "scrubbed", 50)
    primary_id = node.name
    status, report = await asyncio.to_thread(run_doctor, cluster)
    assert status == 0 and report["healthy"], report
    flip_a_bit(node.data_dir / "streams" / "scrubbed" / "0" / "log.sqlite", 23)

    async def reported() -> bool:
        return (await asyncio.to_thread(corrupt_counts, cluster)).get(primary_id) == 1

    await eventually(reported, 20, "weir doctor reports the flipped record")
    status, report = await asyncio.to_thread(run_doctor, cluster)
    assert status == 1 and not report["healthy"]
    metrics = await asyncio.to_thread(http_get, f"http://127.0.0.1:{node.metrics_port}/metrics")
    assert 'weir_scrub_corrupt_records{partition="0",stream="scrubbed"} 1.0' in metrics
    assert "seq 23: stored record fails its checksum" in node.log_path.read_text()
    assert await storage_findings(node.internal_address, "scrubbed") == [("corrupt_records", [23])]
    async with NodeClient(node.client_address) as reader:
        with pytest.raises(CorruptRecordError, match="seq 23"):
            await reader.get_message("scrubbed", 0, 23)
        assert (await reader.get_message("scrubbed", 0, 22)).payload == PAYLOAD


async def test_a_batch_damaged_outside_its_records_is_found_and_rewritten_from_them(
    scrubbed_cluster: LocalCluster,
) -> None:
    """A byte of a stored batch's header flipped on the only copy: no record is damaged, so every
    one is still served; the scrub finds the batch (its CRC32C), rewrites it from its records
    without another copy, says so in the change feed and /metrics, and the batch is whole again."""
    cluster = scrubbed_cluster
    node = await published_on_one_copy(cluster, "resealed", 30)
    database = node.data_dir / "streams" / "resealed" / "0" / "log.sqlite"
    with sqlite3.connect(database, timeout=10) as db:
        (batch_seq,) = db.execute("SELECT batch_seq FROM messages WHERE seq = 17").fetchone()
        with db.blobopen("batches", "data", batch_seq) as blob:
            blob.seek(stored_batch.HEADER.size - 1)
            byte = blob.read(1)[0]
            blob.seek(stored_batch.HEADER.size - 1)
            blob.write(bytes([byte ^ 0x40]))

    async def rewritten() -> bool:
        found = await storage_findings(node.internal_address, "resealed")
        return ("resealed_batches", [batch_seq]) in found

    await eventually(rewritten, 20, "the scrub rewrites the damaged batch")
    found = await storage_findings(node.internal_address, "resealed")
    assert found == [("corrupt_batches", [batch_seq]), ("resealed_batches", [batch_seq])], found
    metrics = await asyncio.to_thread(http_get, f"http://127.0.0.1:{node.metrics_port}/metrics")
    assert "weir_scrub_resealed_batches_total 1.0" in metrics
    with sqlite3.connect(database) as db:
        (data,) = db.execute("SELECT data FROM batches WHERE base_seq = ?", (batch_seq,)).fetchone()
    stored_batch.check(data)
    async with NodeClient(node.client_address) as reader:
        assert [(await reader.get_message("resealed", 0, seq)).payload for seq in range(1, 31)] == [PAYLOAD] * 30
    status, report = await asyncio.to_thread(run_doctor, cluster)
    assert status == 0 and report["healthy"], report


async def test_a_secondarys_flipped_record_is_put_back_from_its_primary(scrubbed_cluster: LocalCluster) -> None:
    """On a secondary: the scrub finds it, fetches the primary's copy, puts it back byte for byte
    (checked against the stored checksum), and the next report is clean; nothing else changed."""
    cluster = scrubbed_cluster
    async with Client(cluster.router_addresses) as client:
        await client.create_stream(stream_config("mended", partitions=1, replicas=2))
        for _ in range(40):
            await client.publish("mended", "s", PAYLOAD, ack_level="all")
        route = (await client.route("mended")).partitions[0]
    secondary = next(node for node in cluster.nodes if node.name == route.secondaries[0].node_id)
    database = secondary.data_dir / "streams" / "mended" / "0" / "log.sqlite"
    flip_a_bit(database, 11)
    assert not stored_intact(database, 11)

    async def repaired() -> bool:
        # The record is written back first, checked again, then logged: wait for the log line too.
        intact = await asyncio.to_thread(stored_intact, database, 11)
        return intact and "repaired 1 record(s) from another copy" in secondary.log_path.read_text()

    await eventually(repaired, 20, "the secondary's record put back from the primary, and logged")

    async def clean() -> bool:
        return (await asyncio.to_thread(corrupt_counts, cluster)).get(secondary.name) == 0

    await eventually(clean, 20, "weir doctor reports the secondary clean again")
    found = await storage_findings(secondary.internal_address, "mended")
    assert ("corrupt_records", [11]) in found and found[-1] == ("repaired_records", [11]), found
    with sqlite3.connect(database) as db:
        assert db.execute("SELECT count(*) FROM messages").fetchone() == (40,)


async def test_a_primarys_damaged_partition_moves_to_an_intact_replica_and_is_repaired(
    scrubbed_cluster: LocalCluster,
) -> None:
    """A record damaged on the primary: the controller hands the partition to the intact in-sync
    secondary, the old primary repairs the record as a follower, then leads again (it is the
    preferred leader); every message reads back intact throughout, nothing is lost or doubled."""
    cluster = scrubbed_cluster
    async with Client(cluster.router_addresses) as client:
        await client.create_stream(stream_config("moved", partitions=1, replicas=2))
        payloads = [b"m%03d" % number + PAYLOAD for number in range(30)]
        for payload in payloads:
            await client.publish("moved", "s", payload, ack_level="all")
        first = (await client.route("moved")).partitions[0].primary.node_id
        primary = next(node for node in cluster.nodes if node.name == first)
        database = primary.data_dir / "streams" / "moved" / "0" / "log.sqlite"
        flip_a_bit(database, 17)

        async def led_by(node_id: str) -> bool:
            return (await client.route("moved", refresh=True)).partitions[0].primary.node_id == node_id

        other = next(node.name for node in cluster.nodes if node.name != first)
        await eventually(lambda: led_by(other), 30, "leadership moved to the intact replica")
        await eventually(lambda: asyncio.to_thread(stored_intact, database, 17), 30, "the old primary repaired")
        await eventually(lambda: led_by(first), 30, "the repaired preferred leader leads again")
        leader = (await client.route("moved", refresh=True)).partitions[0].primary.address
        async with NodeClient(leader) as reader:
            stored = [message.payload async for message in reader.read_all("moved")]
    assert stored == payloads


def test_weir_doctor_scrub_starts_a_pass_at_once_and_waits_for_it(tmp_path: Path) -> None:
    """With the scrub's own interval far away, `weir doctor --scrub` starts a pass on every node,
    waits until each ended and reports what it found."""
    needs_own_processes()
    cluster = LocalCluster.start(
        tmp_path / "cluster",
        nodes=1,
        routers=1,
        replicators=0,
        node_env={**CLUSTER_NODE_ENV, "WEIR_NODE_SCRUB_INTERVAL_MS": "3600000", "WEIR_NODE_TAIL_CACHE_BYTES": "0"},
        router_env=CLUSTER_ROUTER_ENV,
    )
    try:

        async def fill() -> None:
            async with Client(cluster.router_addresses) as client:
                await client.create_stream(stream_config("later", partitions=1))
                for _ in range(20):
                    await client.publish("later", "s", PAYLOAD)

        asyncio.run(fill())
        node = cluster.nodes[0]
        flip_a_bit(node.data_dir / "streams" / "later" / "0" / "log.sqlite", 5)
        status, report = run_doctor(cluster)  # the start-up pass ran before the damage
        assert status == 0, report
        command = [sys.executable, "-m", "weir_cli.cli", "--router", cluster.router_addresses[0]]
        arguments = [*command, "--json", "doctor", "--scrub"]
        done = subprocess.run(arguments, check=False, capture_output=True, text=True, timeout=60)
        assert done.returncode == 1, done.stderr
        assert "pass done" in done.stderr
        nodes = json.loads(done.stdout)["nodes"]
        assert [entry["corrupt_records"] for entry in nodes] == [1]
    finally:
        cluster.stop()
