"""Numaflow offsets of Weir messages (pure).

A source.v1 `Offset` is opaque bytes plus a `partition_id`. Weir's is the ASCII text
`<partition>:<seq>:<deliver_count>` with `partition_id` = the Weir partition: the partition and seq
name the message, the deliver count the delivery the data plane read, so an ack or nack settles only
that delivery (one that came back to another replica after its ack_wait is not settled by a late
ack of the first). Errors are InvalidArgumentError naming the offset.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from weir.errors import InvalidArgumentError

MAX_OFFSET_BYTES = 64
_OFFSET = re.compile(rb"(\d{1,10}):(\d{1,20}):(\d{1,10})")


@dataclass(frozen=True, slots=True)
class Delivery:
    """One delivered message as Numaflow names it: partition, seq and the delivery's deliver count."""

    partition: int
    seq: int
    deliver_count: int

    def offset(self) -> bytes:
        return b"%d:%d:%d" % (self.partition, self.seq, self.deliver_count)


def parse_offset(offset: bytes, partition_id: int) -> Delivery:
    """The delivery an offset names. Errors: InvalidArgumentError when `offset` is not one this
    source made, or `partition_id` is not its partition."""
    shown = offset[:MAX_OFFSET_BYTES]
    match = _OFFSET.fullmatch(offset) if len(offset) <= MAX_OFFSET_BYTES else None
    if match is None:
        raise InvalidArgumentError(f"offset {shown!r} is not a Weir offset ('<partition>:<seq>:<deliver_count>')")
    partition, seq, deliver_count = (int(group) for group in match.groups())
    if partition != partition_id:
        raise InvalidArgumentError(f"offset {shown!r} is of partition {partition}, but partition_id is {partition_id}")
    if seq < 1 or deliver_count < 1:
        raise InvalidArgumentError(f"offset {shown!r}: seq and deliver count start at 1")
    return Delivery(partition, seq, deliver_count)


def by_partition(deliveries: Iterable[Delivery]) -> dict[int, list[Delivery]]:
    """The deliveries grouped by partition, each group in the order given (one AckBatch each)."""
    groups: dict[int, list[Delivery]] = {}
    for delivery in deliveries:
        groups.setdefault(delivery.partition, []).append(delivery)
    return groups
