"""The handlers `bench.invoker_bench` invokes (restate-sdk 0.4.1): a trivial one and one with a
single `ctx.run` (a side effect whose result is journaled before the handler goes on)."""

from __future__ import annotations

from restate.context import Context
from restate.endpoint import app as restate_app
from restate.service import Service

bench = Service("bench")


@bench.handler()
async def echo(ctx: Context, value: int) -> int:
    return value


@bench.handler()
async def one_run(ctx: Context, value: int) -> int:
    async def side_effect() -> int:
        return value + 1

    result: int = await ctx.run("side effect", side_effect)
    return result


app = restate_app(services=[bench])
