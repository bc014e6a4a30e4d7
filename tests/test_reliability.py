"""The fault matrix (issue 22): no loss, no duplicate, no divergence, short stalls, balanced leaders.

A real cluster (redis-server, 2 routers, 3 nodes, 1 replicator; every setting at the product's
default, as a user runs it, not the suite's faster timings) carries a stream with 2 partitions and 3 replicas, so one
node leads partition 0, one partition 1 and the third leads nothing. Three SDK clients publish
uniquely numbered messages with `ack_level="all"` and their own msg_ids (the clients retry as they
do for users) while, one after the other, the test:

- SIGKILLs the node that leads nothing (a secondary dies), and restarts it;
- SIGKILLs the primary of partition 0, and restarts it;
- SIGSTOPs the primary of partition 1 past the heartbeat TTL, and SIGCONTs it;
- SIGKILLs the replicator, and restarts it;
- SIGKILLs the controller router, and restarts it.

Between faults it waits until every copy is equal and in sync and every partition is led by its
preferred leader again (the controller's rebalance; at most 30 s after the fault ends). Then it
reads every partition from every copy and counts, per fault (by when a publish started): the
acknowledged publishes, acknowledged ones missing at their seq (lost), payloads stored more than
once (duplicated), copies that differ (divergent), publishes that failed for good, and the
publish-to-ack stall (max and p99); a publish counts in the row during which it was answered, so
one in flight when a fault strikes counts for that fault. Finally every acknowledged message is published again with its
msg_id: every one must be answered as a duplicate at its original seq, across all those
failovers. The matrix is printed and written to `$WEIR_RELIABILITY_REPORT` (`make reliability`
writes docs/reliability.md).
"""

from __future__ import annotations

import asyncio
import datetime
import os
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from weir.cluster import WeirClient
from weir_cli.launcher import LocalCluster, ProcessHandle

from tests.conftest import eventually, needs_own_processes
from tests.fault_matrix import (
    PARTITIONS,
    Faults,
    Load,
    Row,
    assert_repeats_are_duplicates,
    assign_to_rows,
    balanced,
    by_name,
    copies,
    create_matrix_stream,
    settled,
    tabulate,
)

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

FAULT_HOLD_S = 3.0
REBALANCED_WITHIN_S = 30.0
SECONDARY_STALL_MAX_S = 2.0
PRIMARY_STALL_MAX_S = 3.0  # a primary's SIGKILL, with the default heartbeat TTL (issue 54)
REPORT_ENV = "WEIR_RELIABILITY_REPORT"
NETWORK_SECTION = "\n## Network faults\n"


async def scenario(
    cluster: LocalCluster, rows: list[Row], name: str, fault: Callable[[], Awaitable[None]], *, moves_leaders: bool
) -> None:
    row = Row(name, started=time.monotonic())
    rows.append(row)
    await fault()
    recovered = time.monotonic()
    if moves_leaders:
        await eventually(lambda: balanced(cluster), REBALANCED_WITHIN_S, f"{name}: preferred leaders back")
        row.rebalanced_s = time.monotonic() - recovered
    await eventually(lambda: settled(cluster), 60, f"{name}: every replica back in sync")
    await asyncio.sleep(1.0)  # some undisturbed load inside the row
    row.ended = time.monotonic()


def report(lines: list[dict[str, object]], overall_p99_s: float) -> str:
    header = (
        "| scenario | acknowledged | lost | duplicated | divergent | failed | max ack stall | p99 ack stall "
        "| leaders rebalanced after |"
    )
    rule = "|---|---|---|---|---|---|---|---|---|"
    body = [
        f"| {line['scenario']} | {line['acknowledged']} | {line['lost']} | {line['duplicated']} | {line['divergent']} "
        f"| {line['failed']} | {line['max_stall_s']} s | {line['p99_stall_s']} s | "
        f"{'-' if line['rebalanced_s'] is None else str(line['rebalanced_s']) + ' s'} |"
        for line in lines
    ]
    return "\n".join([header, rule, *body, "", f"p99 ack stall over the whole run: {overall_p99_s:.3f} s"])


async def test_fault_matrix_loses_nothing_duplicates_nothing_and_rebalances(tmp_path: Path) -> None:
    needs_own_processes()
    cluster = LocalCluster.start(tmp_path / "cluster")  # the product's defaults
    faults = Faults()
    rows: list[Row] = [Row("steady state (no fault)")]
    load = Load(cluster.router_addresses)
    try:
        async with WeirClient(cluster.router_addresses) as admin:
            leaders, follower_only = await create_matrix_stream(admin, cluster)
            rows[0].started = time.monotonic()
            await load.start()
            await asyncio.sleep(4)
            rows[0].ended = time.monotonic()

            async def kill_and_restart(handle: ProcessHandle) -> None:
                handle.kill()
                await asyncio.sleep(FAULT_HOLD_S)
                await faults.run(lambda: handle.start(reuse_ports=True))

            async def pause(handle: ProcessHandle) -> None:
                assert handle.process is not None
                os.kill(handle.process.pid, signal.SIGSTOP)
                await asyncio.sleep(FAULT_HOLD_S + 1)  # past the heartbeat TTL (2 s): failed over
                os.kill(handle.process.pid, signal.SIGCONT)

            async def controller() -> ProcessHandle:
                info = await admin.cluster_info()
                return next(router for router in cluster.routers if router.name == info.controller_id)

            async def kill_the_controller() -> None:
                await kill_and_restart(await controller())

            plan: list[tuple[str, Callable[[], Awaitable[None]], bool]] = [
                (
                    f"SIGKILL a secondary ({follower_only})",
                    lambda: kill_and_restart(by_name(cluster, follower_only)),
                    False,
                ),
                (f"SIGKILL a primary ({leaders[0]})", lambda: kill_and_restart(by_name(cluster, leaders[0])), True),
                (
                    f"SIGSTOP a primary past the failure timeout ({leaders[1]})",
                    lambda: pause(by_name(cluster, leaders[1])),
                    True,
                ),
                ("SIGKILL the replicator", lambda: kill_and_restart(cluster.replicators[0]), False),
                ("SIGKILL the controller router", kill_the_controller, False),
            ]
            for name, fault, moves_leaders in plan:
                await scenario(cluster, rows, name, fault, moves_leaders=moves_leaders)
            await load.stop()
            await eventually(lambda: settled(cluster, equal_copies=True), 60, "the copies settled after the load")

            assign_to_rows(load.publishes, rows)
            stored = {partition: await copies(cluster, partition) for partition in range(PARTITIONS)}
            lines = tabulate(rows, stored)
            stalls = sorted(p.ended - p.started for p in load.publishes if p.seq)
            overall_p99 = stalls[int(0.99 * (len(stalls) - 1))]
            table = report(lines, overall_p99)
            print("\n" + table)
            write_report(table)

            await assert_repeats_are_duplicates(admin, [p for p in load.publishes if p.seq], rows, stored)
            for partition in range(PARTITIONS):
                assert (await copies(cluster, partition))[follower_only] == stored[partition][follower_only]
    finally:
        if not load._stop.is_set():
            await load.stop()
        cluster.stop()
        faults.close()

    for line in lines:
        assert (line["lost"], line["duplicated"], line["divergent"]) == (0, 0, 0), line
        assert line["acknowledged"], line
    assert lines[1]["max_stall_s"] <= SECONDARY_STALL_MAX_S, lines[1]  # type: ignore[operator]
    assert lines[2]["max_stall_s"] <= PRIMARY_STALL_MAX_S, lines[2]  # type: ignore[operator]
    assert overall_p99 <= SECONDARY_STALL_MAX_S, overall_p99


REPORT_INTRO = """# Reliability: the fault matrix

Written by the slow test tier, not by hand: `make reliability` runs `tests/test_reliability.py`
and `tests/test_network_faults.py` with `WEIR_RELIABILITY_REPORT=docs/reliability.md` (CI runs the
same tests and prints the tables).
Power loss and damaged stored bytes are in [durability.md](durability.md).

What runs: a local cluster (redis-server, 2 routers, 3 partition nodes, 1 replicator; every
setting at its default, as `weir cluster up` runs it: heartbeat every 250 ms with a 2 s TTL,
controller tick 250 ms, `WEIR_NODE_REPLICA_LAG_MAX_MS` 1000,
`WEIR_ROUTER_LEADER_REBALANCE_INTERVAL_MS` 5000) with a
stream of 2 partitions x 3 replicas (min_insync_replicas 2), so one node leads each partition and
the third leads nothing. Three SDK clients with four workers each publish uniquely numbered
messages with `ack_level="all"` and their own msg_ids, retrying as the SDK does for users, while
the faults below happen one after the other; each row counts the publishes answered during it
(a publish in flight when a fault strikes counts for that fault).
After each fault the test waits until every replica is back in the in-sync set and, after a primary
moved, until the controller gave every partition back to its preferred leader ("leaders rebalanced
after": from the end of the fault). Once the load stops, every partition is read from every copy:

- **acknowledged**: publishes answered ok; **lost**: acknowledged but not at their seq on the
  primary; **duplicated**: stored more than once; **divergent**: partitions whose copies differ;
  **failed**: publishes that gave up after the SDK's 30 s of retries (none expected);
- **ack stall**: from the publish call to its acknowledgement, retries included.

Then every acknowledged message is published again with its msg_id, and each must be answered as
a duplicate at its original seq: the duplicate window survived every failover above.
"""


REPORT_READING = """## Reading the stalls

- **A secondary dies**: ack-all publishes wait until the primary drops it from the in-sync set:
  `WEIR_NODE_REPLICA_LAG_MAX_MS` (1 s) plus one in-sync maintenance interval (a tenth of it) and a
  Redis write. A follower whose fetch waits at the primary's log end counts as caught up, so the
  bound can be this short without idle followers leaving the set.
- **A primary dies** (SIGKILL): publishes to its partitions are retried by the SDK until the
  controller promotes an in-sync replica, once the node's heartbeat expired
  (`WEIR_NODE_HEARTBEAT_TTL_MS`, 2 s) and a controller tick (250 ms) passed: at most 3 s.
- **A primary pauses** (SIGSTOP): requests it already holds wait until it resumes (it then refuses
  them, its lease having lapsed, and the SDK retries on the new primary) or until the client's
  per-attempt `timeout_s`; the pause lasted 4 s here.
- **The replicator dies**: with one replicator, ack-all publishes wait until it is back (3 s down
  here, plus its start); with two or more, until its partition leases lapse
  (`WEIR_REPLICATOR_LEASE_MS`, 3 s by default).
- **The controller router dies**: clients publish to the nodes directly; only a failover that
  falls in the lease's handover (`WEIR_ROUTER_LEASE_MS`) would wait for the next controller, which
  judges a missing heartbeat only once it has held the role for that node's heartbeat TTL (so a
  Redis outage, which expires every heartbeat at once, marks no node dead).
- **Rebalance**: a returning node first catches up and rejoins the in-sync set; then, within one
  `WEIR_ROUTER_LEADER_REBALANCE_INTERVAL_MS`, each partition it prefers is handed back to it with a
  fenced handover (the old primary stops taking writes, its last records reach the new one, the next
  epoch starts after them), so nothing is truncated and idempotent retries are stored once.
"""


def write_report(table: str) -> None:
    path = os.environ.get(REPORT_ENV)
    if not path:
        return
    today = datetime.date.today().isoformat()
    report_file = Path(path)
    # the network fault matrix (tests/test_network_faults.py) keeps its own section at the end
    previous = report_file.read_text() if report_file.exists() else ""
    network = previous[previous.index(NETWORK_SECTION) :] if NETWORK_SECTION in previous else ""
    text = f"{REPORT_INTRO}\n## Latest run ({today})\n\n{table}\n\n{REPORT_READING}"
    report_file.write_text(f"{text.rstrip()}\n\n{network}" if network else text)
