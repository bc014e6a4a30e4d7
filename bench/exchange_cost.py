"""What one lockstep exchange costs both ends, by message size and transport: a long-lived
grpc.aio stream (what replication uses) against length-prefixed frames on a plain asyncio stream
(uvloop), the same protobuf bytes in each.

    uv run python -m bench.exchange_cost
    uv run python -m bench.exchange_cost --sizes 1000,140000 --rounds 3000 --transports grpc,frames
    uv run python -m bench.exchange_cost --idle-ms 10      # each exchange wakes an idle server

Replication moves each commit through lockstep exchanges (FetchReplicationStream to the primary,
ReplicateMessageStream to each secondary: four per commit with two secondaries). This measures one:
a server that answers each ReplicateMessageRequest at once with a ReplicateResponse runs in a child
process (pinned to CPU 0 when there are two CPUs), and this process (CPU 1) writes a request
carrying one `--sizes` bytes record batch and reads the answer, `--rounds` times after a warm-up,
waiting `--idle-ms` between exchanges (0: back to back; more: each exchange wakes both ends from
idle, as at a fixed low rate). Transports:

- ``grpc``: ReplicateMessageStream on grpc.aio (the servers' stack), both ends on uvloop;
- ``frames``: a 4-byte length and the serialized message, each way, on asyncio streams over
  uvloop: a prototype of what an internal transport without gRPC would cost (not used by Weir).

Prints JSON per transport and size: the caller's and the server's CPU (user + system, the server's
from /proc) and the wall time per exchange in µs. It separates what a call costs from what its
bytes cost (docs/benchmarks.md, issue 25).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import struct
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import uvloop
from weir.v1 import internal_pb2, internal_pb2_grpc

WARM_UP_ROUNDS = 100
CLOCK_TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")
_LENGTH = struct.Struct("<I")
# One exchange: send the request, return when its answer was read.
Exchange = Callable[[], Awaitable[None]]


class _Answering(internal_pb2_grpc.ReplicationServicer):
    async def ReplicateMessageStream(
        self, requests: AsyncIterator[internal_pb2.ReplicateMessageRequest], context: Any
    ) -> AsyncIterator[internal_pb2.ReplicateResponse]:
        async for request in requests:
            yield internal_pb2.ReplicateResponse(result_code="ok", last_seq=len(request.record_batches))


async def _answer_frames(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            (length,) = _LENGTH.unpack(await reader.readexactly(_LENGTH.size))
            request = internal_pb2.ReplicateMessageRequest.FromString(await reader.readexactly(length))
            answer = internal_pb2.ReplicateResponse(result_code="ok", last_seq=len(request.record_batches))
            encoded = answer.SerializeToString()
            writer.write(_LENGTH.pack(len(encoded)) + encoded)
            await writer.drain()
    except asyncio.IncompleteReadError:
        writer.close()


async def _serve() -> None:
    server = grpc.aio.server()
    internal_pb2_grpc.add_ReplicationServicer_to_server(_Answering(), server)
    grpc_port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    frames = await asyncio.start_server(_answer_frames, "127.0.0.1", 0)
    frames_port = frames.sockets[0].getsockname()[1]
    print(grpc_port, frames_port, flush=True)
    await server.wait_for_termination()


def _cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _process_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS_PER_SECOND  # utime, stime


async def _timed(exchange: Exchange, server_pid: int, rounds: int, idle_s: float) -> dict[str, float]:
    for _ in range(WARM_UP_ROUNDS):
        await exchange()
    cpu, server_cpu, wall = _cpu_seconds(), _process_cpu_seconds(server_pid), time.perf_counter()
    for _ in range(rounds):
        if idle_s:
            await asyncio.sleep(idle_s)
        await exchange()
    cpu, wall = _cpu_seconds() - cpu, time.perf_counter() - wall
    server_cpu = _process_cpu_seconds(server_pid) - server_cpu
    return {
        "caller_cpu_us_per_exchange": round(cpu / rounds * 1e6, 1),
        "server_cpu_us_per_exchange": round(server_cpu / rounds * 1e6, 1),
        "wall_us_per_exchange": round(wall / rounds * 1e6 - idle_s * 1e6, 1),
    }


async def _measure_grpc(port: int, server_pid: int, size: int, rounds: int, idle_s: float) -> dict[str, float]:
    async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = internal_pb2_grpc.ReplicationStub(channel).ReplicateMessageStream()
        request = internal_pb2.ReplicateMessageRequest(stream="s", record_batches=[os.urandom(size)])

        async def exchange() -> None:
            await call.write(request)
            await call.read()

        result = await _timed(exchange, server_pid, rounds, idle_s)
        call.cancel()
    return result


async def _measure_frames(port: int, server_pid: int, size: int, rounds: int, idle_s: float) -> dict[str, float]:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    request = internal_pb2.ReplicateMessageRequest(stream="s", record_batches=[os.urandom(size)])

    async def exchange() -> None:
        encoded = request.SerializeToString()
        writer.write(_LENGTH.pack(len(encoded)) + encoded)
        await writer.drain()
        (length,) = _LENGTH.unpack(await reader.readexactly(_LENGTH.size))
        internal_pb2.ReplicateResponse.FromString(await reader.readexactly(length))

    try:
        return await _timed(exchange, server_pid, rounds, idle_s)
    finally:
        writer.close()


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.exchange_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,20000,140000", help="comma-separated request sizes in bytes")
    parser.add_argument("--rounds", type=int, default=2000, help="exchanges measured per size")
    parser.add_argument("--transports", default="grpc,frames", help="comma-separated: grpc, frames")
    parser.add_argument("--idle-ms", type=float, default=0.0, help="wait between exchanges (default 0)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.serve:
        uvloop.run(_serve())
        return
    transports = arguments.transports.split(",")
    if unknown := set(transports) - {"grpc", "frames"}:
        parser.error(f"--transports: unknown {sorted(unknown)} (grpc, frames)")
    two_cpus = (os.cpu_count() or 1) >= 2
    prefix = ["taskset", "-c", "0"] if two_cpus else []
    server = subprocess.Popen([*prefix, sys.executable, "-m", "bench.exchange_cost", "--serve"], stdout=subprocess.PIPE)
    try:
        assert server.stdout is not None
        grpc_port, frames_port = (int(port) for port in server.stdout.readline().split())
        if two_cpus:
            os.sched_setaffinity(0, {1})
        measure = {"grpc": (_measure_grpc, grpc_port), "frames": (_measure_frames, frames_port)}
        results = []
        for size in [int(size) for size in arguments.sizes.split(",")]:
            for transport in transports:
                function, port = measure[transport]
                figures = uvloop.run(function(port, server.pid, size, arguments.rounds, arguments.idle_ms / 1000))
                results.append({"transport": transport, "bytes": size, "idle_ms": arguments.idle_ms, **figures})
    finally:
        server.kill()
        server.wait()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
