"""A server process of an anchor system (nats-server, redis-server) started by a benchmark driver:
pinned with ``taskset``, SIGKILLed if this process dies, its output in a log file, stopped with
SIGTERM and then SIGKILL.

Start it from the event loop's thread (not a worker thread): the kill-with-parent setting follows
the thread that started the process.
"""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path

from bench.compare.driver import BenchError

#: How long a stopped server gets to exit after SIGTERM before it is SIGKILLed, seconds.
STOP_TIMEOUT_S = 10.0

# Run as `python -c _PARENT_DEATH <parent pid> <command...>`: ask Linux to SIGKILL this process when
# its parent (thread) dies, give up if the parent is already gone, then exec the command (same pid).
# The same trick as weir_cli.launcher's, kept here so the benchmark does not lean on a private helper.
_PARENT_DEATH = """
import ctypes, os, signal, sys
try:
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)
except OSError:
    pass
if os.getppid() != int(sys.argv[1]):
    sys.exit(1)
os.execvp(sys.argv[2], sys.argv[2:])
"""


def taskset_list(cpus: set[int]) -> str:
    """`cpus` as a taskset CPU list ("0", "0,1"); "" for an empty set (no pinning)."""
    return ",".join(str(cpu) for cpu in sorted(cpus))


def port_open(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:`port` now."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


class ServerProcess:
    """One server process: `command` run with every thread pinned to `cpus` (no pinning when empty),
    stdout and stderr appended to `log_path`."""

    def __init__(self, name: str, command: Sequence[str], log_path: Path, cpus: set[int]) -> None:
        self.name = name
        self.command = list(command)
        self.log_path = log_path
        self.cpus = set(cpus)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int:
        """The server's pid (the taskset and kill-with-parent wrappers exec it, so it keeps this pid)."""
        if self.process is None:
            raise BenchError(f"{self.name} was never started")
        return self.process.pid

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        """Spawn the process (does not wait for it to serve). Raises BenchError if it cannot be spawned."""
        command = self.command
        if self.cpus:
            command = ["taskset", "-c", taskset_list(self.cpus), *command]
        command = [sys.executable, "-c", _PARENT_DEATH, str(os.getpid()), *command]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with open(self.log_path, "ab") as log_file:
                self.process = subprocess.Popen(command, stdout=log_file, stderr=subprocess.STDOUT)
        except OSError as error:
            raise BenchError(f"{self.name}: cannot run {self.command[0]}: {error}") from error

    def log_tail(self, lines: int = 30) -> str:
        """The last `lines` lines of the log ("(no log)" when it cannot be read)."""
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    async def wait_ready(self, ready: Callable[[], Awaitable[bool]], timeout_s: float, what: str) -> None:
        """Poll `ready` every 20 ms until it is true. Raises BenchError (with the log's tail) if the
        process exits first or `timeout_s` seconds pass; `what` names the awaited condition."""
        deadline = time.monotonic() + timeout_s
        while True:
            if not self.running:
                code = None if self.process is None else self.process.returncode
                raise BenchError(f"{self.name} exited with {code} before {what}; its log:\n{self.log_tail()}")
            if await ready():
                return
            if time.monotonic() >= deadline:
                raise BenchError(f"{self.name}: {what} not within {timeout_s:.0f} s; its log:\n{self.log_tail()}")
            await asyncio.sleep(0.02)

    async def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """SIGTERM, wait up to `timeout_s` seconds, then SIGKILL; reaps the process. No-op if not running."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        if not await _exited(process, timeout_s):
            process.kill()
            if not await _exited(process, timeout_s):
                raise BenchError(f"{self.name} (pid {process.pid}) survived SIGKILL for {timeout_s:.0f} s")


async def _exited(process: subprocess.Popen[bytes], timeout_s: float) -> bool:
    """Whether `process` exits (and is reaped) within `timeout_s` seconds."""
    deadline = time.monotonic() + timeout_s
    while True:
        if process.poll() is not None:
            return True
        if time.monotonic() >= deadline:
            return False
        await asyncio.sleep(0.02)


async def stop_all(servers: Sequence[ServerProcess], timeout_s: float = STOP_TIMEOUT_S) -> None:
    """Stop every server of `servers` at once (each as `ServerProcess.stop`)."""
    await asyncio.gather(*(server.stop(timeout_s) for server in servers))
