"""Start partition nodes as real processes (the CLI demo, the tests and the benchmarks use this).

A node started here binds port 0 for every server and reports the ports it got through its ready
file, so many nodes can run side by side without port races. `stop()` sends SIGTERM (drain and
flush), `kill()` sends SIGKILL (crash), `restart()` starts the same node on the same data directory
(and the same ports, when they are still free).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

READY_TIMEOUT_S = 30.0


class LaunchError(RuntimeError):
    """A node process did not come up; the message carries the end of its log."""


@dataclass
class NodeHandle:
    """One partition node process and how to reach it."""

    node_id: str
    data_dir: Path
    log_path: Path
    env: dict[str, str]
    taskset_cpus: str | None = None
    # SIGKILL the node when the thread that started it exits (prctl PR_SET_PDEATHSIG): start nodes
    # from a long-lived thread (not a short-lived worker thread) or set this to False.
    die_with_parent: bool = True
    process: subprocess.Popen[bytes] | None = None
    client_port: int = 0
    internal_port: int = 0
    metrics_port: int = 0
    _log_file: object | None = field(default=None, repr=False)

    @property
    def client_address(self) -> str:
        return f"127.0.0.1:{self.client_port}"

    @property
    def internal_address(self) -> str:
        return f"127.0.0.1:{self.internal_port}"

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def ready_file(self) -> Path:
        return self.data_dir / "ready.json"

    def start(self, *, reuse_ports: bool = False) -> NodeHandle:
        """Start the process and wait until it serves (raises LaunchError with its log if not)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.ready_file.unlink(missing_ok=True)
        # Settings come only from this handle: a stray WEIR_NODE_* in our environment must not leak in.
        env = {key: value for key, value in os.environ.items() if not key.startswith("WEIR_NODE_")}
        env.update(self.env)
        env.update(
            {
                "WEIR_NODE_NODE_ID": self.node_id,
                "WEIR_NODE_DATA_DIR": str(self.data_dir),
                "WEIR_NODE_READY_FILE": str(self.ready_file),
                "WEIR_NODE_CLIENT_PORT": str(self.client_port if reuse_ports else 0),
                "WEIR_NODE_INTERNAL_PORT": str(self.internal_port if reuse_ports else 0),
                "WEIR_NODE_METRICS_PORT": str(self.metrics_port if reuse_ports else 0),
            }
        )
        command: list[str] = [sys.executable, "-m", "weir_partition_node"]
        if self.taskset_cpus:
            command = ["taskset", "-c", self.taskset_cpus, *command]
        log_file = open(self.log_path, "ab")  # noqa: SIM115 (kept open for the child's lifetime)
        self._log_file = log_file
        self.process = subprocess.Popen(
            command,
            env=env,
            stdout=log_file,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent if self.die_with_parent else None,  # noqa: PLW1509
        )
        deadline = time.monotonic() + READY_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.ready_file.exists():
                ready = json.loads(self.ready_file.read_text())
                self.client_port = int(ready["client_port"])
                self.internal_port = int(ready["internal_port"])
                self.metrics_port = int(ready["metrics_port"])
                return self
            if self.process.poll() is not None:
                raise LaunchError(f"node {self.node_id} exited with {self.process.returncode}:\n{self.log_tail()}")
            time.sleep(0.02)
        self.kill()
        raise LaunchError(f"node {self.node_id} not ready after {READY_TIMEOUT_S:.0f}s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def stop(self, timeout_s: float = 20.0) -> int:
        """SIGTERM and wait (drain, flush, close); SIGKILL if it does not exit in time."""
        if self.process is None or self.process.poll() is not None:
            return self._returncode()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        return self._returncode()

    def kill(self) -> None:
        """SIGKILL: a crash with no chance to flush anything."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def restart(self) -> NodeHandle:
        self.stop()
        return self.start(reuse_ports=True)

    def peak_rss_bytes(self) -> int:
        """High-water resident set size of the running process (VmHWM), 0 if unknown."""
        if self.process is None:
            return 0
        try:
            for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
        except OSError:
            pass
        return 0

    def cpu_seconds(self) -> float:
        """User + system CPU time of the running process, 0 if unknown."""
        if self.process is None:
            return 0.0
        try:
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
            ticks = os.sysconf("SC_CLK_TCK")
            return (int(fields[11]) + int(fields[12])) / ticks
        except (OSError, IndexError, ValueError):
            return 0.0

    def _returncode(self) -> int:
        assert self.process is not None
        return self.process.returncode if self.process.returncode is not None else 0


def _die_with_parent() -> None:
    """In the child before exec: receive SIGKILL when the parent dies (Linux prctl), so a crashed
    test run or benchmark leaves no node behind."""
    try:
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)
    except OSError:
        pass


def start_node(
    data_dir: Path,
    *,
    node_id: str = "node-1",
    env: Mapping[str, str] | None = None,
    taskset_cpus: str | None = None,
) -> NodeHandle:
    """Start one partition node with its data (and log, `node.log`) under `data_dir`."""
    handle = NodeHandle(
        node_id=node_id,
        data_dir=data_dir,
        log_path=data_dir.parent / f"{node_id}.log",
        env=dict(env or {}),
        taskset_cpus=taskset_cpus,
    )
    data_dir.parent.mkdir(parents=True, exist_ok=True)
    return handle.start()


def stop_all(handles: Sequence[NodeHandle]) -> None:
    for handle in handles:
        handle.stop()
