"""Object put and get throughput: Weir's object store next to NATS JetStream's, in one run (issue 28).

Run: ``uv run python -m bench.objects_bench [--smoke] [--objects N] [--mib N] [--out PATH]``
(``make bench`` runs it; ``make bench-objects`` alone).

Each system on this machine with one copy: `objects` objects of `mib` MiB each, put one after the
other, then got back (the content checked). Weir: a local cluster of one router and one partition
node; the SDK's `weir.ObjectStore` straight to the primary, and the router's PutObjectStream /
GetObjectStream (what a client generated from objects.proto does); 256 KiB chunks, each put
fsynced by the node before the next is acknowledged. NATS: one nats-server with
`sync_interval: always`, nats-py's object store (128 KiB chunks, its default).

Figures (JSON on stdout): per phase ``mib_per_s``, and ``weir_<path>_<op>_to_nats``: Weir's MiB/s over
NATS's. Compare ratios from one run: this machine's speed drifts between days.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
from nats.aio.client import Client as NatsClient
from weir import Client, ObjectStore
from weir.v1 import objects_pb2 as pb
from weir.v1 import objects_pb2_grpc
from weir_cli.launcher import LocalCluster

from bench.compare.nats_driver import NatsDriver
from bench.report import run_and_report

BUCKET = "bench"
PIECE = 64 * 1024


def payload(index: int, size: int) -> bytes:
    seed = hashlib.sha256(b"%d" % index).digest()
    return (seed * (size // len(seed) + 1))[:size]


async def timed(count: int, size: int, call: Callable[[int], Awaitable[None]]) -> dict[str, Any]:
    started = time.perf_counter()
    for index in range(count):
        await call(index)
    seconds = time.perf_counter() - started
    return {"objects": count, "mib": count * size / 2**20, "mib_per_s": round(count * size / 2**20 / seconds, 1)}


async def pieces(data: bytes) -> AsyncIterator[bytes]:
    for start in range(0, len(data), PIECE):
        yield data[start : start + PIECE]


async def weir_phases(args: argparse.Namespace, workdir: Path, size: int) -> dict[str, Any]:
    cluster = await asyncio.to_thread(LocalCluster.start, workdir / "weir", nodes=1, routers=1, replicators=0)
    try:
        async with Client(cluster.router_addresses) as client:
            store = ObjectStore(client)
            await store.create_bucket(BUCKET)

            async def sdk_put(index: int) -> None:
                await store.put(BUCKET, f"sdk-{index}", pieces(payload(index, size)))

            async def sdk_get(index: int) -> None:
                _, chunks = await store.get(BUCKET, f"sdk-{index}")
                assert b"".join([chunk async for chunk in chunks]) == payload(index, size)

            sdk = {"put": await timed(args.objects, size, sdk_put), "get": await timed(args.objects, size, sdk_get)}
        async with grpc.aio.insecure_channel(cluster.router_addresses[0]) as channel:
            stub = objects_pb2_grpc.ObjectStoreStub(channel)

            async def frames(index: int) -> AsyncIterator[pb.PutObjectStreamFrame]:
                yield pb.PutObjectStreamFrame(start=pb.PutObjectStart(bucket=BUCKET, name=f"svc-{index}"))
                async for piece in pieces(payload(index, size)):
                    yield pb.PutObjectStreamFrame(data=piece)
                yield pb.PutObjectStreamFrame(finish=True)

            async def router_put(index: int) -> None:
                await stub.PutObjectStream(frames(index), timeout=600)

            async def router_get(index: int) -> None:
                got = bytearray()
                async for frame in stub.GetObjectStream(pb.GetObjectRequest(bucket=BUCKET, name=f"svc-{index}")):
                    got += frame.data
                assert bytes(got) == payload(index, size)

            router = {
                "put": await timed(args.objects, size, router_put),
                "get": await timed(args.objects, size, router_get),
            }
    finally:
        await asyncio.to_thread(cluster.stop)
    return {"weir_sdk": sdk, "weir_router": router}


async def nats_phases(args: argparse.Namespace, workdir: Path, size: int) -> dict[str, Any]:
    driver = NatsDriver(1, sync_always=True)
    await driver.start(workdir / "nats", set())
    connection = NatsClient()
    try:
        await connection.connect(servers=driver.server_urls)
        store = await connection.jetstream().create_object_store(BUCKET)

        async def put(index: int) -> None:
            await store.put(f"nats-{index}", payload(index, size))

        async def get(index: int) -> None:
            result = await store.get(f"nats-{index}")
            assert result.data == payload(index, size)

        return {"nats": {"put": await timed(args.objects, size, put), "get": await timed(args.objects, size, get)}}
    finally:
        await connection.close()
        await driver.stop()


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    size = args.mib * 1024 * 1024
    figures: dict[str, Any] = {"objects": args.objects, "object_mib": args.mib}
    figures.update(await weir_phases(args, workdir, size))
    figures.update(await nats_phases(args, workdir, size))
    for path in ("sdk", "router"):
        for operation in ("put", "get"):
            ratio = figures[f"weir_{path}"][operation]["mib_per_s"] / figures["nats"][operation]["mib_per_s"]
            figures[f"weir_{path}_{operation}_to_nats"] = round(ratio, 3)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench.objects_bench", description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--objects", type=int, default=5, help="objects per phase")
    parser.add_argument("--mib", type=int, default=64, help="MiB per object")
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: checks it works")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args(argv)
    if args.smoke:
        args.objects, args.mib = 2, 2
    return run_and_report(run, args, "weir-bench-objects-")


if __name__ == "__main__":
    sys.exit(main())
