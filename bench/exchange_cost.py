"""What one lockstep exchange on a long-lived grpc.aio stream costs its caller, by message size.

    uv run python -m bench.exchange_cost
    uv run python -m bench.exchange_cost --sizes 1000,140000 --rounds 3000

Replication moves each commit through lockstep exchanges (FetchReplicationStream to the primary,
ReplicateMessageStream to each secondary: four per commit with two secondaries). This measures the
caller's side of one: a servicer that answers each ReplicateMessageRequest at once runs in a child
process (pinned to CPU 0 when there are two CPUs), and this process (CPU 1) writes a request
carrying one `--sizes` bytes record batch and reads the answer, `--rounds` times after a warm-up.
Prints JSON per size: the caller's CPU (user + system) and wall time per exchange in µs, and the
CPU per KiB sent. It separates what a call costs from what its bytes cost (docs/benchmarks.md,
issue 25).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
from weir.v1 import internal_pb2, internal_pb2_grpc

WARM_UP_ROUNDS = 100


class _Answering(internal_pb2_grpc.ReplicationServicer):
    async def ReplicateMessageStream(
        self, requests: AsyncIterator[internal_pb2.ReplicateMessageRequest], context: Any
    ) -> AsyncIterator[internal_pb2.ReplicateResponse]:
        async for request in requests:
            yield internal_pb2.ReplicateResponse(result_code="ok", last_seq=len(request.record_batches))


async def _serve() -> None:
    server = grpc.aio.server()
    internal_pb2_grpc.add_ReplicationServicer_to_server(_Answering(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(port, flush=True)
    await server.wait_for_termination()


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def _measure(port: int, size: int, rounds: int) -> dict[str, float]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = internal_pb2_grpc.ReplicationStub(channel).ReplicateMessageStream()
        request = internal_pb2.ReplicateMessageRequest(stream="s", record_batches=[os.urandom(size)])
        for _ in range(WARM_UP_ROUNDS):
            await call.write(request)
            await call.read()
        cpu, wall = _cpu_seconds(), time.perf_counter()
        for _ in range(rounds):
            await call.write(request)
            await call.read()
        cpu, wall = _cpu_seconds() - cpu, time.perf_counter() - wall
        call.cancel()
    return {
        "bytes": size,
        "caller_cpu_us_per_exchange": round(cpu / rounds * 1e6, 1),
        "wall_us_per_exchange": round(wall / rounds * 1e6, 1),
        "caller_cpu_us_per_kib": round(cpu / rounds * 1e6 / (size / 1024), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.exchange_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,20000,140000", help="comma-separated request sizes in bytes")
    parser.add_argument("--rounds", type=int, default=2000, help="exchanges measured per size")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.serve:
        asyncio.run(_serve())
        return
    two_cpus = (os.cpu_count() or 1) >= 2
    prefix = ["taskset", "-c", "0"] if two_cpus else []
    server = subprocess.Popen([*prefix, sys.executable, "-m", "bench.exchange_cost", "--serve"], stdout=subprocess.PIPE)
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        if two_cpus:
            os.sched_setaffinity(0, {1})
        sizes = [int(size) for size in arguments.sizes.split(",")]
        results = [asyncio.run(_measure(port, size, arguments.rounds)) for size in sizes]
    finally:
        server.kill()
        server.wait()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
