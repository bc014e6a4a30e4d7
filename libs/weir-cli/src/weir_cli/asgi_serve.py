"""Serve an ASGI app (a Restate SDK handler deployment) with hypercorn in one process:
`python -m weir_cli.asgi_serve MODULE:APP PORT` (HTTP/2 cleartext with prior knowledge, and
HTTP/1.1, on 127.0.0.1; with `--http1-only`, uvicorn: HTTP/1.1 only), and `AsgiProcess`, which
starts one. `weir demo`, the invoker's tests and
its benchmark run their handler deployments so. (The hypercorn command runs its server in a worker
subprocess, which outlives a SIGKILL of its parent; a test that kills a deployment must kill the
process that serves it.) Needs hypercorn and the app's SDK (development dependencies)."""

from __future__ import annotations

import asyncio
import importlib
import os
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from weir_cli.launcher import process_cpu_seconds

LISTEN_TIMEOUT_S = 30.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class AsgiProcess:
    """`app` (MODULE:ATTRIBUTE) served by `python -m weir_cli.asgi_serve` in a process of its own,
    its log in `directory`, with `env` added to this process's environment."""

    app: str
    directory: Path
    env: dict[str, str] = field(default_factory=dict)
    port: int = 0
    http1_only: bool = False  # served by uvicorn (HTTP/1.1 only) instead of hypercorn
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> AsgiProcess:
        """Start it and wait until it listens. Errors: RuntimeError (it did not, within 30 s)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = self.port or free_port()
        log = open(self.directory / f"asgi-{self.port}.log", "ab")  # noqa: SIM115 - kept open for the child
        command = [sys.executable, "-m", "weir_cli.asgi_serve", self.app, str(self.port)]
        if self.http1_only:
            command.append("--http1-only")
        self.process = subprocess.Popen(command, env={**os.environ, **self.env}, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + LISTEN_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"{self.app} exited ({self.process.returncode}); see {log.name}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.1)
        self.kill()
        raise RuntimeError(f"{self.app} did not listen on port {self.port} within {LISTEN_TIMEOUT_S:g} s")

    def kill(self) -> None:
        """SIGKILL it (and wait)."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def cpu_seconds(self) -> float:
        """User + system CPU time of the process so far, 0 if unknown."""
        return 0.0 if self.process is None else process_cpu_seconds(self.process.pid)


def main() -> None:
    target, port = sys.argv[1], int(sys.argv[2])
    module_name, attribute = target.split(":")
    app = getattr(importlib.import_module(module_name), attribute)
    if "--http1-only" in sys.argv[3:]:  # uvicorn speaks HTTP/1.1 only (h11)
        import uvicorn

        uvicorn.run(app, host="127.0.0.1", port=port, http="h11", lifespan="off", log_level="warning")
        return
    from hypercorn.asyncio import serve
    from hypercorn.config import Config

    config = Config()
    config.bind = [f"127.0.0.1:{port}"]
    config.loglevel = "WARNING"
    asyncio.run(serve(app, config))


if __name__ == "__main__":
    main()
