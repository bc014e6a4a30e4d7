"""The durability matrix (issue 32): power loss and a lying disk, under load, with every read checked.

Each partition node keeps its data directory on `tests/lazyfs.py`, a FUSE layer that holds every
unsynced write in memory and loses it when it is killed: a power loss is the node's SIGKILL and
the layer's at once, then a fresh mount over what was fsynced and the node started again. Rows:

- power loss on a single node (one copy), with ack leader and with ack all;
- power loss on a secondary, on a primary, and on all three nodes at once (3 copies, ack all);
- one bit flipped in a stored record on a secondary, and on the primary (found by the scrub,
  repaired from an intact copy; the primary's partition moves to an intact replica first);
- the partition's database file cut in half on a stopped secondary, and on the stopped primary
  (found at start-up, moved aside, rebuilt from the primary; a primary's leadership moves first).

Per row, on a stream of its own: SDK workers publish numbered messages (msg_id; a payload that
carries its msg_id and a digest of it, so any served message can be checked alone) while a reader
reads the partition from its current primary over and over and checks every message it is served.
After the fault, the row waits until every copy is back in sync (and the preferred leader leads),
then reads every copy and counts: acknowledged; lost (acknowledged, not at its seq); duplicated
(stored twice); divergent (copies differ); served corrupt (a read returned bytes that were not
published: must be 0); refused (reads answered DATA_LOSS instead: allowed, that is the point).
The matrix is printed and written to `$WEIR_DURABILITY_REPORT` (`make reliability` writes
docs/durability.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import hashlib
import os
import re
import sqlite3
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from weir.client import NodeClient, stream_config
from weir.cluster import WeirClient
from weir.errors import CorruptRecordError, NoSuchStreamError, WeirError
from weir_cli.launcher import LocalCluster, NodeHandle
from weir_server.internal_clients import ChangeFeedClient

from tests.conftest import CLUSTER_NODE_ENV, CLUSTER_REPLICATOR_ENV, CLUSTER_ROUTER_ENV, eventually, needs_own_processes
from tests.fault_matrix import Faults
from tests.lazyfs import LazyMount
from tests.stored_records import flip_stored_bytes
from tests.system_tools import needs_fuse

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

WORKERS = 4
LOAD_BEFORE_S = 2.0
LOAD_AFTER_S = 1.5
FAULT_HOLD_S = 1.0
REPORT_ENV = "WEIR_DURABILITY_REPORT"
NODE_ENV = {
    **CLUSTER_NODE_ENV,
    # the scrub looks often and reads go to the disk (a record in the tail cache is served intact)
    "WEIR_NODE_SCRUB_INTERVAL_MS": "500",
    "WEIR_NODE_SCRUB_BYTES_PER_SECOND": str(16 * 1024 * 1024),
    "WEIR_NODE_TAIL_CACHE_BYTES": "0",
    # checkpoints often: most of a partition is in its database file, not in the WAL (a truncated
    # database file then loses records, and power loss lands in checkpoints too)
    "WEIR_NODE_WAL_CHECKPOINT_BYTES": str(64 * 1024),
}


def payload_of(msg_id: str) -> bytes:
    """What a msg_id's message carries: itself and a digest of it (~150 bytes)."""
    return msg_id.encode() + b"|" + hashlib.sha256(msg_id.encode()).hexdigest().encode() * 2


def intact(payload: bytes) -> bool:
    msg_id, _, _ = payload.partition(b"|")
    return payload == payload_of(msg_id.decode(errors="replace"))


@dataclass
class Row:
    scenario: str
    acknowledged: dict[str, int] = field(default_factory=dict)  # msg_id -> seq
    failed: int = 0
    served: int = 0
    served_corrupt: int = 0
    refused: int = 0
    lost: int = 0
    duplicated: int = 0
    divergent: int = 0


class Load:
    """WORKERS publishers on one SDK client (msg_ids, the SDK's retries) and one reader of the
    current primary's copy, for one row's stream (one partition)."""

    def __init__(self, client: WeirClient, stream: str, row: Row, ack_level: str) -> None:
        self.client, self.stream, self.row, self.ack_level = client, stream, row, ack_level
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._next = 0

    def start(self) -> None:
        self._stop.clear()
        self._tasks = [asyncio.create_task(self._publish()) for _ in range(WORKERS)]
        self._tasks.append(asyncio.create_task(self._read()))

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)

    async def _publish(self) -> None:
        while not self._stop.is_set():
            msg_id = f"{self.stream}-{self._next}"
            self._next += 1
            try:
                ack = await self.client.publish(
                    self.stream, "s", payload_of(msg_id), ack_level=self.ack_level, msg_id=msg_id
                )
                self.row.acknowledged[msg_id] = ack.seq
            except WeirError:
                self.row.failed += 1

    async def _read(self) -> None:
        next_seq = 1
        while not self._stop.is_set():
            try:
                route = await self.client.route(self.stream, refresh=True)
                async with NodeClient(route.partitions[0].primary.address, timeout_s=5) as node:
                    async for message in node.read_all(self.stream, 0, next_seq):
                        self.row.served += 1
                        self.row.served_corrupt += not intact(message.payload)
                        next_seq = message.seq + 1
            except CorruptRecordError:
                self.row.refused += 1
                next_seq = 1  # read the whole partition again: the damaged record must come back intact
            except WeirError:
                pass  # the primary is down or moving: read again from the next one
            await asyncio.sleep(0.2)


@dataclass
class LazyCluster:
    """A LocalCluster whose nodes' data directories are LazyMounts."""

    cluster: LocalCluster
    mounts: dict[str, LazyMount]
    faults: Faults

    def node(self, name: str) -> NodeHandle:
        return next(node for node in self.cluster.nodes if node.name == name)

    async def power_loss(self, *names: str) -> None:
        for name in names:  # the node first: nothing it says after its disk lost data can be an ack
            self.node(name).kill()
            self.mounts[name].crash()
        await asyncio.sleep(FAULT_HOLD_S)
        for name in names:
            self.mounts[name].mount()
        for name in names:
            node = self.node(name)
            await self.faults.run(lambda node=node: node.start(reuse_ports=True))  # type: ignore[misc]


def start_lazy_cluster(directory: Path, nodes: int) -> LazyCluster:
    needs_own_processes()
    needs_fuse()
    mounts = {
        f"node-{index}": LazyMount(
            directory / "backing" / f"node-{index}",
            directory / "cluster" / f"node-{index}",
            directory / f"lazyfs-{index}.log",
        ).mount()
        for index in range(1, nodes + 1)
    }
    try:
        cluster = LocalCluster.start(
            directory / "cluster",
            nodes=nodes,
            routers=1,
            replicators=1 if nodes > 1 else 0,
            node_env=NODE_ENV,
            router_env={**CLUSTER_ROUTER_ENV, "WEIR_ROUTER_LEADER_REBALANCE_INTERVAL_MS": "500"},
            replicator_env=CLUSTER_REPLICATOR_ENV,
        )
    except BaseException:
        for mount in mounts.values():
            mount.unmount()
        raise
    assert sorted(node.name for node in cluster.nodes) == sorted(mounts)
    return LazyCluster(cluster, mounts, Faults())


async def copies(lazy: LazyCluster, stream: str) -> dict[str, list[tuple[int, bytes]]]:
    """node id -> (seq, payload) of its copy (its internal port), for the nodes that place the
    stream; a copy holding a record that fails its checksum reads as [(0, b"DATA_LOSS")]."""
    result: dict[str, list[tuple[int, bytes]]] = {}
    for node in lazy.cluster.nodes:
        async with NodeClient(node.internal_address, timeout_s=10) as client:
            try:
                result[node.name] = [(m.seq, m.payload) async for m in client.read_all(stream, 0)]
            except NoSuchStreamError:
                continue
            except CorruptRecordError:
                result[node.name] = [(0, b"DATA_LOSS")]
    return result


async def settled(client: WeirClient, stream: str, replicas: int, preferred: str = "") -> bool:
    """Every replica in sync, under the `preferred` leader when one is named."""
    try:
        route = (await client.route(stream, refresh=True)).partitions[0]
        async with NodeClient(route.primary.address, timeout_s=5) as node:
            info = await node.stream_info(stream)
        in_sync = replicas == 1 or len(info.stats.partitions[0].in_sync_node_ids) == replicas  # 1: no tracker
        return in_sync and route.primary.node_id == (preferred or route.primary.node_id)
    except (WeirError, IndexError):
        return False


async def run_row(
    client: WeirClient,
    lazy: LazyCluster,
    row: Row,
    *,
    replicas: int,
    ack_level: str,
    fault: Callable[[str, list[str], Load], Awaitable[None]],
) -> None:
    """One row: a stream of its own, load, the fault (given the primary, the secondaries and the
    load), recovery, more load, then every copy read and counted."""
    stream = "row-" + "-".join(re.sub(r"[^A-Za-z0-9 ]", "", row.scenario).split()[:8])
    await client.create_stream(
        stream_config(stream, partitions=1, replicas=replicas, min_insync_replicas=min(2, replicas))
    )
    await eventually(lambda: settled(client, stream, replicas), 30, f"{row.scenario}: the stream settled")
    route = (await client.route(stream, refresh=True)).partitions[0]
    preferred = route.primary.node_id
    secondaries = [entry.node_id for entry in route.secondaries]
    load = Load(client, stream, row, ack_level)
    load.start()
    await asyncio.sleep(LOAD_BEFORE_S)
    await fault(route.primary.node_id, secondaries, load)
    await eventually(
        lambda: settled(client, stream, replicas, preferred),
        90,
        f"{row.scenario}: every copy in sync, preferred leader",
    )
    await asyncio.sleep(LOAD_AFTER_S)
    await load.stop()

    async def equal() -> bool:
        return len({tuple(copy) for copy in (await copies(lazy, stream)).values()}) == 1

    with contextlib.suppress(AssertionError):  # copies still unequal after this count as divergent
        await eventually(equal, 30, f"{row.scenario}: the copies equal once the load stopped")
    count(row, await copies(lazy, stream))


def count(row: Row, stored: dict[str, list[tuple[int, bytes]]]) -> None:
    row.divergent = int(len({tuple(copy) for copy in stored.values()}) > 1)
    primary = dict(next(iter(stored.values())))
    row.lost = sum(1 for msg_id, seq in row.acknowledged.items() if primary.get(seq) != payload_of(msg_id))
    row.duplicated = sum(1 for times in Counter(primary.values()).values() if times > 1)
    row.served_corrupt += sum(1 for copy in stored.values() for _, payload in copy if not intact(payload))


def flip_a_bit(database: Path, seq: int) -> None:
    """Damage one stored record's bytes (not its checksum), as a bad disk would: through the
    mount, while the row's publishers are paused (the node's writer would wait on the file's lock)."""
    with sqlite3.connect(database, timeout=10) as db:
        flip_stored_bytes(db, seq, mask=0x10)


async def flip_on(lazy: LazyCluster, name: str, load: Load) -> None:
    await load.stop()
    node = lazy.node(name)
    async with ChangeFeedClient(node.internal_address) as feed:
        since = (await feed.read_changes(1 << 62, 1)).last_change_seq + 1  # the feed's end before the damage
    flip_a_bit(node.data_dir / "streams" / load.stream / "0" / "log.sqlite", 3)
    load.start()  # meanwhile the reader sees DATA_LOSS or the intact record, never the damaged bytes

    async def found() -> bool:  # the node's scrub reports it in its change feed
        nonlocal since
        async with ChangeFeedClient(node.internal_address) as feed:
            while True:
                answer = await feed.read_changes(since, 10_000)
                if any(
                    change.stream == load.stream and change.storage_finding.finding == "corrupt_records"
                    for change in answer.changes
                ):
                    return True
                if not answer.changes:
                    return False
                since = answer.next_change_seq

    await eventually(found, 30, f"the scrub on {name} found the flipped record")


async def truncate_on(lazy: LazyCluster, name: str, load: Load) -> None:
    """The node stops (SIGKILL), its partition's database file loses its second half, it starts."""
    node = lazy.node(name)
    node.kill()
    database = node.data_dir / "streams" / load.stream / "0" / "log.sqlite"
    with database.open("r+b") as file:
        file.truncate(database.stat().st_size // 2)
        os.fsync(file.fileno())
    await lazy.faults.run(lambda: node.start(reuse_ports=True))


async def test_power_loss_and_flipped_bits_lose_nothing_and_serve_no_wrong_bytes(tmp_path: Path) -> None:
    rows: list[Row] = []
    lazy = start_lazy_cluster(tmp_path / "single", nodes=1)
    try:
        async with WeirClient(lazy.cluster.router_addresses, retry_timeout_s=60, timeout_s=10) as client:
            for ack_level in ("leader", "all"):

                async def crash(primary: str, secondaries: list[str], load: Load) -> None:
                    await lazy.power_loss(primary)

                rows.append(Row(f"power loss, single node, ack {ack_level}"))
                await run_row(client, lazy, rows[-1], replicas=1, ack_level=ack_level, fault=crash)
            assert lazy.mounts["node-1"].crashes == 2
    finally:
        stop(lazy)

    lazy = start_lazy_cluster(tmp_path / "three", nodes=3)
    try:
        async with WeirClient(lazy.cluster.router_addresses, retry_timeout_s=60, timeout_s=10) as client:

            async def on_secondary(primary: str, secondaries: list[str], load: Load) -> None:
                await lazy.power_loss(secondaries[0])

            async def on_primary(primary: str, secondaries: list[str], load: Load) -> None:
                await lazy.power_loss(primary)

            async def on_all(primary: str, secondaries: list[str], load: Load) -> None:
                await lazy.power_loss(primary, *secondaries)

            async def flip_secondary(primary: str, secondaries: list[str], load: Load) -> None:
                await flip_on(lazy, secondaries[0], load)

            async def flip_primary(primary: str, secondaries: list[str], load: Load) -> None:
                await flip_on(lazy, primary, load)

            async def truncate_secondary(primary: str, secondaries: list[str], load: Load) -> None:
                await truncate_on(lazy, secondaries[0], load)

            async def truncate_primary(primary: str, secondaries: list[str], load: Load) -> None:
                await truncate_on(lazy, primary, load)

            plan: list[tuple[str, Callable[[str, list[str], Load], Awaitable[None]]]] = [
                ("power loss on a secondary, ack all", on_secondary),
                ("power loss on the primary, ack all", on_primary),
                ("power loss on all three nodes at once, ack all", on_all),
                ("a flipped bit in a record on a secondary", flip_secondary),
                ("a flipped bit in a record on the primary", flip_primary),
                ("the partition's file truncated on a secondary", truncate_secondary),
                ("the partition's file truncated on the primary", truncate_primary),
            ]
            for name, fault in plan:
                rows.append(Row(name))
                await run_row(client, lazy, rows[-1], replicas=3, ack_level="all", fault=fault)

            async def clean() -> bool:  # what `weir doctor` reads
                nodes = (await client.cluster_info()).nodes
                return all(not node.rebuilding_partitions and not node.corrupt_records for node in nodes)

            await eventually(clean, 30, "every node reports nothing rebuilding and nothing corrupt")
    finally:
        stop(lazy)
    table = report(rows)
    print("\n" + table)
    write_report(rows)
    for row in rows:
        assert row.acknowledged and row.served, row.scenario
        assert (row.lost, row.duplicated, row.divergent, row.served_corrupt) == (0, 0, 0, 0), table


def stop(lazy: LazyCluster) -> None:
    lazy.cluster.stop()
    lazy.faults.close()
    for mount in lazy.mounts.values():
        mount.unmount()


def report(rows: list[Row]) -> str:
    header = (
        "| fault | acknowledged | lost | duplicated | divergent | served corrupt | reads refused (DATA_LOSS) | failed |"
    )
    rule = "|---|---|---|---|---|---|---|---|"
    body = [
        f"| {row.scenario} | {len(row.acknowledged)} | {row.lost} | {row.duplicated} | {row.divergent} "
        f"| {row.served_corrupt} | {row.refused} | {row.failed} |"
        for row in rows
    ]
    return "\n".join([header, rule, *body])


REPORT_INTRO = """# Durability: power loss and a lying disk

Written by the slow test tier, not by hand: `make reliability` runs `tests/test_durability.py` with
`WEIR_DURABILITY_REPORT=docs/durability.md` (CI runs the same test and prints the table). The
process faults (SIGKILL, SIGSTOP) are in [reliability.md](reliability.md).

What runs: each partition node's data directory is on `tests/lazyfs.py`, a FUSE filesystem that
keeps every write in memory until its file is fsynced and loses the rest when it is killed (the
model of Jepsen's LazyFS; directory operations reach the disk at once). A **power loss** kills the
node and its filesystem together, mounts the filesystem again over what was made durable and
starts the node. A **flipped bit** changes one byte of a stored record (not its checksum) through
the filesystem. A **truncated file** is the partition's database file cut to half its size while
its node is stopped (SIGKILL), then the node starts: it moves the file aside and rebuilds the
partition from another copy, never leading it meanwhile. Every row has a stream of its own (one partition; 3 copies with
min_insync_replicas 2, or 1 on the single node): four SDK publishers with msg_ids and the SDK's
retries, and a reader that reads the partition from its current primary again and again and checks
every message it is served against what was published. After the fault the row waits until every
copy is in sync again under the preferred leader, publishes a little more, then reads every copy:

- **acknowledged**: publishes answered ok; **lost**: acknowledged but not at their seq;
  **duplicated**: stored more than once; **divergent**: the copies differ;
- **served corrupt**: a read returned bytes that were not published (by the reader during the run,
  or in any copy at the end); **reads refused**: reads answered DATA_LOSS (`corrupt`) instead,
  which is what a damaged record must get until it is repaired or its partition moved;
- **failed**: publishes that gave up after the SDK's 60 s of retries.

The filesystem layer is tested on its own (`test_the_lazy_filesystem_keeps_exactly_what_was_fsynced`:
written-but-unsynced bytes and SQLite commits made with `synchronous=OFF` are gone after its power
loss), and with `WEIR_NODE_FSYNC=off` this matrix lost hundreds of acknowledged messages in the
single-node and all-three rows when it was written: a 0 below is measured, not assumed. Redis (the
cluster's metadata) is not on the layer: it stands for a metadata store that outlives the nodes.
"""


def write_report(rows: list[Row]) -> None:
    path = os.environ.get(REPORT_ENV)
    if not path:
        return
    today = datetime.date.today().isoformat()
    Path(path).write_text(f"{REPORT_INTRO}\n## Latest run ({today})\n\n{report(rows)}\n")


def test_the_lazy_filesystem_keeps_exactly_what_was_fsynced(tmp_path: Path) -> None:
    """The harness itself: after its power loss a file holds what its fsync made durable and not
    what came after; a truncate is undone likewise; a SQLite database keeps its synchronous commits
    and loses the unsynced ones whole, and is intact."""
    needs_fuse()
    mount = LazyMount(tmp_path / "backing", tmp_path / "mount", tmp_path / "lazyfs.log").mount()
    try:
        path = mount.mountpoint / "file"
        with path.open("wb") as file:
            file.write(b"durable " * 1000)
            file.flush()
            os.fsync(file.fileno())
            file.seek(4)
            file.write(b"lost")
            file.truncate(6000)
        assert path.stat().st_size == 6000 and path.read_bytes()[:12] == b"duralostdura"
        database = sqlite3.connect(mount.mountpoint / "db.sqlite", isolation_level=None)
        database.execute("PRAGMA journal_mode=WAL")
        database.execute("CREATE TABLE t (x)")
        for synchronous, values in (("FULL", range(100)), ("OFF", range(100, 150))):
            database.execute(f"PRAGMA synchronous={synchronous}")
            for value in values:
                database.execute("INSERT INTO t VALUES (?)", (value,))
        assert database.execute("SELECT count(*) FROM t").fetchone() == (150,)
        mount.crash()
        database.close()
        mount.mount()
        assert path.read_bytes() == b"durable " * 1000
        reopened = sqlite3.connect(mount.mountpoint / "db.sqlite")
        try:
            assert reopened.execute("SELECT count(*), max(x) FROM t").fetchone() == (100, 99)
            assert reopened.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        finally:
            reopened.close()
    finally:
        mount.unmount()


def test_the_lazy_filesystem_moves_a_directorys_unsynced_files_with_it(tmp_path: Path) -> None:
    """A renamed directory takes its files' unsynced bytes along, and a new file made where one of
    them was starts empty (the node moves an unreadable partition's directory aside this way)."""
    needs_fuse()
    mount = LazyMount(tmp_path / "backing", tmp_path / "mount", tmp_path / "lazyfs.log").mount()
    try:
        (mount.mountpoint / "partition").mkdir()
        (mount.mountpoint / "partition" / "log").write_bytes(b"old, never synced")
        (mount.mountpoint / "partition").rename(mount.mountpoint / "aside")
        (mount.mountpoint / "partition").mkdir()
        (mount.mountpoint / "partition" / "log").write_bytes(b"new")
        assert (mount.mountpoint / "aside" / "log").read_bytes() == b"old, never synced"
        assert (mount.mountpoint / "partition" / "log").read_bytes() == b"new"
    finally:
        mount.unmount()
