"""Every service takes its settings as flags too (over the environment), `--help` lists them and
starts nothing, and a bad setting is one clear line and exit status 2, never a traceback. Real entry
points in subprocesses."""

from __future__ import annotations

import datetime
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc
from weir_cli.launcher import start_node
from weir_cli.process_basics import free_port
from weir_router.settings import RouterSettings
from weir_server.service_settings import load_settings

from tests.conftest import needs_own_processes
from tests.service_process import wait_until_ready

SERVICES = [
    ("weir_router", "weir-router", "--group-session-timeout-ms", "WEIR_ROUTER_PORT", "--port"),
    ("weir_partition_node", "weir-partition-node", "--replica-lag-max-ms", "WEIR_NODE_CLIENT_PORT", "--client-port"),
    ("weir_replicator", "weir-replicator", "--snapshot-interval-ms", "WEIR_REPLICATOR_METRICS_PORT", "--metrics-port"),
    ("weir_gateway", "weir-gateway", "--kafka-pixy-port", "WEIR_GATEWAY_KAFKA_PIXY_PORT", "--kafka-pixy-port"),
    ("weir_analytics", "weir-analytics", "--stats-stream", "WEIR_ANALYTICS_METRICS_PORT", "--metrics-port"),
    ("weir_invoker", "weir-invoker", "--journal-partitions", "WEIR_INVOKER_PORT", "--port"),
]
IDS = [service[1] for service in SERVICES]


def environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without any `WEIR_*` variable, plus `extra`."""
    clean = {key: value for key, value in os.environ.items() if not key.startswith("WEIR_")}
    return {**clean, **(extra or {})}


def run(module: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env=environment(env),
    )


@pytest.mark.parametrize(("module", "prog", "known_flag", "variable", "flag"), SERVICES, ids=IDS)
def test_help_lists_the_settings_and_starts_nothing(
    module: str, prog: str, known_flag: str, variable: str, flag: str
) -> None:
    started = time.monotonic()
    completed = run(module, "--help")
    assert completed.returncode == 0, completed.stderr
    assert completed.stdout.startswith(f"usage: {prog}")
    assert known_flag in completed.stdout and "(default:" in completed.stdout
    assert f"[env: {variable}]" in " ".join(completed.stdout.split())  # each flag names its variable
    assert "--log-level" in completed.stdout and "--log-format" in completed.stdout
    assert time.monotonic() - started < 30  # it returned: nothing was started on the default ports


@pytest.mark.parametrize(("module", "prog", "known_flag", "variable", "flag"), SERVICES, ids=IDS)
def test_a_bad_setting_is_one_line_and_exit_2(
    module: str, prog: str, known_flag: str, variable: str, flag: str
) -> None:
    from_env = run(module, env={variable: "abc"})
    assert from_env.returncode == 2
    lines = from_env.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in from_env.stderr, from_env.stderr
    assert lines[0].startswith(f"{prog}: invalid setting ") and variable in lines[0] and flag in lines[0], lines
    assert "'abc'" in lines[0]
    from_flag = run(module, flag, "-5")
    assert from_flag.returncode == 2 and len(from_flag.stderr.strip().splitlines()) == 1, from_flag.stderr
    unknown = run(module, "--no-such-setting", "1")
    assert unknown.returncode == 2 and "unrecognized arguments: --no-such-setting" in unknown.stderr
    assert len(unknown.stderr.strip().splitlines()) == 1, unknown.stderr


def test_a_rule_over_several_settings_is_one_line() -> None:
    completed = run("weir_partition_node", "--replication-timeout-ms", "1000", "--replica-lag-max-ms", "1000")
    assert completed.returncode == 2
    lines = completed.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in completed.stderr, lines
    assert lines[0].startswith(
        "weir-partition-node: invalid settings (WEIR_NODE_REPLICATION_TIMEOUT_MS / --replication-timeout-ms, "
        "WEIR_NODE_REPLICA_LAG_MAX_MS / --replica-lag-max-ms): replication_timeout_ms (1000) must be at least"
    ), lines


def test_an_unknown_log_level_is_one_line_not_a_logging_traceback() -> None:
    completed = run("weir_router", "--log-level", "loud")
    assert completed.returncode == 2 and "Traceback" not in completed.stderr, completed.stderr
    assert completed.stderr.strip().splitlines() == [
        "weir-router: invalid setting log_level (WEIR_ROUTER_LOG_LEVEL / --log-level): not a logging level: "
        "expected DEBUG, INFO, WARNING, ERROR or CRITICAL (any case) (got 'loud')"
    ]
    assert load_settings(RouterSettings, "weir-router", ["--log-level", "debug"]).log_level == "DEBUG"


def test_a_log_format_is_text_or_json_in_any_case() -> None:
    assert load_settings(RouterSettings, "weir-router", []).log_format == "text"
    assert load_settings(RouterSettings, "weir-router", ["--log-format", "JSON"]).log_format == "json"
    completed = run("weir_router", env={"WEIR_ROUTER_LOG_FORMAT": "xml"})
    assert completed.returncode == 2 and "Traceback" not in completed.stderr, completed.stderr
    assert completed.stderr.strip().splitlines() == [
        "weir-router: invalid setting log_format (WEIR_ROUTER_LOG_FORMAT / --log-format): "
        "Input should be 'text' or 'json' (got 'xml')"
    ]


TEXT_LINE = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO|WARNING|ERROR|CRITICAL) \[[\w.]+\] ")


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_a_started_node_logs_in_its_log_format_with_utc_timestamps(tmp_path: Path, log_format: str) -> None:
    """A real node (weir_cli.launcher) started with WEIR_NODE_LOG_FORMAT: every line of its log, from
    its first to its "stopped", is a JSON object with a `...Z` timestamp, or a text line starting
    with one."""
    needs_own_processes()
    before = datetime.datetime.now(datetime.UTC) - datetime.timedelta(seconds=1)
    node = start_node(tmp_path / "data", node_id="logged", env={"WEIR_NODE_LOG_FORMAT": log_format})
    try:  # /readyz is answered on the node's event loop: past it, its stop signal handlers are set
        with urllib.request.urlopen(f"http://127.0.0.1:{node.metrics_port}/readyz", timeout=10) as response:
            assert response.status == 200
    finally:
        assert node.stop() == 0, node.log_tail()
    lines = node.log_path.read_text().splitlines()
    assert len(lines) >= 4, lines
    if log_format == "json":
        entries = [json.loads(line) for line in lines]
        assert all(set(entry) == {"ts", "level", "logger", "message"} for entry in entries), entries
        stamps = [entry["ts"] for entry in entries]
        assert any(entry["message"] == "node logged stopped" for entry in entries), entries
    else:
        assert all(TEXT_LINE.match(line) for line in lines), lines
        stamps = [line.split(" ", 1)[0] for line in lines]
        assert lines[-1].endswith("[weir_partition_node.server] node logged stopped"), lines
    after = datetime.datetime.now(datetime.UTC) + datetime.timedelta(seconds=1)
    for stamp in stamps:
        assert stamp.endswith("Z")
        assert before <= datetime.datetime.fromisoformat(stamp) <= after, (stamp, before, after)


def test_flags_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEIR_ROUTER_PORT", "7700")
    monkeypatch.setenv("WEIR_ROUTER_LEASE_MS", "4000")
    settings = load_settings(RouterSettings, "weir-router", ["--port", "7800", "--advertise-host", "router-9"])
    assert (settings.port, settings.lease_ms, settings.advertise_host) == (7800, 4000, "router-9")


def test_a_node_started_with_flags_serves_where_they_say(tmp_path: Path) -> None:
    """The real entry point reads its own argv: the flags' data directory and client port, over
    environment variables that would otherwise fail (a bad port) or point elsewhere."""
    port, ready = free_port(), tmp_path / "ready.json"
    flags = ["--data-dir", str(tmp_path / "from-flag"), "--client-port", str(port), "--ready-file", str(ready)]
    flags += ["--internal-port", "0", "--metrics-port", "0", "--plaintext"]
    env = environment({"WEIR_NODE_CLIENT_PORT": "abc", "WEIR_NODE_DATA_DIR": str(tmp_path / "from-env")})
    process = subprocess.Popen([sys.executable, "-m", "weir_partition_node", *flags], env=env)
    try:
        assert wait_until_ready(process, ready, "node")["client_port"] == port
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            response = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=5)
        assert response.status == health_pb2.HealthCheckResponse.SERVING
        assert (tmp_path / "from-flag").is_dir() and not (tmp_path / "from-env").exists()
    finally:
        process.terminate()
        process.wait(timeout=30)


def test_the_gateway_serves_rocketmq_where_its_flag_says(tmp_path: Path) -> None:
    """--rocketmq-port wins over a broken WEIR_GATEWAY_ROCKETMQ_PORT; the port answers gRPC health for
    apache.rocketmq.v1.MessagingService (no cluster is needed to start)."""
    port, ready = free_port(), tmp_path / "ready.json"
    flags = ["--rocketmq-port", str(port), "--kafka-pixy-port", "0", "--metrics-port", "0", "--ready-file", str(ready)]
    flags.append("--plaintext")
    env = environment({"WEIR_GATEWAY_ROCKETMQ_PORT": "abc", "WEIR_GATEWAY_ROUTERS": f"127.0.0.1:{free_port()}"})
    assert "[env: WEIR_GATEWAY_ROCKETMQ_PORT]" in " ".join(run("weir_gateway", "--help").stdout.split())
    process = subprocess.Popen([sys.executable, "-m", "weir_gateway", *flags], env=env)
    try:
        assert wait_until_ready(process, ready, "gateway")["rocketmq_port"] == port
        request = health_pb2.HealthCheckRequest(service="apache.rocketmq.v1.MessagingService")
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            response = health_pb2_grpc.HealthStub(channel).Check(request, timeout=5)
        assert response.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        process.terminate()
        process.wait(timeout=30)
