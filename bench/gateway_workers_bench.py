"""The gateway with 1 and with 2 workers (`weir-gateway --workers N`, issue 58), in one run.

Run: ``uv run python -m bench.gateway_workers_bench [--smoke] [--clients N] [--calls N] [--connections N]
[--out PATH]`` (``make bench-gateway-workers``).

Starts a local cluster (its own redis-server, 1 router, 1 partition node, no replicator; replicas 1)
and a 4-partition stream per door. Then, for a gateway of 1 worker and then one of 2 (each started,
measured and stopped in turn), two phases with `clients` concurrent client tasks over `connections`
gRPC connections of their own (a connection stays on the worker the kernel gave it, so one
connection would measure one worker):

- ``produce_sync``: kafka-pixy Produce (async_mode false), keyed, as bench.gateway_bench sends it.
- ``send_message``: RocketMQ v1 SendMessage NORMAL with the v1 Java client's metadata, as
  bench.rocketmq_bench sends it.

Figures (JSON on stdout), per worker count and phase: ``msgs_per_s``, ``gateway_cpu_us_per_call``
(the supervisor and every worker, from /proc), and ``calls_by_worker`` (from the supervisor's one
metrics page: how the connections spread). ``two_to_one_throughput`` = msgs/s with 2 workers over
msgs/s with 1 (the issue's target is >= 1.7 on a 2-core machine). The client tasks, the cluster and
the gateway share the machine's cores, so on 2 cores the ratio says as much about the load
generator as about the gateway: compare ratios from one run only.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
import time
import urllib.request
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
from prometheus_client.parser import text_string_to_metric_families
from weir import Client, stream_config
from weir_cli.launcher import GatewayHandle, LocalCluster
from weir_gateway.kafka_pixy.pb import kafkapixy_pb2 as pb
from weir_gateway.kafka_pixy.pb import kafkapixy_pb2_grpc as pb_grpc
from weir_gateway.rocketmq_v1.pb import service_pb2_grpc as service_grpc

from bench import gateway_bench, rocketmq_bench
from bench.gateway_bench import cpu_seconds
from bench.report import run_and_report

OWN_CONNECTION = [("grpc.use_local_subchannel_pool", 1)]
Call = Callable[[Any, int, int], Awaitable[None]]


def gateway_cpu_seconds(pid: int) -> float:
    """CPU seconds of the gateway process and its worker processes (the live ones)."""
    children = Path(f"/proc/{pid}/task/{pid}/children")
    pids = [pid, *(int(child) for child in children.read_text().split())] if children.exists() else [pid]
    total = 0.0
    for each in pids:
        with contextlib.suppress(OSError):  # exited meanwhile
            total += cpu_seconds(each)
    return total


def calls_by_worker(metrics_port: int, protocol: str) -> dict[str, float]:
    """RPCs answered per worker (the `worker` label; "" for a one-process gateway) for `protocol`."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as reply:
        page = reply.read().decode()
    counts: dict[str, float] = {}
    for family in text_string_to_metric_families(page):
        for sample in family.samples:
            if sample.name == "weir_gateway_rpc_seconds_count" and sample.labels.get("protocol") == protocol:
                worker = sample.labels.get("worker", "")
                counts[worker] = counts.get(worker, 0.0) + sample.value
    return counts


async def drive(address: str, make_stub: Any, call: Call, *, connections: int, clients: int, calls: int) -> float:
    """`calls` calls over `clients` tasks spread round-robin over `connections` channels of their own;
    the wall seconds."""
    channels = [grpc.aio.insecure_channel(address, options=OWN_CONNECTION) for _ in range(connections)]
    try:
        stubs = [make_stub(channel) for channel in channels]
        per_client = calls // clients

        async def client(index: int) -> None:
            for number in range(per_client):
                await call(stubs[index % connections], index, number)

        started = time.perf_counter()
        await asyncio.gather(*(client(index) for index in range(clients)))
        return time.perf_counter() - started
    finally:
        for channel in channels:
            await channel.close()


async def send_message(stub: Any, index: int, number: int) -> None:
    request = rocketmq_bench.send_request(index, number)
    response = await stub.SendMessage(request, metadata=rocketmq_bench.metadata(f"bench-{index}"), timeout=30)
    if response.common.status.code != 0:
        raise RuntimeError(f"SendMessage failed: {response.common.status}")


async def produce(stub: Any, index: int, number: int) -> None:
    request = pb.ProdRq(topic=gateway_bench.TOPIC, key_value=b"k%d" % index, message=b"m-%d-%d" % (index, number))
    await stub.Produce(request, timeout=30)


async def measure_gateway(args: argparse.Namespace, gateway: GatewayHandle) -> dict[str, Any]:
    """Both phases against one gateway: {phase: figures}."""
    phases = {
        "produce_sync": (gateway.kafka_pixy_address, pb_grpc.KafkaPixyStub, produce, "kafka_pixy"),
        "send_message": (gateway.rocketmq_address, service_grpc.MessagingServiceStub, send_message, "rocketmq_v1"),
    }
    results: dict[str, Any] = {}
    for name, (address, make_stub, call, protocol) in phases.items():
        spread = {"connections": args.connections, "clients": args.clients}
        await drive(address, make_stub, call, **spread, calls=args.clients * 4)  # warm-up
        cpu_before = gateway_cpu_seconds(gateway.pid)
        calls_before = calls_by_worker(gateway.metrics_port, protocol)
        seconds = await drive(address, make_stub, call, **spread, calls=args.calls)
        done = args.calls // args.clients * args.clients
        calls_after = calls_by_worker(gateway.metrics_port, protocol)
        results[name] = {
            "calls": done,
            "seconds": round(seconds, 3),
            "msgs_per_s": round(done / seconds),
            "gateway_cpu_us_per_call": round((gateway_cpu_seconds(gateway.pid) - cpu_before) / done * 1e6, 1),
            "calls_by_worker": {w: round(n - calls_before.get(w, 0.0)) for w, n in sorted(calls_after.items())},
        }
        print(f"[bench.gateway_workers] {name}: {results[name]}", file=sys.stderr, flush=True)
    return results


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    cluster = await asyncio.to_thread(LocalCluster.start, workdir / "cluster", nodes=1, routers=1, replicators=0)
    try:
        async with Client(cluster.router_addresses) as client:
            for topic in (gateway_bench.TOPIC, rocketmq_bench.TOPIC):
                await client.create_stream(stream_config(topic, partitions=4))
        results: dict[str, Any] = {}
        for workers in (1, 2):
            env = {"WEIR_GATEWAY_WORKERS": str(workers)}
            gateway = await asyncio.to_thread(cluster.start_gateway, f"gateway-{workers}w", env)
            try:
                results[f"workers_{workers}"] = await measure_gateway(args, gateway)
            finally:
                await asyncio.to_thread(gateway.stop)
        for phase in ("produce_sync", "send_message"):
            one, two = results["workers_1"][phase]["msgs_per_s"], results["workers_2"][phase]["msgs_per_s"]
            results[f"{phase}_two_to_one_throughput"] = round(two / one, 2) if one else None
        results["settings"] = {"clients": args.clients, "calls": args.calls, "connections": args.connections}
        return results
    finally:
        await asyncio.to_thread(cluster.stop)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.gateway_workers_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=64, help="concurrent client tasks")
    parser.add_argument("--calls", type=int, default=10_000, help="calls per measured phase")
    parser.add_argument("--connections", type=int, default=32, help="gRPC connections the clients share")
    parser.add_argument("--smoke", action="store_true", help="tiny counts: checks it works")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    if args.smoke:
        args.clients, args.calls, args.connections = min(args.clients, 8), min(args.calls, 400), 8
    return run_and_report(run, args, "weir-bench-gateway-workers-")


if __name__ == "__main__":
    sys.exit(main())
