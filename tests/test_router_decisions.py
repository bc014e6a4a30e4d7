"""The router's pure decisions: where a new stream's partitions go (placement) and which consumer-group
member works on which partition (assignment). No processes, no Redis: the functions are called directly,
with an explicit clock for the assignment's session timeouts."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import grpc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from weir.errors import NotEnoughNodesError, UnavailableError
from weir.v1 import router_pb2, streams_pb2, types_pb2
from weir_router import rebalance
from weir_router.admin import merge_consumer_infos
from weir_router.assignment import GroupState, MemberView, balanced_targets, step
from weir_router.cluster_views import add_node_summaries, add_stream_summaries
from weir_router.core import NodeView
from weir_router.placement import NodeLoad, loads_from, place_stream
from weir_server.metadata import NodeRecord

# ---------------------------------------------------------------------------------------------------
# Placement
# ---------------------------------------------------------------------------------------------------


def nodes(*node_ids: str) -> list[NodeLoad]:
    return [NodeLoad(node_id) for node_id in node_ids]


def primary_counts(placement: types_pb2.StreamPlacement) -> Counter[str]:
    return Counter(entry.primary_node_id for entry in placement.partitions)


def copy_counts(placement: types_pb2.StreamPlacement) -> Counter[str]:
    return Counter(
        node_id for entry in placement.partitions for node_id in (entry.primary_node_id, *entry.secondary_node_ids)
    )


def check_well_formed(placement: types_pb2.StreamPlacement, partitions: int, replicas: int, node_ids: set[str]) -> None:
    """Every partition, in order, has `replicas` distinct known nodes, epoch 1 and all of them in sync."""
    assert [entry.partition for entry in placement.partitions] == list(range(partitions))
    for entry in placement.partitions:
        copies = [entry.primary_node_id, *entry.secondary_node_ids]
        assert len(copies) == replicas
        assert len(set(copies)) == replicas, f"partition {entry.partition} has two copies on one node: {copies}"
        assert set(copies) <= node_ids
        assert entry.leader_epoch == 1
        assert list(entry.in_sync_node_ids) == copies


def test_single_replica_over_three_equal_nodes_is_balanced() -> None:
    placement = place_stream(16, 1, nodes("a", "b", "c"))

    check_well_formed(placement, 16, 1, {"a", "b", "c"})
    counts = primary_counts(placement)
    assert sorted(counts.values()) == [5, 5, 6]
    assert set(counts) == {"a", "b", "c"}
    for entry in placement.partitions:
        assert entry.primary_node_id
        assert list(entry.secondary_node_ids) == []
        assert list(entry.in_sync_node_ids) == [entry.primary_node_id]


def test_three_replicas_over_three_nodes_use_every_node_once() -> None:
    placement = place_stream(16, 3, nodes("a", "b", "c"))

    check_well_formed(placement, 16, 3, {"a", "b", "c"})
    for entry in placement.partitions:
        assert {entry.primary_node_id, *entry.secondary_node_ids} == {"a", "b", "c"}
    assert sorted(primary_counts(placement).values()) == [5, 5, 6]
    assert copy_counts(placement) == {"a": 16, "b": 16, "c": 16}


def test_two_replicas_over_four_nodes_spread_copies() -> None:
    placement = place_stream(16, 2, nodes("a", "b", "c", "d"))

    check_well_formed(placement, 16, 2, {"a", "b", "c", "d"})
    primaries = primary_counts(placement)
    assert set(primaries) == {"a", "b", "c", "d"}
    assert max(primaries.values()) - min(primaries.values()) <= 1
    copies = copy_counts(placement)
    assert sum(copies.values()) == 32
    assert set(copies) == {"a", "b", "c", "d"}
    assert max(copies.values()) - min(copies.values()) <= 2
    # Secondaries are spread too: no node is only ever a primary or only ever a secondary.
    secondaries = Counter(node_id for entry in placement.partitions for node_id in entry.secondary_node_ids)
    assert set(secondaries) == {"a", "b", "c", "d"}


def test_existing_primaries_in_node_load_are_respected() -> None:
    loads = [NodeLoad("a", primaries=10, replicas=10), NodeLoad("b"), NodeLoad("c")]

    counts = primary_counts(place_stream(16, 1, loads))

    assert counts["a"] == 0
    assert counts["b"] == counts["c"] == 8
    # A lighter existing load: "a" gets fewer than the others, and totals even out within one.
    counts = primary_counts(place_stream(12, 1, [NodeLoad("a", primaries=3), NodeLoad("b"), NodeLoad("c")]))
    assert counts["a"] < counts["b"]
    assert counts["a"] < counts["c"]
    totals = [counts["a"] + 3, counts["b"], counts["c"]]
    assert max(totals) - min(totals) <= 1


def test_loads_from_counts_existing_placements() -> None:
    existing = place_stream(6, 2, nodes("a", "b"))  # "a" and "b" each lead 3, and each host all 6
    other = types_pb2.StreamPlacement()
    other.partitions.add(partition=0, primary_node_id="a", secondary_node_ids=["gone"], leader_epoch=1)

    loads = loads_from(["c", "b", "a"], {"a": 2, "b": -1, "c": 0, "gone": 5}, [existing, other])

    assert loads == [  # sorted by node id; unknown nodes ("gone") are not counted
        NodeLoad("a", capacity=2, primaries=4, replicas=7),
        NodeLoad("b", capacity=1, primaries=3, replicas=6),  # a capacity below 1 counts as 1
        NodeLoad("c", capacity=1, primaries=0, replicas=0),
    ]
    assert loads_from(["x"], {}, []) == [NodeLoad("x")]  # absent capacity counts as 1
    counts = primary_counts(place_stream(9, 1, loads))
    # Existing primaries per capacity: a 4/2, b 3/1, c 0/1. The 9 new ones even that out to 4 per
    # unit of capacity: a 8/2, b 4/1, c 4/1.
    assert counts == {"a": 4, "b": 1, "c": 4}


def test_loads_from_then_place_evens_out_a_busy_node() -> None:
    busy = types_pb2.StreamPlacement()
    for partition in range(9):
        busy.partitions.add(partition=partition, primary_node_id="a", leader_epoch=1, in_sync_node_ids=["a"])

    counts = primary_counts(place_stream(9, 1, loads_from(["a", "b", "c"], {}, [busy])))

    assert counts == {"b": 5, "c": 4}  # nothing more for "a"; the odd one goes to the lower id


def test_capacity_weighting() -> None:
    placement = place_stream(16, 1, [NodeLoad("big", capacity=2), NodeLoad("s1"), NodeLoad("s2")])

    counts = primary_counts(placement)
    assert counts["big"] == 8
    assert counts["s1"] == counts["s2"] == 4


def test_capacity_weighting_of_secondaries() -> None:
    placement = place_stream(16, 2, [NodeLoad("big", capacity=2), NodeLoad("s1"), NodeLoad("s2")])

    check_well_formed(placement, 16, 2, {"big", "s1", "s2"})
    assert copy_counts(placement) == {"big": 16, "s1": 8, "s2": 8}


@pytest.mark.parametrize(("replicas", "alive"), [(3, 2), (2, 1), (1, 0)])
def test_fewer_nodes_than_replicas(replicas: int, alive: int) -> None:
    with pytest.raises(NotEnoughNodesError) as caught:
        place_stream(4, replicas, nodes(*"abc"[:alive]))

    error = caught.value
    assert error.status_code == grpc.StatusCode.FAILED_PRECONDITION
    assert not error.retryable
    assert f"{replicas} requested" in error.message
    assert f"only {alive} partition node" in error.message
    assert error.metadata["alive_nodes"] == str(alive)


@pytest.mark.parametrize(("partitions", "replicas"), [(0, 1), (1, 0), (-1, 1)])
def test_nonpositive_counts_are_rejected(partitions: int, replicas: int) -> None:
    with pytest.raises(ValueError, match="must be >= 1"):
        place_stream(partitions, replicas, nodes("a", "b"))


def test_placement_is_deterministic() -> None:
    loads = [NodeLoad("n3", capacity=2, primaries=1), NodeLoad("n1", replicas=4), NodeLoad("n2")]

    first = place_stream(10, 2, loads)
    second = place_stream(10, 2, list(loads))
    reordered = place_stream(10, 2, list(reversed(loads)))

    assert first == second
    assert first.SerializeToString(deterministic=True) == second.SerializeToString(deterministic=True)
    assert first == reordered  # ties break by node id, not by the order nodes are listed in


@settings(max_examples=300, deadline=None, database=None)
@given(
    partitions=st.integers(1, 64),
    capacities=st.lists(st.integers(1, 3), min_size=1, max_size=6),
    data=st.data(),
)
def test_placement_property(partitions: int, capacities: list[int], data: st.DataObject) -> None:
    replicas = data.draw(st.integers(1, len(capacities)), label="replicas")
    loads = [NodeLoad(f"node-{index}", capacity=capacity) for index, capacity in enumerate(capacities)]
    node_ids = {load.node_id for load in loads}

    placement = place_stream(partitions, replicas, loads)

    check_well_formed(placement, partitions, replicas, node_ids)
    assert sum(copy_counts(placement).values()) == partitions * replicas
    equal = place_stream(partitions, replicas, nodes(*sorted(node_ids)))
    check_well_formed(equal, partitions, replicas, node_ids)
    counts = [primary_counts(equal)[node_id] for node_id in node_ids]
    assert max(counts) - min(counts) <= 1


# ---------------------------------------------------------------------------------------------------
# Assignment
# ---------------------------------------------------------------------------------------------------

TIMEOUT_MS = 10_000
ALL_16 = list(range(16))


@dataclass
class Group:
    """A consumer group driven through `step`, with members following the SDK contract: a member works
    on exactly the `assigned` partitions of its latest answer and reports them as `owned_partitions` on
    its next call. A member that stays silent longer than the session timeout is treated as crashed (it
    stops working); calling again later is a fresh join. Every call checks the invariants."""

    partitions: int
    timeout_ms: int = TIMEOUT_MS
    now_ms: int = 0
    state: GroupState = field(default_factory=GroupState)
    working: dict[str, list[int]] = field(default_factory=dict)  # live member -> partitions it works on
    last_call: dict[str, int] = field(default_factory=dict)
    views: dict[str, MemberView] = field(default_factory=dict)

    def call(self, member: str, *, leaving: bool = False) -> MemberView:
        before = self.state
        snapshot = before.to_json()
        self.state, view = step(
            before,
            partitions=self.partitions,
            client_id=member,
            owned_partitions=list(self.working.get(member, [])),
            now_ms=self.now_ms,
            session_timeout_ms=self.timeout_ms,
            leaving=leaving,
        )
        assert before.to_json() == snapshot, "step modified the state it was given"
        assert self.state.generation >= before.generation
        assert view.generation == self.state.generation
        assert view.members == sorted(self.state.members)
        if leaving:
            self.working.pop(member, None)
            self.last_call.pop(member, None)
            self.views.pop(member, None)
            assert view.assigned == []
            assert member not in self.state.members
        else:
            self.working[member] = list(view.assigned)
            self.last_call[member] = self.now_ms
            self.views[member] = view
            assert member in self.state.members
        self.check()
        return view

    def advance(self, ms: int) -> None:
        self.now_ms += ms
        for member, seen in list(self.last_call.items()):
            if self.now_ms - seen > self.timeout_ms:  # silent too long: the process is gone
                del self.last_call[member]
                del self.working[member]
                del self.views[member]

    def check(self) -> None:
        state = self.state
        # Nobody works on a partition the state does not say it holds ...
        for member, working in self.working.items():
            for partition in working:
                assert state.owners.get(partition) == member, (member, partition, state)
        # ... hence no partition is worked on by two members.
        seen: dict[int, str] = {}
        for member, working in self.working.items():
            for partition in working:
                assert partition not in seen, f"partition {partition} worked on by {seen[partition]} and {member}"
                seen[partition] = member
        # The state itself: holders and targets are members, partitions in range, targets balanced.
        assert set(state.owners.values()) <= set(state.members)
        assert set(state.owners) <= set(range(self.partitions))
        if state.members:
            assert sorted(state.targets) == list(range(self.partitions))
            assert set(state.targets.values()) <= set(state.members)
            assert_balanced(Counter(state.targets.values()), list(state.members), self.partitions)
        else:
            assert state.targets == {}
            assert state.owners == {}

    def rounds(self, members: list[str], count: int) -> None:
        for _ in range(count):
            for member in members:
                self.call(member)

    def settle(self, members: list[str], max_rounds: int = 10) -> int:
        """Rounds of calls (no time passing) until a whole round changes nothing; how many changed something."""
        for changed in range(max_rounds):
            before = (self.state.to_json(), self.views.copy())
            self.rounds(members, 1)
            if (self.state.to_json(), self.views) == before:
                return changed
        raise AssertionError(f"no stable assignment after {max_rounds} rounds: {self.state}")

    def holdings(self) -> dict[str, set[int]]:
        return {member: set(working) for member, working in self.working.items()}


def assert_balanced(sizes: Counter[str], members: list[str], partitions: int) -> None:
    counts = [sizes[member] for member in members]
    assert sum(counts) == partitions
    assert max(counts) - min(counts) <= 1, sizes


def assert_settled(group: Group, members: list[str]) -> None:
    """Every partition is held by exactly one of `members`, as the state and their latest answers say."""
    assert sorted(group.state.members) == sorted(members)
    assert group.state.owners == group.state.targets
    union: list[int] = []
    for member in members:
        union.extend(group.working[member])
        assert group.views[member].awaiting == []
    assert sorted(union) == list(range(group.partitions))
    assert_balanced(Counter({member: len(group.working[member]) for member in members}), members, group.partitions)


def test_single_member_gets_everything_at_once() -> None:
    group = Group(16)

    view = group.call("a")

    assert view.assigned == ALL_16
    assert view.awaiting == []
    assert view.members == ["a"]
    assert view.generation == 1
    assert group.state.owners == dict.fromkeys(ALL_16, "a")


def test_three_members_joining_one_by_one_converge() -> None:
    group = Group(16)
    group.settle(["a"])
    assert group.working["a"] == ALL_16

    group.settle(["a", "b"])
    assert_settled(group, ["a", "b"])
    assert sorted(len(p) for p in group.working.values()) == [8, 8]

    group.settle(["a", "b", "c"])
    assert_settled(group, ["a", "b", "c"])
    assert sorted(len(p) for p in group.working.values()) == [5, 5, 6]


def test_member_order_of_joining_does_not_matter_for_convergence() -> None:
    group = Group(16)
    group.settle(["c"])
    group.settle(["b", "c"])
    group.settle(["c", "a", "b"])

    assert_settled(group, ["a", "b", "c"])


def test_third_member_joining_moves_the_minimum() -> None:
    group = Group(16)
    group.settle(["a", "b"])
    before = group.holdings()

    group.settle(["a", "b", "c"])

    after = group.holdings()
    assert len(after["c"]) == 5  # 16 = 6 + 5 + 5, and c starts with nothing
    assert after["a"] <= before["a"]
    assert after["b"] <= before["b"]
    assert after["c"] == (before["a"] - after["a"]) | (before["b"] - after["b"])


# Regression: the one-larger shares once followed current holdings, so targets flapped mid-handoff.


def test_a_partition_given_up_is_not_given_back_in_the_same_rebalance() -> None:
    """With the membership unchanged, once a member is told to stop working on a partition (it leaves its
    `assigned` list), it must not be told to work on it again: that is a needless stop and restart."""
    group = Group(16)
    group.settle(["a", "b"])
    group.call("c")
    revoked: dict[str, set[int]] = {"a": set(), "b": set(), "c": set()}
    for _ in range(6):
        for member in ("a", "b", "c"):
            before = set(group.working[member])
            after = set(group.call(member).assigned)
            assert not after & revoked[member], f"{member} got back {sorted(after & revoked[member])}"
            revoked[member] |= before - after


def test_two_rounds_after_a_join_complete_the_handoffs() -> None:
    """Round 1 tells the holders what to give up, round 2 they release it and it moves to its target."""
    group = Group(16)
    group.settle(["a", "b"])
    group.call("c")

    group.rounds(["a", "b", "c"], 2)

    assert group.state.owners == group.state.targets


def test_fourth_member_joining_moves_the_minimum() -> None:
    group = Group(16)
    group.settle(["a"])
    group.settle(["a", "b"])
    group.settle(["a", "b", "c"])
    before = group.holdings()
    owners_before = dict(group.state.owners)

    group.settle(["a", "b", "c", "d"])

    assert_settled(group, ["a", "b", "c", "d"])
    after = group.holdings()
    moved = {p for p in ALL_16 if group.state.owners[p] != owners_before[p]}
    assert len(moved) == 4
    assert moved == after["d"]
    for member in ("a", "b", "c"):
        assert after[member] <= before[member], f"{member} gained partitions it did not hold"
        assert len(after[member]) == 4


def test_handoff_waits_for_the_old_holder_to_release() -> None:
    group = Group(16)
    group.call("a")

    joined = group.call("b")
    # "b" is targeted for half the partitions, but "a" still works on them: it may not start yet.
    assert joined.assigned == []
    assert len(joined.awaiting) == 8
    revoked = joined.awaiting
    assert group.state.owners == dict.fromkeys(ALL_16, "a")

    told = group.call("a")  # still lists all 16 (its latest answer): it is told to keep only its half
    assert told.assigned == sorted(set(ALL_16) - set(revoked))
    assert told.awaiting == []
    assert {p: group.state.owners[p] for p in revoked} == dict.fromkeys(revoked, "a")

    waiting = group.call("b")  # "a" has not confirmed yet
    assert waiting.assigned == []
    assert waiting.awaiting == revoked

    released = group.call("a")  # now lists only its half: the rest is released and goes to "b"
    assert released.assigned == told.assigned
    assert {p: group.state.owners[p] for p in revoked} == dict.fromkeys(revoked, "b")

    started = group.call("b")
    assert started.assigned == revoked
    assert started.awaiting == []
    assert_settled(group, ["a", "b"])


def test_holder_that_keeps_listing_a_revoked_partition_keeps_it() -> None:
    group = Group(4)
    group.call("a")
    group.call("b")
    for _ in range(3):  # "a" never lets go (still busy with its in-flight messages)
        group.state, view = step(
            group.state, partitions=4, client_id="a", owned_partitions=range(4), now_ms=0, session_timeout_ms=TIMEOUT_MS
        )
        assert view.assigned == [0, 1]
        group.state, view = step(
            group.state, partitions=4, client_id="b", owned_partitions=[], now_ms=0, session_timeout_ms=TIMEOUT_MS
        )
        assert view.assigned == []
        assert view.awaiting == [2, 3]
        assert group.state.owners == dict.fromkeys(range(4), "a")


def test_leave_frees_partitions_at_once() -> None:
    group = Group(16)
    group.settle(["a", "b", "c"])
    left = group.working["b"]
    generation = group.state.generation

    view = group.call("b", leaving=True)

    assert view.assigned == []
    assert view.awaiting == []
    assert view.members == ["a", "c"]
    assert view.generation > generation
    assert "b" not in group.state.owners.values()
    assert "b" not in group.state.targets.values()
    assert set(left) <= set(group.state.owners)  # already re-owned by the others, no release needed
    group.call("a")
    group.call("c")
    assert_settled(group, ["a", "c"])
    assert sorted(len(p) for p in group.working.values()) == [8, 8]


def test_last_member_leaving_empties_the_group() -> None:
    group = Group(4)
    group.call("a")

    view = group.call("a", leaving=True)

    assert view == MemberView([], [], view.generation, [])
    assert group.state.members == {}
    assert group.state.owners == {}
    assert group.state.targets == {}


def test_silent_member_expires_and_its_partitions_move_without_release() -> None:
    group = Group(16)
    group.settle(["a", "b"])
    held_by_a = group.working["a"]

    group.advance(TIMEOUT_MS)  # "a" is exactly at the limit: still a member
    view = group.call("b")
    assert view.members == ["a", "b"]
    assert len(view.assigned) == 8

    group.advance(1)  # "a" has now been silent longer than the timeout (b called just now)
    assert "a" not in group.working
    view = group.call("b")

    assert view.members == ["b"]
    assert view.assigned == ALL_16  # no waiting for "a" to release
    assert view.awaiting == []
    assert all(group.state.owners[p] == "b" for p in held_by_a)


def test_expired_member_rejoining_is_a_new_member() -> None:
    group = Group(8)
    group.settle(["a", "b"])
    group.advance(TIMEOUT_MS + 1)
    group.call("b")
    assert group.working["b"] == list(range(8))

    rejoined = group.call("a")

    assert rejoined.assigned == []
    assert len(rejoined.awaiting) == 4
    group.settle(["a", "b"])
    assert_settled(group, ["a", "b"])


def test_generation_rises_on_change_only() -> None:
    group = Group(16)
    first = group.call("a")
    assert first.generation == 1

    again = group.call("a")
    assert again.generation == 1
    group.advance(1_000)  # a heartbeat alone is no change
    assert group.call("a").generation == 1

    joined = group.call("b")
    assert joined.generation == 2
    told = group.call("a")  # nothing changed in the state (a still works on everything)
    assert told.generation == 2
    released = group.call("a")  # released half: owners change
    assert released.generation == 3
    assert group.call("b").generation == 3  # b is told; no change in the state
    assert group.call("a").generation == 3
    assert group.call("b").generation == 3


def test_state_json_round_trip() -> None:
    group = Group(5)
    group.settle(["a", "b"])
    group.call("c")  # a pending handoff: owners and targets differ
    state = group.state
    assert state.owners != state.targets

    text = state.to_json()

    assert GroupState.from_json(text) == state
    assert GroupState.from_json(text.encode()) == state
    assert GroupState.from_json(text).to_json() == text
    assert GroupState.from_json(None) == GroupState()
    assert GroupState.from_json("") == GroupState()
    assert GroupState.from_json(b"") == GroupState()
    assert GroupState.from_json("{}") == GroupState()


def test_step_continues_from_a_stored_state() -> None:
    """The router stores the state between calls: decisions from a reloaded state are the same."""
    group = Group(16)
    group.settle(["a", "b"])
    group.call("c")

    direct = step(group.state, partitions=16, client_id="a", owned_partitions=[], now_ms=0, session_timeout_ms=10)
    reloaded = step(
        GroupState.from_json(group.state.to_json()),
        partitions=16,
        client_id="a",
        owned_partitions=[],
        now_ms=0,
        session_timeout_ms=10,
    )

    assert direct == reloaded


def test_fewer_partitions_than_members() -> None:
    group = Group(2)

    group.settle(["a", "b", "c"])

    sizes = sorted(len(p) for p in group.working.values())
    assert sizes == [0, 1, 1]
    assert_settled(group, ["a", "b", "c"])
    idle = next(member for member, working in group.working.items() if not working)
    assert group.views[idle].assigned == []
    assert group.views[idle].awaiting == []


def test_balanced_targets_without_members() -> None:
    assert balanced_targets(4, [], {0: "gone"}) == {}


@settings(max_examples=300, deadline=None, database=None)
@given(
    partitions=st.integers(0, 40),
    members=st.sets(st.sampled_from("abcdef"), min_size=1),
    data=st.data(),
)
def test_balanced_targets_property(partitions: int, members: set[str], data: st.DataObject) -> None:
    """Balanced, complete, and sticky: every live holder keeps min(held, its share) of its partitions."""
    holders = st.sampled_from(sorted(members | {"gone"}))
    owners = data.draw(st.dictionaries(st.integers(0, max(partitions - 1, 0)), holders), label="owners")
    owners = {p: owner for p, owner in owners.items() if p < partitions}

    targets = balanced_targets(partitions, members, owners)

    assert sorted(targets) == list(range(partitions))
    sizes = Counter(targets.values())
    assert_balanced(sizes, sorted(members), partitions)
    held = Counter(owner for owner in owners.values() if owner in members)
    kept = Counter(owner for p, owner in owners.items() if targets[p] == owner)
    for member in members:
        assert kept[member] == min(held[member], sizes[member])
    assert balanced_targets(partitions, sorted(members, reverse=True), owners) == targets


MEMBERS = ["m0", "m1", "m2", "m3", "m4"]
_actions = st.one_of(
    st.tuples(st.just("call"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("leave"), st.sampled_from(MEMBERS)),
    st.tuples(st.just("advance"), st.sampled_from([0, 1, 3_000, TIMEOUT_MS, TIMEOUT_MS + 1])),
)


@settings(max_examples=400, deadline=None, database=None)
@given(partitions=st.integers(1, 20), actions=st.lists(_actions, max_size=60))
def test_random_interleavings_keep_partitions_exclusive(
    partitions: int, actions: list[tuple[str, str] | tuple[str, int]]
) -> None:
    group = Group(partitions)
    for kind, argument in actions:
        if kind == "advance":
            assert isinstance(argument, int)
            group.advance(argument)
        else:
            assert isinstance(argument, str)
            group.call(argument, leaving=kind == "leave")  # every call checks disjointness

    live = sorted(group.working)
    if not live:
        return
    group.rounds(live, 2)  # no time passes: the first call drops the stale members
    assert sorted(group.state.members) == live
    assert sorted(group.state.owners) == list(range(partitions))  # each partition held by one live member
    # Handoffs need a call of the holder to be told, one to release, one of the target to be told; they
    # are usually done in two rounds; settle() allows more when a stale member's expiry reshuffles.
    group.settle(live)
    assert_settled(group, live)


def test_merged_consumer_totals_take_each_partition_from_its_primary_only() -> None:
    """Each node holds every partition it hosts, primary or not; the merge sums each partition once."""

    def state(partition: int, acked: int) -> types_pb2.ConsumerPartitionState:
        return types_pb2.ConsumerPartitionState(
            partition=partition, acked_total=acked, delivered_total=acked + 1, num_ack_pending=1
        )

    # node-a leads 0 and holds a copy of 1; node-b leads 1 and holds a copy of 0 (stale figures).
    node_a = types_pb2.ConsumerInfo(stream="s", partitions=[state(0, 5), state(1, 2)], acked_total=7)
    node_b = types_pb2.ConsumerInfo(stream="s", partitions=[state(0, 4), state(1, 3)], acked_total=7)
    merged = merge_consumer_infos([node_a, node_b], {"node-a": {0}, "node-b": {1}})
    assert [(entry.partition, entry.acked_total) for entry in merged.partitions] == [(0, 5), (1, 3)]
    assert (merged.acked_total, merged.delivered_total, merged.num_ack_pending) == (8, 10, 2)


# -- preferred-leader rebalance (rebalance.py) -------------------------------------------------------


def _record(name: str, placement: types_pb2.StreamPlacement) -> types_pb2.StreamRecord:
    return types_pb2.StreamRecord(config=types_pb2.StreamConfig(name=name), placement=placement)


def _failed_over(entry: types_pb2.PartitionPlacement, new_primary: str) -> None:
    """What a failover leaves: another primary, the replicas' preference unchanged."""
    old = entry.primary_node_id
    entry.primary_node_id = new_primary
    del entry.secondary_node_ids[:]
    entry.secondary_node_ids.extend(node for node in entry.replica_node_ids if node != new_primary)
    assert old != new_primary
    entry.leader_epoch += 1


def test_placement_records_each_partitions_replicas_with_the_primary_first() -> None:
    placement = place_stream(6, 3, nodes("a", "b", "c"))
    for entry in placement.partitions:
        assert list(entry.replica_node_ids) == [entry.primary_node_id, *entry.secondary_node_ids]
    assert Counter(entry.replica_node_ids[0] for entry in placement.partitions) == {"a": 2, "b": 2, "c": 2}


def test_leadership_goes_back_only_to_an_alive_in_sync_preferred_leader() -> None:
    record = _record("s", place_stream(6, 3, nodes("a", "b", "c")))
    placement = record.placement
    moved = [entry for entry in placement.partitions if entry.primary_node_id == "a"]
    for entry in moved:  # node a died; its partitions were failed over to their next replica
        _failed_over(entry, entry.replica_node_ids[1])
    everyone = {("s", entry.partition): ["a", "b", "c"] for entry in placement.partitions}
    without_a = {key: ["b", "c"] for key in everyone}
    assert rebalance.handovers([record], without_a, {"a", "b", "c"}) == []  # a not in sync yet
    assert rebalance.handovers([record], everyone, {"b", "c"}) == []  # a not alive
    moves = rebalance.handovers([record], everyone, {"a", "b", "c"})
    assert [(move.partition, move.from_node_id, move.to_node_id) for move in moves] == [
        (entry.partition, entry.primary_node_id, "a") for entry in moved
    ]
    assert all(move.leader_epoch == 2 for move in moves)
    dead_primary = {"a", "c"} if moved[0].primary_node_id == "b" else {"a", "b"}
    assert len(rebalance.handovers([record], everyone, dead_primary)) < len(moves)  # failover's job


def test_a_primary_with_damaged_records_hands_its_partition_to_an_intact_in_sync_replica() -> None:
    """Issue 32: the scrub found damaged records of s/0 on its primary: leadership goes to the next
    replica in preference order that is alive, in sync and intact; it does not come back to the
    damaged preferred leader until that one is intact again."""
    record = _record("s", place_stream(1, 3, nodes("a", "b", "c")))
    entry = record.placement.partitions[0]
    primary, second, third = entry.replica_node_ids
    everyone = {("s", 0): [primary, second, third]}
    alive = {primary, second, third}
    damaged: dict[str, set[tuple[str, int]]] = {primary: {("s", 0)}}
    [move] = rebalance.handovers([record], everyone, alive, damaged)
    assert (move.from_node_id, move.to_node_id) == (primary, second)
    damaged[second] = {("s", 0)}  # damaged there too: the third copy leads
    assert [move.to_node_id for move in rebalance.handovers([record], everyone, alive, damaged)] == [third]
    assert rebalance.handovers([record], {("s", 0): [primary, second]}, alive, damaged) == []  # no intact copy
    assert rebalance.handovers([record], everyone, alive, {primary: {("t", 0)}}) == []  # another stream's
    _failed_over(entry, second)  # now led elsewhere; the preferred leader is still damaged: stays
    assert rebalance.handovers([record], everyone, alive, {primary: {("s", 0)}}) == []
    [back] = rebalance.handovers([record], everyone, alive, {})  # repaired: back to the preferred leader
    assert (back.from_node_id, back.to_node_id) == (second, primary)


def test_a_handed_over_placement_starts_a_new_epoch_after_the_shared_log() -> None:
    entry = place_stream(1, 3, nodes("a", "b", "c")).partitions[0]
    _failed_over(entry, entry.replica_node_ids[1])
    entry.epoch_starts.add(leader_epoch=2, start_seq=41)
    preferred = entry.replica_node_ids[0]
    after = rebalance.handed_over(entry, preferred, last_seq=95, in_sync=[entry.primary_node_id, preferred])
    assert after.primary_node_id == preferred == rebalance.preferred_leader(after)
    assert list(after.secondary_node_ids) == list(entry.replica_node_ids[1:])
    assert after.leader_epoch == 3
    assert [(start.leader_epoch, start.start_seq) for start in after.epoch_starts] == [(1, 1), (2, 41), (3, 96)]
    assert list(after.in_sync_node_ids) == [preferred, entry.primary_node_id]
    assert list(after.replica_node_ids) == list(entry.replica_node_ids)


def test_records_without_recorded_preferences_are_left_alone() -> None:
    entry = types_pb2.PartitionPlacement(partition=0, primary_node_id="b", secondary_node_ids=["a"], leader_epoch=4)
    record = _record("old", types_pb2.StreamPlacement(partitions=[entry]))
    assert rebalance.preferred_leader(entry) == "b"
    assert rebalance.handovers([record], {("old", 0): ["a", "b"]}, {"a", "b"}) == []


# ---------------------------------------------------------------------------------------------------
# GetClusterStreamStats: per-node and per-stream summaries (cluster_views, pure)
# ---------------------------------------------------------------------------------------------------


def _stats_answer(name: str, *partitions: tuple[int, int, int]) -> dict[str, Any]:
    info = streams_pb2.GetStreamInfoResponse()
    for index, msg_count, size in partitions:
        info.stats.partitions.add(partition=index, msg_count=msg_count, bytes=size, last_seq=msg_count)
    return {name: info}


def test_cluster_stats_count_each_partition_once_from_its_leader_and_list_silent_nodes() -> None:
    views = [
        NodeView(NodeRecord("a", "a:1", "a:2"), alive=True),
        NodeView(NodeRecord("b", "b:1", "b:2"), alive=True),
        NodeView(NodeRecord("c", "c:1", "c:2"), alive=True),
        NodeView(NodeRecord("d", "d:1", "d:2"), alive=False),
    ]
    led = {"a": {"orders": {0}}, "b": {"orders": {1}}, "c": {"orders": {2}}, "d": {}}
    # a also reports partition 1, which it follows: only b's figures for it count.
    answers: dict[str, Any] = {
        "a": _stats_answer("orders", (0, 10, 100), (1, 9, 90)),
        "b": _stats_answer("orders", (1, 20, 200)),
        "c": UnavailableError("node c: connection refused"),
    }
    response = router_pb2.GetClusterStreamStatsResponse()
    stats = add_node_summaries(response, views, led, answers)

    assert [(node.node_id, node.status) for node in response.nodes] == [
        ("a", "ok"),
        ("b", "ok"),
        ("c", "unreachable"),
        ("d", "dead"),
    ]
    assert (response.total_msg_count, response.total_bytes) == (30, 300)
    assert (response.skew_msg_count, response.skew_bytes, response.skew_partitions) == (10, 100, 0)
    assert sorted(stats) == [("orders", 0), ("orders", 1)]

    record = types_pb2.StreamRecord()
    record.config.name, record.config.partitions = "orders", 3
    for index, primary in enumerate("abc"):
        record.placement.partitions.add(partition=index, primary_node_id=primary)
    add_stream_summaries(response, [record], stats)
    (entry,) = response.streams
    assert list(entry.primary_node_ids) == ["a", "b", "c"]
    assert [(p.partition, p.msg_count) for p in entry.partition_stats] == [(0, 10), (1, 20), (2, 0)]
    assert (entry.msg_count, entry.bytes, entry.last_seq) == (30, 300, 20)
