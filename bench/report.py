"""What the benchmarks share: a report printed as JSON and, with --out, written there too
(`print_report`); for the front-door ones, running the measuring coroutine in a scratch directory
on uvloop, and a meter of wall time and CPU per message."""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any

from weir_cli.launcher import ProcessHandle

Measure = Callable[[argparse.Namespace, Path], Coroutine[Any, Any, dict[str, Any]]]


def run_and_report(measure: Measure, args: argparse.Namespace, prefix: str) -> int:
    """`measure(args, scratch_directory)` on uvloop; its figures to stdout (and `args.out`). Returns
    the exit status (0)."""
    import uvloop

    with tempfile.TemporaryDirectory(prefix=prefix) as temporary:
        results = uvloop.run(measure(args, Path(temporary)))
    print_report(results, args.out)
    return 0


def print_report(report: dict[str, Any], out: Path | None) -> None:
    """`report` as indented JSON on stdout and, with `out` (a benchmark's --out), in that file too."""
    text = json.dumps(report, indent=2)
    print(text)
    if out:
        out.write_text(text + "\n")


def clients_and_messages_main(argv: list[str] | None, measure: Measure, *, prog: str, doc: str) -> int:
    """The command line of a front-door benchmark run as `--messages` per phase over `--clients`
    tasks (`--smoke`: at most 8 and 400, to check it works; `--out`: also write the JSON there)."""
    parser = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--clients", type=int, default=32, help="concurrent client tasks")
    parser.add_argument("--messages", type=int, default=20_000, help="messages per phase")
    parser.add_argument("--smoke", action="store_true", help="tiny counts: checks it works")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    if args.smoke:
        args.clients, args.messages = min(args.clients, 8), min(args.messages, 400)
    return run_and_report(measure, args, f"weir-{prog.replace('.', '-')}-")


class Meter:
    """Wall time and CPU (user + system) of the measured processes and of this one, from `start()`."""

    def __init__(self, processes: Mapping[str, ProcessHandle]) -> None:
        self.processes = dict(processes)
        self.started = 0.0
        self.cpu: dict[str, float] = {}

    def start(self) -> None:
        self.cpu = {kind: process.cpu_seconds() for kind, process in self.processes.items()}
        self.cpu["client"] = time.process_time()
        self.started = time.perf_counter()

    def figures(self, messages: int) -> dict[str, Any]:
        """msgs/s and CPU µs per message since `start()`."""
        seconds = time.perf_counter() - self.started
        used = {kind: process.cpu_seconds() - self.cpu[kind] for kind, process in self.processes.items()}
        used["client"] = time.process_time() - self.cpu["client"]
        figures: dict[str, Any] = {
            "messages": messages,
            "seconds": round(seconds, 3),
            "msgs_per_s": round(messages / seconds, 1),
        }
        for kind, cpu_seconds in used.items():
            figures[f"{kind}_cpu_us_per_message"] = round(cpu_seconds / messages * 1e6, 1)
        return figures
