"""What FetchReplication ships and ReplicateMessage takes, in both shapes (DESIGN §5, issue 25).

- **Record batches** (`FetchReplicationRequest.want_record_batch`, what this version's replicator
  asks for): the primary packs the records after the follower's last seq into one record batch
  (`record_batch.py`) with the log-matching check inside; the replicator relays its bytes; the
  follower checks the whole batch before it reads a record from it.
- **Record lists** (`records` with `record_crc32s`, an earlier replicator's shape): one encoded
  weir.v1.Message per record, each checked against its CRC-32 and decoded here.

Both give the follower the same `ReplicatedRecord`s, checked before anything is queued: bad input
never reaches the commit loop and a refused request stores nothing.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

from google.protobuf.message import DecodeError
from weir.errors import InvalidArgumentError
from weir.v1 import types_pb2

from weir_partition_node import record_batch
from weir_partition_node.commit_items import ReplicatedRecord
from weir_partition_node.record_batch import BatchRecord, RecordBatchError


def batch_of_rows(
    rows: Sequence[tuple[int, bytes]], *, leader_epoch: int, previous_seq: int, previous_crc32: int | None
) -> tuple[bytes, int]:
    """The stored (seq, record) `rows` (ascending, above `previous_seq`, at least one) as one
    record batch, and how many of them it holds: all, unless a seq lies more than
    record_batch.MAX_SEQ_DELTA past the first (the rest go in the next fetch)."""
    records: list[BatchRecord] = []
    base_seq = rows[0][0]
    for seq, record in rows:
        if seq - base_seq > record_batch.MAX_SEQ_DELTA:
            break
        message = types_pb2.Message.FromString(record)
        records.append(
            BatchRecord(
                seq,
                message.ts_ms,
                message.subject,
                record,
                zlib.crc32(record),
                message.msg_id,
                message.scheduled_seq,
                message.expires_at_ms,
            )
        )
    encoded = record_batch.encode(
        records, leader_epoch=leader_epoch, previous_seq=previous_seq, previous_crc32=previous_crc32
    )
    return encoded, len(records)


def records_of_batch(data: bytes, *, after_seq: int, leader_epoch: int) -> tuple[list[ReplicatedRecord], int | None]:
    """The records of a relayed record batch, and the CRC-32 the follower's record at `after_seq`
    must have (None: nothing to compare). The batch must be whole (its CRC32C), follow `after_seq`
    and come from the primary of `leader_epoch`. Errors: InvalidArgumentError, nothing stored."""
    try:
        batch = record_batch.decode(data)
    except RecordBatchError as error:
        raise InvalidArgumentError(f"record_batch: {error}; nothing stored") from None
    if batch.previous_seq != after_seq:
        raise InvalidArgumentError(
            f"record_batch: it follows seq {batch.previous_seq}, the request's after_seq is {after_seq}"
        )
    if batch.leader_epoch != leader_epoch:
        raise InvalidArgumentError(
            f"record_batch: built by the primary of leader epoch {batch.leader_epoch}, "
            f"relayed under leader epoch {leader_epoch}"
        )
    records = [
        (
            record.seq,
            record.ts_ms,
            record.subject,
            record.record,
            record.msg_id,
            record.scheduled_seq,
            record.expires_at_ms,
        )
        for record in batch.records
    ]
    return records, batch.previous_crc32


def records_of_list(after_seq: int, records: Sequence[bytes], crc32s: Sequence[int] = ()) -> list[ReplicatedRecord]:
    """Decode and check a ReplicateMessage's `records` (an earlier replicator's shape): with
    `crc32s` (the primary's, one per record), each record's bytes must match theirs; seqs must
    increase above `after_seq`. Errors: InvalidArgumentError."""
    if crc32s and len(crc32s) != len(records):
        raise InvalidArgumentError(f"record_crc32s: {len(crc32s)} given for {len(records)} records")
    decoded: list[ReplicatedRecord] = []
    previous = after_seq
    for index, record in enumerate(records):
        if crc32s and zlib.crc32(record) != crc32s[index]:
            raise InvalidArgumentError(
                f"records[{index}]: its bytes do not match the primary's CRC-32 {crc32s[index]} "
                "(damaged on the way); nothing stored"
            )
        try:
            message = types_pb2.Message.FromString(record)
        except DecodeError as error:
            raise InvalidArgumentError(f"records[{index}]: not an encoded weir.v1.Message ({error})") from None
        if message.seq <= previous:
            raise InvalidArgumentError(
                f"records[{index}]: seq {message.seq} does not follow seq {previous} "
                "(seqs must increase, above after_seq)"
            )
        previous = message.seq
        decoded.append(
            (
                message.seq,
                message.ts_ms,
                message.subject,
                record,
                message.msg_id,
                message.scheduled_seq,
                message.expires_at_ms,
            )
        )
    return decoded
