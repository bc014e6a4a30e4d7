"""The kafka-pixy front door's cost, measured in one run next to a bare grpc.aio unary call.

Run: ``uv run python -m bench.gateway_bench [--smoke] [--clients N] [--calls N] [--rounds N] [--out PATH]``
(``make bench`` runs it after the comparison harness; ``make bench-gateway`` alone).

Starts a local cluster (its own redis-server, 1 router, 1 partition node, no replicator; replicas 1)
with one gateway, and two floor processes serving the same /KafkaPixy/Produce method
(bench/bare_kafka_pixy.py): a bare grpc.aio server whose handler answers at once (what any gRPC
front door in Python pays per call), and a bare proxy that forwards each call as one unary call to
that bare server (what any front door pays per call it hands on to a backend). Then, with `clients`
concurrent client tasks in this process each calling in turn, `rounds` times in a row:

- ``bare_unary``: Produce on the bare server (`calls` calls in all).
- ``bare_proxy``: Produce on the bare proxy.
- ``produce_sync``: Produce (async_mode false: every in-sync replica stored it) through the gateway
  to a 4-partition topic, keyed.

and once at the end ``consume_n_ack``: `calls` messages back through ConsumeNAck loops (each call
acks the previous message), one group.

Figures (JSON on stdout): ``msgs_per_s``; ``server_cpu_us_per_call`` of the process that answered
(the bare server, the proxy or the gateway) from /proc (user + system, 10 ms ticks); for the gateway
paths also the partition node's CPU per call and ``node_publish_calls_per_100`` (PublishBatch
requests the node served per 100 Produce calls: how well concurrent calls coalesce).
``gateway_to_bare_cpu`` = the gateway's CPU per Produce over the bare server's CPU per call: what
translating a kafka-pixy call into the SDK costs on top of answering a gRPC call at all (the issue's
target is at most 1.25); ``gateway_to_bare_proxy_cpu`` the same over the bare proxy's. Both are the
median of the rounds' ratios (each round's in ``rounds``); the phase figures are those of the round
with the median ``gateway_to_bare_cpu``. Compare ratios from one run: this machine's speed drifts
between days, and within a run with what else runs.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import re
import statistics
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

import grpc
from weir import Client, stream_config
from weir_cli.launcher import LocalCluster
from weir_cli.process_basics import free_port
from weir_gateway.kafka_pixy.pb import kafkapixy_pb2 as pb
from weir_gateway.kafka_pixy.pb import kafkapixy_pb2_grpc as pb_grpc

from bench.report import run_and_report

TOPIC = "bench-pixy"
_PUBLISH_CALLS = re.compile(r'^weir_rpc_duration_seconds_count\{method="PublishBatch(?:Stream)?"\} (\S+)$', re.M)


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads) from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def publish_calls(metrics_port: int) -> float:
    """PublishBatch + PublishBatchStream requests a node has served (its /metrics)."""
    with urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=5) as reply:
        return sum(float(count) for count in _PUBLISH_CALLS.findall(reply.read().decode()))


async def drive(address: str, clients: int, calls: int, make_call: Any, first_index: int = 0) -> float:
    """`calls` calls spread over `clients` tasks (numbered from `first_index`) on one channel;
    returns the wall seconds."""
    async with grpc.aio.insecure_channel(address) as channel:
        stub = pb_grpc.KafkaPixyStub(channel)
        per_client = calls // clients

        async def client(index: int) -> None:
            for number in range(per_client):
                await make_call(stub, index, number)

        started = time.perf_counter()
        await asyncio.gather(*(client(first_index + index) for index in range(clients)))
        return time.perf_counter() - started


async def produce(stub: Any, index: int, number: int) -> None:
    request = pb.ProdRq(topic=TOPIC, key_value=b"k%d" % index, message=b"m-%d-%d" % (index, number))
    await stub.Produce(request, timeout=30)


def consumer(seen: set[bytes]) -> Any:
    last: dict[int, tuple[int, int]] = {}

    async def consume(stub: Any, index: int, _: int) -> None:
        while True:
            previous = last.get(index)
            request = pb.ConsNAckRq(topic=TOPIC, group="bench", no_ack=previous is None)
            if previous is not None:
                request.ack_partition, request.ack_offset = previous
            try:
                response = await stub.ConsumeNAck(request, timeout=30)
            except grpc.aio.AioRpcError as error:
                if error.code() != grpc.StatusCode.NOT_FOUND:
                    raise
                last.pop(index, None)
                continue
            last[index] = (response.partition, response.offset)
            seen.add(response.message)
            return

    return consume


async def measure(
    name: str,
    address: str,
    pids: dict[str, int],
    call: Any,
    *,
    clients: int,
    calls: int,
    node_metrics_port: int = 0,
    first_index: int = 0,
) -> dict[str, Any]:
    """One phase: `calls` calls of `call` on `address` by clients numbered from `first_index`;
    {calls, seconds, msgs_per_s, <kind>_cpu_us_per_call for each of `pids` (µs),
    node_publish_calls_per_100 when `node_metrics_port`}."""
    before = {kind: cpu_seconds(pid) for kind, pid in pids.items()}
    publishes_before = publish_calls(node_metrics_port) if node_metrics_port else 0.0
    seconds = await drive(address, clients, calls, call, first_index)
    done = calls // clients * clients
    figures: dict[str, Any] = {"calls": done, "seconds": round(seconds, 3), "msgs_per_s": round(done / seconds)}
    for kind, pid in pids.items():
        figures[f"{kind}_cpu_us_per_call"] = round((cpu_seconds(pid) - before[kind]) / done * 1e6, 1)
    if node_metrics_port:
        publishes = publish_calls(node_metrics_port) - publishes_before
        figures["node_publish_calls_per_100"] = round(publishes * 100 / done, 1)
    print(f"[bench.gateway] {name}: {figures}", file=sys.stderr, flush=True)
    return figures


def ratio(numerator: float, denominator: float) -> float | None:
    return round(numerator / denominator, 2) if denominator else None


async def produce_rounds(
    args: argparse.Namespace, addresses: dict[str, str], pids: dict[str, int], node_metrics_port: int
) -> dict[str, Any]:
    """`args.rounds` rounds of bare, proxy and gateway Produce phases; the median round's phase
    figures, the median ratios and each round's CPU per call (µs) and ratios. `addresses`: "bare",
    "proxy", "gateway" (host:port); `pids`: those and "node"."""
    rounds: list[dict[str, Any]] = []
    for number in range(args.rounds):  # each round's clients are numbered apart: distinct payloads
        phase = {"clients": args.clients, "calls": args.calls, "first_index": number * args.clients}
        bare = await measure("bare_unary", addresses["bare"], {"server": pids["bare"]}, produce, **phase)
        proxy = await measure("bare_proxy", addresses["proxy"], {"server": pids["proxy"]}, produce, **phase)
        gateway_figures = await measure(
            "produce_sync",
            addresses["gateway"],
            {"server": pids["gateway"], "node": pids["node"]},
            produce,
            node_metrics_port=node_metrics_port,
            **phase,
        )
        gateway_cpu = gateway_figures["server_cpu_us_per_call"]
        rounds.append(
            {
                "phases": {"bare_unary": bare, "bare_proxy": proxy, "produce_sync": gateway_figures},
                "gateway_to_bare_cpu": ratio(gateway_cpu, bare["server_cpu_us_per_call"]),
                "gateway_to_bare_proxy_cpu": ratio(gateway_cpu, proxy["server_cpu_us_per_call"]),
            }
        )
    ordered = sorted(rounds, key=lambda entry: entry["gateway_to_bare_cpu"] or 0.0)
    median_round = ordered[(len(ordered) - 1) // 2]
    results: dict[str, Any] = dict(median_round["phases"])
    for name in ("gateway_to_bare_cpu", "gateway_to_bare_proxy_cpu"):
        values = [entry[name] for entry in rounds if entry[name] is not None]
        results[name] = round(statistics.median(values), 2) if values else None
    results["rounds"] = [
        {
            **{f"{phase}_cpu_us": figures["server_cpu_us_per_call"] for phase, figures in entry["phases"].items()},
            "gateway_to_bare_cpu": entry["gateway_to_bare_cpu"],
            "gateway_to_bare_proxy_cpu": entry["gateway_to_bare_proxy_cpu"],
        }
        for entry in rounds
    ]
    return results


async def start_floor(port: int, upstream: str | None = None) -> asyncio.subprocess.Process:
    """A bench.bare_kafka_pixy process on 127.0.0.1:`port` (a bare proxy to `upstream` when given)."""
    command = [sys.executable, "-m", "bench.bare_kafka_pixy", str(port), *([upstream] if upstream else [])]
    return await asyncio.create_subprocess_exec(*command, stderr=asyncio.subprocess.DEVNULL)


async def stop_floor(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.terminate()
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(process.wait(), 10)


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    cluster = await asyncio.to_thread(LocalCluster.start, workdir / "cluster", nodes=1, routers=1, replicators=0)
    bare_port, proxy_port = free_port(), free_port()
    addresses = {"bare": f"127.0.0.1:{bare_port}", "proxy": f"127.0.0.1:{proxy_port}"}
    bare = await start_floor(bare_port)
    proxy = await start_floor(proxy_port, addresses["bare"])
    try:
        gateway = await asyncio.to_thread(
            cluster.start_gateway, "gateway-bench", {"WEIR_GATEWAY_KAFKA_PIXY_LONG_POLLING_TIMEOUT_MS": "500"}
        )
        cluster.gateways.append(gateway)
        addresses["gateway"] = gateway.kafka_pixy_address
        async with Client(cluster.router_addresses) as client:
            await client.create_stream(stream_config(TOPIC, partitions=4))
        for address in addresses.values():  # warm up (distinct payloads)
            await drive(address, 1, 50, produce, first_index=10_000)
        node = cluster.nodes[0]
        pids = {"bare": bare.pid, "proxy": proxy.pid, "gateway": gateway.pid, "node": node.pid}
        results = await produce_rounds(args, addresses, pids, node.metrics_port)
        seen: set[bytes] = set()
        results["consume_n_ack"] = await measure(
            "consume_n_ack",
            gateway.kafka_pixy_address,
            {"server": gateway.pid, "node": node.pid},
            consumer(seen),
            clients=args.clients,
            calls=args.calls,
        )
        results["consume_n_ack"]["distinct_messages"] = len(seen)
        results["settings"] = {"clients": args.clients, "calls": args.calls, "rounds": args.rounds}
        return results
    finally:
        for process in (proxy, bare):
            await stop_floor(process)
        await asyncio.to_thread(cluster.stop)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.gateway_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=32, help="concurrent client tasks")
    parser.add_argument("--calls", type=int, default=20_000, help="calls per measured phase")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the three Produce phases (median)")
    parser.add_argument("--smoke", action="store_true", help="tiny counts: checks it works")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    if args.smoke:
        args.clients, args.calls, args.rounds = min(args.clients, 8), min(args.calls, 400), 1
    return run_and_report(run, args, "weir-bench-gateway-")


if __name__ == "__main__":
    sys.exit(main())
