"""`weir demo`'s durable handlers: an invoker runs Restate SDK handlers (restate-sdk under hypercorn,
service protocol V2) from a stream. A counter object is bound to the stream `demo-invoker` (the
message key is the object key), every message must be invoked once, in order per key (each output
is its key's running total), and an approval waits on an awakeable until the demo resolves it by the
id the invocation's journal shows, as `weir awakeables resolve` does. Skipped, saying so, where
restate-sdk or hypercorn is not installed (they are development dependencies)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import time
from pathlib import Path
from typing import Any

from weir import Client, stream_config
from weir.invoker import InvokerClient
from weir.v1 import invoker_pb2

from weir_cli.asgi_serve import AsgiProcess
from weir_cli.launcher import LocalCluster
from weir_cli.output import progress

STREAM = "demo-invoker"
KEYS = 4
FINISH_TIMEOUT_S = 60.0


def available() -> bool:
    return all(importlib.util.find_spec(name) is not None for name in ("restate", "hypercorn"))


async def invoker_round_trip(cluster: LocalCluster, directory: Path, messages: int = 40) -> dict[str, Any]:
    """Returns the invocations made, per-key totals and `verified`."""
    if not available():
        progress("invoker: skipped (restate-sdk and hypercorn are not installed; `make setup` installs them)")
        return {"skipped": "restate-sdk or hypercorn is not installed", "verified": True}
    progress("invoker: a Restate SDK deployment under hypercorn, a counter object bound to a stream ...")
    deployment = await asyncio.to_thread(AsgiProcess("weir_cli.invoker_demo_handlers:app", directory).start)
    invoker = await asyncio.to_thread(cluster.start_invoker, "invoker-1")
    try:
        async with InvokerClient(invoker.address) as invoker_client, Client(cluster.router_addresses) as client:
            await invoker_client.register_deployment(deployment.url)
            await client.create_stream(stream_config(STREAM, partitions=2))
            sent: dict[str, list[int]] = {}
            for number in range(1, messages + 1):
                key = f"customer-{number % KEYS}"
                sent.setdefault(key, []).append(number)
                await client.publish(STREAM, "orders.placed", json.dumps(number).encode(), key=key.encode())
            subscription = await invoker_client.create_subscription(STREAM, "demo_counter", "add")
            totals = await _totals(invoker_client, subscription.id, messages)
            expected = {key: [sum(numbers[: n + 1]) for n in range(len(numbers))] for key, numbers in sent.items()}
            approval = await _approval(invoker_client)
    finally:
        await asyncio.to_thread(invoker.stop)
        deployment.kill()
    in_order = totals == expected
    return {
        "invocations": sum(len(outputs) for outputs in totals.values()),
        "final_totals": {key: outputs[-1] for key, outputs in sorted(totals.items()) if outputs},
        "in_order_per_key": in_order,
        "awakeable": approval,
        "verified": in_order and approval == "order-1: approved",
    }


async def _totals(invoker: InvokerClient, subscription_id: str, messages: int) -> dict[str, list[int]]:
    """Each key's outputs in partition order, once all `messages` invocations finished."""
    deadline = time.monotonic() + FINISH_TIMEOUT_S
    while True:
        listed, _ = await invoker.list_invocations(service="demo_counter")
        mine = [
            i
            for i in listed
            if i.subscription_id == subscription_id and i.status >= invoker_pb2.INVOCATION_STATUS_COMPLETED
        ]
        if len(mine) == messages or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    totals: dict[str, list[int]] = {}
    for invocation in sorted(mine, key=lambda i: (i.source_partition, i.source_seq)):
        if invocation.status == invoker_pb2.INVOCATION_STATUS_COMPLETED:
            totals.setdefault(invocation.key, []).append(json.loads(invocation.output))
    return totals


async def _approval(invoker: InvokerClient) -> str:
    """Start an approval, resolve its awakeable by the id its journal shows, return its output."""
    started = await invoker.invoke("demo_approvals", "approve", b'"order-1"')
    deadline = time.monotonic() + FINISH_TIMEOUT_S
    while time.monotonic() < deadline:
        _, journal = await invoker.get_invocation(started.id)
        awakeables = [entry.summary for entry in journal if entry.type_name == "Awakeable"]
        if awakeables:
            await invoker.resolve_awakeable(awakeables[0], b'"approved"')
            finished = await invoker.wait_for_invocation(started.id, timeout_s=FINISH_TIMEOUT_S)
            return json.loads(finished.output) if finished.output else ""
        await asyncio.sleep(0.1)
    return ""
