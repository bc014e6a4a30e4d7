"""Bounded shutdown, the same in every service: a stop is a list of named steps, each within its
own deadline (`bounded_step`), and once SIGTERM has arrived a watchdog thread ends a process that
is still alive past its stop deadline (`arm_stop_deadline`), after logging where every task and
thread waits. A stop therefore always ends with a line that says what it was doing: "<service>
stopped", a step named as overrunning, or the watchdog's dump, never with the launcher's SIGKILL
and a log that stops mid-sentence.

Nothing acknowledged depends on a skipped step: every acknowledged write is already fsynced when
its acknowledgement is sent.
"""

from __future__ import annotations

import asyncio
import contextlib
import faulthandler
import logging
import os
import sys
import threading
import time
from collections.abc import Awaitable

logger = logging.getLogger(__name__)

# What a step that did not finish gets to end on its cancellation before the stop goes on.
CANCEL_WAIT_S = 0.2
# A step slower than this is logged (it finished, but a stop should not take this long).
SLOW_STEP_S = 1.0
# The exit code of a process that the watchdog ended: EX_SOFTWARE, an internal error.
EXIT_STOP_DEADLINE = 70
# The default stop deadline: under the launcher's 20 s wait before SIGKILL (`weir cluster down`).
DEFAULT_STOP_DEADLINE_S = 15.0
MAX_AWAIT_CHAIN = 16


async def bounded_step(step: str, awaitable: Awaitable[object], timeout_s: float) -> bool:
    """Await `awaitable` for at most `timeout_s` seconds. Returns True when it finished. When it did
    not, it is cancelled (and given `CANCEL_WAIT_S` to end, never more: a step that swallows its
    cancellation cannot hold the stop, as `asyncio.wait_for` would), and the step's name, its
    deadline and where it was waiting are logged as an error. A step that raised is logged as an
    error with its exception and returns False; the caller goes on with its next step either way."""
    task = asyncio.ensure_future(awaitable)
    started = time.monotonic()
    done, _ = await asyncio.wait({task}, timeout=timeout_s)
    if not done:
        where = awaiting(task)
        task.cancel()
        await asyncio.wait({task}, timeout=CANCEL_WAIT_S)
        logger.error(
            "shutdown step %r did not finish within %.1f s (it waited at %s); going on without it",
            step,
            timeout_s,
            where or "an awaitable that is not a coroutine",
        )
        return False
    if task.cancelled():
        logger.error("shutdown step %r was cancelled; going on without it", step)
        return False
    error = task.exception()
    if error is not None:
        logger.error("shutdown step %r failed: %r; going on without it", step, error)
        return False
    elapsed_s = time.monotonic() - started
    if elapsed_s > SLOW_STEP_S:
        logger.warning("shutdown step %r took %.1f s", step, elapsed_s)
    return True


async def stop_metrics_server(httpd: object | None, timeout_s: float) -> bool:
    """The shutdown step that stops a service's metrics port (`weir_server.metrics_server`; its
    `shutdown()` blocks until the serving thread has stopped, then closes the socket, so it runs on a
    worker thread); True when there is none."""
    if httpd is None:
        return True
    return await bounded_step("stop /metrics", asyncio.to_thread(httpd.shutdown), timeout_s)  # type: ignore[attr-defined]


def awaiting(task: asyncio.Future[object]) -> str:
    """Where a task waits: its chain of awaited coroutines (`name:line`), outermost first; "" for a
    future that is not a task."""
    if not isinstance(task, asyncio.Task):
        return ""
    where: list[str] = []
    current: object = task.get_coro()
    while current is not None and len(where) < MAX_AWAIT_CHAIN:
        frame = getattr(current, "cr_frame", None) or getattr(current, "gi_frame", None)
        if frame is None:
            where.append(type(current).__name__)
            break
        where.append(f"{frame.f_code.co_name}:{frame.f_lineno}")
        current = getattr(current, "cr_await", None) or getattr(current, "gi_yieldfrom", None)
    return " -> ".join(where)


def task_stacks(loop: asyncio.AbstractEventLoop | None = None) -> str:
    """One line a task of `loop` (the running loop when None): its name and where it waits. Safe to
    call from another thread: the set of tasks is copied, retried when it changes under the copy."""
    for _ in range(3):
        try:
            tasks = list(asyncio.all_tasks(loop))
            break
        except RuntimeError:  # the task set changed while it was copied
            continue
    else:
        return "tasks: could not be listed (they kept changing)"
    lines = [f"{len(tasks)} tasks:", *(f"  {task.get_name()}: {awaiting(task)}" for task in tasks)]
    return "\n".join(lines)


def arm_stop_deadline(service: str, deadline_s: float) -> threading.Timer:
    """Start a daemon thread that, unless the process has exited within `deadline_s` seconds, logs
    where every asyncio task waits and dumps every thread's stack to stderr, then ends the process
    with `EXIT_STOP_DEADLINE`. It works while the event loop is blocked, and also after `serve`
    has returned (a thread the loop's teardown waits for). Returns the timer (`cancel()` disarms it)."""
    loop = asyncio.get_running_loop()

    def expire() -> None:
        logger.error(
            "%s did not stop within %.1f s of the stop signal; exiting (code %d). Where it waited:\n%s",
            service,
            deadline_s,
            EXIT_STOP_DEADLINE,
            task_stacks(loop),
        )
        with contextlib.suppress(Exception):
            faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        for handler in logging.getLogger().handlers:
            with contextlib.suppress(Exception):
                handler.flush()
        os._exit(EXIT_STOP_DEADLINE)

    timer = threading.Timer(deadline_s, expire)
    timer.daemon = True
    timer.name = "stop-deadline"
    timer.start()
    return timer
