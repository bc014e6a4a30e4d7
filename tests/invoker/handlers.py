"""Handler deployments written with Restate's Python SDK (restate-sdk 0.4.1, service protocol V2),
served by hypercorn as Restate's examples do: `python -m hypercorn tests.invoker.handlers:app`.

Every side effect a test counts goes to a file under $WEIR_TEST_HANDLER_DIR (one line per effect),
written by the handler process itself, so a test sees what really ran, how often.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

from restate.context import Context, ObjectContext, WorkflowContext, WorkflowSharedContext
from restate.endpoint import app as restate_app
from restate.exceptions import TerminalError
from restate.object import VirtualObject
from restate.service import Service
from restate.workflow import Workflow

OUT = Path(os.environ.get("WEIR_TEST_HANDLER_DIR", "/tmp"))


def record(name: str, line: str) -> None:
    with open(OUT / name, "a") as file:
        file.write(line + "\n")
        file.flush()
        os.fsync(file.fileno())


def lines(name: str) -> list[str]:
    path = OUT / name
    return path.read_text().splitlines() if path.exists() else []


counter = VirtualObject("counter")  # type: ignore[no-untyped-call]


@counter.handler()
async def add(ctx: ObjectContext, delta: int) -> int:
    count = (await ctx.get("count")) or 0
    count += delta
    ctx.set("count", count)
    seen = (await ctx.get("seen")) or []
    ctx.set("seen", [*seen, delta])
    return count


@counter.handler()
async def add_slowly(ctx: ObjectContext, delta: int) -> int:
    """add, then a durable sleep before the answer: an invocation that is mid-way for a while."""
    count = (await ctx.get("count")) or 0
    count += delta
    ctx.set("count", count)
    await ctx.sleep(timedelta(milliseconds=int(os.environ.get("WEIR_TEST_SLOW_ADD_MS", "1000"))))
    return count


@counter.handler(kind="shared")
async def current(ctx: ObjectContext) -> int:
    return (await ctx.get("count")) or 0


effects = Service("effects")


@effects.handler()
async def charge(ctx: Context, order: str) -> str:
    async def side_effect() -> str:
        record("charges", order)
        return f"charged-{order}"

    receipt: str = await ctx.run("charge", side_effect)
    pause_ms = int(os.environ.get("WEIR_TEST_PAUSE_AFTER_RUN_MS", "0"))
    if pause_ms:
        await ctx.sleep(timedelta(milliseconds=pause_ms))
    return receipt


@effects.handler()
async def nap(ctx: Context, milliseconds: int) -> str:
    await ctx.sleep(timedelta(milliseconds=milliseconds))
    record("naps", str(milliseconds))
    return f"slept {milliseconds}"


@effects.handler()
async def wait_for_approval(ctx: Context, order: str) -> str:
    awakeable_id, approval = ctx.awakeable()
    record("awakeables", f"{order} {awakeable_id}")
    decision = await approval
    return f"{order}: {decision}"


@effects.handler()
async def count_via_object(ctx: Context, key: str) -> int:
    return await ctx.object_call(add, key=key, arg=10)


@effects.handler()
async def flaky(ctx: Context, name: str) -> str:
    record("flaky", name)
    if lines("flaky").count(name) <= 2:
        raise RuntimeError(f"flaky failure {lines('flaky').count(name)} of {name}")
    return f"ok after {lines('flaky').count(name)}"


@effects.handler()
async def refuse(ctx: Context, name: str) -> str:
    raise TerminalError(f"refused {name}", status_code=422)


orders = Workflow("order_flow")  # type: ignore[no-untyped-call]


@orders.main()
async def run(ctx: WorkflowContext, order: str) -> str:
    shipped = await ctx.promise("shipped").value()
    return f"{order} shipped by {shipped}"


@orders.handler()
async def ship(ctx: WorkflowSharedContext, carrier: str) -> None:
    await ctx.promise("shipped").resolve(carrier)


once = Workflow("once_flow")  # type: ignore[no-untyped-call]


@once.main(name="run")
async def once_run(ctx: WorkflowContext, order: str) -> str:
    """Records its start (a side effect through ctx.run), then waits for the promise `go`."""

    async def started() -> str:
        record("workflow-runs", f"{ctx.key()} {order}")
        return order

    first: str = await ctx.run("start", started)
    go = await ctx.promise("go").value()
    return f"{first} went {go}"


@once.handler(name="go")
async def once_go(ctx: WorkflowSharedContext, value: str) -> None:
    await ctx.promise("go").resolve(value)


@effects.handler()
async def attach_to_flow(ctx: Context, key: str) -> str:
    """Calls once_flow/run for `key` (a run that another submit started: the call attaches)."""
    return await ctx.workflow_call(once_run, key=key, arg="from-a-call")


saga = Service("saga")


async def _noted(ctx: Context, name: str, line: str) -> None:
    """Record `line` through ctx.run: once, however often the handler is replayed."""

    async def write() -> str:
        record("saga", line)
        return line

    _: str = await ctx.run(name, write)


@saga.handler()
async def book(ctx: Context, trip: str) -> str:
    """Reserves, then holds through a child call; cancelled, it compensates (Restate's saga pattern):
    a refund through ctx.run and a call, then the TerminalError goes on."""
    await _noted(ctx, "reserve", f"reserve {trip}")
    try:
        held: str = await ctx.service_call(hold, arg=trip)
        return held
    except TerminalError as error:
        await _noted(ctx, "refund", f"refund {trip} after {error.status_code} {error.message}")
        await ctx.service_call(note, arg=f"compensated {trip}")
        raise


@saga.handler()
async def hold(ctx: Context, trip: str) -> str:
    try:
        await ctx.sleep(timedelta(minutes=10))
    except TerminalError as error:
        await _noted(ctx, "release", f"hold {trip} released after {error.status_code} {error.message}")
        raise
    return f"held {trip}"


@saga.handler()
async def note(ctx: Context, line: str) -> None:
    await _noted(ctx, "note", line)


app = restate_app(services=[counter, effects, orders, once, saga])
# The same services in REQUEST_RESPONSE mode (as a Lambda deployment runs): the SDK suspends
# whenever it waits for a completion, and the invoker resumes it with the longer journal.
app_request_response = restate_app(services=[counter, effects, orders, once, saga], protocol="request_response")
