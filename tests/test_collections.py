"""Hash, set and queue stores (collections.proto) through a real cluster's routers over gRPC, with
the stubs generated from collections.proto: each store's operations with the seed's semantics, keys,
fields and members that are any string, a queue popped by concurrent clients (each element once),
and bad requests refused with their result codes and nothing stored."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import grpc
import pytest
from weir.v1 import collections_pb2 as pb
from weir.v1 import collections_pb2_grpc

from tests.conftest import ClusterAddresses, reason_of


@pytest.fixture(scope="module")
async def stores(cluster_addresses: ClusterAddresses) -> AsyncIterator[collections_pb2_grpc.CollectionsStub]:
    async with grpc.aio.insecure_channel(cluster_addresses.router_addresses[0]) as channel:
        yield collections_pb2_grpc.CollectionsStub(channel)


@pytest.fixture
def name(stream_name: str) -> str:
    return stream_name[-40:].lstrip("-_")


async def test_a_hash_keeps_the_latest_value_of_each_field(
    stores: collections_pb2_grpc.CollectionsStub, name: str
) -> None:
    await stores.CreateHashStore(pb.CreateHashStoreRequest(name=name))
    try:
        key = "user:42 / profile"  # any string is a key, a field or a value's name
        first = await stores.HashSet(pb.HashSetRequest(bucket=name, hash_key=key, field="name", value=b"Ada"))
        second = await stores.HashSet(pb.HashSetRequest(bucket=name, hash_key=key, field="name", value=b"Ada L."))
        assert second.revision > first.revision
        await stores.HashSet(pb.HashSetRequest(bucket=name, hash_key=key, field="e-mail.addr", value=b"a@x"))
        await stores.HashSet(pb.HashSetRequest(bucket=name, hash_key="other", field="name", value=b"Bob"))
        got = await stores.HashGet(pb.HashGetRequest(bucket=name, hash_key=key, field="name"))
        assert (got.value, got.revision) == (b"Ada L.", second.revision)
        missing = await stores.HashGet(pb.HashGetRequest(bucket=name, hash_key=key, field="age"))
        assert not missing.HasField("value")
        every = await stores.HashGetAll(pb.HashGetAllRequest(bucket=name, hash_key=key))
        assert [(e.field, e.value) for e in every.entries] == [("e-mail.addr", b"a@x"), ("name", b"Ada L.")]
        await stores.HashDelete(pb.HashDeleteRequest(bucket=name, hash_key=key, field="e-mail.addr"))
        exists = await stores.HashExists(pb.HashExistsRequest(bucket=name, hash_key=key, field="e-mail.addr"))
        assert not exists.exists
        assert (await stores.HashExists(pb.HashExistsRequest(bucket=name, hash_key=key, field="name"))).exists
        assert list((await stores.HashFields(pb.HashFieldsRequest(bucket=name, hash_key=key))).fields) == ["name"]
        assert (await stores.HashLen(pb.HashLenRequest(bucket=name, hash_key=key))).count == 1
        assert (await stores.HashLen(pb.HashLenRequest(bucket=name, hash_key="nobody"))).count == 0
    finally:
        await stores.DeleteHashStore(pb.DeleteHashStoreRequest(name=name))


async def test_a_set_holds_each_member_once(stores: collections_pb2_grpc.CollectionsStub, name: str) -> None:
    await stores.CreateSetStore(pb.CreateSetStoreRequest(name=name))
    try:
        for member in ("b", "a", "b", "c.d e", ""):
            await stores.SetAdd(pb.SetAddRequest(bucket=name, set_key="tags", member=member))
        await stores.SetRemove(pb.SetRemoveRequest(bucket=name, set_key="tags", member="a"))
        await stores.SetRemove(pb.SetRemoveRequest(bucket=name, set_key="tags", member="never"))
        members = await stores.SetMembers(pb.SetMembersRequest(bucket=name, set_key="tags"))
        assert list(members.members) == ["", "b", "c.d e"]
        assert (await stores.SetLen(pb.SetLenRequest(bucket=name, set_key="tags"))).count == 3
        member = await stores.SetIsMember(pb.SetIsMemberRequest(bucket=name, set_key="tags", member="c.d e"))
        assert member.is_member
        removed = await stores.SetIsMember(pb.SetIsMemberRequest(bucket=name, set_key="tags", member="a"))
        assert not removed.is_member
    finally:
        await stores.DeleteSetStore(pb.DeleteSetStoreRequest(name=name))


async def test_a_queue_pops_each_element_once_to_concurrent_clients(
    stores: collections_pb2_grpc.CollectionsStub, name: str
) -> None:
    await stores.CreateQueue(pb.CreateQueueRequest(name=name, replicas=2))
    try:
        pushed = [
            (await stores.QueuePush(pb.QueuePushRequest(bucket=name, value=b"job-%d" % n))).sequence for n in range(40)
        ]
        assert pushed == sorted(pushed) and len(set(pushed)) == 40
        assert (await stores.QueueLen(pb.QueueLenRequest(bucket=name))).count == 40
        peek = await stores.QueueRange(pb.QueueRangeRequest(bucket=name, limit=3))
        assert list(peek.values) == [b"job-0", b"job-1", b"job-2"]
        first = await stores.QueuePop(pb.QueuePopRequest(bucket=name))
        assert first.value == b"job-0"  # the oldest
        popped: list[bytes] = [first.value]

        async def popper() -> None:
            while True:
                answer = await stores.QueuePop(pb.QueuePopRequest(bucket=name))
                if not answer.HasField("value"):
                    return
                popped.append(answer.value)

        await asyncio.gather(*(popper() for _ in range(4)))
        assert sorted(popped) == sorted(b"job-%d" % n for n in range(40))  # each once, none lost
        assert (await stores.QueueLen(pb.QueueLenRequest(bucket=name))).count == 0
        assert not (await stores.QueuePop(pb.QueuePopRequest(bucket=name))).HasField("value")
    finally:
        await stores.DeleteQueue(pb.DeleteQueueRequest(name=name))


async def test_bad_requests_are_refused_and_store_nothing(
    stores: collections_pb2_grpc.CollectionsStub, name: str
) -> None:
    await stores.CreateHashStore(pb.CreateHashStoreRequest(name=name))
    try:
        cases = [
            (stores.CreateHashStore(pb.CreateHashStoreRequest(name="no spaces")), "invalid_config"),
            (stores.CreateHashStore(pb.CreateHashStoreRequest(name=name, max_bytes=1000)), "already_exists"),
            (stores.HashSet(pb.HashSetRequest(bucket=name, hash_key="k" * 257, field="f")), "invalid_argument"),
            (stores.HashSet(pb.HashSetRequest(bucket=name, hash_key="k", field="f" * 257)), "invalid_argument"),
            (stores.HashGet(pb.HashGetRequest(bucket="missing", hash_key="k", field="f")), "no_such_bucket"),
            (stores.SetAdd(pb.SetAddRequest(bucket="missing", set_key="k", member="m")), "no_such_bucket"),
            (stores.QueuePush(pb.QueuePushRequest(bucket="missing", value=b"")), "no_such_bucket"),
            (stores.QueuePop(pb.QueuePopRequest(bucket="missing")), "no_such_bucket"),
            (stores.QueueRange(pb.QueueRangeRequest(bucket="missing", limit=10_001)), "invalid_argument"),
            (stores.DeleteSetStore(pb.DeleteSetStoreRequest(name="missing")), "no_such_bucket"),
        ]
        for call, expected in cases:
            assert await reason_of(call) == expected
        assert (await stores.HashLen(pb.HashLenRequest(bucket=name, hash_key="k"))).count == 0
    finally:
        await stores.DeleteHashStore(pb.DeleteHashStoreRequest(name=name))
