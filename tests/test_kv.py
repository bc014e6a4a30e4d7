"""Key-value buckets (kv.proto) through a real cluster's routers over gRPC, with the stubs generated
from kv.proto (what any gRPC client of weir.v1.KeyValue has): bucket lifecycle, revisions and
compare-and-set, tombstones, keys, history, watch (first the values, then every change, once and in
order, and a resume from a revision), and every bad request refused with its result code."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2, status_pb2
from weir.client import NodeClient
from weir.kv import bucket_stream
from weir.v1 import kv_pb2, kv_pb2_grpc
from weir_cli.launcher import LocalCluster

from tests.conftest import ClusterAddresses, eventually


@pytest.fixture(scope="module")
async def kv(cluster_addresses: ClusterAddresses) -> AsyncIterator[kv_pb2_grpc.KeyValueStub]:
    async with grpc.aio.insecure_channel(cluster_addresses.router_addresses[0]) as channel:
        yield kv_pb2_grpc.KeyValueStub(channel)


@pytest.fixture
async def bucket(kv: kv_pb2_grpc.KeyValueStub, stream_name: str) -> AsyncIterator[str]:
    name = stream_name[-40:].lstrip("-_") or "bucket"
    await kv.CreateBucket(kv_pb2.KvCreateBucketRequest(bucket=name, history=3))
    yield name
    with contextlib.suppress(grpc.aio.AioRpcError):  # a test that deleted it already
        await kv.DeleteBucket(kv_pb2.KvDeleteBucketRequest(bucket=name))


async def failure(call: Any) -> tuple[grpc.StatusCode, str, dict[str, str]]:
    """The status code, ErrorInfo reason and metadata of a call that must fail."""
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await call
    error = raised.value
    for key, value in error.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            for detail in status_pb2.Status.FromString(value).details:
                info = error_details_pb2.ErrorInfo()
                if detail.Unpack(info):
                    return error.code(), info.reason, dict(info.metadata)
    return error.code(), "", {}


async def test_put_get_update_create_and_delete_keep_revisions(kv: kv_pb2_grpc.KeyValueStub, bucket: str) -> None:
    first = await kv.Put(kv_pb2.KvPutRequest(bucket=bucket, key="config.db.host", value=b"a"))
    got = await kv.Get(kv_pb2.KvGetRequest(bucket=bucket, key="config.db.host"))
    assert (got.entry.value, got.entry.revision) == (b"a", first.revision)
    assert got.entry.ts_ms > 0
    # compare and set: the current revision wins, a stale one is told the current
    second = await kv.Update(
        kv_pb2.KvUpdateRequest(bucket=bucket, key="config.db.host", value=b"b", expected_revision=first.revision)
    )
    assert second.revision > first.revision
    code, reason, metadata = await failure(
        kv.Update(
            kv_pb2.KvUpdateRequest(bucket=bucket, key="config.db.host", value=b"c", expected_revision=first.revision)
        )
    )
    assert (code, reason, metadata["revision"]) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "wrong_revision",
        str(second.revision),
    )
    assert (await kv.Get(kv_pb2.KvGetRequest(bucket=bucket, key="config.db.host"))).entry.value == b"b"
    # create: only without a value
    code, reason, metadata = await failure(
        kv.Create(kv_pb2.KvCreateRequest(bucket=bucket, key="config.db.host", value=b"x"))
    )
    assert (code, reason, metadata["revision"]) == (
        grpc.StatusCode.FAILED_PRECONDITION,
        "wrong_revision",
        str(second.revision),
    )
    created = await kv.Create(kv_pb2.KvCreateRequest(bucket=bucket, key="config.db.port", value=b"5432"))
    assert created.revision > second.revision
    # delete: a tombstone; Get has no entry; Create works again over it
    deleted = await kv.Delete(kv_pb2.KvDeleteRequest(bucket=bucket, key="config.db.host"))
    assert not (await kv.Get(kv_pb2.KvGetRequest(bucket=bucket, key="config.db.host"))).HasField("entry")
    again = await kv.Create(kv_pb2.KvCreateRequest(bucket=bucket, key="config.db.host", value=b"d"))
    assert again.revision > deleted.revision
    assert not (await kv.Get(kv_pb2.KvGetRequest(bucket=bucket, key="never.written"))).HasField("entry")
    # Update with 0: only while the key has never had a value
    fresh = await kv.Update(kv_pb2.KvUpdateRequest(bucket=bucket, key="counter", value=b"1", expected_revision=0))
    code, reason, _ = await failure(
        kv.Update(kv_pb2.KvUpdateRequest(bucket=bucket, key="counter", value=b"1", expected_revision=0))
    )
    assert (code, reason) == (grpc.StatusCode.FAILED_PRECONDITION, "wrong_revision")
    assert fresh.revision > again.revision


async def test_keys_and_history(kv: kv_pb2_grpc.KeyValueStub, bucket: str) -> None:
    revisions = [
        (await kv.Put(kv_pb2.KvPutRequest(bucket=bucket, key=key, value=value))).revision
        for key, value in [("b", b"1"), ("a", b"1"), ("b", b"2"), ("b", b"3"), ("b", b"4"), ("c", b"1")]
    ]
    await kv.Delete(kv_pb2.KvDeleteRequest(bucket=bucket, key="c"))
    keys = await kv.Keys(kv_pb2.KvKeysRequest(bucket=bucket))
    assert [(e.key, e.revision, e.deleted) for e in keys.entries] == [
        ("a", revisions[1], False),
        ("b", revisions[4], False),
        ("c", revisions[5] + 1, True),
    ]
    assert not keys.truncated
    history = await kv.History(kv_pb2.KvHistoryRequest(bucket=bucket, key="b"))  # history depth 3
    assert [(e.value, e.revision, e.deleted) for e in history.entries] == [
        (b"2", revisions[2], False),
        (b"3", revisions[3], False),
        (b"4", revisions[4], False),
    ]
    later = await kv.History(kv_pb2.KvHistoryRequest(bucket=bucket, key="b", from_revision=revisions[4]))
    assert [e.value for e in later.entries] == [b"4"]
    deleted = await kv.History(kv_pb2.KvHistoryRequest(bucket=bucket, key="c"))
    assert [(e.value, e.deleted) for e in deleted.entries] == [(b"1", False), (b"", True)]


async def next_events(call: Any, count: int) -> list[tuple[str, str, bytes, int]]:
    """(kind, key, value, revision) of the next `count` events of a Watch call."""
    events = []
    for _ in range(count):
        event = await asyncio.wait_for(call.read(), 10)
        kind = event.WhichOneof("event")
        body = getattr(event, kind)
        events.append((kind, body.key, body.value if kind == "put" else b"", body.revision))
    return events


async def test_watch_gives_each_keys_value_then_every_change_once_and_resumes_from_a_revision(
    kv: kv_pb2_grpc.KeyValueStub, bucket: str
) -> None:
    put = {}
    for key, value in [("a", b"1"), ("b", b"1"), ("a", b"2"), ("c", b"1")]:
        put[(key, value)] = (await kv.Put(kv_pb2.KvPutRequest(bucket=bucket, key=key, value=value))).revision
    deleted_c = (await kv.Delete(kv_pb2.KvDeleteRequest(bucket=bucket, key="c"))).revision
    every = kv.Watch(kv_pb2.KvWatchRequest(bucket=bucket))
    only_a = kv.Watch(kv_pb2.KvWatchRequest(bucket=bucket, key="a"))
    try:
        # each key's current value (the delete of c included), in revision order; not a's first value
        assert await next_events(every, 3) == [
            ("put", "b", b"1", put[("b", b"1")]),
            ("put", "a", b"2", put[("a", b"2")]),
            ("delete", "c", b"", deleted_c),
        ]
        assert await next_events(only_a, 1) == [("put", "a", b"2", put[("a", b"2")])]
        # then every change as it is stored, even two of one key
        changes = [(key, value) for key, value in [("a", b"3"), ("b", b"2"), ("a", b"4")]]
        revisions = [(await kv.Put(kv_pb2.KvPutRequest(bucket=bucket, key=k, value=v))).revision for k, v in changes]
        assert await next_events(every, 3) == [
            ("put", key, value, revision) for (key, value), revision in zip(changes, revisions, strict=True)
        ]
        assert await next_events(only_a, 2) == [("put", "a", b"3", revisions[0]), ("put", "a", b"4", revisions[2])]
    finally:
        every.cancel()
        only_a.cancel()
    # a watcher that saw revision R resumes at R + 1: every later change, once
    resumed = kv.Watch(kv_pb2.KvWatchRequest(bucket=bucket, from_revision=revisions[0] + 1))
    try:
        assert await next_events(resumed, 2) == [("put", "b", b"2", revisions[1]), ("put", "a", b"4", revisions[2])]
    finally:
        resumed.cancel()


async def test_bucket_lifecycle_and_bad_requests(kv: kv_pb2_grpc.KeyValueStub, bucket: str) -> None:
    same = kv_pb2.KvCreateBucketRequest(bucket=bucket, history=3)
    await kv.CreateBucket(same)  # idempotent
    cases = [
        (kv.CreateBucket(kv_pb2.KvCreateBucketRequest(bucket=bucket, history=5)), "already_exists"),
        (kv.CreateBucket(kv_pb2.KvCreateBucketRequest(bucket="no spaces")), "invalid_config"),
        (kv.CreateBucket(kv_pb2.KvCreateBucketRequest(bucket="b", history=65)), "invalid_config"),
        (kv.Put(kv_pb2.KvPutRequest(bucket=bucket, key="a..b", value=b"")), "invalid_key"),
        (kv.Put(kv_pb2.KvPutRequest(bucket=bucket, key=".a", value=b"")), "invalid_key"),
        (kv.Put(kv_pb2.KvPutRequest(bucket=bucket, key="a*", value=b"")), "invalid_key"),
        (kv.Put(kv_pb2.KvPutRequest(bucket=bucket, key="", value=b"")), "invalid_key"),
        (kv.Put(kv_pb2.KvPutRequest(bucket=bucket, key="k" * 1025, value=b"")), "invalid_key"),
        (kv.Get(kv_pb2.KvGetRequest(bucket=bucket, key="a b")), "invalid_key"),
        (kv.Watch(kv_pb2.KvWatchRequest(bucket=bucket, key="a>")).read(), "invalid_key"),
        (kv.Put(kv_pb2.KvPutRequest(bucket=bucket, key="a", value=b"", ttl_ms=31_622_400_001)), "invalid_argument"),
        (kv.Touch(kv_pb2.KvTouchRequest(bucket=bucket, key="never", ttl_ms=1000)), "no_such_key"),
        (kv.Get(kv_pb2.KvGetRequest(bucket="missing-bucket", key="a")), "no_such_bucket"),
        (kv.Put(kv_pb2.KvPutRequest(bucket="missing-bucket", key="a", value=b"")), "no_such_bucket"),
        (kv.Keys(kv_pb2.KvKeysRequest(bucket="missing-bucket")), "no_such_bucket"),
        (kv.DeleteBucket(kv_pb2.KvDeleteBucketRequest(bucket="missing-bucket")), "no_such_bucket"),
        (kv.Watch(kv_pb2.KvWatchRequest(bucket="missing-bucket")).read(), "no_such_bucket"),
    ]
    for call, expected in cases:
        _, reason, _ = await failure(call)
        assert reason == expected
    # nothing above was stored
    assert [e.key for e in (await kv.Keys(kv_pb2.KvKeysRequest(bucket=bucket))).entries] == []
    await kv.DeleteBucket(kv_pb2.KvDeleteBucketRequest(bucket=bucket))
    _, reason, _ = await failure(kv.Get(kv_pb2.KvGetRequest(bucket=bucket, key="a")))
    assert reason == "no_such_bucket"


async def test_a_value_above_max_value_size_is_oversize(kv: kv_pb2_grpc.KeyValueStub, stream_name: str) -> None:
    name = "small-" + stream_name[-20:].lstrip("-_")
    await kv.CreateBucket(kv_pb2.KvCreateBucketRequest(bucket=name, max_value_size=10))
    try:
        await kv.Put(kv_pb2.KvPutRequest(bucket=name, key="k", value=b"x" * 10))
        code, reason, _ = await failure(kv.Put(kv_pb2.KvPutRequest(bucket=name, key="k", value=b"x" * 11)))
        assert (code, reason) == (grpc.StatusCode.INVALID_ARGUMENT, "oversize")
        assert (await kv.Get(kv_pb2.KvGetRequest(bucket=name, key="k"))).entry.value == b"x" * 10
    finally:
        await kv.DeleteBucket(kv_pb2.KvDeleteBucketRequest(bucket=name))


async def test_purge_leaves_one_tombstone_on_every_replica(
    kv: kv_pb2_grpc.KeyValueStub, cluster: LocalCluster, stream_name: str
) -> None:
    """Purge is a rollup: the key's earlier revisions go in the same commit as its tombstone, and
    the replicas mirror the removal."""
    name = "purged-" + stream_name[-20:].lstrip("-_")
    await kv.CreateBucket(kv_pb2.KvCreateBucketRequest(bucket=name, history=5, replicas=3))
    try:
        for value in (b"1", b"2", b"3"):
            await kv.Put(kv_pb2.KvPutRequest(bucket=name, key="k", value=value))
        kept = await kv.Put(kv_pb2.KvPutRequest(bucket=name, key="other", value=b"x"))
        purged = await kv.Purge(kv_pb2.KvPurgeRequest(bucket=name, key="k"))
        history = await kv.History(kv_pb2.KvHistoryRequest(bucket=name, key="k"))
        assert [(e.revision, e.deleted) for e in history.entries] == [(purged.revision, True)]
        assert not (await kv.Get(kv_pb2.KvGetRequest(bucket=name, key="k"))).HasField("entry")
        watch = kv.Watch(kv_pb2.KvWatchRequest(bucket=name))
        try:
            assert await next_events(watch, 2) == [
                ("put", "other", b"x", kept.revision),
                ("delete", "k", b"", purged.revision),
            ]
        finally:
            watch.cancel()

        async def copies_equal() -> bool:
            copies = []
            for node in cluster.nodes:
                async with NodeClient(node.internal_address) as internal:
                    copies.append([m.seq async for m in internal.read_all(bucket_stream(name), 0)])
            return all(copy == [kept.revision, purged.revision] for copy in copies)

        await eventually(copies_equal, 20, "every replica holds only the other key and the purge")
    finally:
        await kv.DeleteBucket(kv_pb2.KvDeleteBucketRequest(bucket=name))


async def test_a_value_with_a_ttl_replaces_the_history_and_goes_when_it_runs_out(
    kv: kv_pb2_grpc.KeyValueStub, bucket: str
) -> None:
    for value in (b"1", b"2"):
        await kv.Put(kv_pb2.KvPutRequest(bucket=bucket, key="session", value=value))
    await kv.Put(kv_pb2.KvPutRequest(bucket=bucket, key="stays", value=b"x"))
    expiring = await kv.Put(kv_pb2.KvPutRequest(bucket=bucket, key="session", value=b"3", ttl_ms=1500))
    history = await kv.History(kv_pb2.KvHistoryRequest(bucket=bucket, key="session"))
    assert [(e.value, e.revision) for e in history.entries] == [(b"3", expiring.revision)]
    assert (await kv.Get(kv_pb2.KvGetRequest(bucket=bucket, key="session"))).entry.value == b"3"

    async def expired() -> bool:
        return not (await kv.Get(kv_pb2.KvGetRequest(bucket=bucket, key="session"))).HasField("entry")

    await eventually(expired, 10, "the value gone once its TTL ran out")
    keys = await kv.Keys(kv_pb2.KvKeysRequest(bucket=bucket))
    assert [e.key for e in keys.entries] == ["stays"]  # nothing left of the key


async def test_touch_stores_the_value_again_with_a_new_ttl(kv: kv_pb2_grpc.KeyValueStub, bucket: str) -> None:
    first = await kv.Put(kv_pb2.KvPutRequest(bucket=bucket, key="lease", value=b"holder-1", ttl_ms=1000))
    await kv.Put(kv_pb2.KvPutRequest(bucket=bucket, key="probe", value=b"p", ttl_ms=1000))  # not touched
    touched = await kv.Touch(kv_pb2.KvTouchRequest(bucket=bucket, key="lease", ttl_ms=60_000))
    assert touched.revision > first.revision

    async def probe_expired() -> bool:  # a sweep ran past the first TTL
        return not (await kv.Get(kv_pb2.KvGetRequest(bucket=bucket, key="probe"))).HasField("entry")

    await eventually(probe_expired, 10, "the untouched key gone once its TTL ran out")
    got = await kv.Get(kv_pb2.KvGetRequest(bucket=bucket, key="lease"))  # the touched one stays
    assert (got.entry.value, got.entry.revision) == (b"holder-1", touched.revision)
    await kv.Delete(kv_pb2.KvDeleteRequest(bucket=bucket, key="lease"))
    _, reason, _ = await failure(kv.Touch(kv_pb2.KvTouchRequest(bucket=bucket, key="lease", ttl_ms=1000)))
    assert reason == "no_such_key"
