"""Bounded shutdown (weir_server.shutdown): every service's stop is a list of named steps, each
within its own deadline, and a watchdog ends a process still alive past its stop deadline after
SIGTERM, saying where it waited. A stop therefore never hangs silently until the launcher's
SIGKILL (the failure seen once in CI: a router that logged nothing for 20 s after SIGTERM)."""

from __future__ import annotations

import asyncio
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from prometheus_client import start_http_server
from weir_server.shutdown import CANCEL_WAIT_S, EXIT_STOP_DEADLINE, bounded_step, stop_metrics_server

LOGGER = "weir_server.shutdown"


async def test_a_step_that_overruns_its_deadline_is_cancelled_named_and_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    never = asyncio.get_running_loop().create_future()
    with caplog.at_level("ERROR", logger=LOGGER):
        assert not await bounded_step("close replication", never, 0.05)
    assert never.cancelled()
    assert "'close replication' did not finish within 0.1 s" in caplog.text
    assert await bounded_step("quick step", asyncio.sleep(0), 1.0)


async def test_a_step_that_swallows_its_cancellation_costs_its_deadline_and_no_more(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """asyncio.wait_for would wait for such a step for ever; the stop goes on after the deadline
    and CANCEL_WAIT_S, and the log says where the step was waiting."""
    release = asyncio.Event()

    async def stubborn_close() -> None:
        while not release.is_set():
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                continue  # a close that will not be cancelled

    task = asyncio.ensure_future(stubborn_close())
    started = time.monotonic()
    with caplog.at_level("ERROR", logger=LOGGER):
        assert not await bounded_step("close the clients", task, 0.1)
    elapsed_s = time.monotonic() - started
    assert elapsed_s < 0.1 + CANCEL_WAIT_S + 0.5, elapsed_s
    assert not task.done()
    assert "'close the clients' did not finish within 0.1 s (it waited at stubborn_close:" in caplog.text
    release.set()
    task.cancel()
    await asyncio.wait({task}, timeout=1)
    assert task.done()


async def test_a_step_that_fails_is_logged_and_the_stop_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    async def broken_close() -> None:
        raise ConnectionResetError("peer went away")

    with caplog.at_level("ERROR", logger=LOGGER):
        assert not await bounded_step("close the metadata store", broken_close(), 1.0)
    assert "'close the metadata store' failed: ConnectionResetError('peer went away')" in caplog.text


WEDGED_SERVICE = textwrap.dedent(
    """
    import asyncio, logging, sys, time
    from weir_server.service import LOG_FORMAT, wait_for_stop_signal

    async def serve() -> None:
        await wait_for_stop_signal("wedged service", 0.5)
        time.sleep(30)  # a stop that blocks the event loop: nothing in the loop can end it

    logging.basicConfig(level="INFO", format=LOG_FORMAT)
    loop = asyncio.new_event_loop()
    loop.call_soon(lambda: print("ready", flush=True))
    loop.run_until_complete(serve())
    """
)


def test_a_process_whose_stop_is_stuck_exits_at_its_stop_deadline_saying_where_it_waited() -> None:
    """A real process: SIGTERM, then a stop that blocks its event loop. The watchdog thread ends it
    at the deadline with EXIT_STOP_DEADLINE, after logging its tasks and dumping its threads."""
    process = subprocess.Popen(
        [sys.executable, "-c", WEDGED_SERVICE], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        assert process.stdout.readline().strip() == "ready"
        time.sleep(0.2)  # the signal handlers are installed by the time wait_for_stop_signal awaits
        sent = time.monotonic()
        process.send_signal(signal.SIGTERM)
        code = process.wait(timeout=10)
        elapsed_s = time.monotonic() - sent
    finally:
        process.kill()
        _, stderr = process.communicate(timeout=5)
    assert code == EXIT_STOP_DEADLINE, stderr
    assert elapsed_s < 5, elapsed_s
    assert "wedged service: stop signal received, stopping (at most 0.5 s)" in stderr
    assert "wedged service did not stop within 0.5 s of the stop signal; exiting (code 70)" in stderr
    assert "serve:" in stderr  # the task that was running, and where
    assert "Thread 0x" in stderr and "in serve" in stderr  # faulthandler's dump of the main thread


async def test_the_metrics_step_stops_the_http_server_and_is_a_no_op_without_one() -> None:
    httpd, serving = start_http_server(0, addr="127.0.0.1")
    with socket.create_connection(("127.0.0.1", httpd.server_port), timeout=2):
        pass  # it serves
    assert serving.is_alive()
    assert await stop_metrics_server(httpd, 2.0)
    serving.join(timeout=2)
    assert not serving.is_alive()  # its serving thread ended, so the process can exit
    httpd.server_close()
    assert await stop_metrics_server(None, 2.0)


def test_a_stop_that_comes_while_a_service_starts_is_kept_for_its_graceful_stop(tmp_path: Path) -> None:
    """SIGTERM the moment a real node has written its ready file (it has not reached its wait for a
    stop yet): the signal is caught from the start of its loop, so it drains and exits 0 instead of
    dying of the signal (-15) mid-start."""
    from weir_cli.launcher import NodeHandle

    from tests.conftest import needs_own_processes

    needs_own_processes()
    for attempt in range(3):
        node = NodeHandle(
            name=f"early-{attempt}", data_dir=tmp_path / f"n{attempt}", log_path=tmp_path / f"n{attempt}.log", env={}
        )
        node.spawn()
        try:
            deadline = time.monotonic() + 30
            while not node.ready_file.exists() and time.monotonic() < deadline:
                time.sleep(0.001)
            assert node.process is not None
            node.process.send_signal(signal.SIGTERM)
            assert node.process.wait(30) == 0, node.log_tail()
        finally:
            node.kill()
