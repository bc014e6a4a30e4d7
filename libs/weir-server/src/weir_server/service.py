"""What every long-running Weir service does the same way: fix its allocator's thresholds
(`weir_server.allocator`), read its settings (flags over the environment,
`weir_server.service_settings`), log, run its asyncio `serve` on uvloop, report its
bound ports through a ready file (how the launcher learns them), and stop on SIGTERM or SIGINT."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sys
from collections.abc import Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar

import uvloop
from pydantic_settings import BaseSettings

from weir_server import allocator, tls
from weir_server.logs import TEXT_FORMAT, configure_logging
from weir_server.service_settings import EXIT_BAD_SETTINGS, load_settings
from weir_server.shutdown import DEFAULT_STOP_DEADLINE_S, arm_stop_deadline

LOG_FORMAT = TEXT_FORMAT  # the text lines' layout (their time is ISO-8601 UTC: weir_server.logs)
logger = logging.getLogger(__name__)


Settings = TypeVar("Settings", bound=BaseSettings)


def run_service(
    settings_cls: type[Settings], prog: str, serve: Callable[[Settings], Coroutine[Any, Any, None]]
) -> None:
    """A service's `main`: the allocator's thresholds (`prepare_process`), settings from argv and the
    environment (bad ones exit 2 with one line), logging at the settings' `log_level` in their
    `log_format` (text or JSON lines, `weir_server.logs`), then `serve(settings)` on uvloop until it
    returns."""
    allocator_line = prepare_process(prog)
    settings = load_settings(settings_cls, prog)
    tls.refuse_unless_startable(settings, prog)
    level: str = getattr(settings, "log_level", "INFO")
    log_format: str = getattr(settings, "log_format", "text")
    configure_logging(level, log_format)
    logger.info("%s: %s", prog, allocator_line)
    uvloop.run(_catching_stop_signals(serve(settings)))


class _StopSignal:
    """The SIGTERM/SIGINT a service got, caught from the moment its loop runs: a stop that comes
    while it starts (after its ready file, before it waits for one) is kept for
    `wait_for_stop_signal` instead of ending the process mid-write."""

    event: asyncio.Event | None = None


def _catch_stop_signals() -> asyncio.Event:
    """An event the running loop sets on SIGTERM or SIGINT (the handlers replace Python's default,
    which ends the process)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    return stop


async def _catching_stop_signals(serving: Coroutine[Any, Any, None]) -> None:
    _StopSignal.event = _catch_stop_signals()
    await serving


def prepare_process(prog: str) -> str:
    """What a service does before anything else: `allocator.keep_freed_memory`. Returns the line to
    log once logging is set up (`allocator.describe`). A bad `WEIR_MALLOC_TUNING` prints one
    `<prog>: ...` line on stderr and exits 2, as a bad setting does."""
    try:
        return allocator.describe(os.environ, allocator.keep_freed_memory())
    except ValueError as error:
        print(f"{prog}: {error}", file=sys.stderr)
        raise SystemExit(EXIT_BAD_SETTINGS) from None


def write_ready_file(path: Path | None, ready: Mapping[str, object]) -> None:
    """Write `ready` (the process's id and bound ports) as JSON to `path`, atomically (a reader
    never sees half a file); nothing when `path` is None. The process's pid is added."""
    if path is None:
        return
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps({**ready, "pid": os.getpid()}))
    temporary.replace(path)


async def wait_for_stop_signal(service: str, stop_deadline_s: float = DEFAULT_STOP_DEADLINE_S) -> None:
    """Return once SIGTERM or SIGINT arrives. From then on the process has `stop_deadline_s`
    seconds to exit: past that a watchdog logs where `service` waited and ends it
    (`weir_server.shutdown.arm_stop_deadline`), so a stuck stop says where it was stuck."""
    stop = _StopSignal.event or _catch_stop_signals()  # without run_service (tests): from now on
    await stop.wait()
    logger.info("%s: stop signal received, stopping (at most %.1f s)", service, stop_deadline_s)
    arm_stop_deadline(service, stop_deadline_s)
