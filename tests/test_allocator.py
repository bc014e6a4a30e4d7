"""A Weir service fixes glibc malloc's mmap and trim thresholds at start-up (`weir_server.allocator`),
so the large buffers a replication round frees are reused by the next round instead of being handed
back to the kernel and faulted in again. The decision is pure; the effect is shown by counting a
real process's minor page faults; the services' refusal of a bad value is their real entry points."""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest
from weir_server.allocator import ENV_TUNING, describe, keep_freed_memory, tuning_refusal

from tests.service_process import wait_until_ready

GLIBC = platform.libc_ver()[0] == "glibc"
ROUNDS = 20
BUFFERS_PER_ROUND = 8  # of 1 MiB each: larger than glibc's first mmap threshold, and together than its trim threshold
PAGES_PER_ROUND = BUFFERS_PER_ROUND * (1 << 20) // os.sysconf("SC_PAGE_SIZE")

# Rounds shaped as a replicator's: several large buffers alive at once, all freed at the round's end.
# Prints the minor page faults of ROUNDS rounds, after two rounds of warm-up.
ROUNDS_SCRIPT = f"""
import resource, sys
from weir_server import allocator
if sys.argv[1] == "tuned":
    assert allocator.keep_freed_memory({{}})
def one_round():
    buffers = [b"\\x01" * (1 << 20) for _ in range({BUFFERS_PER_ROUND})]  # written, so every page is touched
    del buffers
for _ in range(2):
    one_round()
start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range({ROUNDS}):
    one_round()
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - start)
"""


def test_the_thresholds_are_set_unless_told_otherwise() -> None:
    assert tuning_refusal({}) is None
    assert tuning_refusal({ENV_TUNING: "on"}) is None
    assert tuning_refusal({ENV_TUNING: " OFF "}) == f"{ENV_TUNING}=off"
    assert tuning_refusal({"GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=512"}) is None  # not malloc's


@pytest.mark.parametrize(
    "environ, named",
    [
        ({"MALLOC_TRIM_THRESHOLD_": "1048576"}, "MALLOC_TRIM_THRESHOLD_"),
        ({"MALLOC_MMAP_THRESHOLD_": "1048576", "MALLOC_TOP_PAD_": "0"}, "MALLOC_MMAP_THRESHOLD_, MALLOC_TOP_PAD_"),
        ({"GLIBC_TUNABLES": "glibc.malloc.trim_threshold=1048576"}, "GLIBC_TUNABLES"),
    ],
)
def test_glibcs_own_settings_win(environ: dict[str, str], named: str) -> None:
    refusal = tuning_refusal(environ)
    assert refusal is not None and named in refusal
    assert keep_freed_memory(environ) is False
    assert describe(environ, kept=False) == f"malloc thresholds left as they are: {refusal}"


def test_a_value_other_than_on_or_off_names_the_variable() -> None:
    with pytest.raises(ValueError, match=f"{ENV_TUNING} must be 'on' or 'off' \\(got 'maybe'\\)"):
        tuning_refusal({ENV_TUNING: "maybe"})


@pytest.mark.skipif(not GLIBC, reason="the thresholds are glibc malloc's")
def test_freed_buffers_are_reused_not_faulted_in_again() -> None:
    def faults(mode: str) -> int:
        env = {key: value for key, value in os.environ.items() if not key.startswith(("MALLOC_", "GLIBC_TUNABLES"))}
        completed = subprocess.run(
            [sys.executable, "-c", ROUNDS_SCRIPT, mode],
            check=False,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert completed.returncode == 0, completed.stderr
        return int(completed.stdout)

    # glibc's defaults hand each round's freed heap top back, so every round faults its pages in again
    assert faults("default") > ROUNDS * PAGES_PER_ROUND // 2
    # with the thresholds fixed the pages stay the process's: no round after the first faults
    assert faults("tuned") < PAGES_PER_ROUND // 4


@pytest.mark.parametrize(
    ("module", "prog"),
    [
        ("weir_router", "weir-router"),
        ("weir_partition_node", "weir-partition-node"),
        ("weir_replicator", "weir-replicator"),
        ("weir_gateway", "weir-gateway"),
        ("weir_invoker", "weir-invoker"),
        ("weir_numaflow_source", "weir-numaflow-source"),
        ("weir_analytics", "weir-analytics"),
    ],
)
def test_every_service_refuses_a_bad_value_in_one_line(module: str, prog: str) -> None:
    env = {key: value for key, value in os.environ.items() if not key.startswith("WEIR_")}
    completed = subprocess.run(
        [sys.executable, "-m", module],
        check=False,
        env={**env, ENV_TUNING: "maybe"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 2, completed.stderr
    assert completed.stderr.strip().splitlines() == [f"{prog}: {ENV_TUNING} must be 'on' or 'off' (got 'maybe')"]


@pytest.mark.skipif(not GLIBC, reason="the thresholds are glibc malloc's")
@pytest.mark.parametrize(
    ("tuning", "logged"),
    [
        ({}, "weir-partition-node: malloc thresholds fixed: mmap 32 MiB, trim 64 MiB"),
        ({ENV_TUNING: "off"}, f"weir-partition-node: malloc thresholds left as they are: {ENV_TUNING}=off"),
    ],
)
def test_a_started_node_says_what_it_did(tmp_path: Path, tuning: dict[str, str], logged: str) -> None:
    ready, log = tmp_path / "ready.json", tmp_path / "node.log"
    flags = ["--data-dir", str(tmp_path / "data"), "--client-port", "0", "--internal-port", "0"]
    flags += ["--metrics-port", "0", "--ready-file", str(ready), "--plaintext"]
    env = {key: value for key, value in os.environ.items() if not key.startswith(("WEIR_", "MALLOC_", "GLIBC_"))}
    with log.open("w") as output:
        process = subprocess.Popen(
            [sys.executable, "-m", "weir_partition_node", *flags], env={**env, **tuning}, stderr=output
        )
    try:
        wait_until_ready(process, ready, "node", log=log)
        assert logged in log.read_text()
    finally:
        process.terminate()
        process.wait(timeout=30)
