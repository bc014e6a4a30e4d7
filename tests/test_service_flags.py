"""Every service takes its settings as flags too (over the environment), `--help` lists them and
starts nothing, and a bad setting is one clear line and exit status 2, never a traceback. Real entry
points in subprocesses."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from weir_router.settings import RouterSettings
from weir_server.service_settings import load_settings

SERVICES = [
    ("weir_router", "weir-router", "--group-session-timeout-ms", "WEIR_ROUTER_PORT", "--port"),
    ("weir_partition_node", "weir-partition-node", "--replica-lag-max-ms", "WEIR_NODE_CLIENT_PORT", "--client-port"),
    ("weir_replicator", "weir-replicator", "--snapshot-interval-ms", "WEIR_REPLICATOR_METRICS_PORT", "--metrics-port"),
    ("weir_gateway", "weir-gateway", "--kafka-pixy-port", "WEIR_GATEWAY_KAFKA_PIXY_PORT", "--kafka-pixy-port"),
    ("weir_analytics", "weir-analytics", "--stats-stream", "WEIR_ANALYTICS_METRICS_PORT", "--metrics-port"),
]
IDS = [service[1] for service in SERVICES]


def run(module: str, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {key: value for key, value in os.environ.items() if not key.startswith("WEIR_")}
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
        env={**clean, **(env or {})},
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
    assert len(lines) == 1 and lines[0].startswith("weir-partition-node: invalid settings: "), lines


def test_flags_win_over_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WEIR_ROUTER_PORT", "7700")
    monkeypatch.setenv("WEIR_ROUTER_LEASE_MS", "4000")
    settings = load_settings(RouterSettings, "weir-router", ["--port", "7800", "--advertise-host", "router-9"])
    assert (settings.port, settings.lease_ms, settings.advertise_host) == (7800, 4000, "router-9")
