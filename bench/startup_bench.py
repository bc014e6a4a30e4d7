"""How fast the CLI answers and a local cluster starts (issue 52): CPU a command costs, a TAB
completion's wall time, and `weir cluster up`'s wall time for the default topology.

Run: ``uv run python -m bench.startup_bench [--repeat N] [--out PATH] [--smoke]`` (``make
bench-startup``).

Each figure is the median of `repeat` runs of the real `weir` console script in a scratch
directory with its own state and config directories:

- ``version_cpu_s``, ``help_cpu_s``: user + system CPU of `weir --version` and `weir --help`;
- ``stream_list_cpu_s``: of `weir stream list` against a running cluster (the one `up` started);
- ``completion_wall_s``: `weir st<TAB>` as bash asks it (argcomplete's environment), wall time;
- ``cluster_up_wall_s``: `weir cluster up` (redis, 2 routers, 3 nodes, a replicator, a gateway, an
  invoker) until it returns with every process serving; each run starts on the ports the last one
  recorded, as a user's second `up` does; ``cluster_up_first_wall_s``: the first one.
- ``import_floor_cpu_s``: `python -c "import grpc.aio"`, the least any command that calls the cluster
  pays on this machine (the gRPC runtime).

Targets (issue 52): ≤ 0.3 s CPU for `--version` and `stream list`, ≤ 0.3 s for a completion, ≤ 5 s
wall for `cluster up` on a quiet machine. CPU times come from the children's rusage, so they do not
depend on how busy the machine is; wall times do.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.report import print_report

WEIR = [sys.executable, "-m", "weir_cli.cli"]


def child_cpu_s(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Run `command`; (user + system CPU of it and its children, wall seconds). Errors:
    CalledProcessError when it fails."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, check=True, capture_output=True, timeout=300)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), wall


def completion_env(env: dict[str, str], line: str, output: Path) -> dict[str, str]:
    """The environment bash's completion hook gives the `weir` script for TAB at the end of `line`
    (argcomplete's protocol; the answer goes to `output`)."""
    return {
        **env,
        "_ARGCOMPLETE": "1",
        "_ARGCOMPLETE_SHELL": "bash",
        "COMP_LINE": line,
        "COMP_POINT": str(len(line)),
        "COMP_TYPE": "9",
        "_ARGCOMPLETE_IFS": "\013",
        "_ARGCOMPLETE_STDOUT_FILENAME": str(output),
    }


def median_of(repeat: int, run: Callable[[], float]) -> float:
    return round(statistics.median(run() for _ in range(repeat)), 3)


def measure(repeat: int, scratch: Path) -> dict[str, Any]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("WEIR_")}
    env |= {"XDG_STATE_HOME": str(scratch / "state"), "XDG_CONFIG_HOME": str(scratch / "config")}
    figures: dict[str, Any] = {"repeat": repeat}
    figures["import_floor_cpu_s"] = median_of(
        repeat, lambda: child_cpu_s([sys.executable, "-c", "import grpc.aio"], scratch, env)[0]
    )
    figures["version_cpu_s"] = median_of(repeat, lambda: child_cpu_s([*WEIR, "--version"], scratch, env)[0])
    figures["help_cpu_s"] = median_of(repeat, lambda: child_cpu_s([*WEIR, "--help"], scratch, env)[0])
    answer = scratch / "completion.txt"
    tab = completion_env(env, "weir st", answer)
    figures["completion_wall_s"] = median_of(repeat, lambda: child_cpu_s([*WEIR], scratch, tab)[1])
    figures["completion_answer"] = sorted(answer.read_text().split("\013"))
    ups: list[float] = []
    try:
        for index in range(repeat):
            ups.append(child_cpu_s([*WEIR, "cluster", "up"], scratch, env)[1])
            if index == 0:
                figures["stream_list_cpu_s"] = median_of(
                    repeat, lambda: child_cpu_s([*WEIR, "stream", "list"], scratch, env)[0]
                )
            child_cpu_s([*WEIR, "cluster", "down"], scratch, env)
    finally:
        subprocess.run([*WEIR, "cluster", "down"], cwd=scratch, env=env, capture_output=True, check=False)
    figures["cluster_up_first_wall_s"] = round(ups[0], 3)
    figures["cluster_up_wall_s"] = round(statistics.median(ups[1:] or ups), 3)
    figures["cpus"] = os.cpu_count()
    figures["load_average_1m"] = round(os.getloadavg()[0], 2)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.startup_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each command (median reported)")
    parser.add_argument("--smoke", action="store_true", help="one run of each (a test that the harness works)")
    parser.add_argument("--out", type=Path, help="also write the JSON report here")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="weir-startup-") as temporary:
        figures = measure(1 if args.smoke else max(1, args.repeat), Path(temporary))
    print_report(figures, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
