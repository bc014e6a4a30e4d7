"""The network fault matrix (issue 54): no loss, no duplicate, no divergence, no ack from a fenced
primary, when links fail rather than processes.

Every process of a cluster with the product's default timings (the metadata Redis with two
replicas and three sentinels, as `weir cluster up --ha` runs it, each sentinel on a redis-server's
host; 2 routers, 3 nodes, 1 replicator) runs on a host of its own in a Linux network namespace
(tests/network_namespaces.py);
the SDK clients run in the test process, outside every host. The load of the process fault matrix
(tests/fault_matrix.py: ack-all publishes with msg_ids to 2 partitions x 3 replicas, the SDK's own
per-attempt and retry timeouts) runs while, one after the other, nftables rules:

- isolate a primary (every link cut), then heal;
- cut a primary from Redis and both routers, while clients and the replicator still reach it; a
  client that still holds the old route keeps publishing to it directly, and every ack it gets
  after another node was promoted is counted as "acknowledged by a fenced primary";
- isolate a secondary, the replicator and the controller router, each in turn;
- drop 30 % of the packets a primary sends (one-way loss), and 10 % each way;
- add 200 ms to every packet a primary sends and drop 5 % of them (an NFQUEUE delay: this kernel
  has no netem);
- flap a primary's links (1 s down, 1 s up, five times);
- isolate the Redis primary, SIGKILL it (and restart it), and cut it from its replicas and their
  sentinels while the services still reach it: each time the sentinels promote a replica, and in
  the last the old primary may take writes the failover discards (it refuses them once it has had
  no replica for 2 s); after each of these three, once the cluster settled, the primary of
  partition 0 is isolated inside the same row and the controller, on whichever Redis the sentinels
  promoted, must still fail it over (a new controller must not have marked every node dead for the
  heartbeats that expired while Redis was out of reach, nor a primary have dropped its followers
  from the in-sync set for the fetches it refused meanwhile).

After each fault heals, the test waits until every replica is back in the in-sync set and every
partition is led by its preferred leader ("time to heal", from the end of the fault). Then every
copy is read and counted as in the process fault matrix, and every acknowledged message published
again must be answered as a duplicate at its original seq. The matrix is printed and, with
`$WEIR_RELIABILITY_REPORT` set (`make reliability`), written into that report's network section.
"""

from __future__ import annotations

import asyncio
import datetime
import os
import re
import time
import zlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from weir.client import NodeClient
from weir.cluster import WeirClient
from weir.errors import WeirError
from weir.v1 import internal_pb2, types_pb2
from weir_cli.launcher import LocalCluster
from weir_server.internal_clients import ReplicationClient

from tests.conftest import eventually, needs_own_processes
from tests.fault_matrix import (
    PARTITIONS,
    STREAM,
    Load,
    Row,
    assert_repeats_are_duplicates,
    assign_to_rows,
    balanced,
    by_name,
    copies,
    create_matrix_stream,
    settled,
    stream_record,
    tabulate,
)
from tests.network_namespaces import Network
from tests.system_tools import needs_tool

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

# The metadata store as `weir cluster up --ha` runs it: three redis-servers, each host with a sentinel.
REDIS_HOSTS = ["redis", "redis-2", "redis-3"]
HOSTS = [*REDIS_HOSTS, "router-1", "router-2", "node-1", "node-2", "node-3", "replicator-1"]
HOLD_S = 6.0
REDIS_ROW = "the Redis primary"  # the rows that fail the metadata store's primary
HEALED_WITHIN_S = 60.0
REPORT_ENV = "WEIR_RELIABILITY_REPORT"
SECTION = "## Network faults"


@pytest.fixture
def network() -> Iterator[Network]:
    """The hosts of the cluster, each in a network namespace of its own (root, ip and nft needed)."""
    needs_own_processes()
    needs_tool("ip")
    needs_tool("nft")
    if os.geteuid() != 0:
        pytest.skip("network namespaces need root")
    made = Network(HOSTS)
    try:
        yield made
    finally:
        made.close()


@dataclass
class FencedProbe:
    """A client with a stale route: publishes ack-all straight to one node's client port, and records
    when each publish was acknowledged."""

    address: str
    acks: list[float]
    errors: int = 0

    async def run(self, stop: asyncio.Event) -> None:
        index = 0
        async with NodeClient(self.address, timeout_s=2) as client:
            while not stop.is_set():
                try:
                    await client.publish(STREAM, "orders.stale", b"stale-%d" % index, partition=0, ack_level="all")
                    self.acks.append(time.monotonic())
                except WeirError:
                    self.errors += 1
                    await asyncio.sleep(0.05)
                index += 1


async def primary_of(cluster: LocalCluster, partition: int) -> str:
    record = await stream_record(cluster)
    return next(entry.primary_node_id for entry in record.placement.partitions if entry.partition == partition)


class NetworkFaults:
    """The faults of the matrix, each a coroutine that strikes, holds and heals."""

    def __init__(self, cluster: LocalCluster, network: Network, admin: WeirClient, rows: list[Row]) -> None:
        self.cluster, self.network, self.admin, self.rows = cluster, network, admin, rows
        self.fenced: dict[str, int] = {}  # row -> acks from a fenced primary
        self.healed_s: dict[str, float] = {}  # row -> seconds until a forged copy was the primary's again

    async def hold(self, host: str, apply: Callable[[], None]) -> None:
        apply()
        await asyncio.sleep(HOLD_S)
        self.network.heal(host)

    async def cut_from_metadata(self, node_id: str) -> None:
        """Cut `node_id` (the primary of partition 0) from Redis and the routers; a stale client
        publishes straight to it meanwhile."""
        node = next(node for node in self.cluster.nodes if node.name == node_id)
        probe, stop = FencedProbe(node.client_address, []), asyncio.Event()
        self.network.cut(node_id, ["redis", "router-1", "router-2"])
        task = asyncio.create_task(probe.run(stop))
        try:
            promoted = await eventually_promoted(self.cluster, 0, away_from=node_id, within_s=HOLD_S * 2)
            await asyncio.sleep(max(0.0, HOLD_S - (time.monotonic() - promoted)))
        finally:
            stop.set()
            await task
            self.network.heal(node_id)
        before = sum(1 for acked in probe.acks if acked <= promoted)
        self.fenced[self.rows[-1].scenario] = len(probe.acks) - before
        # the probe reached the primary (it acknowledged writes until the cut took effect) and was
        # refused afterwards: it did probe what it says it probes
        assert probe.errors, f"the stale client was never refused by {node_id} ({before} acks before the promotion)"

    async def flap(self, host: str) -> None:
        for _ in range(5):
            self.network.isolate(host)
            await asyncio.sleep(1.0)
            self.network.heal(host)
            await asyncio.sleep(1.0)

    async def redis_primary(self, asked_outside: str | None = None) -> str:
        """The host of the Redis primary, as most of the sentinels that answer name it; with
        `asked_outside`, only the sentinels on other hosts are asked. A sentinel cut off with its
        primary keeps naming it, so a promotion is seen by the others only."""
        by_address = {address: host for host, address in self.network.addresses.items()}
        named_hosts: list[str] = []
        for sentinel in self.cluster.sentinels:
            if asked_outside is not None and sentinel.placement.host == self.network.addresses[asked_outside]:
                continue
            named = await asyncio.to_thread(sentinel.primary_address)
            if named is not None:
                named_hosts.append(by_address[named[0]])
        if not named_hosts:
            raise AssertionError("no sentinel answers")
        return max(set(named_hosts), key=named_hosts.count)

    async def promoted_away_from(self, host: str) -> None:
        async def moved() -> bool:
            return await self.redis_primary(asked_outside=host) != host

        await eventually(moved, 30, f"the sentinels promoted a replica in place of {host}")

    async def isolate_redis_primary(self) -> None:
        host = await self.redis_primary()
        self.network.isolate(host)
        await self.promoted_away_from(host)
        await asyncio.sleep(HOLD_S)
        self.network.heal(host)

    async def kill_redis_primary(self) -> None:
        host = await self.redis_primary()
        handle = next(
            handle
            for handle in [self.cluster.redis, *self.cluster.redis_replicas]
            if handle.placement.host == self.network.addresses[host]
        )
        handle.kill()
        await self.promoted_away_from(host)
        await asyncio.sleep(HOLD_S)
        await asyncio.to_thread(handle.start)  # the sentinels make it a replica of the new primary

    async def cut_redis_primary_from_replicas(self) -> None:
        host = await self.redis_primary()
        self.network.cut(host, [other for other in REDIS_HOSTS if other != host])
        await self.promoted_away_from(host)
        await asyncio.sleep(HOLD_S)
        self.network.heal(host)

    async def forge_on_secondary(self, node_id: str) -> None:
        """Store a record the primary never wrote on secondary `node_id` of partition 0 (a
        plaintext ReplicateMessage at its log end under the current epoch, as the fault run did),
        then wait until its copy of that seq is the primary's again: the replicator cuts the
        diverged tail and copies it anew."""
        node = by_name(self.cluster, node_id)
        async with ReplicationClient(node.internal_address) as replication:
            for _ in range(100):  # the replicator appends there too: retry until the forged append lands
                state = await replication.replica_state(STREAM, 0)
                forged = types_pb2.Message(
                    seq=state.last_seq + 1, ts_ms=int(time.time() * 1000), subject="forged", payload=b"forged"
                ).SerializeToString()
                request = internal_pb2.ReplicateMessageRequest(
                    stream=STREAM,
                    partition=0,
                    leader_epoch=state.leader_epoch,
                    after_seq=state.last_seq,
                    records=[forged],
                    record_crc32s=[zlib.crc32(forged)],
                )
                if (await replication.replicate("ReplicateMessage", request)).result_code == "ok":
                    break
                await asyncio.sleep(0.02)
            else:
                raise AssertionError(f"no forged record was stored on {node_id}")
        forged_at, seq = time.monotonic(), state.last_seq + 1

        async def healed() -> bool:
            try:
                held = dict((await copies(self.cluster, 0))[node_id])
            except WeirError:
                return False
            return seq in held and held[seq] != b"forged"

        await eventually(healed, 10, f"{node_id}'s forged seq {seq} replaced by the primary's record")
        self.healed_s[self.rows[-1].scenario] = time.monotonic() - forged_at

    async def fails_over_afterwards(self, node_id: str) -> float:
        """Isolate `node_id`, the primary of partition 0, after a Redis row healed and the cluster
        settled: the controller, on whichever Redis the sentinels promoted, must fail it over
        (asserted). Returns the seconds from the isolation to the promotion; heals once it is seen."""
        started = time.monotonic()
        self.network.isolate(node_id)
        try:
            promoted = await eventually_promoted(self.cluster, 0, away_from=node_id, within_s=HOLD_S * 2)
        finally:
            self.network.heal(node_id)
        return promoted - started

    async def isolate_controller(self) -> None:
        controller = (await self.admin.cluster_info()).controller_id
        await self.hold(controller, lambda: self.network.isolate(controller))

    def plan(self, leaders: list[str], follower_only: str) -> list[tuple[str, Callable[[], Awaitable[None]]]]:
        """(name, fault) per row, in order; the rows whose name starts with "the Redis primary" are
        followed, inside the row, by a node failover (`fails_over_afterwards`)."""
        network, held = self.network, f"{HOLD_S:.0f} s"
        return [
            (
                f"a primary isolated, {held} ({leaders[0]})",
                lambda: self.hold(leaders[0], lambda: network.isolate(leaders[0])),
            ),
            (
                f"a primary cut from Redis and the routers, {held}; clients and the replicator still reach it "
                f"({leaders[0]})",
                lambda: self.cut_from_metadata(leaders[0]),
            ),
            (
                f"a secondary isolated, {held} ({follower_only})",
                lambda: self.hold(follower_only, lambda: network.isolate(follower_only)),
            ),
            (
                f"30 % of a primary's outgoing packets lost, {held} ({leaders[1]})",
                lambda: self.hold(leaders[1], lambda: network.lose(leaders[1], 30)),
            ),
            (
                f"10 % of a primary's packets lost each way, {held} ({leaders[0]})",
                lambda: self.hold(leaders[0], lambda: network.lose(leaders[0], 10, inbound=True)),
            ),
            (
                f"200 ms added to every packet a primary sends and 5 % of them lost, {held} ({leaders[1]})",
                lambda: self.hold(leaders[1], lambda: network.delay(leaders[1], 200, loss_percent=5)),
            ),
            (f"a primary's links flapping, 1 s down / 1 s up x 5 ({leaders[1]})", lambda: self.flap(leaders[1])),
            (
                f"a record forged on a secondary ({follower_only}); time to heal: until its copy is the primary's",
                lambda: self.forge_on_secondary(follower_only),
            ),
            (
                f"the replicator isolated, {held}",
                lambda: self.hold("replicator-1", lambda: network.isolate("replicator-1")),
            ),
            (f"the controller router isolated, {held}", self.isolate_controller),
            (f"the Redis primary isolated, {held} (Sentinel promotes a replica)", self.isolate_redis_primary),
            ("the Redis primary SIGKILLed, restarted after 6 s", self.kill_redis_primary),
            (
                f"the Redis primary cut from its replicas and their sentinels, {held}: a failover that discards "
                "the writes it took meanwhile",
                self.cut_redis_primary_from_replicas,
            ),
        ]


async def test_network_faults_lose_nothing_and_fenced_primaries_acknowledge_nothing(
    tmp_path: Path, network: Network
) -> None:
    placements = {host: network.placement(host) for host in HOSTS}
    placements.update({f"sentinel-{number}": network.placement(host) for number, host in enumerate(REDIS_HOSTS, 1)})
    cluster = LocalCluster.start(tmp_path / "cluster", placements=placements, ha=True)
    rows: list[Row] = [Row("steady state (no fault)")]
    heal_s: dict[str, float] = {}
    failed_over_s: dict[str, float] = {}  # Redis row -> seconds until a primary isolated afterwards was replaced
    load = Load(cluster.router_addresses, timeout_s=30.0, retry_timeout_s=60.0)
    try:
        async with WeirClient(cluster.router_addresses) as admin:
            leaders, follower_only = await create_matrix_stream(admin, cluster)
            faults = NetworkFaults(cluster, network, admin, rows)
            rows[0].started = time.monotonic()
            await load.start()
            await asyncio.sleep(4)
            rows[0].ended = time.monotonic()
            for name, fault in faults.plan(leaders, follower_only):
                row = Row(name, started=time.monotonic())
                rows.append(row)
                await fault()
                healed = time.monotonic()
                await eventually(lambda: balanced(cluster), HEALED_WITHIN_S, f"{name}: preferred leaders back")
                await eventually(lambda: settled(cluster), HEALED_WITHIN_S, f"{name}: every replica back in sync")
                heal_s[name] = time.monotonic() - healed
                if name.startswith(REDIS_ROW):  # then a node fails over, on whichever Redis leads now
                    failed_over_s[name] = await faults.fails_over_afterwards(leaders[0])
                    await eventually(lambda: balanced(cluster), HEALED_WITHIN_S, f"{name}: leaders back again")
                    await eventually(lambda: settled(cluster), HEALED_WITHIN_S, f"{name}: in sync again")
                await asyncio.sleep(1.0)  # some undisturbed load inside the row
                row.ended = time.monotonic()
            await load.stop()
            await eventually(lambda: settled(cluster, equal_copies=True), 60, "the copies settled after the load")

            assign_to_rows(load.publishes, rows)
            stored = {partition: await copies(cluster, partition) for partition in range(PARTITIONS)}
            lines = tabulate(rows, stored)
            for line in lines:
                name = str(line["scenario"])
                took_s = faults.healed_s.get(name, heal_s.get(name))
                line["heal_s"] = round(took_s, 1) if took_s is not None else None
                line["fenced"] = faults.fenced.get(name, 0)
                line["failed_over_s"] = round(failed_over_s[name], 1) if name in failed_over_s else None
            table = report(lines)
            print("\n" + table)
            write_report(table)
            await assert_repeats_are_duplicates(admin, [p for p in load.publishes if p.seq], rows, stored)
    finally:
        if not load._stop.is_set():
            await load.stop()
        cluster.stop()

    for row, line in zip(rows, lines, strict=True):
        assert (line["lost"], line["duplicated"], line["divergent"], line["fenced"]) == (0, 0, 0, 0), line
        assert line["acknowledged"], line
        assert line["failed"] == 0, (line, sorted({publish.error for publish in row.publishes if publish.error}))


async def eventually_promoted(cluster: LocalCluster, partition: int, *, away_from: str, within_s: float) -> float:
    """When (time.monotonic) the metadata store first named a primary of `partition` other than
    `away_from`."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if await primary_of(cluster, partition) != away_from:
            return time.monotonic()
        await asyncio.sleep(0.05)
    raise AssertionError(f"partition {partition} not moved away from {away_from} within {within_s} s")


def report(lines: list[dict[str, object]]) -> str:
    header = (
        "| fault | acknowledged | lost | duplicated | divergent | acknowledged by a fenced primary "
        "| failed | max ack stall | p99 ack stall | time to heal | a primary failed over afterwards |"
    )
    rule = "|---|---|---|---|---|---|---|---|---|---|---|"
    body = [
        f"| {line['scenario']} | {line['acknowledged']} | {line['lost']} | {line['duplicated']} | {line['divergent']} "
        f"| {line['fenced']} | {line['failed']} | {line['max_stall_s']} s | {line['p99_stall_s']} s | "
        f"{'-' if line['heal_s'] is None else str(line['heal_s']) + ' s'} | "
        f"{'-' if line['failed_over_s'] is None else 'in ' + str(line['failed_over_s']) + ' s'} |"
        for line in lines
    ]
    return "\n".join([header, rule, *body])


NETWORK_INTRO = """What runs: every process of a cluster with the product's default timings (the metadata
Redis as `weir cluster up --ha` runs it: a primary, two replicas and three sentinels, each
sentinel on a redis-server's host; 2 routers, 3 partition nodes, 1 replicator) on a host of its
own, a Linux network namespace with one interface on a shared bridge
(`tests/network_namespaces.py`); the SDK clients run outside every host. The same load as above
(ack all, msg_ids, 2 partitions x 3 replicas, min_insync_replicas 2) with the SDK's default
timeouts runs while nftables rules in one host's namespace drop its packets: a fault is silence,
not a refused connection. Each fault lasts 6 s and is then healed; **time to heal** runs from then
until every replica is back in the in-sync set and every partition is led by its preferred
leader. **Acknowledged by a fenced primary**: while a primary is cut from Redis and the routers, a
client with the old route publishes to it directly; every ack it gets after another node was
promoted would be a write the new primary does not have. This kernel has no `netem`: loss is
nft's `numgen`, and added latency holds a host's outgoing packets in an NFQUEUE
(`tests/netem_delay.py`). The forged-record row is no network fault but a copy gone wrong (a
forged ReplicateMessage, as a fault run stored one on a plaintext cluster; bit rot or a bug
would do the same): its time to heal runs until the replicator cut the secondary's diverged tail
and copied the primary's records again, and must stay under 10 s. **A primary failed over
afterwards**: in each Redis row, once the cluster settled after the Redis failover, the primary of
partition 0 is isolated and the controller must replace it (the seconds until it did); that
failover's stall counts in the row's."""


def write_report(table: str) -> None:
    """Replace the network section of `$WEIR_RELIABILITY_REPORT` (kept after the process faults)."""
    path = os.environ.get(REPORT_ENV)
    if not path:
        return
    report_file = Path(path)
    text = report_file.read_text() if report_file.exists() else ""
    text = re.split(rf"\n{re.escape(SECTION)}\n", text)[0].rstrip()
    today = datetime.date.today().isoformat()
    report_file.write_text(f"{text}\n\n{SECTION}\n\n{NETWORK_INTRO}\n\n### Latest run ({today})\n\n{table}\n")
