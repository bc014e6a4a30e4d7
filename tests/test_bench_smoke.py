"""The single-node benchmark runs end to end (`python -m bench.node_bench --smoke`) and prints JSON.

Only the shape of the report is checked (every workload present, msgs/s > 0); no figures are
asserted. Starts a real node process, so it runs in the slow tier.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
WORKLOADS = (
    "publish_single_c1",
    "publish_single_c64",
    "publish_batch_100",
    "publish_batch_1000",
    "read_1000",
    "consume_fetch_100_ack",
    "subscribe_latency_idle",
)


@pytest.mark.slow
def test_node_bench_smoke() -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "bench.node_bench", "--smoke", "--repeat", "1"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    report = json.loads(completed.stdout)
    assert set(report["workloads"]) == set(WORKLOADS)
    for name in WORKLOADS:
        figures = report["workloads"][name]
        assert figures["msgs_per_s"] > 0, name
        assert figures["messages"] > 0, name
        assert len(figures["runs_msgs_per_s"]) == 1, name
    assert report["node"]["fsync"] == "always"
