"""Invocations per second through the invoker (issue 31): Restate SDK handlers run from a stream's
messages, each invocation's journal replicated 3 ways.

Run: ``uv run python -m bench.invoker_bench [--smoke] [--invocations N] [--out PATH]``
(``make bench`` runs it; ``make bench-invoker`` alone).

Starts a local cluster (its own redis-server, 1 router, 3 partition nodes, 1 replicator), an
invoker with replicas 3 (journal, invocation records, state), and one handler deployment
(`bench.invoker_handlers` under hypercorn, HTTP/2 cleartext, BIDI_STREAM). For each phase it
publishes `invocations` messages to a 4-partition stream, then binds a subscription to the handler
and times until the invoker has finished all of them (its /metrics):

- ``trivial``: `bench/echo` returns its input (journal: Input, Output).
- ``one_run``: `bench/one_run` runs one side effect through `ctx.run` and returns its result
  (journal: Input, Run (acknowledged once stored), Output).

Every invocation must complete (none failed), else the run fails (exit 1). Figures (JSON on
stdout) per phase: ``invocations_per_s`` and CPU µs per invocation of the invoker, the deployment,
the nodes (summed) and the replicator. Compare ratios from one run: this machine's speed drifts
between days.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import grpc
from weir import Client, stream_config
from weir.v1 import invoker_pb2, invoker_pb2_grpc
from weir_cli.asgi_serve import AsgiProcess
from weir_cli.launcher import InvokerHandle, LocalCluster

from bench.numaflow_bench import scrape
from bench.report import run_and_report

PARTITIONS = 4
HANDLERS = "bench.invoker_handlers:app"
PHASES = {"trivial": "echo", "one_run": "one_run"}
STALL_S = 60.0
_COMPLETED = re.compile(r'^weir_invoker_finished_invocations_total\{status="(\w+)"\} (\S+)$', re.M)


def finished(invoker: InvokerHandle) -> dict[str, float]:
    text = scrape(invoker.metrics_port)
    return {status: float(count) for status, count in _COMPLETED.findall(text)}


@dataclass
class Rig:
    """What a phase runs on: the cluster, its invoker and the handler deployment, and clients."""

    client: Client
    stub: invoker_pb2_grpc.InvokerStub
    cluster: LocalCluster
    invoker: InvokerHandle
    deployment: AsgiProcess


async def phase(rig: Rig, name: str, invocations: int) -> dict[str, Any]:
    client, stub, cluster, invoker, deployment = rig.client, rig.stub, rig.cluster, rig.invoker, rig.deployment
    stream = f"bench-invoker-{name.replace('_', '-')}"
    await client.create_stream(stream_config(stream, partitions=PARTITIONS))
    futures = [await client.publish_nowait(stream, "bench", b"%d" % n, key=b"%d" % n) for n in range(invocations)]
    await client.flush()
    for future in futures:
        await future
    before = finished(invoker)
    processes: dict[str, Any] = {"invoker": invoker, "deployment": deployment, **{n.name: n for n in cluster.nodes}}
    processes.update({replicator.name: replicator for replicator in cluster.replicators})
    cpu_before = {kind: process.cpu_seconds() for kind, process in processes.items()}
    started = time.perf_counter()
    subscription = invoker_pb2.Subscription(stream=stream, service="bench", handler=PHASES[name])
    created = await stub.CreateSubscription(invoker_pb2.CreateSubscriptionRequest(subscription=subscription))
    done = 0.0
    last_progress = time.monotonic()
    while done < invocations:
        await asyncio.sleep(0.05)
        now = finished(invoker)
        progress = sum(now.values()) - sum(before.values())
        if progress > done:
            done, last_progress = progress, time.monotonic()
        elif time.monotonic() - last_progress > STALL_S:
            raise RuntimeError(f"{name}: {done:.0f} of {invocations} invocations finished, then none for {STALL_S} s")
    seconds = time.perf_counter() - started
    failed = now.get("failed", 0) - before.get("failed", 0)
    if failed:
        raise RuntimeError(f"{name}: {failed:.0f} of {invocations} invocations failed")
    used = {kind: process.cpu_seconds() - cpu_before[kind] for kind, process in processes.items()}
    figures: dict[str, Any] = {
        "invocations": invocations,
        "seconds": round(seconds, 3),
        "invocations_per_s": round(invocations / seconds, 1),
        "invoker_cpu_us_per_invocation": round(used["invoker"] / invocations * 1e6, 1),
        "deployment_cpu_us_per_invocation": round(used["deployment"] / invocations * 1e6, 1),
        "nodes_cpu_us_per_invocation": round(sum(used[node.name] for node in cluster.nodes) / invocations * 1e6, 1),
        "replicators_cpu_us_per_invocation": round(
            sum(used[r.name] for r in cluster.replicators) / invocations * 1e6, 1
        ),
    }
    await stub.DeleteSubscription(invoker_pb2.DeleteSubscriptionRequest(id=created.subscription.id))
    return figures


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    cluster = await asyncio.to_thread(LocalCluster.start, workdir / "cluster", nodes=3, routers=1, replicators=1)
    deployment = await asyncio.to_thread(AsgiProcess(HANDLERS, workdir / "deployment").start)
    invoker = await asyncio.to_thread(cluster.start_invoker, "bench-invoker", {"WEIR_INVOKER_REPLICAS": "3"})
    results: dict[str, Any] = {"settings": {"invocations": args.invocations, "partitions": PARTITIONS, "replicas": 3}}
    try:
        async with Client(cluster.router_addresses) as client, grpc.aio.insecure_channel(invoker.address) as channel:
            stub = invoker_pb2_grpc.InvokerStub(channel)
            deadline = time.monotonic() + 30
            while True:
                try:
                    await stub.RegisterDeployment(invoker_pb2.RegisterDeploymentRequest(url=deployment.url))
                    break
                except grpc.aio.AioRpcError:
                    if time.monotonic() > deadline:
                        raise
                    await asyncio.sleep(0.2)
            for name in PHASES:
                rig = Rig(client, stub, cluster, invoker, deployment)
                results[name] = await phase(rig, name, args.invocations)
    finally:
        invoker.kill()
        deployment.kill()
        await asyncio.to_thread(cluster.stop)
    results["one_run_to_trivial_throughput"] = round(
        results["one_run"]["invocations_per_s"] / results["trivial"]["invocations_per_s"], 3
    )
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.invoker_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--invocations", type=int, default=5000, help="invocations per phase")
    parser.add_argument("--smoke", action="store_true", help="a small count: checks it works")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    if args.invocations < 1:
        parser.error("--invocations must be at least 1")
    if args.smoke:
        args.invocations = min(args.invocations, 200)
    return run_and_report(run, args, "weir-bench-invoker-")


if __name__ == "__main__":
    sys.exit(main())
