"""The benchmarks run end to end and print JSON: the single-node one (`python -m bench.node_bench
--smoke`), the replication one on a local cluster (`python -m bench.cluster_bench --smoke`), the
comparison with NATS JetStream and Redis Streams (`python -m bench.compare --smoke`) and the CPU
profile by process and thread (`python -m bench.cpu_profile`), the storage commit latency
(`python -m bench.commit_latency`, in process) and the storage layouts' commit cost
(`python -m bench.storage_layout`, in process).

Only the shape of the reports is checked (every workload and configuration present, msgs/s > 0, the
keys of the figures); no figures are asserted. All but the in-process ones start real node (and
cluster) processes, so they run in the slow tier.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import needs_own_processes
from tests.system_tools import needs_java

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
CLUSTER_WORKLOADS = ("publish_batch_100_p1", "publish_batch_100_p16", "publish_single_c1")
CLUSTER_CONFIGS = ("replicas1_leader", "replicas3_all")


def run_json(arguments: list[str], timeout_s: float) -> Any:
    """Run `python -m <arguments>` from the repository root; it must exit 0. Returns its stdout as JSON."""
    completed = subprocess.run(
        [sys.executable, "-m", *arguments],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-4000:]
    return json.loads(completed.stdout)


@pytest.mark.slow
def test_node_bench_smoke() -> None:
    needs_own_processes()
    report = run_json(["bench.node_bench", "--smoke", "--repeat", "1"], timeout_s=240)
    assert set(report["workloads"]) == set(WORKLOADS)
    for name in WORKLOADS:
        figures = report["workloads"][name]
        assert figures["msgs_per_s"] > 0, name
        assert figures["messages"] > 0, name
        assert len(figures["runs_msgs_per_s"]) == 1, name
    assert report["node"]["fsync"] == "always"


@pytest.mark.slow
def test_cluster_bench_smoke() -> None:
    needs_own_processes()
    report = run_json(["bench.cluster_bench", "--smoke", "--repeat", "1"], timeout_s=240)
    assert set(report["workloads"]) == set(CLUSTER_WORKLOADS)
    for name in CLUSTER_WORKLOADS:
        entry = report["workloads"][name]
        assert set(CLUSTER_CONFIGS) <= set(entry), name
        for config in CLUSTER_CONFIGS:
            figures = entry[config]
            assert figures["msgs_per_s"] > 0, (name, config)
            assert figures["messages"] > 0, (name, config)
            assert {"mib_per_s", "cpu_us_per_msg", "replicas_converged_s", "min_in_sync_after"} <= set(figures)
            assert set(figures["latency_us"]) == {"p50", "p99"}, (name, config)
            assert len(figures["runs_msgs_per_s"]) == 1, (name, config)
        assert isinstance(entry["ratio_replicas3_all_to_replicas1"], float), name
        assert len(entry["runs_ratio"]) == 1, name
        assert set(entry["latency_ratio_replicas3_all_to_replicas1"]) == {"p50", "p99"}, name
    assert {"node", "router", "replicator", "redis", "client"} <= set(report["peak_rss_mib"])
    assert report["configs"]["replicas3_all"] == {"replicas": 3, "min_insync_replicas": 2, "ack_level": "all"}
    assert report["cluster"]["fsync"] == "always"


@pytest.mark.slow
def test_scale_bench_smoke() -> None:
    needs_own_processes()
    report = run_json(["bench.scale_bench", "--smoke"], timeout_s=240)
    assert report["partition_replicas"] == 3 * report["partitions"] == 96
    for window in ("empty", "loaded"):
        assert report[window]["cpu_percent"] >= 0 and report[window]["nodes_rss_mib"] > 0, window
    assert "stopped" not in report, report.get("stopped")
    assert report["create_s"]["largest"] > 0
    assert report["publish_empty_msgs_per_s"] > 0 and report["publish_loaded_msgs_per_s"] > 0
    assert {"cpu_percent_per_partition_replica", "rss_mib_per_partition_replica"} <= set(report)


def test_compare_bench_smoke(tmp_path: Path) -> None:
    """`python -m bench.compare --smoke`: Weir (without and with msg_ids), NATS JetStream (default
    and always-sync) and Redis Streams each run the two smoke workloads (every message acknowledged
    and received exactly once, or the harness exits 1); the JSON and the Markdown report have every
    system and figure."""
    needs_own_processes()
    report_path = tmp_path / "compare.md"
    report = run_json(["bench.compare", "--smoke", "--report", str(report_path)], timeout_s=400)
    assert report["failures"] == {}
    assert set(report["workloads"]) == {"p1-r1-leader", "p16-r3-all"}
    systems = {"weir", "weir-idempotent", "nats-jetstream", "nats-jetstream-sync", "redis-streams"}
    for name, workload in report["workloads"].items():
        assert set(workload["systems"]) == systems, name
        for system, figures in workload["systems"].items():
            assert figures["publish"]["msgs_per_s"] > 0, (name, system)
            assert figures["consume"]["msgs_per_s"] > 0, (name, system)
            assert set(figures["publish"]["latency_us"]) == {"p50", "p99", "p99_9"}, (name, system)
            assert "error" not in figures["latency"], (name, system, figures["latency"])  # the fixed-rate phase
            assert figures["latency"]["messages"] == figures["latency"]["rate_msgs_per_s"], (name, system)
            assert figures["latency"]["achieved_msgs_per_s"] > 0, (name, system)
            assert set(figures["latency"]["end_to_end_us"]) == {"p50", "p99", "p99_9"}, (name, system)
            assert figures["peak_rss_mib"], (name, system)
            assert figures["semantics"], (name, system)
    markdown = report_path.read_text()
    assert "## p16-r3-all" in markdown
    assert all(f"| {system} |" in markdown for system in systems)


@pytest.mark.slow
def test_cpu_profile_smoke() -> None:
    """`python -m bench.cpu_profile`: every case reports msgs/s, the CPU per message of each server
    process split by thread (the primary's event loop among them), group commits and served calls per
    100 messages, and each process's minor page faults; the fixed-rate case also its publish-to-ack
    latency."""
    needs_own_processes()
    cases = run_json(["bench.cpu_profile", "--seconds", "1", "--messages", "2000"], timeout_s=300)["cases"]
    assert set(cases) == {"publish-r1", "publish-r3-all", "publish-r3-all-p16", "consume-r1", "fixed-rate-r3-all"}
    for name, case in cases.items():
        assert case["msgs_per_s"] > 0, name
        processes = case["cpu_us_per_msg"]
        if name.endswith("-p16"):  # every node leads some of the 16 partitions and follows the rest
            nodes = [label for label in processes if label.startswith("partition-node")]
            leads = [int(label.split("(leads ")[1].split(" of ")[0]) for label in nodes]
            assert len(nodes) == 3 and sum(leads) == 16, (name, list(processes))
            primary = [nodes[leads.index(max(leads))]]  # the node that leads the most
        else:
            primary = [label for label in processes if label.endswith("(primary)")]
        assert len(primary) == 1, (name, list(processes))
        assert "main" in processes[primary[0]]["threads"], name
        assert processes[primary[0]]["user_us"] > 0, name
    r3 = cases["publish-r3-all"]
    assert sum(label.endswith("(secondary)") for label in r3["cpu_us_per_msg"]) == 2
    assert "weir-replicator" in r3["cpu_us_per_msg"]
    faults = r3["minor_faults_per_100_msgs"]
    assert set(faults) == set(r3["cpu_us_per_msg"]) and all(count >= 0 for count in faults.values()), faults
    # per node: group commits and served calls per 100 messages; the replicator pulls on the stream
    counters = r3["per_100_msgs"]
    assert len(counters) == 3
    assert any("FetchReplicationStream" in node for node in counters.values()), counters
    assert all("group commits" in node for node in counters.values()), counters
    fixed_rate = cases["fixed-rate-r3-all"]  # the consumer's calls show beside the publishes
    assert any("FetchStream" in node and "AckBatchStream" in node for node in fixed_rate["per_100_msgs"].values())
    assert 0 < fixed_rate["publish_to_ack_ms"]["p50"] <= fixed_rate["publish_to_ack_ms"]["p99"]


@pytest.mark.parametrize("checkpoint_bytes", [0, 65536])
def test_commit_latency_smoke(checkpoint_bytes: int) -> None:
    """In process (no servers): the report's shape; with a checkpoint every 64 KiB the background
    thread ran some."""
    report = run_json(["bench.commit_latency", "--commits", "30", "--checkpoint-bytes", str(checkpoint_bytes)], 120)
    assert report["commits"] == 30
    assert set(report["commit_us"]) == {"mean", "p50", "p90", "p99", "p99_9", "max"}
    assert report["cpu_us_per_record"] > 0
    if checkpoint_bytes:
        assert report["background_checkpoints"] > 0
    else:
        assert report["background_checkpoints"] is None


def test_storage_layout_smoke() -> None:
    """In process: every layout commits and reports its CPU and wall time per commit."""
    report = run_json(["bench.storage_layout", "--commits", "20"], 120)
    assert report["records_per_commit"] == 100 and report["sync"] == "always"
    assert set(report["layouts"]) == {"rows", "batch+index", "batch"}
    for layout, figures in report["layouts"].items():
        assert figures["cpu_ms_per_commit"] > 0 and figures["wall_ms_per_commit"] > 0, layout


@pytest.mark.slow
def test_gateway_bench_smoke() -> None:
    """`python -m bench.gateway_bench --smoke`: the bare call, the bare proxy, sync Produce and
    ConsumeNAck through a real gateway, each with calls, a rate and the answering process's CPU per
    call, how many PublishBatch requests carried the Produce calls, and the ratios."""
    needs_own_processes()
    report = run_json(["bench.gateway_bench", "--smoke"], timeout_s=300)
    for phase in ("bare_unary", "bare_proxy", "produce_sync", "consume_n_ack"):
        assert report[phase]["calls"] > 0 and report[phase]["msgs_per_s"] > 0, phase
        assert report[phase]["server_cpu_us_per_call"] >= 0, phase
    assert 0 < report["produce_sync"]["node_publish_calls_per_100"] <= 100
    assert report["consume_n_ack"]["distinct_messages"] == report["consume_n_ack"]["calls"]
    for ratio in ("gateway_to_bare_cpu", "gateway_to_bare_proxy_cpu"):
        assert report[ratio] is None or report[ratio] > 0, ratio
    assert len(report["rounds"]) == report["settings"]["rounds"] == 1


@pytest.mark.slow
def test_rocketmq_bench_smoke() -> None:
    """`python -m bench.rocketmq_bench --smoke`: publish and consume natively and through a real
    gateway's RocketMQ v1 and v2 (RocketMQ 5) APIs, on its one RocketMQ port, each with a rate and
    CPU per message, and the ratios to native."""
    needs_own_processes()
    report = run_json(["bench.rocketmq_bench", "--smoke"], timeout_s=300)
    phases = ("native_publish", "send_message", "send_message_v2", "native_consume", "receive_ack", "receive_ack_v2")
    for phase in phases:
        assert report[phase]["messages"] > 0 and report[phase]["msgs_per_s"] > 0, phase
        assert report[phase]["gateway_cpu_us_per_message"] >= 0 and report[phase]["node_cpu_us_per_message"] >= 0
    sent = sum(report[phase]["messages"] for phase in ("native_publish", "send_message", "send_message_v2"))
    assert report["native_consume"]["messages"] == report["receive_ack"]["messages"] == sent
    assert report["receive_ack_v2"]["messages"] == sent
    for ratio in ("send", "receive", "send_v2", "receive_v2"):
        assert report[f"{ratio}_to_native_throughput"] > 0, ratio


@pytest.mark.slow
def test_waymaker_bench_smoke() -> None:
    """`python -m bench.waymaker_bench --smoke`: publish and consume natively and through a real
    gateway's waymaker.streams API, each with a rate and CPU per message, and the ratios."""
    needs_own_processes()
    report = run_json(["bench.waymaker_bench", "--smoke"], timeout_s=300)
    for phase in ("native_publish", "seed_publish", "native_consume", "seed_consume"):
        assert report[phase]["messages"] > 0 and report[phase]["msgs_per_s"] > 0, phase
    assert report["native_consume"]["messages"] == report["seed_consume"]["messages"] == 800
    assert report["publish_to_native_throughput"] > 0 and report["consume_to_native_throughput"] > 0


@pytest.mark.slow
def test_kv_bench_smoke() -> None:
    """`python -m bench.kv_bench --smoke`: put and get on Weir (through a router and with the SDK),
    NATS JetStream KV and Redis, each with a rate and latency percentiles, and the ratios to NATS."""
    needs_own_processes()
    report = run_json(["bench.kv_bench", "--smoke"], timeout_s=300)
    for system in ("weir_router", "weir_sdk", "nats_kv", "redis", "redis_hash"):
        for operation in ("put", "get"):
            figures = report[system][operation]
            assert figures["operations"] > 0 and figures["ops_per_s"] > 0, (system, operation)
            assert 0 < figures["p50_ms"] <= figures["p99_ms"], (system, operation)
    assert report["weir_router_put_to_nats"] > 0 and report["weir_sdk_get_to_nats"] > 0


@pytest.mark.slow
def test_objects_bench_smoke() -> None:
    """`python -m bench.objects_bench --smoke`: objects put and got back through Weir's SDK and router
    and NATS's object store, each with a rate, and the ratios to NATS."""
    needs_own_processes()
    report = run_json(["bench.objects_bench", "--smoke"], timeout_s=300)
    for system in ("weir_sdk", "weir_router", "nats"):
        for operation in ("put", "get"):
            assert report[system][operation]["mib_per_s"] > 0, (system, operation)
    assert report["weir_sdk_put_to_nats"] > 0 and report["weir_router_get_to_nats"] > 0


@pytest.mark.slow
def test_invoker_bench_smoke() -> None:
    """`python -m bench.invoker_bench --smoke`: every invocation of both phases completes (a trivial
    handler, one with a ctx.run) through a real invoker with a 3-way replicated journal, each with a
    rate and CPU per invocation."""
    needs_own_processes()
    report = run_json(["bench.invoker_bench", "--smoke"], timeout_s=300)
    for phase in ("trivial", "one_run"):
        figures = report[phase]
        assert figures["invocations"] == report["settings"]["invocations"]
        assert figures["invocations_per_s"] > 0 and figures["invoker_cpu_us_per_invocation"] > 0, phase
    assert report["settings"]["replicas"] == 3 and report["one_run_to_trivial_throughput"] > 0


@pytest.mark.slow
def test_numaflow_bench_smoke() -> None:
    """`python -m bench.numaflow_bench --smoke`: every message read and acknowledged once natively and
    once through a real Numaflow source sidecar (called as Numaflow's data plane calls it), each with
    a rate and CPU per message, and the ratio."""
    needs_own_processes()
    report = run_json(["bench.numaflow_bench", "--smoke"], timeout_s=300)
    messages = report["settings"]["messages"]
    for phase in ("native_consume", "source_read_ack", "source_read_ack_per_offset"):
        figures = report[phase]
        assert (figures["messages"], figures["distinct_messages"], figures["repeats"]) == (messages, messages, 0)
        assert figures["msgs_per_s"] > 0 and figures["node_cpu_us_per_message"] >= 0, phase
    assert report["source_read_ack"]["sidecar_cpu_us_per_message"] >= 0
    assert report["source_read_ack"]["read_requests"] >= messages / report["settings"]["read_batch"]
    assert report["source_to_native_throughput"] > 0 and report["per_offset_source_to_native_throughput"] > 0


@pytest.mark.slow
def test_security_bench_smoke() -> None:
    """`python -m bench.security_bench --smoke`: the same publishes and consume against a plaintext,
    a TLS and a TLS + auth file cluster, every message consumed once in each, with the ratios."""
    needs_own_processes()
    report = run_json(["bench.security_bench", "--smoke"], timeout_s=300)
    messages = report["settings"]["messages"]
    for mode in ("plaintext", "tls", "tls_auth"):
        assert report[mode]["publish_batched"]["messages"] == messages
        assert report[mode]["consume"]["messages"] == messages
        for phase in ("publish_batched", "publish_unary", "consume"):
            assert report[mode][phase]["msgs_per_s"] > 0, (mode, phase)
        assert report[mode]["publish_unary"]["p99_ms"] >= report[mode]["publish_unary"]["p50_ms"] > 0
    assert report["ratios"]["tls_auth_publish_unary_throughput"] > 0


def test_scrub_bench_smoke() -> None:
    """`python -m bench.scrub_bench --smoke`: publish rounds with the scrub off and on, the scrub's
    bytes checked meanwhile, and the ratio."""
    needs_own_processes()
    report = run_json(["bench.scrub_bench", "--smoke"], timeout_s=300)
    assert [entry["scrub"] for entry in report["rounds"]] == ["off", "on"] * 3
    assert all(entry["msgs_per_s"] > 0 for entry in report["rounds"])
    assert all(("scrub_bytes_per_s" in entry) == (entry["scrub"] == "on") for entry in report["rounds"])
    assert report["ratio"] > 0


@pytest.mark.slow
def test_analytics_bench_smoke() -> None:
    """`python -m bench.analytics_bench --smoke`: a real analytics job; every timed publish became
    visible in its figures, and the job's memory was sampled over its whole process tree."""
    needs_own_processes()
    needs_java()
    # a 1 s trigger instead of the default 5 s: each timed publish waits up to one trigger
    report = run_json(["bench.analytics_bench", "--smoke", "--job-setting", "TRIGGER_INTERVAL_MS=1000"], timeout_s=300)
    latency = report["publish_to_visible_ms"]
    assert 0 < latency["p50"] <= latency["p99"] <= latency["max"]
    assert report["job_rss_peak_bytes"] > 0 and report["job_processes"] >= 3
    assert report["job_rss_by_process_peak_bytes"]["jvm"] > 0


@pytest.mark.slow
def test_scheduled_bench_smoke() -> None:
    """`python -m bench.scheduled_bench --smoke`: every scheduled message delivered once, with
    lateness percentiles and the memory figures."""
    needs_own_processes()
    report = run_json(["bench.scheduled_bench", "--smoke"], timeout_s=300)
    assert (report["delivered"], report["duplicates"]) == (report["messages"], 0)
    lateness = report["lateness_ms"]
    assert 0 <= lateness["p50"] <= lateness["p99"] <= lateness["max"]
    assert report["index_bytes_per_pending"] > 0


@pytest.mark.slow
def test_weir_bench_targets_an_existing_cluster(router_addresses: list[str]) -> None:
    """`weir bench --router ...`: Weir only, against the cluster it is given (nothing started)."""
    needs_own_processes()
    arguments = [
        "weir_cli.cli",
        "bench",
        "--smoke",
        "--workloads",
        "p1-r1-leader",
        "--router",
        ",".join(router_addresses),
    ]
    report = run_json(arguments, timeout_s=300)
    assert report["failures"] == {}
    (workload,) = report["workloads"].values()
    assert set(workload["systems"]) == {"weir"}
    figures = workload["systems"]["weir"]
    assert figures["publish"]["msgs_per_s"] > 0 and figures["consume"]["msgs_per_s"] > 0
    assert "an existing cluster at" in figures["variant"]


@pytest.mark.slow
def test_startup_bench_smoke() -> None:
    """`python -m bench.startup_bench --smoke`: every figure is measured (the CLI's CPU per command,
    a completion that answers, a `cluster up` that serves and is brought down again)."""
    needs_own_processes()
    report = run_json(["bench.startup_bench", "--smoke"], timeout_s=300)
    assert report["completion_answer"] == ["stats", "stream"]
    for figure in ("version_cpu_s", "help_cpu_s", "stream_list_cpu_s", "cluster_up_wall_s", "import_floor_cpu_s"):
        assert 0 < report[figure] < 120, (figure, report[figure])
