"""Key-value put and get: Weir's buckets next to NATS JetStream KV and Redis, in one run (issue 28).

Run: ``uv run python -m bench.kv_bench [--smoke] [--clients N] [--messages N] [--out PATH]``
(``make bench`` runs it; ``make bench-kv`` alone).

Each system on this machine, one copy (replicas 1), `messages` operations per phase over `clients`
concurrent tasks, each waiting for its answer before the next; 1,000 keys, 100-byte values:

- ``weir_router``: kv.proto's Put and Get through a router (what any gRPC client of
  weir.v1.KeyValue does: the router runs the SDK's KeyValue on the partition's primary). A Put is
  stored and fsynced (the node's default fsync policy) before its answer.
- ``weir_sdk``: the SDK's `weir.KeyValue` straight to the primary (routes cached, no router hop).
- ``nats_kv``: nats-py's JetStream KV (`kv.put`, `kv.get`) on one nats-server with
  ``sync_interval: always``, so a put is fsynced before its answer as Weir's is.
- ``redis``: SET and GET on one redis-server (AOF, fsync every second: a put is not fsynced before
  its answer), and HSET / HGET of one hash.

Figures (JSON on stdout): per phase ``ops_per_s`` and ``p50_ms`` / ``p99_ms`` of the calls, and
``<system>_<op>_to_nats``: Weir's ops/s over NATS KV's. Compare ratios from one run: this
machine's speed drifts between days.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import grpc
import redis.asyncio as redis_asyncio
from nats.aio.client import Client as NatsClient
from weir import Client, KeyValue
from weir.v1 import kv_pb2, kv_pb2_grpc
from weir_cli.launcher import LocalCluster

from bench.compare.nats_driver import NatsDriver
from bench.compare.redis_driver import RedisDriver
from bench.report import clients_and_messages_main

KEYS = 1000
VALUE = b"v" * 100
BUCKET = "bench"

Call = Callable[[int, int], Awaitable[None]]


async def phase(clients: int, operations: int, call: Call) -> dict[str, Any]:
    """`operations` calls over `clients` tasks (each calls in turn): ops/s and latency percentiles."""
    per_client = max(1, operations // clients)
    latencies: list[float] = []

    async def client(index: int) -> None:
        for number in range(per_client):
            started = time.perf_counter()
            await call(index, number)
            latencies.append(time.perf_counter() - started)

    started = time.perf_counter()
    await asyncio.gather(*(client(index) for index in range(clients)))
    seconds = time.perf_counter() - started
    cuts = statistics.quantiles(latencies, n=100) if len(latencies) > 1 else latencies * 99
    return {
        "operations": len(latencies),
        "ops_per_s": round(len(latencies) / seconds, 1),
        "p50_ms": round(cuts[49] * 1000, 3),
        "p99_ms": round(cuts[98] * 1000, 3),
    }


def key_of(index: int, number: int) -> str:
    return f"key.{(index * 7919 + number) % KEYS}"


async def put_and_get(clients: int, operations: int, put: Call, get: Call) -> dict[str, Any]:
    """A put phase (which also writes every key once before it, so gets find values), then a get phase."""
    for number in range(KEYS):
        await put(0, number)
    return {"put": await phase(clients, operations, put), "get": await phase(clients, operations, get)}


async def weir_phases(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    cluster = await asyncio.to_thread(LocalCluster.start, workdir / "weir", nodes=1, routers=1, replicators=0)
    try:
        async with grpc.aio.insecure_channel(cluster.router_addresses[0]) as channel:
            stub = kv_pb2_grpc.KeyValueStub(channel)
            await stub.CreateBucket(kv_pb2.KvCreateBucketRequest(bucket=BUCKET), timeout=30)

            async def router_put(index: int, number: int) -> None:
                await stub.Put(kv_pb2.KvPutRequest(bucket=BUCKET, key=key_of(index, number), value=VALUE), timeout=30)

            async def router_get(index: int, number: int) -> None:
                got = await stub.Get(kv_pb2.KvGetRequest(bucket=BUCKET, key=key_of(index, number)), timeout=30)
                assert got.entry.value == VALUE

            through_router = await put_and_get(args.clients, args.messages, router_put, router_get)
        async with Client(cluster.router_addresses) as client:
            kv = KeyValue(client)

            async def sdk_put(index: int, number: int) -> None:
                await kv.put(BUCKET, key_of(index, number), VALUE)

            async def sdk_get(index: int, number: int) -> None:
                entry = await kv.get(BUCKET, key_of(index, number))
                assert entry is not None and entry.value == VALUE

            direct = await put_and_get(args.clients, args.messages, sdk_put, sdk_get)
    finally:
        await asyncio.to_thread(cluster.stop)
    return {"weir_router": through_router, "weir_sdk": direct}


async def nats_phases(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    driver = NatsDriver(1, sync_always=True)
    await driver.start(workdir / "nats", set())
    connection = NatsClient()
    try:
        await connection.connect(servers=driver.server_urls)
        js = connection.jetstream()
        kv = await js.create_key_value(bucket=BUCKET, history=1)

        async def put(index: int, number: int) -> None:
            await kv.put(key_of(index, number), VALUE)

        async def get(index: int, number: int) -> None:
            entry = await kv.get(key_of(index, number))
            assert entry.value == VALUE

        return {"nats_kv": await put_and_get(args.clients, args.messages, put, get)}
    finally:
        await connection.close()
        await driver.stop()


async def redis_phases(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    driver = RedisDriver(1)
    await driver.start(workdir / "redis", set())
    connection = redis_asyncio.Redis(port=driver.primary_port, max_connections=args.clients + 4)
    try:

        async def put(index: int, number: int) -> None:
            await connection.set(key_of(index, number), VALUE)

        async def get(index: int, number: int) -> None:
            assert await connection.get(key_of(index, number)) == VALUE

        async def hash_put(index: int, number: int) -> None:
            await connection.hset(BUCKET, key_of(index, number), VALUE)

        async def hash_get(index: int, number: int) -> None:
            assert await connection.hget(BUCKET, key_of(index, number)) == VALUE

        return {
            "redis": await put_and_get(args.clients, args.messages, put, get),
            "redis_hash": await put_and_get(args.clients, args.messages, hash_put, hash_get),
        }
    finally:
        await connection.aclose()
        await driver.stop()


async def run(args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    figures: dict[str, Any] = {"clients": args.clients, "keys": KEYS, "value_bytes": len(VALUE)}
    figures.update(await weir_phases(args, workdir))
    figures.update(await nats_phases(args, workdir))
    figures.update(await redis_phases(args, workdir))
    nats = figures["nats_kv"]
    for system in ("weir_router", "weir_sdk"):
        for operation in ("put", "get"):
            ratio = figures[system][operation]["ops_per_s"] / nats[operation]["ops_per_s"]
            figures[f"{system}_{operation}_to_nats"] = round(ratio, 3)
    return figures


def main(argv: list[str] | None = None) -> int:
    return clients_and_messages_main(argv, run, prog="bench.kv_bench", doc=__doc__ or "")


if __name__ == "__main__":
    sys.exit(main())
