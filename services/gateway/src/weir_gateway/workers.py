"""`weir-gateway --workers N`: one supervisor process and N worker processes that share each front
door's port (issue 58: a door on every core).

The supervisor reserves each protocol port (kafka-pixy, RocketMQ, waymaker.streams) with a bound,
never-listening SO_REUSEPORT socket, so a port 0 is picked once for all workers and a port another
program holds fails the start at once. Each worker is `python -m weir_gateway` with the supervisor's
own arguments plus `--workers 1`, those ports, its own ready file and its gateway id
`<gateway_id>-w<index>`; it binds the ports with `grpc.so_reuseport` (the kernel spreads new
connections over the workers; a connection, and so a client's channel, stays on one). Workers get
one RocketMQ receipt secret (the setting's, or one random secret per run), so a receipt handle or
transaction id one worker issued settles on any of them.

A worker that dies is started again after a backoff (`RestartPolicy`: 0.5 s doubling to 10 s, at
most `MAX_RESTARTS_PER_WINDOW` deaths in `RESTART_WINDOW_S`, past which the supervisor stops every
worker and exits 1). SIGTERM/SIGINT stop every worker (SIGTERM, their own drain within the shutdown
grace; SIGKILL past `STOP_DEADLINE_S`). A worker asks the kernel for SIGKILL when the supervisor
dies (PR_SET_PDEATHSIG), so none outlives it.

The supervisor serves the one metrics port: /metrics is every live worker's page with a
`worker="<index>"` label added to each sample (each worker serves its page on a Unix socket in the
supervisor's run directory, mode 0700: no port of its own, nothing another user can read), /readyz
is ready while at least one worker serves and no stop has begun.
"""

from __future__ import annotations

import contextlib
import ctypes
import http.client
import logging
import os
import secrets
import shutil
import signal
import socket
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client import REGISTRY, CollectorRegistry, MetricsHandler
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample
from weir_server.metrics_server import MetricsServer, start_metrics_server
from weir_server.service import write_ready_file

from weir_gateway.settings import GatewaySettings

logger = logging.getLogger(__name__)

RUN_DIR_PREFIX = "weir-gateway-workers-"  # + the supervisor's pid: its workers' ready files and sockets
SUPERVISOR_ENV = "WEIR_GATEWAY_SUPERVISOR_PID"  # set in a worker's environment: its supervisor's pid
PROTOCOL_PORTS = ("kafka_pixy_port", "rocketmq_port", "waymaker_streams_port")
READY_TIMEOUT_S = 60.0  # how long the workers get to serve at start
POLL_INTERVAL_S = 0.1  # how often the supervisor looks at its workers
STOP_DEADLINE_S = 20.0  # a worker still running this long after SIGTERM is SIGKILLed (its own watchdog: 15 s)
SCRAPE_TIMEOUT_S = 2.0  # one worker's /metrics page
MAX_RESTARTS_PER_WINDOW = 5
RESTART_WINDOW_S = 60.0
FIRST_BACKOFF_S = 0.5
MAX_BACKOFF_S = 10.0
PR_SET_PDEATHSIG = 1


def supervisor_pid() -> int | None:
    """The supervisor's pid when this process is one of its workers, else None."""
    value = os.environ.get(SUPERVISOR_ENV, "")
    return int(value) if value.isdigit() else None


def die_with_supervisor(supervisor: int) -> None:
    """Ask the kernel to SIGKILL this worker when its parent dies (PR_SET_PDEATHSIG), and exit at once
    if the parent is no longer `supervisor` (it died before the request). Linux only; elsewhere a no-op."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != supervisor:
        raise SystemExit(1)


@dataclass(slots=True)
class RestartPolicy:
    """When to start a dead worker again (pure, given the times). `deaths` keeps the last
    MAX_RESTARTS_PER_WINDOW + 1 death times (s, monotonic)."""

    max_restarts: int = MAX_RESTARTS_PER_WINDOW
    window_s: float = RESTART_WINDOW_S
    deaths: deque[float] = field(default_factory=lambda: deque(maxlen=MAX_RESTARTS_PER_WINDOW + 1))

    def delay_after_death(self, now: float) -> float | None:
        """Record a death at `now`; the backoff (s) before the restart (FIRST_BACKOFF_S doubling with
        each death in the window, at most MAX_BACKOFF_S), or None when more than `max_restarts` deaths
        fell within `window_s` (give up)."""
        self.deaths.append(now)
        recent = sum(1 for death in self.deaths if now - death <= self.window_s)
        if recent > self.max_restarts:
            return None
        return float(min(MAX_BACKOFF_S, FIRST_BACKOFF_S * 2.0 ** (recent - 1)))


def labelled(families: Sequence[Metric], worker: str) -> list[Metric]:
    """`families` with `worker="<worker>"` added to every sample's labels (pure)."""
    out = []
    for family in families:
        copy = Metric(family.name, family.documentation, family.type, family.unit)
        copy.samples = [
            Sample(s.name, {**s.labels, "worker": worker}, s.value, s.timestamp, s.exemplar) for s in family.samples
        ]
        out.append(copy)
    return out


def merged(pages: Sequence[tuple[str, str]]) -> list[Metric]:
    """One family per name over the workers' metric pages ((worker, text) pairs), each sample with its
    worker's label (pure). Errors: ValueError for a page that is not Prometheus text."""
    by_name: dict[str, Metric] = {}
    for worker, text in pages:
        for family in labelled(list(text_string_to_metric_families(text)), worker):
            into = by_name.setdefault(family.name, family)
            if into is not family:
                into.samples.extend(family.samples)
    return list(by_name.values())


class WorkersCollector:
    """A prometheus_client collector: every live worker's /metrics page, labelled by worker."""

    def __init__(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor

    def collect(self) -> Iterator[Metric]:
        pages = []
        for index, path in self.supervisor.metrics_sockets():
            try:
                pages.append((str(index), read_worker_metrics(path)))
            except (
                OSError,
                http.client.HTTPException,
            ) as error:  # a worker that just died or restarts: left out of this scrape
                logger.debug("worker %d's metrics: %s", index, error)
        yield from merged(pages)


def reserve_port(host: str, port: int) -> socket.socket:
    """A bound, not listening, SO_REUSEPORT socket on host:port (0: a free port), which holds the port
    for the workers' servers (they bind it with SO_REUSEPORT too). Errors: OSError (the port is taken)."""
    family, _, _, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)[0]
    reserved = socket.socket(family, socket.SOCK_STREAM)
    try:
        reserved.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        reserved.bind(address)
    except OSError:
        reserved.close()
        raise
    return reserved


def remove_stale_run_dirs(parent: Path) -> list[Path]:
    """Remove the run directories (`weir-gateway-workers-<pid>-*`) in `parent` of supervisors that no
    longer run (a SIGKILLed supervisor cannot remove its own); returns those removed."""
    removed = []
    for run_dir in parent.glob(f"{RUN_DIR_PREFIX}*-*"):
        pid = run_dir.name.removeprefix(RUN_DIR_PREFIX).split("-", 1)[0]
        if not pid.isdigit() or Path(f"/proc/{pid}").exists() or not run_dir.is_dir():
            continue
        shutil.rmtree(run_dir, ignore_errors=True)
        removed.append(run_dir)
    return removed


def worker_metrics_socket(ready_file: Path) -> Path:
    """The Unix socket a worker serves its metrics page on: beside its ready file."""
    return ready_file.with_suffix(".metrics.sock")


class _UnixMetricsServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


def serve_worker_metrics(path: Path) -> socketserver.BaseServer:
    """Serve this process's /metrics (prometheus_client's default registry) over HTTP on the Unix
    socket `path`, from a daemon thread; `shutdown()` stops it. Errors: OSError."""
    path.unlink(missing_ok=True)
    server = _UnixMetricsServer(str(path), MetricsHandler.factory(REGISTRY))
    threading.Thread(target=server.serve_forever, name="worker-metrics", daemon=True).start()
    return server


class _UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: Path) -> None:
        super().__init__("localhost", timeout=SCRAPE_TIMEOUT_S)
        self.socket_path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(SCRAPE_TIMEOUT_S)
        self.sock.connect(str(self.socket_path))


def read_worker_metrics(path: Path) -> str:
    """A worker's metrics page, read from its Unix socket. Errors: OSError, http.client.HTTPException."""
    connection = _UnixHTTPConnection(path)
    try:
        connection.request("GET", "/metrics")
        response = connection.getresponse()
        if response.status != 200:
            raise http.client.HTTPException(f"worker metrics: HTTP {response.status}")
        return response.read().decode()
    finally:
        connection.close()


@dataclass(slots=True)
class Worker:
    """One worker process slot: its index, process, ready file and restart policy."""

    index: int
    ready_file: Path
    process: subprocess.Popen[bytes] | None = None
    serving: bool = False
    restart_at: float | None = None
    policy: RestartPolicy = field(default_factory=RestartPolicy)

    @property
    def metrics_socket(self) -> Path:
        return worker_metrics_socket(self.ready_file)

    def ready(self) -> bool:
        """True once the running process wrote its ready file."""
        if self.process is None or self.process.poll() is not None:
            return False
        self.serving = self.serving or self.ready_file.exists()
        return self.serving


class Supervisor:
    """Runs `settings.workers` gateway workers over shared ports (module docstring). `argv`: the
    gateway's own arguments, given to every worker ahead of the supervisor's overrides."""

    def __init__(self, settings: GatewaySettings, argv: Sequence[str]) -> None:
        self.settings = settings
        self.argv = list(argv)
        remove_stale_run_dirs(Path(tempfile.gettempdir()))
        self.run_dir = Path(tempfile.mkdtemp(prefix=f"{RUN_DIR_PREFIX}{os.getpid()}-"))
        self.workers = [Worker(index, self.run_dir / f"worker-{index}.json") for index in range(settings.workers)]
        self.ports: dict[str, int] = {}
        self._reserved: list[socket.socket] = []
        self._env = {**os.environ, SUPERVISOR_ENV: str(os.getpid())}
        if not settings.rocketmq_receipt_secret:  # one secret for all workers: a handle settles on any
            self._env["WEIR_GATEWAY_ROCKETMQ_RECEIPT_SECRET"] = secrets.token_hex(32)
        self._stopping = False
        self._metrics: MetricsServer | None = None

    def metrics_sockets(self) -> list[tuple[int, Path]]:
        """(index, metrics socket) of every worker serving now."""
        return [(worker.index, worker.metrics_socket) for worker in self.workers if worker.ready()]

    def serving(self) -> bool:
        """/readyz: no stop has begun and at least one worker serves."""
        return not self._stopping and any(worker.ready() for worker in self.workers)

    def request_stop(self, *_: object) -> None:
        self._stopping = True

    def start(self) -> None:
        """Reserve the ports, start every worker and wait for all to serve (READY_TIMEOUT_S), serve
        the metrics port, write the ready file. Errors: OSError (a port is taken), RuntimeError (a
        worker did not come up)."""
        settings = self.settings
        for name in PROTOCOL_PORTS:
            reserved = reserve_port(settings.host, getattr(settings, name))
            self._reserved.append(reserved)
            self.ports[name] = reserved.getsockname()[1]
        for worker in self.workers:
            self._spawn(worker)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not all(worker.ready() for worker in self.workers):
            dead = [w.index for w in self.workers if w.process is not None and w.process.poll() is not None]
            if self._stopping:  # SIGTERM/SIGINT while starting: `watch` returns at once, `stop` stops them
                return
            if dead or time.monotonic() > deadline:
                raise RuntimeError(
                    f"gateway workers {dead or 'all'} did not start serving within {READY_TIMEOUT_S:.0f} s "
                    "(see their log lines)"
                )
            time.sleep(POLL_INTERVAL_S)
        registry = CollectorRegistry(auto_describe=False)
        registry.register(WorkersCollector(self))
        self._metrics = start_metrics_server(
            settings.metrics_port, settings.host, self.serving, registry=registry, access=settings.metrics_access()
        )
        ready = {
            "gateway_id": settings.gateway_id,
            **self.ports,
            "metrics_port": self._metrics.server_port,
            "worker_pids": [worker.process.pid for worker in self.workers if worker.process is not None],
        }
        write_ready_file(settings.ready_file, ready)
        logger.info(
            "gateway %s: %d workers serving kafka-pixy on %d, RocketMQ on %d, waymaker.streams on %d (metrics %d)",
            settings.gateway_id,
            len(self.workers),
            *(self.ports[name] for name in PROTOCOL_PORTS),
            self._metrics.server_port,
        )

    def _spawn(self, worker: Worker) -> None:
        worker.ready_file.unlink(missing_ok=True)
        worker.metrics_socket.unlink(missing_ok=True)
        worker.serving = False
        worker.restart_at = None
        overrides = [f"--{name.replace('_', '-')}={port}" for name, port in self.ports.items()]
        command = [
            *(sys.executable, "-m", "weir_gateway", *self.argv),
            *("--workers=1", f"--gateway-id={self.settings.gateway_id}-w{worker.index}", "--metrics-port=0"),
            *(f"--ready-file={worker.ready_file}", *overrides),
        ]
        worker.process = subprocess.Popen(command, env=self._env)
        logger.info("gateway worker %d started (pid %d)", worker.index, worker.process.pid)

    def watch(self) -> int:
        """Restart workers that die (per their RestartPolicy) until a stop is requested; returns the
        exit status: 0 after a requested stop, 1 when a worker died too often."""
        while not self._stopping:
            now = time.monotonic()
            for worker in self.workers:
                process = worker.process
                if worker.restart_at is None and process is not None and process.poll() is not None:
                    delay = worker.policy.delay_after_death(now)
                    if delay is None:
                        logger.error(
                            "gateway worker %d died %d times within %.0f s (last exit %s): stopping the gateway",
                            *(worker.index, worker.policy.max_restarts + 1, worker.policy.window_s, process.returncode),
                        )
                        return 1
                    logger.warning(
                        "gateway worker %d (pid %d) exited with %s: restarting it in %.1f s",
                        *(worker.index, process.pid, process.returncode, delay),
                    )
                    worker.restart_at = now + delay
                elif worker.restart_at is not None and now >= worker.restart_at:
                    self._spawn(worker)
            time.sleep(POLL_INTERVAL_S)
        return 0

    def stop(self) -> bool:
        """SIGTERM every worker, SIGKILL those still running after STOP_DEADLINE_S; close the metrics
        port and the reserved ports. Returns True when every worker exited on its own."""
        self._stopping = True
        running = [w.process for w in self.workers if w.process is not None and w.process.poll() is None]
        for process in running:
            process.send_signal(signal.SIGTERM)
        clean = True
        deadline = time.monotonic() + STOP_DEADLINE_S
        for process in running:
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                logger.error("gateway worker pid %d did not stop in %.0f s: killed", process.pid, STOP_DEADLINE_S)
                process.kill()
                process.wait()
                clean = False
        if self._metrics is not None:
            self._metrics.shutdown()
        for reserved in self._reserved:
            reserved.close()
        for worker in self.workers:
            worker.ready_file.unlink(missing_ok=True)
            worker.metrics_socket.unlink(missing_ok=True)
        shutil.rmtree(self.run_dir, ignore_errors=True)
        logger.info("gateway %s: workers stopped%s", self.settings.gateway_id, "" if clean else " (some killed)")
        return clean


def supervise(settings: GatewaySettings, argv: Sequence[str]) -> int:
    """Run the workers until SIGTERM/SIGINT (or a worker that dies too often); the exit status."""
    supervisor = Supervisor(settings, argv)
    signal.signal(signal.SIGTERM, supervisor.request_stop)
    signal.signal(signal.SIGINT, supervisor.request_stop)
    try:
        supervisor.start()
        status = supervisor.watch()
    except (OSError, RuntimeError) as error:
        logger.error("gateway %s: %s", settings.gateway_id, error)
        status = 1
    finally:
        supervisor.stop()
    return status
