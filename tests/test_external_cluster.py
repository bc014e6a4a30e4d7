"""The integration suite against an external cluster (WEIR_TEST_ROUTERS, see tests/conftest.py).

`weir cluster up` starts a cluster whose processes outlive the command (as `docker compose up`
would); a child `pytest` then runs cluster tests with WEIR_TEST_ROUTERS naming its routers. The
tests that need only addresses must pass, the ones that need processes of their own must be
skipped with the reason, and nothing may have run against a cluster of the child's own: the streams
the passing tests created are in the external cluster, and the child never had a child process
(sampled every 50 ms while it runs: a node, router or redis-server lives for seconds).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path
from xml.etree import ElementTree

import pytest
from weir.cluster import WeirClient
from weir_cli.launcher import pid_alive, read_cluster_state, stop_pids

from tests.conftest import EXTERNAL_ROUTERS_VARIABLE, OWN_PROCESSES_SKIP_REASON, needs_own_processes
from tests.test_cli_cluster import ok, pids_using, state_pids, weir

pytestmark = [pytest.mark.slow, pytest.mark.timeout(420)]

ROOT = Path(__file__).resolve().parent.parent
CHILD_TIMEOUT_S = 300.0
SAMPLE_INTERVAL_S = 0.05

# What the child runs: cluster tests that take only addresses, and some that need processes.
SELECTION = ["tests/test_cluster.py", "tests/test_consumer_lag.py", "tests/test_smoke.py"]
EXPECTED_PASSED = {
    "tests.test_cluster::test_sixteen_partitions_spread_and_publishes_land_where_query_route_says",
    "tests.test_cluster::test_consumer_group_owns_each_partition_once_and_loses_nothing_across_a_rebalance",
    "tests.test_cluster::test_replicas_are_placed_on_distinct_nodes",
    "tests.test_consumer_lag::test_only_the_primary_exports_a_partitions_lag",
}
EXPECTED_SKIPPED = {
    # read the replicator's (or a node's) /metrics, which the routers do not tell
    "tests.test_cluster::test_a_fetch_that_finds_a_commit_in_flight_waits_for_it_and_loses_nothing",
    "tests.test_cluster::test_a_consumer_acking_under_replicas_3_does_not_make_the_replicator_pull_in_a_loop",
    "tests.test_cluster::test_followers_in_step_share_one_fetch_a_round",
    "tests.test_cluster::test_one_read_of_the_primarys_consumer_state_serves_both_secondaries",
    "tests.test_cluster::test_killing_the_controller_router_hands_the_lease_over_and_routing_keeps_working",
    "tests.test_cluster::test_a_restarted_node_keeps_its_partitions_and_re_registers",
    "tests.test_consumer_lag::test_lag_is_last_seq_minus_the_ack_floor_and_moves_with_acks",
    "tests.test_smoke::test_publish_then_read",
}


def descendants(pid: int) -> set[int]:
    """The pids of every living descendant of `pid` (from /proc's parent pids)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                parents[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
    found: set[int] = set()
    frontier = {pid}
    while frontier:
        frontier = {child for child, parent in parents.items() if parent in frontier} - found
        found |= frontier
    return found


def run_watched(command: list[str], env: dict[str, str], log_path: Path) -> tuple[int, set[int]]:
    """Run `command` (output to `log_path`) and sample its descendants every SAMPLE_INTERVAL_S;
    returns (exit code, every descendant pid seen). Fails after CHILD_TIMEOUT_S."""
    with log_path.open("w") as log:
        child = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    spawned: set[int] = set()
    deadline = time.monotonic() + CHILD_TIMEOUT_S
    while child.poll() is None:
        if time.monotonic() > deadline:
            child.kill()
            child.wait()
            raise AssertionError(f"{command} ran over {CHILD_TIMEOUT_S:.0f}s")
        spawned |= descendants(child.pid)
        time.sleep(SAMPLE_INTERVAL_S)
    return child.returncode, spawned


def outcomes(junit_xml: Path) -> dict[str, tuple[str, str]]:
    """'module::test' -> (passed | skipped | failed, message) from a JUnit XML report."""
    result: dict[str, tuple[str, str]] = {}
    for case in ElementTree.parse(junit_xml).getroot().iter("testcase"):
        name = f"{case.get('classname')}::{case.get('name')}"
        result[name] = ("passed", "")
        for kind, outcome in (("skipped", "skipped"), ("failure", "failed"), ("error", "failed")):
            element = case.find(kind)
            if element is not None:
                result[name] = (outcome, element.get("message", ""))
    return result


def stream_prefix(test_name: str) -> str:
    """What conftest's `stream_name` starts a test's stream names with."""
    return re.sub(r"[^A-Za-z0-9_-]", "_", test_name)[:80] + "-"


async def test_cluster_tests_run_against_an_external_cluster_and_start_no_process(tmp_path: Path) -> None:
    needs_own_processes()
    data_dir = tmp_path / "external"
    try:
        started = await asyncio.to_thread(weir, "--json", "cluster", "up", "--data-dir", str(data_dir), cwd=tmp_path)
        up = json.loads(ok(started))
        routers = [router["address"] for router in up["routers"]]
        report = tmp_path / "child.xml"
        env = {**os.environ, EXTERNAL_ROUTERS_VARIABLE: ",".join(routers)}
        command = [
            sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:randomly", "-p", "no:cacheprovider",
            f"--junitxml={report}", f"--basetemp={tmp_path / 'child-tmp'}", *SELECTION,
        ]  # fmt: skip
        returncode, spawned = await asyncio.to_thread(run_watched, command, env, tmp_path / "child.log")
        output = (tmp_path / "child.log").read_text()
        assert returncode == 0, output[-6000:]

        seen = outcomes(report)
        passed = {name for name, (outcome, _) in seen.items() if outcome == "passed"}
        skipped = {name: message for name, (outcome, message) in seen.items() if outcome == "skipped"}
        assert passed == EXPECTED_PASSED, output[-6000:]
        assert set(skipped) == EXPECTED_SKIPPED, output[-6000:]
        assert all(OWN_PROCESSES_SKIP_REASON in message for message in skipped.values()), skipped

        # They ran against this cluster: the streams they created are in it ...
        async with WeirClient(routers) as client:
            streams = await client.list_streams()
        for name in EXPECTED_PASSED:
            prefix = stream_prefix(name.split("::")[1])
            assert any(stream.startswith(prefix) for stream in streams), (prefix, streams)
        # ... and not against one of the child's own: it started no process at all.
        assert spawned == set(), f"the child pytest started processes: {sorted(spawned)}"
        assert list((tmp_path / "child-tmp").rglob("*.log")) == []  # launcher processes log there
    finally:
        state = read_cluster_state(data_dir)
        known = set(state_pids(state)) if state else set()
        with contextlib.suppress(subprocess.TimeoutExpired):
            weir("--json", "cluster", "down", "--data-dir", str(data_dir), cwd=tmp_path)
        leftover = sorted(pid for pid in known | set(pids_using(data_dir)) if pid_alive(pid))
        if leftover:  # last resort: never leak the cluster's processes
            stop_pids(leftover, timeout_s=5)
