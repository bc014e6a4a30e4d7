"""A key-value bucket stays linearisable per key while its primary is SIGKILLed (issue 28).

Concurrent clients increment one counter key by compare-and-set (Get, then Update with the
revision read) through the routers of a real 3-node cluster, and read it, while the primary of the
bucket's stream is killed mid-run. The history is then checked against a model of a
compare-and-set register:
- no two acknowledged updates replaced the same revision, and their values rise with their
  revisions;
- the kept revisions (the bucket keeps 64) form one chain: each value is the one before it plus
  one, written over the revision before it by an update that was acknowledged or whose call
  failed (its outcome unknown to the client), and no acknowledged update since is missing;
- no read is older than an update acknowledged before the read started;
- a watcher of the key, reconnecting after the last revision it saw whenever its call ends, sees
  every acknowledged update once and in revision order, each with its value.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from dataclasses import dataclass, field
from pathlib import Path

import grpc
import pytest
from weir.cluster import Client as WeirClient
from weir.kv import bucket_stream
from weir.v1 import kv_pb2, kv_pb2_grpc

from tests.conftest import eventually, start_cluster

pytestmark = [pytest.mark.slow, pytest.mark.timeout(240)]

KEY = "counter"
CALL_TIMEOUT_S = 60


@dataclass
class History:
    updates: list[tuple[float, float, int, int, int]] = field(default_factory=list)  # start, end, expected, new, value
    unknown: list[tuple[int, int]] = field(default_factory=list)  # (expected, value) of failed updates
    reads: list[tuple[float, float, int]] = field(default_factory=list)  # start, end, revision
    refused: int = 0  # wrong_revision: another client won the race (nothing stored)


async def client_loop(stub: kv_pb2_grpc.KeyValueStub, bucket: str, history: History, stop_at: float) -> None:
    while time.monotonic() < stop_at:
        started = time.monotonic()
        try:
            got = await stub.Get(kv_pb2.KvGetRequest(bucket=bucket, key=KEY), timeout=CALL_TIMEOUT_S)
        except grpc.aio.AioRpcError:
            continue
        history.reads.append((started, time.monotonic(), got.entry.revision))
        value = int(got.entry.value) + 1
        started = time.monotonic()
        try:
            answer = await stub.Update(
                kv_pb2.KvUpdateRequest(
                    bucket=bucket, key=KEY, value=str(value).encode(), expected_revision=got.entry.revision
                ),
                timeout=CALL_TIMEOUT_S,
            )
        except grpc.aio.AioRpcError as error:
            if error.code() == grpc.StatusCode.FAILED_PRECONDITION:
                history.refused += 1
            else:
                history.unknown.append((got.entry.revision, value))
            continue
        history.updates.append((started, time.monotonic(), got.entry.revision, answer.revision, value))


def check(history: History, stored: list[kv_pb2.KvHistoryEntry], initial: int) -> None:
    acknowledged = sorted(history.updates, key=lambda update: update[3])
    # Compare-and-set: no two acknowledged updates won over the same revision or wrote one value.
    expected = [update[2] for update in acknowledged]
    assert len(set(expected)) == len(expected), "two acknowledged updates replaced the same revision"
    values = [update[4] for update in acknowledged]
    assert values == sorted(set(values)), "acknowledged values are not increasing with their revisions"
    # The kept revisions (the newest 64 at most) form one chain, each written by an update that was
    # acknowledged or whose call failed, and hold every acknowledged update since the first kept one.
    by_revision = {update[3]: (update[2], update[4]) for update in acknowledged}
    chain = [(entry.revision, int(entry.value)) for entry in stored]
    unknown = set(history.unknown)
    for (previous_revision, previous_value), (revision, value) in itertools.pairwise(chain):
        assert value == previous_value + 1, f"revision {revision} holds {value} after {previous_value}"
        if revision in by_revision:
            assert by_revision[revision] == (previous_revision, value), revision
        else:
            assert (previous_revision, value) in unknown, f"revision {revision} was written by nobody"
    kept = {revision for revision, _ in chain}
    assert {revision for revision in by_revision if revision >= chain[0][0]} <= kept, "an acknowledged update is lost"
    assert chain[-1][1] >= values[-1], "the key's value went back"
    # Reads: never older than an update acknowledged before the read started; an acknowledged
    # revision read holds that update's value.
    for started, _, revision in history.reads:
        acknowledged_before = [update[3] for update in acknowledged if update[1] < started]
        assert revision >= max(acknowledged_before, default=initial), "a read went back in time"


async def watch_into(
    stub: kv_pb2_grpc.KeyValueStub, bucket: str, from_revision: int, seen: list[tuple[int, int]]
) -> None:
    """Put every (revision, value) a watcher from `from_revision` sees into `seen`, reconnecting
    after the last revision it saw when its call fails (as a client does across a failover). Runs
    until cancelled."""
    while True:
        call = stub.Watch(kv_pb2.KvWatchRequest(bucket=bucket, key=KEY, from_revision=from_revision))
        try:
            async for event in call:
                seen.append((event.put.revision, int(event.put.value)))
                from_revision = event.put.revision + 1
        except grpc.aio.AioRpcError:
            await asyncio.sleep(0.2)  # reconnect from the revision after the last one seen
        finally:
            call.cancel()


def check_watch(seen: list[tuple[int, int]], history: History, stored: list[kv_pb2.KvHistoryEntry]) -> None:
    """Once each, in order, nothing acknowledged missing, every value the one its revision holds."""
    revisions = [revision for revision, _ in seen]
    assert revisions == sorted(set(revisions)), "the watcher saw a revision twice or out of order"
    acknowledged = {update[3]: update[4] for update in history.updates}
    missing = sorted(set(acknowledged) - set(revisions))
    assert not missing, f"the watcher missed acknowledged revisions {missing[:5]}"
    for revision, value in seen:
        if revision in acknowledged:
            assert acknowledged[revision] == value, revision
    kept = {entry.revision: int(entry.value) for entry in stored}
    for revision, value in seen:
        if revision in kept:
            assert kept[revision] == value, revision


async def test_compare_and_set_stays_linearisable_across_a_primary_kill(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path)
    try:
        bucket = "accounts"
        async with grpc.aio.insecure_channel(cluster.router_addresses[0]) as channel:
            stub = kv_pb2_grpc.KeyValueStub(channel)
            await stub.CreateBucket(kv_pb2.KvCreateBucketRequest(bucket=bucket, replicas=3, history=64))
            initial = (await stub.Put(kv_pb2.KvPutRequest(bucket=bucket, key=KEY, value=b"0"))).revision
            history = History()
            seen: list[tuple[int, int]] = []
            watcher = asyncio.create_task(watch_into(stub, bucket, initial + 1, seen))
            stop_at = time.monotonic() + 12
            clients = [asyncio.create_task(client_loop(stub, bucket, history, stop_at)) for _ in range(4)]
            await asyncio.sleep(3)
            async with WeirClient(cluster.router_addresses) as admin:
                route = await admin.route(bucket_stream(bucket))
            primary = route.partitions[0].primary.node_id
            victim = next(node for node in cluster.nodes if node.name == primary)
            acknowledged_before_kill = len(history.updates)
            victim.kill()
            await asyncio.gather(*clients)
            assert acknowledged_before_kill > 0
            assert len(history.updates) > acknowledged_before_kill, "no update was acknowledged after the failover"
            stored = (
                await stub.History(kv_pb2.KvHistoryRequest(bucket=bucket, key=KEY), timeout=CALL_TIMEOUT_S)
            ).entries
            last = stored[-1].revision

            async def caught_up() -> bool:
                return bool(seen) and seen[-1][0] >= last

            try:
                await eventually(caught_up, CALL_TIMEOUT_S, f"the watcher at revision {last}")
            finally:
                watcher.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await watcher
        check(history, list(stored), initial)
        check_watch(seen, history, list(stored))
    finally:
        cluster.stop()
