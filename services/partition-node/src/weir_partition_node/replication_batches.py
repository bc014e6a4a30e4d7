"""What FetchReplication ships and ReplicateMessage takes, in both shapes (DESIGN §5, issue 25).

- **Record batches** (`FetchReplicationRequest.want_record_batch`, what this version's replicator
  asks for): the primary answers with the batches its newest commits were cached as
  (`batch_cache.py`), or packs what it reads from its log into one; each carries the log-matching
  check against the seq it follows. The replicator relays their bytes; the follower checks every
  batch whole before it reads a record from any.
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
from weir.v1 import internal_pb2, types_pb2

from weir_partition_node import metrics, record_batch
from weir_partition_node.commit_items import ReplicatedRecord
from weir_partition_node.partition import Partition
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


def add_records(
    response: internal_pb2.FetchReplicationResponse,
    partition: Partition,
    request: internal_pb2.FetchReplicationRequest,
    max_messages: int,
    max_bytes: int,
) -> None:
    """Put what follows the follower's last seq in a primary's FetchReplication answer, in the
    shape the request asks for, within `max_messages` and about `max_bytes`."""
    after_seq = request.follower_last_seq
    if request.want_record_batch:
        if after_seq < partition.last_seq:
            batches, response.record_count = record_batches(partition, after_seq, max_messages, max_bytes)
            response.record_batches.extend(batches)
        return
    matched_crc32 = partition.stored_crc32(after_seq)
    if matched_crc32 is not None:  # log matching: what the follower must hold there
        response.follower_last_crc32 = matched_crc32
    if after_seq < partition.last_seq:
        rows = partition.log.read(max(after_seq + 1, partition.first_seq), max_messages, max_bytes)
        response.records.extend(record for _, record in rows)
        response.record_crc32s.extend(zlib.crc32(record) for _, record in rows)


def record_batches(partition: Partition, after_seq: int, max_messages: int, max_bytes: int) -> tuple[list[bytes], int]:
    """A primary's answer to a follower whose log ends at `after_seq` (below the partition's last
    seq): its cached batches from there (batch_cache.py), else one batch read from the log; and
    how many records they hold."""
    cached = partition.batch_cache.take(after_seq, max_messages, max_bytes)
    if cached is not None:
        metrics.REPLICATION_BATCHES.labels("cache").inc(len(cached[0]))
        return cached
    # Behind the primary's retention, the batch follows the seq before its first stored one: the
    # replicator truncates the follower's log up to there before it pushes (ReplicateTruncate).
    previous_seq = max(after_seq, partition.first_seq - 1)
    rows = partition.log.read(previous_seq + 1, max_messages, max_bytes)
    if not rows:
        return [], 0
    metrics.REPLICATION_BATCHES.labels("log").inc()
    data, count = batch_of_rows(
        rows,
        leader_epoch=partition.leader_epoch,
        previous_seq=previous_seq,
        previous_crc32=partition.stored_crc32(previous_seq),
    )
    return [data], count


def records_of_batches(
    batches: Sequence[bytes], *, after_seq: int, leader_epoch: int
) -> tuple[list[ReplicatedRecord], int | None]:
    """The records of relayed record batches, and the CRC-32 the follower's record at `after_seq`
    must have (None: nothing to compare). Each batch must be whole (its CRC32C) and come from the
    primary of `leader_epoch`; the first must follow `after_seq` and each the one before it (its
    seq and CRC-32). Errors: InvalidArgumentError, nothing stored."""
    records: list[ReplicatedRecord] = []
    first_crc32: int | None = None
    previous: record_batch.RecordBatch | None = None
    for index, data in enumerate(batches):
        try:
            batch = record_batch.decode(data)
        except RecordBatchError as error:
            raise InvalidArgumentError(f"record_batches[{index}]: {error}; nothing stored") from None
        if batch.leader_epoch != leader_epoch:
            raise InvalidArgumentError(
                f"record_batches[{index}]: built by the primary of leader epoch {batch.leader_epoch}, "
                f"relayed under leader epoch {leader_epoch}"
            )
        if previous is None:
            if batch.previous_seq != after_seq:
                raise InvalidArgumentError(
                    f"record_batches[0]: it follows seq {batch.previous_seq}, the request's after_seq is {after_seq}"
                )
            first_crc32 = batch.previous_crc32
        elif batch.previous_seq != previous.last_seq or batch.previous_crc32 not in (None, previous.records[-1].crc32):
            raise InvalidArgumentError(f"record_batches[{index}]: does not follow record_batches[{index - 1}]")
        records += batch.records
        previous = batch
    return records, first_crc32


def records_of_list(after_seq: int, records: Sequence[bytes], crc32s: Sequence[int] = ()) -> list[ReplicatedRecord]:
    """Decode and check a ReplicateMessage's `records` (an earlier replicator's shape): with
    `crc32s` (the primary's, one per record), each record's bytes must match theirs; seqs must
    increase above `after_seq`. Errors: InvalidArgumentError."""
    if crc32s and len(crc32s) != len(records):
        raise InvalidArgumentError(f"record_crc32s: {len(crc32s)} given for {len(records)} records")
    decoded: list[ReplicatedRecord] = []
    previous = after_seq
    for index, record in enumerate(records):
        crc32 = zlib.crc32(record)
        if crc32s and crc32 != crc32s[index]:
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
            BatchRecord(
                message.seq,
                message.ts_ms,
                message.subject,
                record,
                crc32,
                message.msg_id,
                message.scheduled_seq,
                message.expires_at_ms,
            )
        )
    return decoded
