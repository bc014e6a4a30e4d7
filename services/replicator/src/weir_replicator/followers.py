"""What a partition's shipper keeps per secondary (DESIGN §5): where its log ends, what the
primary's change feed showed that it still needs (removals, consumer state, tombstones, a stream
update or deletion), and its long-lived pull and push calls."""

from __future__ import annotations

from dataclasses import dataclass, field

from weir.client import LockstepStream
from weir.v1 import internal_pb2


@dataclass(slots=True)
class Removal:
    """Single messages the primary removed (a change-feed `remove`): its change seq, the seqs, why."""

    change_seq: int
    seqs: list[int]
    reason: str


@dataclass(slots=True)
class FollowerState:
    node_id: str
    address: str
    last_seq: int | None = None
    first_seq: int = 0
    removals: list[Removal] = field(default_factory=list)
    consumers_dirty: bool = True
    consumers_generation: int = 0  # the SnapshotReads generation its next snapshots must reflect
    tombstones: set[str] = field(default_factory=set)
    config_dirty: bool = False
    delete_stream: bool = False
    shipped_through: int = 0
    # It refused a push as `divergence`: its next sync cuts its log back to where it last matched the
    # primary's (heal.py) before anything is pushed again.
    diverged: bool = False
    last_snapshot_s: float = 0.0
    # The pull from the primary and the push to this follower, each on one long-lived lockstep call
    # (opened on first use, reopened after a failure): a stream item costs the nodes and this
    # process about a third of a unary call's CPU.
    fetch_stream: LockstepStream[internal_pb2.FetchReplicationRequest, internal_pb2.FetchReplicationResponse] | None = (
        None
    )
    push_stream: LockstepStream[internal_pb2.ReplicateMessageRequest, internal_pb2.ReplicateResponse] | None = None

    @property
    def side_changes_pending(self) -> bool:
        """Whether a change that must ship at once waits: removals, tombstones, an update, a delete."""
        return bool(self.removals or self.tombstones or self.config_dirty or self.delete_stream)

    def close_streams(self) -> None:
        for stream in (self.fetch_stream, self.push_stream):
            if stream is not None:
                stream.close()
        self.fetch_stream = self.push_stream = None
