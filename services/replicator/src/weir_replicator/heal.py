"""Healing a diverged follower (issue 54; DESIGN §5: "replicas heal themselves").

A follower refuses a push with `divergence` when the record it holds at the seq the push follows
(or at a seq the push replays) is not the primary's: a forged call on a plaintext cluster, a bug, an
unclean history. Retrying the same push cannot help. Before anything is pushed to it again, its log
is cut back to the last seq where it matches the primary, and everything after that seq is then
copied again:

1. compare the stored CRC-32s of both copies (GetRecordChecksums) window by window, from the
   follower's log end down, until a seq holds the same checksum on both (`last_match`, pure);
2. ReplicateTruncateTail on the follower to that seq.

Copies that follow the protocol match below a matching record (every append checked its
predecessor's checksum), so the first match from the top is where the copies part. The walk goes down
at most MAX_WINDOWS windows of WINDOW seqs a round. If nothing matches there, the tail is cut below
the last window, and the next round goes on from there.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from weir.v1 import internal_pb2
from weir_server.internal_clients import ReplicationClient

from weir_replicator import metrics

logger = logging.getLogger(__name__)

WINDOW = 1000
MAX_WINDOWS = 10


def last_match(primary: Sequence[tuple[int, int]], follower: Sequence[tuple[int, int]]) -> int | None:
    """The highest seq that both copies hold with the same CRC-32, from (seq, crc32) pairs of one
    window each; None when none does (a seq only one copy holds does not count)."""
    ours = dict(primary)
    for seq, crc32 in sorted(follower, reverse=True):
        if ours.get(seq) == crc32:
            return seq
    return None


def window_below(top: int, floor: int) -> tuple[int, int] | None:
    """The window of seqs (from_seq, count) that ends at `top` and starts no lower than `floor`
    (the lowest seq either copy may hold, at least 1); None when `top` is below `floor`."""
    if top < max(1, floor):
        return None
    from_seq = max(1, floor, top - WINDOW + 1)
    return from_seq, top - from_seq + 1


async def heal(
    *,
    stream: str,
    partition: int,
    leader_epoch: int,
    follower_node_id: str,
    follower_log: tuple[int, int],
    primary: ReplicationClient,
    follower: ReplicationClient,
) -> internal_pb2.ReplicateResponse:
    """Cut the follower's log (`follower_log`: its first and last seq) back to where it last matches
    the primary's (module docstring); the follower's answer to ReplicateTruncateTail. Errors:
    WeirError of a call."""
    floor, top = max(1, follower_log[0]), follower_log[1]
    for _ in range(MAX_WINDOWS):
        window = window_below(top, floor)
        if window is None:
            keep = floor - 1
            break
        from_seq, count = window
        theirs = await follower.record_checksums(stream, partition, from_seq, count)
        ours = await primary.record_checksums(stream, partition, from_seq, count)
        found = last_match(
            list(zip(ours.seqs, ours.crc32s, strict=True)), list(zip(theirs.seqs, theirs.crc32s, strict=True))
        )
        if found is not None:
            keep = found
            break
        floor = max(floor, ours.first_seq, theirs.first_seq)
        top = from_seq - 1
    else:
        keep = top  # nothing matched in MAX_WINDOWS windows: cut below them, the next round goes on
    reply = await follower.replicate(
        "ReplicateTruncateTail",
        internal_pb2.ReplicateTruncateTailRequest(
            stream=stream, partition=partition, leader_epoch=leader_epoch, last_seq=keep
        ),
    )
    metrics.DIVERGENCES_HEALED.labels(stream, str(partition)).inc()
    logger.warning(
        "%s/%d -> %s: diverged after seq %d; cut its tail of %d message(s) to copy it again (%s)",
        stream,
        partition,
        follower_node_id,
        keep,
        reply.dropped,
        reply.result_code,
    )
    return reply
