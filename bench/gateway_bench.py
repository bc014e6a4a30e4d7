"""The kafka-pixy front door's cost, measured in one run next to a bare grpc.aio unary call.

Run: ``uv run python -m bench.gateway_bench [--smoke] [--clients N] [--calls N] [--out PATH]``
(``make bench`` runs it after the comparison harness; ``make bench-gateway`` alone).

Starts a local cluster (its own redis-server, 1 router, 1 partition node, no replicator; replicas 1)
with one gateway, and a bare grpc.aio server process serving the same /KafkaPixy/Produce method with
a handler that answers at once (bench/bare_kafka_pixy.py): the floor any gRPC front door in Python
pays per call. Then, with `clients` concurrent client tasks in this process each calling in turn:

- ``bare_unary``: Produce on the bare server (`calls` calls in all).
- ``produce_sync``: Produce (async_mode false: every in-sync replica stored it) through the gateway
  to a 4-partition topic, keyed.
- ``consume_n_ack``: the same number of messages back through ConsumeNAck loops (each call acks the
  previous message), one group.

Figures (JSON on stdout): ``msgs_per_s``; ``server_cpu_us_per_call`` of the process that answered
(the bare server, or the gateway) from /proc (user + system, 10 ms ticks); for the gateway paths also
the partition node's CPU per call; ``gateway_to_bare_cpu`` = the gateway's CPU per Produce over the
bare server's CPU per call: what translating a kafka-pixy call into the SDK costs on top of
answering a gRPC call at all (the issue's target is at most 1.25). Compare ratios from one run:
this machine's speed drifts between days.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc
from weir import Client, stream_config
from weir_cli.launcher import LocalCluster, free_port
from weir_gateway.kafka_pixy.pb import kafkapixy_pb2 as pb
from weir_gateway.kafka_pixy.pb import kafkapixy_pb2_grpc as pb_grpc

TOPIC = "bench-pixy"


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process (all its threads) from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


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
    name: str, address: str, pids: dict[str, int], call: Any, *, clients: int, calls: int
) -> dict[str, Any]:
    before = {kind: cpu_seconds(pid) for kind, pid in pids.items()}
    seconds = await drive(address, clients, calls, call)
    done = calls // clients * clients
    figures: dict[str, Any] = {"calls": done, "seconds": round(seconds, 3), "msgs_per_s": round(done / seconds)}
    for kind, pid in pids.items():
        figures[f"{kind}_cpu_us_per_call"] = round((cpu_seconds(pid) - before[kind]) / done * 1e6, 1)
    print(f"[bench.gateway] {name}: {figures}", file=sys.stderr, flush=True)
    return figures


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    cluster = await asyncio.to_thread(LocalCluster.start, workdir / "cluster", nodes=1, routers=1, replicators=0)
    bare_port = free_port()
    bare = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.bare_kafka_pixy", str(bare_port), stderr=asyncio.subprocess.DEVNULL
    )
    try:
        gateway = await asyncio.to_thread(
            cluster.start_gateway, "gateway-bench", {"WEIR_GATEWAY_KAFKA_PIXY_LONG_POLLING_TIMEOUT_MS": "500"}
        )
        cluster.gateways.append(gateway)
        async with Client(cluster.router_addresses) as client:
            await client.create_stream(stream_config(TOPIC, partitions=4))
        bare_address = f"127.0.0.1:{bare_port}"
        await drive(bare_address, 1, 50, produce, first_index=10_000)  # warm up (distinct payloads)
        await drive(gateway.kafka_pixy_address, 1, 50, produce, first_index=10_000)
        node_pid = cluster.nodes[0].pid
        results: dict[str, Any] = {
            "bare_unary": await measure(
                "bare_unary", bare_address, {"server": bare.pid}, produce, clients=args.clients, calls=args.calls
            ),
            "produce_sync": await measure(
                "produce_sync",
                gateway.kafka_pixy_address,
                {"server": gateway.pid, "node": node_pid},
                produce,
                clients=args.clients,
                calls=args.calls,
            ),
        }
        seen: set[bytes] = set()
        results["consume_n_ack"] = await measure(
            "consume_n_ack",
            gateway.kafka_pixy_address,
            {"server": gateway.pid, "node": node_pid},
            consumer(seen),
            clients=args.clients,
            calls=args.calls,
        )
        results["consume_n_ack"]["distinct_messages"] = len(seen)
        bare_cpu = results["bare_unary"]["server_cpu_us_per_call"]
        gateway_cpu = results["produce_sync"]["server_cpu_us_per_call"]
        results["gateway_to_bare_cpu"] = round(gateway_cpu / bare_cpu, 2) if bare_cpu else None
        results["settings"] = {"clients": args.clients, "calls": args.calls}
        return results
    finally:
        bare.terminate()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(bare.wait(), 10)
        await asyncio.to_thread(cluster.stop)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.gateway_bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=32, help="concurrent client tasks")
    parser.add_argument("--calls", type=int, default=20_000, help="calls per measured phase")
    parser.add_argument("--smoke", action="store_true", help="tiny counts: checks it works")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    if args.smoke:
        args.clients, args.calls = min(args.clients, 8), min(args.calls, 400)
    with tempfile.TemporaryDirectory(prefix="weir-bench-gateway-") as temporary:
        import uvloop

        results = uvloop.run(run(args, Path(temporary)))
    text = json.dumps(results, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
