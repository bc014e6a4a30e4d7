"""The record batch format (weir_partition_node.record_batch): what is encoded decodes the same,
and no damaged, cut or forged buffer decodes."""

from __future__ import annotations

import struct

import google_crc32c
import pytest
from weir_partition_node import record_batch
from weir_partition_node.record_batch import ENTRY, HEADER, BatchRecord, RecordBatchError
from weir_partition_node.storage.base import checksum


def _record(seq: int, subject: str = "orders.eu", **fields: object) -> BatchRecord:
    body = f"payload {seq}".encode() * (seq % 3 + 1)
    return BatchRecord(
        seq,
        1_700_000_000_000 + seq,
        subject,
        body,
        checksum(body),
        **fields,  # type: ignore[arg-type]
    )


def _reseal(data: bytearray) -> bytes:
    """`data` with its CRC32C recomputed: a forged batch whose damage the checksum cannot see."""
    struct.pack_into("<I", data, 4, google_crc32c.value(bytes(data[8:])))
    return bytes(data)


def test_a_batch_decodes_to_what_was_encoded() -> None:
    records = [
        _record(11),
        _record(12, "orders.ü", msg_id="order-7"),
        _record(20, scheduled_seq=3),
        _record(21, expires_at_ms=9_000),
    ]
    data = record_batch.encode(records, leader_epoch=4, previous_seq=10, previous_crc32=0xDEADBEEF)
    batch = record_batch.decode(data)
    assert batch.records == records
    assert (batch.base_seq, batch.last_seq, batch.leader_epoch) == (11, 21, 4)
    assert (batch.previous_seq, batch.previous_crc32) == (10, 0xDEADBEEF)
    assert (batch.first_ts_ms, batch.max_ts_ms) == (records[0].ts_ms, records[-1].ts_ms)


def test_a_batch_after_nothing_to_compare_says_so() -> None:
    batch = record_batch.decode(record_batch.encode([_record(1)], leader_epoch=1, previous_seq=0, previous_crc32=None))
    assert batch.previous_crc32 is None
    zero = record_batch.decode(record_batch.encode([_record(1)], leader_epoch=1, previous_seq=0, previous_crc32=0))
    assert zero.previous_crc32 == 0  # a CRC of 0 is a CRC, not "none"


def test_every_flipped_byte_is_detected() -> None:
    data = record_batch.encode([_record(5), _record(6, msg_id="m")], leader_epoch=2, previous_seq=4, previous_crc32=7)
    for index in range(len(data)):
        damaged = bytearray(data)
        damaged[index] ^= 0x01
        with pytest.raises(RecordBatchError):
            record_batch.decode(bytes(damaged))


def test_a_cut_batch_is_refused_at_every_length() -> None:
    data = record_batch.encode([_record(5), _record(6)], leader_epoch=2, previous_seq=4, previous_crc32=None)
    for length in range(len(data)):
        with pytest.raises(RecordBatchError):
            record_batch.decode(data[:length])


def test_a_forged_record_count_is_refused_before_anything_is_allocated() -> None:
    data = bytearray(record_batch.encode([_record(5)], leader_epoch=2, previous_seq=4, previous_crc32=None))
    struct.pack_into("<I", data, 24, 2**32 - 1)  # the count, past base and last seq
    with pytest.raises(RecordBatchError, match="does not fit"):
        record_batch.decode(_reseal(data))


def test_forged_lengths_and_seqs_are_refused() -> None:
    data = bytearray(record_batch.encode([_record(5), _record(6)], leader_epoch=2, previous_seq=4, previous_crc32=None))
    longer = bytearray(data)
    struct.pack_into("<I", longer, HEADER.size + 4, 10_000)  # the first record's length
    with pytest.raises(RecordBatchError, match="add up"):
        record_batch.decode(_reseal(longer))
    backwards = bytearray(data)
    struct.pack_into("<I", backwards, HEADER.size + ENTRY.size, 0)  # the second seq = the first
    with pytest.raises(RecordBatchError, match="does not follow"):
        record_batch.decode(_reseal(backwards))
    wrong_last = bytearray(data)
    struct.pack_into("<Q", wrong_last, 16, 9)  # last seq
    with pytest.raises(RecordBatchError, match="do not run"):
        record_batch.decode(_reseal(wrong_last))
    before_previous = bytearray(data)
    struct.pack_into("<Q", before_previous, 52, 5)  # previous seq = the base seq
    with pytest.raises(RecordBatchError, match="does not follow"):
        record_batch.decode(_reseal(before_previous))


def test_a_subject_that_is_not_utf8_is_refused() -> None:
    data = bytearray(record_batch.encode([_record(5, "ab")], leader_epoch=2, previous_seq=4, previous_crc32=None))
    data[HEADER.size + ENTRY.size] = 0xFF
    with pytest.raises(RecordBatchError, match="UTF-8"):
        record_batch.decode(_reseal(data))


def test_another_format_is_refused_by_its_magic() -> None:
    data = bytearray(record_batch.encode([_record(5)], leader_epoch=2, previous_seq=4, previous_crc32=None))
    data[:4] = b"WRB9"
    with pytest.raises(RecordBatchError, match="magic"):
        record_batch.decode(bytes(data))


def test_what_cannot_be_encoded_is_refused() -> None:
    with pytest.raises(RecordBatchError, match="at least one"):
        record_batch.encode([], leader_epoch=1, previous_seq=0, previous_crc32=None)
    with pytest.raises(RecordBatchError, match="does not follow"):
        record_batch.encode([_record(5), _record(5)], leader_epoch=1, previous_seq=0, previous_crc32=None)
    with pytest.raises(RecordBatchError, match="does not follow"):
        record_batch.encode([_record(5)], leader_epoch=1, previous_seq=5, previous_crc32=None)
    with pytest.raises(RecordBatchError, match="past base seq"):
        record_batch.encode([_record(1), _record(2**32 + 1)], leader_epoch=1, previous_seq=0, previous_crc32=None)
    with pytest.raises(RecordBatchError, match="longer than"):
        record_batch.encode([_record(1, "s" * 70_000)], leader_epoch=1, previous_seq=0, previous_crc32=None)
