"""Consumer-group assignment (pure; DESIGN §2 "Consumer group", RocketMQ QueryAssignment).

A group's state is its live members (last heartbeat), who holds each partition now (`owners`),
who should hold it (`targets`), and a generation. Each QueryAssignment of a member is one `step`:

1. The member's heartbeat is recorded; members silent for longer than the session timeout leave,
   and the partitions they held are free at once.
2. Partitions the member held but no longer lists in `owned_partitions`, and that are not targeted
   to it, are released (the member stopped working on them).
3. Targets are recomputed: balanced (sizes differ by at most one) and sticky (a live holder keeps
   as many of its partitions as its share allows; moves are the minimum).
4. A free partition goes to its target. A held partition moves only after its holder released it
   (step 2) or left, so **two members never hold one partition**.
5. The member is answered with the partitions it holds and is targeted for; the ones targeted to
   it but still held by another are "awaiting". The generation rises whenever owners or targets
   change.

No messages are lost across a rebalance: the group's durable consumer keeps every delivered,
unacknowledged message pending; a member that releases a partition first acks or naks what it
fetched, and a member that dies leaves its deliveries to be redelivered after ack_wait.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field


@dataclass(slots=True)
class GroupState:
    generation: int = 0
    # client_id -> last heartbeat (ms, the metadata store's clock)
    members: dict[str, int] = field(default_factory=dict)
    # partition -> client_id holding it (absent = free)
    owners: dict[int, str] = field(default_factory=dict)
    # partition -> client_id it should go to
    targets: dict[int, str] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(
            {
                "generation": self.generation,
                "members": self.members,
                "owners": {str(key): value for key, value in self.owners.items()},
                "targets": {str(key): value for key, value in self.targets.items()},
            },
            sort_keys=True,
        )

    @staticmethod
    def from_json(text: str | bytes | None) -> GroupState:
        if not text:
            return GroupState()
        data = json.loads(text)
        return GroupState(
            generation=int(data.get("generation", 0)),
            members={str(key): int(value) for key, value in data.get("members", {}).items()},
            owners={int(key): str(value) for key, value in data.get("owners", {}).items()},
            targets={int(key): str(value) for key, value in data.get("targets", {}).items()},
        )


@dataclass(frozen=True, slots=True)
class MemberView:
    """What one member is told."""

    assigned: list[int]
    awaiting: list[int]
    generation: int
    members: list[str]


def balanced_targets(
    partitions: int,
    members: Iterable[str],
    owners: Mapping[int, str],
    previous_targets: Mapping[int, str] | None = None,
) -> dict[int, str]:
    """Balanced, sticky targets: each member gets partitions // n or one more; current holders keep
    their lowest partitions up to their share, the rest go to the members with the fewest.

    The one-larger shares go to the members that had the most targets before (then the most
    holdings): ranking by holdings alone would move them back and forth while a handoff releases
    partitions one member at a time, telling a member to drop a partition it gets back later."""
    live = sorted(set(members))
    if not live:
        return {}
    base, extra = divmod(partitions, len(live))
    held: dict[str, list[int]] = {member: [] for member in live}
    for partition in range(partitions):
        owner = owners.get(partition)
        if owner in held:
            held[owner].append(partition)
    before = dict.fromkeys(live, 0)
    for target in (previous_targets or {}).values():
        if target in before:
            before[target] += 1
    by_holding = sorted(live, key=lambda member: (-before[member], -len(held[member]), member))
    share = {member: base + (1 if rank < extra else 0) for rank, member in enumerate(by_holding)}
    targets: dict[int, str] = {}
    count = dict.fromkeys(live, 0)
    for member in live:
        for partition in held[member][: share[member]]:
            targets[partition] = member
            count[member] += 1
    for partition in range(partitions):
        if partition in targets:
            continue
        member = min(live, key=lambda candidate: (count[candidate] - share[candidate], count[candidate], candidate))
        targets[partition] = member
        count[member] += 1
    return targets


def step(
    state: GroupState,
    *,
    partitions: int,
    client_id: str,
    owned_partitions: Iterable[int],
    now_ms: int,
    session_timeout_ms: int,
    leaving: bool = False,
) -> tuple[GroupState, MemberView]:
    """One QueryAssignment (or LeaveGroup when `leaving`) of `client_id`; returns the new state and
    what the member is told. Pure: `state` is not modified."""
    members = {member: seen for member, seen in state.members.items() if now_ms - seen <= session_timeout_ms}
    if leaving:
        members.pop(client_id, None)
    else:
        members[client_id] = now_ms
    owners = {
        partition: owner for partition, owner in state.owners.items() if owner in members and partition < partitions
    }
    still_owned = set(owned_partitions)
    for partition, owner in list(owners.items()):
        if owner == client_id and partition not in still_owned and state.targets.get(partition) != client_id:
            del owners[partition]  # released: the member stopped listing a partition it was asked to give up
    targets = balanced_targets(partitions, members, owners, state.targets)
    for partition, target in targets.items():
        if partition not in owners:
            owners[partition] = target
    changed = owners != state.owners or targets != state.targets or set(members) != set(state.members)
    new_state = GroupState(
        generation=state.generation + (1 if changed else 0), members=members, owners=owners, targets=targets
    )
    assigned = sorted(p for p, owner in owners.items() if owner == client_id and targets.get(p) == client_id)
    awaiting = sorted(p for p, target in targets.items() if target == client_id and owners.get(p) != client_id)
    return new_state, MemberView(assigned, awaiting, new_state.generation, sorted(members))
