"""Reads of stored messages on a partition node (Node's reads section): by seq, by time, ranges
(ReadMessages, long-polled), by subject, and subject listings. Every read is checked against the
stored checksums (a damaged record raises CorruptRecordError and counts a checksum failure).

Source: weir.v1 Streams' read RPCs (GetMessage, ReadMessages, GetLastMessageForSubject,
ListSubjectsByPrefix, ScanSubject, SeqAtTime) and the streams seed's reads.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from weir.errors import CorruptRecordError, InvalidArgumentError, NoSuchMessageError
from weir.subjects import SubjectFilter, validate_pattern, validate_subject

from weir_partition_node import metrics, reads
from weir_partition_node.partition import Partition

T = TypeVar("T")

DEFAULT_READ_MESSAGES = 100
MAX_READ_MESSAGES = 10_000
DEFAULT_READ_BYTES = 4 * 1024 * 1024
# A read answer's bound (it must fit the gRPC send limit, 64 MiB; at least one message always goes).
MAX_READ_BYTES = 32 * 1024 * 1024
DEFAULT_SCAN_LIMIT = 1000
DEFAULT_SUBJECT_LIST_LIMIT = 10_000
MAX_FETCH_WAIT_MS = 300_000


def check_max_bytes(max_bytes: int) -> None:
    """A read's byte bound must let the answer fit a gRPC message. Errors: InvalidArgumentError."""
    if max_bytes > MAX_READ_BYTES:
        raise InvalidArgumentError(f"max_bytes: at most {MAX_READ_BYTES} (32 MiB), got {max_bytes}")


class NodeReads:
    """The node's message reads. `partition(stream, index)` is the copy this node leads (errors:
    NoSuchStreamError, NoSuchPartitionError, NotLeaderError), `hosted_partition` any copy it holds;
    `closing()` is true once the node shuts down (long polls end)."""

    def __init__(
        self,
        *,
        partition: Callable[[str, int], Partition],
        hosted_partition: Callable[[str, int], Partition],
        closing: Callable[[], bool],
    ) -> None:
        self._partition = partition
        self._hosted_partition = hosted_partition
        self._closing = closing

    def get_message(self, stream: str, partition_index: int, seq: int) -> bytes:
        partition = self._partition(stream, partition_index)
        record = self._read(partition, lambda: partition.log.get(seq))
        if record is None:
            raise NoSuchMessageError(
                f"stream {stream!r} partition {partition_index} has no message at seq {seq} "
                f"(stored: {partition.first_seq}..{partition.last_seq})",
                stream=stream,
                partition=partition_index,
                seq=seq,
            )
        return record

    def seq_at_time(self, stream: str, partition_index: int, time_ms: int) -> tuple[int, int]:
        """(the first seq stored at or after `time_ms`, or last_seq + 1 when none is; last_seq).
        Errors: NoSuchStreamError, NoSuchPartitionError, InvalidArgumentError (negative time)."""
        if time_ms < 0:
            raise InvalidArgumentError(f"time_ms: milliseconds since the Unix epoch, >= 0; got {time_ms}")
        partition = self._partition(stream, partition_index)
        last_seq = partition.last_seq
        seq = self._read(partition, lambda: partition.log.first_seq_at_time(time_ms))
        return seq or last_seq + 1, last_seq

    def _read_partition(self, stream: str, partition_index: int, any_replica: bool) -> Partition:
        """The partition a read addresses: its primary's copy, or with `any_replica` (internal port)
        any copy this node holds."""
        if any_replica:
            return self._hosted_partition(stream, partition_index)
        return self._partition(stream, partition_index)

    def first_seq(self, stream: str, partition_index: int, any_replica: bool = False) -> int:
        """The first stored seq of the partition a read addresses (its last seq + 1 when it holds
        none). Errors: those of `read_messages`."""
        return self._read_partition(stream, partition_index, any_replica).first_seq

    def read_messages(
        self,
        stream: str,
        partition_index: int,
        from_seq: int,
        max_messages: int,
        max_bytes: int,
        *,
        any_replica: bool = False,
        filter_subject: str = "",
        last_per_subject_until: int = 0,
    ) -> tuple[list[tuple[int, bytes]], int, int]:
        """(records, next_seq, last_seq) of one partition from `from_seq` (0 = first stored):
        see reads.read_range. `any_replica` (internal port) reads a secondary's copy too, whole (up to
        its last seq, whatever its high watermark: for inspection). Errors: NoSuchStreamError /
        NoSuchPartitionError / NotLeaderError, InvalidArgumentError, InvalidSubjectError (filter_subject)."""
        partition = self._read_partition(stream, partition_index, any_replica)
        if max_messages > MAX_READ_MESSAGES:
            raise InvalidArgumentError(f"max_messages: at most {MAX_READ_MESSAGES}, got {max_messages}")
        check_max_bytes(max_bytes)
        accepts = None
        if filter_subject:
            validate_pattern(filter_subject)
            accepts = SubjectFilter([filter_subject]).accepts
        result = self._read(
            partition,
            lambda: reads.read_range(
                partition,
                from_seq,
                max_messages or DEFAULT_READ_MESSAGES,
                max_bytes or DEFAULT_READ_BYTES,
                accepts=accepts,
                last_per_subject_until=last_per_subject_until,
                whole_copy=any_replica,
            ),
        )
        return result.records, result.next_seq, result.last_seq

    async def read_messages_waiting(
        self,
        stream: str,
        partition_index: int,
        from_seq: int,
        max_messages: int,
        max_bytes: int,
        *,
        max_wait_ms: int = 0,
        any_replica: bool = False,
        filter_subject: str = "",
        last_per_subject_until: int = 0,
    ) -> tuple[list[tuple[int, bytes]], int, int]:
        """`read_messages`, long-polling up to `max_wait_ms` (0 = answer at once) for a readable
        message at or after `from_seq` (after the filter): a tail reader's call. Errors: those of
        `read_messages`; InvalidArgumentError for a max_wait_ms above MAX_FETCH_WAIT_MS."""
        if max_wait_ms > MAX_FETCH_WAIT_MS:
            raise InvalidArgumentError(f"max_wait_ms: at most {MAX_FETCH_WAIT_MS}, got {max_wait_ms}")
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait_ms / 1000
        while True:
            records, next_seq, last_seq = self.read_messages(
                stream,
                partition_index,
                from_seq,
                max_messages,
                max_bytes,
                any_replica=any_replica,
                filter_subject=filter_subject,
                last_per_subject_until=last_per_subject_until,
            )
            remaining = deadline - loop.time()
            if records or remaining <= 0 or self._closing():
                return records, next_seq, last_seq
            from_seq = next_seq  # what the filter passed over is not looked at again
            await self._read_partition(stream, partition_index, any_replica).wait_for_work(remaining)

    def latest_at_subject(self, stream: str, partition_index: int, subject: str) -> bytes | None:
        partition = self._partition(stream, partition_index)
        validate_subject(subject)
        return self._read(partition, lambda: reads.latest_at_subject(partition, subject))

    def subjects_with_prefix(
        self, stream: str, partition_index: int, prefix: str, limit: int
    ) -> tuple[list[str], bool]:
        partition = self._partition(stream, partition_index)
        limit = limit or DEFAULT_SUBJECT_LIST_LIMIT
        if limit > DEFAULT_SUBJECT_LIST_LIMIT:
            raise InvalidArgumentError(f"limit: at most {DEFAULT_SUBJECT_LIST_LIMIT}, got {limit}")
        subjects = partition.log.subjects_with_prefix(prefix, limit + 1)
        return subjects[:limit], len(subjects) > limit

    def latest_by_prefix(
        self, stream: str, partition_index: int, prefix: str, limit: int
    ) -> tuple[list[str], list[bytes], bool]:
        """ListSubjectsByPrefix with include_latest: see reads.latest_by_prefix. Errors: those of
        `subjects_with_prefix`."""
        partition = self._partition(stream, partition_index)
        limit = limit or DEFAULT_SUBJECT_LIST_LIMIT
        if limit > DEFAULT_SUBJECT_LIST_LIMIT:
            raise InvalidArgumentError(f"limit: at most {DEFAULT_SUBJECT_LIST_LIMIT}, got {limit}")
        return self._read(partition, lambda: reads.latest_by_prefix(partition, prefix, limit, DEFAULT_READ_BYTES))

    def scan_subject(self, stream: str, partition_index: int, subject: str, from_seq: int, limit: int) -> list[bytes]:
        partition = self._partition(stream, partition_index)
        validate_subject(subject)
        limit = limit or DEFAULT_SCAN_LIMIT
        if limit > MAX_READ_MESSAGES:
            raise InvalidArgumentError(f"limit: at most {MAX_READ_MESSAGES}, got {limit}")
        return self._read(
            partition, lambda: reads.scan_subject(partition, subject, from_seq, limit, DEFAULT_READ_BYTES)
        )

    def _read(self, partition: Partition, read: Callable[[], T]) -> T:
        try:
            return read()
        except CorruptRecordError:
            metrics.CHECKSUM_FAILURES.labels(partition.stream.name, str(partition.index)).inc()
            raise
