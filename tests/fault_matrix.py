"""The load and the bookkeeping of the fault matrices (tests/test_reliability.py for process faults,
tests/test_network_faults.py for network faults): three SDK clients with four workers each publish
uniquely numbered messages to a stream of 2 partitions x 3 replicas with ack all and their own
msg_ids; afterwards every copy is read back and each row of the matrix counts the acknowledged,
lost, duplicated and divergent messages and the ack stalls of the publishes answered during it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from redis.exceptions import RedisError
from weir.client import NodeClient, stream_config
from weir.cluster import WeirClient
from weir.errors import WeirError
from weir.v1 import types_pb2
from weir_cli.launcher import LocalCluster, NodeHandle
from weir_server.metadata import InSyncRecord, Keys

STREAM = "matrix"
PARTITIONS = 2
CLIENTS = 3
WORKERS_PER_CLIENT = 4
SETTLE_WITHIN_S = 30.0


@dataclass
class Publish:
    msg_id: str
    partition: int
    started: float
    ended: float = 0.0
    seq: int = 0  # 0: not acknowledged
    error: str = ""


@dataclass
class Row:
    scenario: str
    started: float = 0.0
    ended: float = 0.0
    rebalanced_s: float | None = None
    publishes: list[Publish] = field(default_factory=list)


class Load:
    """CLIENTS SDK clients x WORKERS_PER_CLIENT workers, each publishing its next numbered message
    (ack all, msg_id = payload) as soon as the previous one is answered."""

    def __init__(self, routers: list[str], *, timeout_s: float = 10.0, retry_timeout_s: float = 30.0) -> None:
        self.routers = routers
        self.timeout_s, self.retry_timeout_s = timeout_s, retry_timeout_s
        self.publishes: list[Publish] = []
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._clients: list[WeirClient] = []

    async def start(self) -> None:
        for number in range(CLIENTS):
            client = WeirClient(self.routers, retry_timeout_s=self.retry_timeout_s, timeout_s=self.timeout_s)
            self._clients.append(client)
            for worker in range(WORKERS_PER_CLIENT):
                self._tasks.append(asyncio.create_task(self._work(client, f"c{number}w{worker}")))

    async def _work(self, client: WeirClient, name: str) -> None:
        index = 0
        while not self._stop.is_set():
            msg_id = f"{name}-m{index}"
            publish = Publish(msg_id, index % PARTITIONS, time.monotonic())
            self.publishes.append(publish)
            try:
                ack = await client.publish(
                    STREAM, "orders.new", msg_id.encode(), partition=publish.partition, ack_level="all", msg_id=msg_id
                )
                publish.seq = ack.seq
            except WeirError as error:
                publish.error = error.result_code.value
            publish.ended = time.monotonic()
            index += 1

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)
        for client in self._clients:
            await client.close()


class Faults:
    """Process faults, run on one long-lived thread (a blocking start there does not stall the load,
    and processes started from it stay alive until it ends: see ProcessHandle.die_with_parent)."""

    def __init__(self) -> None:
        self._thread = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="faults")

    async def run(self, action: Callable[[], object]) -> None:
        await asyncio.get_running_loop().run_in_executor(self._thread, action)

    def close(self) -> None:
        self._thread.shutdown(wait=True)


async def stored_in_sync(cluster: LocalCluster, entry: types_pb2.PartitionPlacement) -> tuple[str, ...]:
    """The partition's in-sync set as the controller reads it to promote a copy: the stored in-sync
    record of the placement's leader epoch, else the placement's own set (no change stored yet)."""
    client = cluster.metadata_access().client()
    try:
        raw = await client.get(Keys().in_sync(STREAM, entry.partition))
    finally:
        await client.aclose()
    stored = InSyncRecord.from_json(raw) if raw else None
    if stored is not None and stored.leader_epoch == entry.leader_epoch:
        return stored.in_sync
    return tuple(entry.in_sync_node_ids)


async def stream_record(cluster: LocalCluster) -> types_pb2.StreamRecord:
    client = cluster.metadata_access().client()  # through the sentinels with `ha`
    try:
        raw = await client.get(Keys().stream(STREAM))
    finally:
        await client.aclose()
    assert isinstance(raw, bytes)
    return types_pb2.StreamRecord.FromString(raw)


def by_name(cluster: LocalCluster, node_id: str) -> NodeHandle:
    return next(node for node in cluster.nodes if node.name == node_id)


async def copies(cluster: LocalCluster, partition: int) -> dict[str, list[tuple[int, bytes]]]:
    """node id -> (seq, payload) of its copy of the partition (its internal port)."""
    result: dict[str, list[tuple[int, bytes]]] = {}
    for node in cluster.nodes:
        async with NodeClient(node.internal_address, timeout_s=10) as client:
            result[node.name] = [(message.seq, message.payload) async for message in client.read_all(STREAM, partition)]
    return result


async def settled(cluster: LocalCluster, *, equal_copies: bool = False) -> bool:
    """Every partition led by its preferred leader with 3 in-sync replicas, in the primary's view
    and in the metadata store's (and, with `equal_copies`, which only holds once the load stopped,
    every copy equal)."""
    try:
        record = await stream_record(cluster)
        for entry in record.placement.partitions:
            if entry.primary_node_id != entry.replica_node_ids[0]:
                return False
            async with NodeClient(by_name(cluster, entry.primary_node_id).internal_address, timeout_s=5) as client:
                info = await client.stream_info(STREAM)
            stats = next(stats for stats in info.stats.partitions if stats.partition == entry.partition)
            if len(stats.in_sync_node_ids) != 3 or len(await stored_in_sync(cluster, entry)) != 3:
                return False
            if equal_copies and len({tuple(copy) for copy in (await copies(cluster, entry.partition)).values()}) != 1:
                return False
    except (WeirError, RedisError):  # a node or the metadata store out of reach for now: not settled yet
        return False
    return True


async def balanced(cluster: LocalCluster) -> bool:
    try:
        record = await stream_record(cluster)
    except AssertionError:
        return False
    return all(entry.primary_node_id == entry.replica_node_ids[0] for entry in record.placement.partitions)


def tabulate(rows: list[Row], stored: dict[int, dict[str, list[tuple[int, bytes]]]]) -> list[dict[str, object]]:
    """One line per row: acknowledged, lost, duplicated, divergent, failed, stalls."""
    divergent = {partition for partition, by_node in stored.items() if len({tuple(c) for c in by_node.values()}) > 1}
    primary_copy = {partition: dict(next(iter(by_node.values()))) for partition, by_node in stored.items()}
    counts = {
        partition: Counter(payload for _, payload in next(iter(by_node.values())))
        for partition, by_node in stored.items()
    }
    lines = []
    for row in rows:
        acked = [publish for publish in row.publishes if publish.seq]
        lost = [p for p in acked if primary_copy[p.partition].get(p.seq) != p.msg_id.encode()]
        duplicated = [p for p in row.publishes if counts[p.partition][p.msg_id.encode()] > 1]
        stalls = sorted(p.ended - p.started for p in acked)
        lines.append(
            {
                "scenario": row.scenario,
                "acknowledged": len(acked),
                "lost": len(lost),
                "duplicated": len(duplicated),
                "divergent": len(divergent),
                "failed": sum(1 for p in row.publishes if p.error),
                "max_stall_s": round(stalls[-1], 3) if stalls else 0.0,
                "p99_stall_s": round(stalls[int(0.99 * (len(stalls) - 1))], 3) if stalls else 0.0,
                "rebalanced_s": None if row.rebalanced_s is None else round(row.rebalanced_s, 1),
            }
        )
    return lines


def explain_repeats(
    acked: list[Publish],
    answers: list[tuple[int, bool]],
    rows: list[Row],
    stored: dict[int, dict[str, list[tuple[int, bytes]]]],
) -> str:
    """For a failed repeat check: each publish whose repeat was not answered as a duplicate at its
    seq, with its row, timing, and what every copy held at that seq and where its payload is."""
    wrong = [(p, answer) for p, answer in zip(acked, answers, strict=True) if answer != (p.seq, True)]
    started = min(p.started for p in acked)
    lines = [f"{len(wrong)} of {len(acked)} repeats not answered as duplicates at their seq:"]
    for publish, (seq, duplicate) in wrong[:20]:
        row = next((row.scenario for row in rows if publish in row.publishes), "?")
        by_node = stored[publish.partition]
        held = {node: dict(copy).get(publish.seq, b"-").decode() for node, copy in by_node.items()}
        payload = publish.msg_id.encode()
        where = {node: [s for s, stored_payload in copy if stored_payload == payload] for node, copy in by_node.items()}
        lines.append(
            f"  {publish.msg_id} p{publish.partition} acked seq {publish.seq} "
            f"(+{publish.started - started:.2f}..{publish.ended - started:.2f} s, {row!r}); "
            f"repeat -> seq {seq} duplicate={duplicate}; at seq {publish.seq}: {held}; payload at {where}"
        )
    return "\n".join(lines)


def assign_to_rows(publishes: list[Publish], rows: list[Row]) -> None:
    """Each publish to the row during which it was answered (a fault hits those in flight)."""
    for publish in publishes:
        row = next((row for row in rows[::-1] if row.started <= publish.ended), rows[0])
        row.publishes.append(publish)


async def assert_repeats_are_duplicates(
    admin: WeirClient, acked: list[Publish], rows: list[Row], stored: dict[int, dict[str, list[tuple[int, bytes]]]]
) -> None:
    """The duplicate window held across every fault: each acknowledged message, published again with
    its msg_id, is answered as a duplicate at its original seq."""
    futures = [
        await admin.publish_nowait(
            STREAM, "orders.new", p.msg_id.encode(), partition=p.partition, ack_level="all", msg_id=p.msg_id
        )
        for p in acked
    ]
    again = await asyncio.gather(*futures)
    answers = [(ack.seq, ack.duplicate) for ack in again]
    assert answers == [(p.seq, True) for p in acked], explain_repeats(acked, answers, rows, stored)


async def create_matrix_stream(admin: WeirClient, cluster: LocalCluster) -> tuple[list[str], str]:
    """Create the matrix's stream (PARTITIONS x 3 replicas, min_insync_replicas 2, a 15-minute
    duplicate window) and wait until every copy is equal and in sync. Returns (the primary of each
    partition, a node that leads none)."""
    await admin.create_stream(
        stream_config(STREAM, partitions=PARTITIONS, replicas=3, min_insync_replicas=2, duplicate_window_ms=900_000)
    )
    started = time.monotonic()
    while not await settled(cluster, equal_copies=True):
        assert time.monotonic() - started < SETTLE_WITHIN_S, "the new stream did not settle"
        await asyncio.sleep(0.05)
    record = await stream_record(cluster)
    leaders = [entry.primary_node_id for entry in record.placement.partitions]
    return leaders, next(node.name for node in cluster.nodes if node.name not in leaders)
