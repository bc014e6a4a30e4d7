"""The sidecar process: pynumaflow's `SourceAsyncServer` serving `WeirSourcer` on a Unix socket, one
SDK client of the cluster (this replica's consumer-group membership), Prometheus /metrics, and a
clean stop on SIGTERM (the group is left at once and buffered, unread messages are handed back).

pynumaflow's `SourceAsyncServer.start()` runs `aexec()` under aiorun; `SourceProcess.run` does the
same with Weir's set-up around it (settings, membership, metrics, ready file), so the protocol side
is the SDK's own servicer and server-info file, as Numaflow's data plane expects them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import stat
from pathlib import Path

from pynumaflow.sourcer import SourceAsyncServer
from weir import Client
from weir_server import tls
from weir_server.metrics_server import start_metrics_server
from weir_server.runtime import tune_garbage_collector
from weir_server.service import write_ready_file

from weir_numaflow_source.core import SourceSettings, WeirSource
from weir_numaflow_source.settings import NumaflowSourceSettings
from weir_numaflow_source.sourcer import WeirSourcer

logger = logging.getLogger(__name__)


def _remove_stale_socket(path: Path) -> None:
    """A socket file left by an earlier process (a SIGKILL) would keep the server from binding."""
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISSOCK(path.lstat().st_mode):
            path.unlink()


class SourceProcess:
    def __init__(self, settings: NumaflowSourceSettings) -> None:
        self.settings = settings
        self.client: Client | None = None
        self.source: WeirSource | None = None
        self.server: SourceAsyncServer | None = None
        self.metrics_port = 0
        self._serving = False  # /readyz: from the ready file until the stop begins
        self._leaving: asyncio.Task[None] | None = None
        self._shutdown_phase = False

    async def run(self) -> None:
        """Join the group, serve source.v1 until stopped (aiorun stops the loop when this ends)."""
        settings = self.settings
        tls.configure(settings, f"numaflow source {settings.member_id}")
        metrics_server = start_metrics_server(
            settings.metrics_port, settings.host, self._ready, loop=asyncio.get_running_loop()
        )
        self.metrics_port = int(metrics_server.server_port)
        self.client = Client(settings.routers)
        self.source = WeirSource(
            self.client,
            SourceSettings(
                stream=settings.stream,
                consumer=settings.consumer,
                member_id=settings.member_id,
                filter_subject=settings.filter_subject,
                new_group_start=settings.new_group_start,
                ack_wait_ms=settings.ack_wait_ms,
                max_deliver=settings.max_deliver,
                max_ack_pending=settings.max_ack_pending,
                fetch_batch=settings.fetch_batch,
            ),
        )
        self.source.start()
        settings.socket_path.parent.mkdir(parents=True, exist_ok=True)
        settings.server_info_file.parent.mkdir(parents=True, exist_ok=True)
        _remove_stale_socket(settings.socket_path)
        settings.server_info_file.unlink(missing_ok=True)  # its appearance says this process serves
        self.server = SourceAsyncServer(
            WeirSourcer(self.source),
            sock_path=str(settings.socket_path),
            server_info_file=str(settings.server_info_file),
        )
        announce = asyncio.get_running_loop().create_task(self._announce_when_serving())
        try:
            await self.server.aexec()
        finally:
            announce.cancel()

    async def _announce_when_serving(self) -> None:
        """Once pynumaflow wrote the server-info file (it serves): log, tune, write the ready file."""
        while not self.settings.server_info_file.exists():  # noqa: ASYNC110 (pynumaflow writes it; no event to wait on)
            await asyncio.sleep(0.02)
        tune_garbage_collector()
        logger.info(
            "serving source.v1 on unix:%s for stream %r, group %r as member %r; metrics on :%d",
            self.settings.socket_path,
            self.settings.stream,
            self.settings.consumer,
            self.settings.member_id,
            self.metrics_port,
        )
        write_ready_file(
            self.settings.ready_file,
            {"metrics_port": self.metrics_port, "socket_path": str(self.settings.socket_path)},
        )
        self._serving = True

    def _ready(self) -> bool:
        """/readyz: pynumaflow serves source.v1 (its server-info file is written) and the group is not being left."""
        return self._serving and self._leaving is None

    def begin_shutdown(self, loop: asyncio.AbstractEventLoop) -> None:
        """aiorun's shutdown handler (SIGTERM, SIGINT): start leaving the group and handing back
        what was not read at once, while pynumaflow's server still answers (acks of what was read
        still land), and stop the loop when that is done. pynumaflow stops the loop on its own when
        the data plane cancels its Read stream (as it does when the pod stops): `shutdown` then
        waits for the same leaving, so it is never cut short by a stop it did not make."""
        logger.warning("stopping: leaving the group and handing back what the data plane did not read")
        if self._leaving is None:
            self._leaving = loop.create_task(self._leave())
            self._leaving.add_done_callback(lambda _: None if self._shutdown_phase else loop.stop())

    async def shutdown(self, loop: asyncio.AbstractEventLoop) -> None:
        """aiorun's shutdown callback (the loop stopped: after a signal, or the server ended): the
        leaving `begin_shutdown` started, or a new one, waited for (aiorun then cancels the server,
        which gives in-flight calls their grace period)."""
        self._shutdown_phase = True
        if self._leaving is None:
            self._leaving = loop.create_task(self._leave())
        await asyncio.wait({self._leaving})

    async def _leave(self) -> None:
        if self.source is not None:
            try:
                await self.source.stop()
            except Exception:
                logger.exception("leaving the group failed: what this replica held returns after ack_wait_ms")

    @property
    def left(self) -> bool:
        """The leaving ran to its end (the group left, the buffer handed back, or the failure logged)."""
        return self._leaving is not None and self._leaving.done() and not self._leaving.cancelled()

    @property
    def failed(self) -> bool:
        """True when the server ended on a handler's error (pynumaflow's exit status 1). A read
        cancelled by the shutdown is not one: pynumaflow's read task catches BaseException and
        hands a CancelledError to ReadFn, which records it as the handler's error; nor is a Read
        stream the data plane closed (ReadFn's generator is closed: GeneratorExit, recorded alike)."""
        error = self.server._error if self.server is not None else None
        return error is not None and not isinstance(error, (asyncio.CancelledError, GeneratorExit))
