"""Moving a partition's copy between nodes while it serves (Router.MovePartition, issue 29): the pure
placement steps, and on a real 4-node cluster a move of the leading copy under an ack-all,
idempotent publish load and a consuming group: nothing acknowledged is lost, nothing is stored
twice, the consumer's state is on the new node, the old node keeps no copy, and the longest publish
stall is reported."""

from __future__ import annotations

import asyncio
import collections
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from weir.client import NodeClient, consumer_config, stream_config
from weir.cluster import WeirClient
from weir.errors import FailedPreconditionError, InvalidArgumentError, NoSuchStreamError, WeirError
from weir.message import Message
from weir.v1 import types_pb2
from weir_router import moves, planner
from weir_router.moves import MovePlan

from tests.conftest import eventually, start_cluster

# -- pure placement steps ------------------------------------------------------------------------------


def entry(primary: str, *secondaries: str, epoch: int = 3) -> types_pb2.PartitionPlacement:
    placed = types_pb2.PartitionPlacement(
        partition=0,
        primary_node_id=primary,
        secondary_node_ids=secondaries,
        leader_epoch=epoch,
        in_sync_node_ids=[primary, *secondaries],
        replica_node_ids=[primary, *secondaries],
    )
    placed.epoch_starts.add(leader_epoch=1, start_seq=1)
    return placed


def test_a_move_adds_then_hands_over_then_removes_each_under_a_new_epoch() -> None:
    added = moves.with_added_copy(entry("a", "b", "c"), "d", last_seq=100)
    assert (added.primary_node_id, list(added.secondary_node_ids)) == ("a", ["b", "c", "d"])
    assert list(added.replica_node_ids) == ["a", "b", "c", "d"] and list(added.in_sync_node_ids) == ["a", "b", "c"]
    assert added.leader_epoch == 4 and (added.epoch_starts[-1].leader_epoch, added.epoch_starts[-1].start_seq) == (
        4,
        101,
    )
    reordered = moves.with_preference_taken(added, "a", "d")
    assert list(reordered.replica_node_ids) == ["d", "b", "c", "a"]
    with pytest.raises(FailedPreconditionError, match="still leads"):
        moves.with_copy_removed(reordered, "a", last_seq=120)
    reordered.primary_node_id = "d"
    del reordered.secondary_node_ids[:]
    reordered.secondary_node_ids.extend(["b", "c", "a"])
    removed = moves.with_copy_removed(reordered, "a", last_seq=120)
    assert (list(removed.secondary_node_ids), list(removed.replica_node_ids)) == (["b", "c"], ["d", "b", "c"])
    assert "a" not in removed.in_sync_node_ids and removed.leader_epoch == 5
    # A secondary's copy moving: the new one takes its place in the preference order as it goes.
    kept = moves.with_copy_removed(moves.with_added_copy(entry("a", "b", "c"), "d", 10), "b", 12, taken_by="d")
    assert list(kept.replica_node_ids) == ["a", "d", "c"] and list(kept.secondary_node_ids) == ["c", "d"]


def test_a_move_onto_a_copy_from_the_primary_moves_leadership_only() -> None:
    record = record_of(entry("a", "b", "c"))
    moves.check_move(record, MovePlan("s", 0, "a", "b"), {"a", "b", "c"})
    assert moves.leadership_only(record, MovePlan("s", 0, "a", "b"))
    assert not moves.leadership_only(record, MovePlan("s", 0, "a", "d"))
    assert list(moves.with_preference_taken(entry("a", "b", "c"), "a", "b").replica_node_ids) == ["b", "c", "a"]


def record_of(placed: types_pb2.PartitionPlacement, *, pinned: bool = False) -> types_pb2.StreamRecord:
    record = types_pb2.StreamRecord(config=types_pb2.StreamConfig(name="s", partitions=1, replicas=3))
    record.placement.partitions.append(placed)
    if pinned:
        record.pinned_partitions.append(0)
    return record


@pytest.mark.parametrize(
    ("plan", "pinned", "error", "says"),
    [
        (MovePlan("s", 1, "a", "d"), False, InvalidArgumentError, "partition 1 does not exist"),
        (MovePlan("s", 0, "a", "a"), False, InvalidArgumentError, "nothing to move"),
        (MovePlan("s", 0, "a", "d"), True, FailedPreconditionError, "pinned"),
        (MovePlan("s", 0, "x", "d"), False, FailedPreconditionError, "no copy on 'x'"),
        (MovePlan("s", 0, "a", "e"), False, FailedPreconditionError, "not alive"),
        (MovePlan("s", 0, "c", "b"), False, FailedPreconditionError, "no leadership to move"),
    ],
)
def test_a_bad_move_is_refused_before_anything_changes(plan: MovePlan, pinned: bool, error: type, says: str) -> None:
    with pytest.raises(error, match=says):
        moves.check_move(record_of(entry("a", "b", "c"), pinned=pinned), plan, {"a", "b", "c", "d"})


def placed(name: str, partitions: list[list[str]], *, pinned: tuple[int, ...] = ()) -> types_pb2.StreamRecord:
    """A record whose partition i has copies partitions[i] (the first leads)."""
    record = types_pb2.StreamRecord(config=types_pb2.StreamConfig(name=name, partitions=len(partitions), replicas=3))
    for index, copies in enumerate(partitions):
        record.placement.partitions.add(
            partition=index, primary_node_id=copies[0], secondary_node_ids=copies[1:], replica_node_ids=copies
        )
    record.pinned_partitions.extend(pinned)
    return record


def test_the_planner_gives_a_new_node_its_share_of_copies_and_primaries() -> None:
    trio = ["n1", "n2", "n3"]
    records = [placed(f"s{index}", [trio[index % 3 :] + trio[: index % 3]]) for index in range(8)]
    before = planner.copies_per_node(records, [*trio, "n4"])
    assert before["n4"] == (0, 0) and sum(copies for copies, _ in before.values()) == 24
    plan = planner.plan_rebalance(records, [*trio, "n4"], {})
    after = planner.shares_after(before, plan)
    assert sorted(copies for copies, _ in after.values()) == [6, 6, 6, 6]
    assert (
        after["n4"][1] >= 2
        and max(leads for _, leads in after.values()) - min(leads for _, leads in after.values()) <= 1
    )
    assert all(move.to_node_id == "n4" for move in plan) and len(plan) == 6
    moved = {(move.stream, move.partition) for move in plan}
    assert len(moved) == len(plan)  # no partition gets two copies on n4


def test_the_planner_leaves_pinned_partitions_and_balanced_clusters_alone() -> None:
    trio = ["n1", "n2", "n3"]
    assert planner.plan_rebalance([placed("s", [trio, trio])], trio, {}) == []
    pinned = placed("p", [trio, trio], pinned=(0, 1))
    assert planner.plan_rebalance([pinned], [*trio, "n4"], {}) == []
    assert planner.plan_rebalance([placed("s", [trio])], ["n1"], {}) == []
    heavy = planner.plan_rebalance([placed(f"s{index}", [trio]) for index in range(4)], [*trio, "n4"], {"n4": 3})
    # Capacity 3 of 6 would give n4 half the 12 copies; it can hold one of each of the 4 partitions.
    assert len(heavy) == 4 and {move.to_node_id for move in heavy} == {"n4"}


# -- a real cluster ------------------------------------------------------------------------------------


class IdempotentPublisher:
    """Publishes unique payloads (ack all, msg_id = payload, retried until acknowledged) until
    stopped; records each acknowledgement and the longest time one publish took."""

    def __init__(self, client: WeirClient, stream: str) -> None:
        self.client = client
        self.stream = stream
        self.acked: dict[bytes, int] = {}
        self.longest_s = 0.0
        self.retries: collections.Counter[str] = collections.Counter()
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    def start(self) -> IdempotentPublisher:
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def _one(self, payload: bytes) -> None:
        started = time.monotonic()
        while True:
            try:
                ack = await self.client.publish(
                    self.stream, "orders.new", payload, msg_id=payload.decode(), ack_level="all"
                )
                break
            except WeirError as error:
                self.retries[error.result_code.value] += 1
                await asyncio.sleep(0.05)
        self.acked[payload] = ack.seq
        self.longest_s = max(self.longest_s, time.monotonic() - started)

    async def _run(self) -> None:
        async def worker(number: int) -> None:
            index = 0
            while not self._stop.is_set():
                await self._one(f"w{number}-m{index}".encode())
                index += 1

        await asyncio.gather(*(worker(number) for number in range(4)))

    async def wait_for(self, count: int, timeout_s: float) -> None:
        async def enough() -> bool:
            if self._task is not None and self._task.done():
                self._task.result()
            return len(self.acked) >= count

        await eventually(enough, timeout_s, f"{count} acknowledged publishes (retries: {self.retries})")

    async def stop(self) -> None:
        self._stop.set()
        if self._task is not None:
            await self._task


async def stored_payloads(client: WeirClient, stream: str) -> list[bytes]:
    route = await client.route(stream, refresh=True)
    async with NodeClient(route.partitions[0].primary.address) as node:
        return [message.payload async for message in node.read_all(stream)]


@pytest.mark.slow
@pytest.mark.timeout(240)
async def test_moving_the_leading_copy_under_load_loses_and_doubles_nothing(tmp_path: Path) -> None:
    cluster = start_cluster(tmp_path, nodes=4)
    try:
        async with WeirClient(cluster.router_addresses, retry_timeout_s=30) as client:
            stream = "moving"
            await client.create_stream(stream_config(stream, replicas=3))
            await client.create_consumer(stream, consumer_config("billing", ack_wait_ms=30_000))
            seen: collections.Counter[bytes] = collections.Counter()

            async def handle(message: Message) -> None:
                seen[message.payload] += 1

            member = client.group_consumer(stream, "billing", handle, batch_size=50, max_wait_ms=200).start()
            publisher = IdempotentPublisher(client, stream).start()
            await publisher.wait_for(300, 60)
            route = await client.route(stream, refresh=True)
            old_primary = route.partitions[0].primary.node_id
            copies = {old_primary, *(broker.node_id for broker in route.partitions[0].secondaries)}
            spare = next(node.name for node in cluster.nodes if node.name not in copies)
            steps = [progress async for progress in client.move_partition(stream, 0, old_primary, spare)]
            assert [step.step for step in steps if step.step != "catch_up"] == [
                "add_copy",
                "hand_over",
                "remove_copy",
                "done",
            ]
            await publisher.wait_for(len(publisher.acked) + 300, 60)  # publishing goes on on the new primary
            await publisher.stop()
            route = await client.route(stream, refresh=True)
            assert route.partitions[0].primary.node_id == spare
            assert old_primary not in {broker.node_id for broker in route.partitions[0].secondaries}
            stored = await stored_payloads(client, stream)
            assert len(stored) == len(set(stored)), "a message was stored twice"
            lost = [payload for payload in publisher.acked if payload not in set(stored)]
            assert not lost, f"{len(lost)} acknowledged messages lost, e.g. {lost[:3]}"

            async def all_consumed() -> bool:
                return all(payload in seen for payload in publisher.acked)

            await eventually(all_consumed, 60, "the group consumed every acknowledged message")
            await member.stop()
            info = await client.consumer_info(stream, "billing")
            assert info.partitions[0].ack_floor >= max(publisher.acked.values()) - 100
            old = next(node for node in cluster.nodes if node.name == old_primary)
            async with NodeClient(old.internal_address) as node:

                async def copy_removed() -> bool:
                    try:
                        await node.stream_info(stream)
                    except NoSuchStreamError:
                        return True
                    return False

                await eventually(copy_removed, 10, f"{old_primary} dropped its copy")
            # A one-copy stream moves too: its new copy is shipped while the move adds it.
            await client.create_stream(stream_config("single", partitions=2))
            for index in range(100):
                await client.publish("single", "s", b"%d" % index, partition=index % 2)
            single = (await client.route("single", refresh=True)).partitions[1].primary.node_id
            elsewhere = next(node.name for node in cluster.nodes if node.name != single)
            [progress async for progress in client.move_partition("single", 1, single, elsewhere)]
            route = await client.route("single", refresh=True)
            assert route.partitions[1].primary.node_id == elsewhere and not route.partitions[1].secondaries
            async with NodeClient(route.partitions[1].primary.address) as node:
                assert [message.payload async for message in node.read_all("single", 1)] == [
                    b"%d" % index for index in range(1, 100, 2)
                ]
            duplicates = sum(count - 1 for count in seen.values() if count > 1)
            print(
                f"moved {stream}/0 {old_primary} -> {spare} in {steps[-1].elapsed_ms} ms; longest fence "
                f"{steps[-1].longest_fence_ms} ms; longest publish {publisher.longest_s * 1000:.0f} ms; "
                f"acknowledged {len(publisher.acked)}; consumer redeliveries {duplicates}; "
                f"retries {dict(publisher.retries)}"
            )
    finally:
        cluster.stop()


def weir_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    clean = {key: value for key, value in os.environ.items() if not key.startswith("WEIR_")}
    clean["XDG_STATE_HOME"] = str(cwd / ".state")
    return subprocess.run(
        [sys.executable, "-m", "weir_cli.cli", *args],
        cwd=cwd,
        env=clean,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


def primaries_per_node(stats_json: str) -> dict[str, int]:
    figures = json.loads(stats_json)
    return {node["node_id"]: node["partition_count"] for node in figures["nodes"] if node["status"] == "ok"}


@pytest.mark.slow
@pytest.mark.timeout(300)
async def test_a_node_added_to_a_running_cluster_takes_its_share_after_cluster_rebalance(tmp_path: Path) -> None:
    """The issue's use case: a fourth node joins a 3-node cluster; `weir cluster rebalance` moves
    copies and primaries onto it; `weir stats` shows the skew before and after; every message stays."""
    cluster = start_cluster(tmp_path / "cluster")
    try:
        routers = ",".join(cluster.router_addresses)
        async with WeirClient(cluster.router_addresses, retry_timeout_s=30) as client:
            for index in range(4):
                await client.create_stream(stream_config(f"load-{index}", partitions=2, replicas=3))
                for message in range(50):
                    await client.publish(f"load-{index}", "x", b"%d" % message, partition=message % 2, ack_level="all")
            cluster.add_node()
            newcomer = cluster.nodes[-1].name

            async def registered() -> bool:
                return any(node.node_id == newcomer and node.alive for node in (await client.cluster_info()).nodes)

            await eventually(registered, 20, f"{newcomer} registered")
            numbers = {node.node_id: node.number for node in (await client.cluster_info()).nodes}
            # the seed's node ids: one each, in the order the nodes first registered (the first three
            # start together), the newcomer's after theirs
            assert sorted(numbers.values()) == [1, 2, 3, 4] and numbers["node-4"] == 4, numbers
            before = weir_cli("--json", "stats", "--nodes-only", "--router", routers, cwd=tmp_path)
            assert before.returncode == 0, before.stderr
            assert primaries_per_node(before.stdout)[newcomer] == 0
            assert json.loads(before.stdout)["skew_partitions"] >= 2
            plan = weir_cli("cluster", "rebalance", "--dry-run", "--router", routers, cwd=tmp_path)
            assert plan.returncode == 0 and "dry run" in plan.stdout, plan.stderr
            ran = weir_cli("cluster", "rebalance", "--router", routers, cwd=tmp_path)
            assert ran.returncode == 0, ran.stderr
            assert ran.stdout.count(": ok in ") == 6, ran.stdout  # 24 copies over 4 nodes: 6 come to the newcomer
            after = weir_cli("--json", "stats", "--nodes-only", "--router", routers, cwd=tmp_path)
            shares = primaries_per_node(after.stdout)
            assert shares[newcomer] == 2 and json.loads(after.stdout)["skew_partitions"] <= 1, after.stdout
            again = weir_cli("cluster", "rebalance", "--dry-run", "--router", routers, cwd=tmp_path)
            assert "0 move(s) planned" in again.stdout, again.stdout
            for index in range(4):
                info = await client.stream_info(f"load-{index}")
                assert info.msg_count == 50, f"load-{index}: {info.partitions}"
            print("stats before:", before.stdout.strip()[:300], "\nrebalance:", ran.stdout.strip())
    finally:
        cluster.stop()
