"""The cluster metadata schema in Redis (DESIGN §4), shared by the router and the partition nodes.

Keys (all under a prefix, default ``weir``, so several clusters can share one Redis):

- ``{prefix}:nodes`` — SET of registered node ids.
- ``{prefix}:node:{id}`` — HASH: client_address, internal_address, metrics_address, client_listeners
  (JSON {name: "host:port"}, the client port's advertised listeners), zone, capacity,
  registered_at_ms, last_heartbeat_ms, state ("alive" | "dead").
- ``{prefix}:node:{id}:heartbeat`` — STRING with a TTL (``heartbeat_ttl_ms``) the node refreshes;
  its expiry is how the controller notices a dead node.
- ``{prefix}:streams`` — SET of stream names.
- ``{prefix}:stream:{name}`` — STRING: an encoded `weir.v1.StreamRecord` (config + placement).
- ``{prefix}:group:{stream}:{group}`` — STRING: the consumer group's JSON state (members,
  owners, generation), changed only in WATCH/MULTI transactions.
- ``{prefix}:controller`` — STRING "router_id address", SET NX PX: the controller lease.
- ``{prefix}:in_sync:{stream}:{partition}`` — STRING JSON ``{"leader_epoch", "leader", "in_sync"}``:
  the partition's live in-sync replica set. The primary changes it only while the stored epoch is
  its own (`IN_SYNC_CAS`); the controller rewrites it with the new epoch on failover.
- ``{prefix}:replicators`` — ZSET replicator id -> lease expiry (ms): the live replicator instances.
- ``{prefix}:replicator:lease:{stream}:{partition}`` — STRING replicator id, SET NX PX: which
  replicator instance ships the partition.
- ``{prefix}:replicator:position:{stream}:{partition}`` — STRING "node_id change_seq": the primary's
  change feed position through which every follower got the partition's removals and consumer
  snapshots (where a restarted replicator resumes).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

DEFAULT_PREFIX = "weir"

# KEYS[1] = in_sync key; ARGV[1] = the writer's leader epoch, ARGV[2] = the new JSON value.
# Writes only when the stored record is absent or carries the same epoch; returns 1 when written.
IN_SYNC_CAS = """
local current = redis.call('GET', KEYS[1])
if current then
  local decoded = cjson.decode(current)
  if tonumber(decoded['leader_epoch']) ~= tonumber(ARGV[1]) then
    return 0
  end
end
redis.call('SET', KEYS[1], ARGV[2])
return 1
"""


@dataclass(frozen=True, slots=True)
class InSyncRecord:
    """A partition's in-sync set as stored under `Keys.in_sync`."""

    leader_epoch: int
    leader: str
    in_sync: tuple[str, ...]

    def to_json(self) -> str:
        return json.dumps({"leader_epoch": self.leader_epoch, "leader": self.leader, "in_sync": list(self.in_sync)})

    @staticmethod
    def from_json(raw: str | bytes) -> InSyncRecord:
        value = json.loads(raw)
        return InSyncRecord(int(value["leader_epoch"]), str(value["leader"]), tuple(value["in_sync"]))


@dataclass(frozen=True, slots=True)
class Keys:
    prefix: str = DEFAULT_PREFIX

    @property
    def nodes(self) -> str:
        return f"{self.prefix}:nodes"

    def node(self, node_id: str) -> str:
        return f"{self.prefix}:node:{node_id}"

    def heartbeat(self, node_id: str) -> str:
        return f"{self.prefix}:node:{node_id}:heartbeat"

    @property
    def node_numbers(self) -> str:
        """Hash node id -> the number the cluster gave it at its first registration."""
        return f"{self.prefix}:node-numbers"

    @property
    def node_number_counter(self) -> str:
        return f"{self.prefix}:node-number-counter"

    @property
    def streams(self) -> str:
        return f"{self.prefix}:streams"

    def stream(self, name: str) -> str:
        return f"{self.prefix}:stream:{name}"

    def group(self, stream: str, group: str) -> str:
        return f"{self.prefix}:group:{stream}:{group}"

    def groups_of(self, stream: str) -> str:
        """Pattern matching every group key of a stream (for cleanup on delete)."""
        return f"{self.prefix}:group:{stream}:*"

    @property
    def controller(self) -> str:
        return f"{self.prefix}:controller"

    def in_sync(self, stream: str, partition: int) -> str:
        return f"{self.prefix}:in_sync:{stream}:{partition}"

    def in_sync_of(self, stream: str) -> str:
        """Pattern matching every in-sync key of a stream (for cleanup on delete)."""
        return f"{self.prefix}:in_sync:{stream}:*"

    @property
    def replicators(self) -> str:
        return f"{self.prefix}:replicators"

    def replicator_lease(self, stream: str, partition: int) -> str:
        return f"{self.prefix}:replicator:lease:{stream}:{partition}"

    def replicator_position(self, stream: str, partition: int) -> str:
        return f"{self.prefix}:replicator:position:{stream}:{partition}"

    def replicator_keys_of(self, stream: str) -> list[str]:
        """Patterns matching every replicator key of a stream (for cleanup on delete)."""
        return [f"{self.prefix}:replicator:lease:{stream}:*", f"{self.prefix}:replicator:position:{stream}:*"]


def _partitions_of(text: str) -> tuple[tuple[str, int], ...]:
    """(stream, partition) pairs of a JSON list of "stream/partition" (stream names hold no '/');
    entries that do not parse are left out."""
    try:
        value = json.loads(text) if text else []
    except ValueError:
        return ()
    pairs: list[tuple[str, int]] = []
    for item in value if isinstance(value, list) else []:
        stream, _, partition = str(item).rpartition("/")
        if stream and partition.isdigit():
            pairs.append((stream, int(partition)))
    return tuple(pairs)


def _epochs_of(text: str) -> tuple[tuple[str, int, int], ...]:
    """(stream, partition, leader epoch) triples of a JSON list of "stream/partition@epoch";
    entries that do not parse are left out."""
    found: list[tuple[str, int, int]] = []
    try:
        value = json.loads(text) if text else []
    except ValueError:
        return ()
    for item in value if isinstance(value, list) else []:
        where, _, epoch = str(item).rpartition("@")
        stream, _, partition = where.rpartition("/")
        if stream and partition.isdigit() and epoch.isdigit():
            found.append((stream, int(partition), int(epoch)))
    return tuple(found)


def _listeners_of(text: str) -> dict[str, str]:
    """A stored client_listeners JSON (empty, or written by an older node: no listeners)."""
    try:
        value = json.loads(text) if text else {}
    except ValueError:
        return {}
    if not isinstance(value, dict):
        return {}
    return {str(name): str(address) for name, address in value.items()}


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """One registered node as stored in its hash."""

    node_id: str
    client_address: str
    internal_address: str
    metrics_address: str = ""
    # Named advertised addresses of the client port (weir_server.listeners): {name: "host:port"}.
    client_listeners: dict[str, str] = field(default_factory=dict)
    zone: str = ""
    capacity: int = 1
    registered_at_ms: int = 0
    last_heartbeat_ms: int = 0
    state: str = "alive"
    # The node's background scrub (weir_partition_node.scrub): complete passes, when the last
    # ended, records its last passes found corrupt, and the storage checks' problems ("ok" if none).
    scrub_passes: int = 0
    scrub_last_pass_ms: int = 0
    corrupt_records: int = 0
    integrity: str = "ok"
    # (stream, partition) this node holds damaged records of: the controller moves their leadership
    # to an intact in-sync replica (weir_router.rebalance), so the node repairs them as a follower.
    damaged_partitions: tuple[tuple[str, int], ...] = ()
    # (stream, partition) whose unreadable file this node moved aside and rebuilds from another
    # copy: never a leader or a failover candidate until it caught up (the controller fails over
    # one it leads as if this node were dead for it).
    rebuilding_partitions: tuple[tuple[str, int], ...] = ()
    # (stream, partition, leader epoch) this node holds under a newer leader epoch than the stored
    # stream record's: the metadata store lost writes (a Redis restarted without its last writes).
    # The controller restores the newest placement the nodes hold before deciding anything else.
    ahead_partitions: tuple[tuple[str, int, int], ...] = ()
    # Diverged tails the node cut from its copies since it started, each copied again (healed).
    diverged_tails_cut: int = 0
    # The number the cluster gave the node at its first registration (1, 2, ...; never reused): the
    # streams seed's uint64 node ids (`assign_node_number`). 0 = not known.
    number: int = 0
    # The TTL of the node's heartbeat key (its WEIR_NODE_HEARTBEAT_TTL_MS); 0 = not known (a node of
    # an earlier version). A new controller waits this long before judging a missing heartbeat.
    heartbeat_ttl_ms: int = 0

    def to_hash(self) -> dict[str, str]:
        return {
            "node_id": self.node_id,
            "client_address": self.client_address,
            "internal_address": self.internal_address,
            "metrics_address": self.metrics_address,
            "client_listeners": json.dumps(self.client_listeners, sort_keys=True),
            "zone": self.zone,
            "capacity": str(self.capacity),
            "registered_at_ms": str(self.registered_at_ms),
            "last_heartbeat_ms": str(self.last_heartbeat_ms),
            "state": self.state,
            "scrub_passes": str(self.scrub_passes),
            "scrub_last_pass_ms": str(self.scrub_last_pass_ms),
            "corrupt_records": str(self.corrupt_records),
            "integrity": self.integrity,
            "damaged_partitions": json.dumps(
                [f"{stream}/{partition}" for stream, partition in self.damaged_partitions]
            ),
            "rebuilding_partitions": json.dumps(
                [f"{stream}/{partition}" for stream, partition in self.rebuilding_partitions]
            ),
            "ahead_partitions": json.dumps(
                [f"{stream}/{partition}@{epoch}" for stream, partition, epoch in self.ahead_partitions]
            ),
            "diverged_tails_cut": str(self.diverged_tails_cut),
            "number": str(self.number),
            "heartbeat_ttl_ms": str(self.heartbeat_ttl_ms),
        }

    @staticmethod
    def from_hash(values: dict[str, str]) -> NodeRecord:
        return NodeRecord(
            node_id=values.get("node_id", ""),
            client_address=values.get("client_address", ""),
            internal_address=values.get("internal_address", ""),
            metrics_address=values.get("metrics_address", ""),
            client_listeners=_listeners_of(values.get("client_listeners", "")),
            zone=values.get("zone", ""),
            capacity=int(values.get("capacity") or 1),
            registered_at_ms=int(values.get("registered_at_ms") or 0),
            last_heartbeat_ms=int(values.get("last_heartbeat_ms") or 0),
            state=values.get("state", "alive"),
            scrub_passes=int(values.get("scrub_passes") or 0),
            scrub_last_pass_ms=int(values.get("scrub_last_pass_ms") or 0),
            corrupt_records=int(values.get("corrupt_records") or 0),
            integrity=values.get("integrity", "ok"),
            damaged_partitions=_partitions_of(values.get("damaged_partitions", "")),
            rebuilding_partitions=_partitions_of(values.get("rebuilding_partitions", "")),
            ahead_partitions=_epochs_of(values.get("ahead_partitions", "")),
            diverged_tails_cut=int(values.get("diverged_tails_cut") or 0),
            number=int(values.get("number") or 0),
            heartbeat_ttl_ms=int(values.get("heartbeat_ttl_ms") or 0),
        )


async def assign_node_number(redis: Any, keys: Keys, node_id: str) -> int:
    """The node's number: the one it was given before, else the next of the cluster's counter
    (a race of two first registrations of one id keeps the first number written)."""
    found = await redis.hget(keys.node_numbers, node_id)
    if found is None:
        candidate = await redis.incr(keys.node_number_counter)
        await redis.hsetnx(keys.node_numbers, node_id, candidate)
        found = await redis.hget(keys.node_numbers, node_id)
    return int(found)
