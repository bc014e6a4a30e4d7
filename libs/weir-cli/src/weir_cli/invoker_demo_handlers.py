"""The handler deployment `weir demo` runs (restate-sdk, service protocol V2): a counter object
whose invocations come from a stream's messages, and an approval that waits on an awakeable.
Served by `python -m weir_cli.asgi_serve weir_cli.invoker_demo_handlers:app PORT`."""

from __future__ import annotations

from restate.context import Context, ObjectContext
from restate.endpoint import app as restate_app
from restate.object import VirtualObject
from restate.service import Service

counter = VirtualObject("demo_counter")  # type: ignore[no-untyped-call]


@counter.handler()
async def add(ctx: ObjectContext, delta: int) -> int:
    total: int = (await ctx.get("total")) or 0
    total += delta
    ctx.set("total", total)
    return total


approvals = Service("demo_approvals")


@approvals.handler()
async def approve(ctx: Context, order: str) -> str:
    _, decision = ctx.awakeable()
    answer: str = await decision
    return f"{order}: {answer}"


app = restate_app(services=[counter, approvals])
