"""The node's commit log (weir_partition_node/storage/commit_log.py, issue 53): frames appended
and synced together, read back by position and in order, segments that roll and are removed whole,
and recovery after a crash: a torn tail is truncated and nothing synced is lost, while damage that a
torn write cannot explain is reported, never truncated."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from weir.errors import CorruptRecordError
from weir_partition_node.storage.commit_log import (
    FRAME,
    MAX_PAYLOAD_BYTES,
    CommitLog,
    CorruptLogError,
    encode_frame,
    segment_name,
    segment_positions,
)

BATCH = 7  # a kind, as a caller would number a record batch


def payload(partition_id: int, index: int, size: int = 300) -> bytes:
    return bytes([partition_id % 256, index % 256]) * (size // 2)


def test_frames_of_many_partitions_come_back_by_position_and_in_order(tmp_path: Path) -> None:
    log, recovery = CommitLog.open(tmp_path)
    assert (recovery.end_position, recovery.truncated_bytes) == (0, 0)
    frames = [(partition_id, BATCH, payload(partition_id, 0)) for partition_id in range(16)]
    positions = log.append(frames)
    log.sync()
    assert positions[0] == 0 and positions == sorted(positions)
    assert log.end_position == sum(FRAME.size + len(data) for _, _, data in frames)
    for position, (partition_id, kind, data) in zip(positions, frames, strict=True):
        frame = log.read(position)
        assert (frame.position, frame.partition_id, frame.kind, frame.payload) == (position, partition_id, kind, data)
    log.close()
    reopened, recovery = CommitLog.open(tmp_path)
    assert (recovery.end_position, recovery.truncated_bytes) == (positions[-1] + FRAME.size + 300, 0)
    assert [(frame.partition_id, frame.payload) for frame in reopened.scan(0)] == [(p, d) for p, _, d in frames]
    assert [frame.position for frame in reopened.scan(positions[5])] == positions[5:]
    reopened.close()


def test_segments_roll_and_whole_segments_are_removed(tmp_path: Path) -> None:
    log, _ = CommitLog.open(tmp_path, segment_bytes_max=1000)
    positions = []
    for index in range(10):
        positions += log.append([(1, BATCH, payload(1, index)), (2, BATCH, payload(2, index))])
        log.sync()
    segments = segment_positions(tmp_path)
    assert len(segments) > 3
    sizes = [(tmp_path / segment_name(first)).stat().st_size for first in segments]
    assert all(first + size == following for first, size, following in zip(segments, sizes, segments[1:], strict=False))
    assert [frame.payload for frame in log.scan(0)] == [payload(p, i) for i in range(10) for p in (1, 2)]
    # Frames never span two segments: each is read from the segment holding its position.
    assert log.read(positions[-1]).payload == payload(2, 9)
    freed = log.delete_segments_before(positions[10])
    assert freed > 0 and segment_positions(tmp_path)[0] <= positions[10]
    assert log.first_position == segment_positions(tmp_path)[0]
    assert next(frame.payload for frame in log.scan(positions[10])) == payload(1, 5)
    with pytest.raises(ValueError, match="outside the log"):
        log.read(positions[0])
    # The segment being written is never removed.
    log.delete_segments_before(log.end_position + 10_000)
    assert len(segment_positions(tmp_path)) == 1
    log.close()
    reopened, recovery = CommitLog.open(tmp_path, segment_bytes_max=1000)
    assert recovery == type(recovery)(log.end_position, 0)
    reopened.close()


def test_a_write_cut_short_by_a_crash_is_truncated_and_nothing_synced_is_lost(tmp_path: Path) -> None:
    log, _ = CommitLog.open(tmp_path)
    synced = log.append([(3, BATCH, payload(3, index)) for index in range(5)])
    log.sync()
    end = log.end_position
    log.close()
    segment = tmp_path / segment_name(0)
    torn = encode_frame(3, BATCH, payload(3, 99))
    with open(segment, "ab") as file:
        file.write(torn[: FRAME.size + 40])  # the header and part of the payload reached the disk
    reopened, recovery = CommitLog.open(tmp_path)
    assert (recovery.end_position, recovery.truncated_bytes) == (end, FRAME.size + 40)
    assert segment.stat().st_size == end
    assert [frame.position for frame in reopened.scan(0)] == synced
    # The log goes on from the truncated end.
    (position,) = reopened.append([(3, BATCH, b"after")])
    reopened.sync()
    assert position == end and reopened.read(position).payload == b"after"
    reopened.close()


def test_a_tail_the_file_system_extended_but_never_filled_is_truncated(tmp_path: Path) -> None:
    log, _ = CommitLog.open(tmp_path)
    log.append([(1, BATCH, payload(1, 0))])
    log.sync()
    end = log.end_position
    log.close()
    with open(tmp_path / segment_name(0), "ab") as file:
        file.write(bytes(4096))
    reopened, recovery = CommitLog.open(tmp_path)
    assert (recovery.end_position, recovery.truncated_bytes) == (end, 4096)
    reopened.close()


def test_a_half_written_header_is_a_torn_tail(tmp_path: Path) -> None:
    log, _ = CommitLog.open(tmp_path)
    log.append([(1, BATCH, payload(1, 0))])
    log.sync()
    end = log.end_position
    log.close()
    with open(tmp_path / segment_name(0), "ab") as file:
        file.write(encode_frame(1, BATCH, b"x")[:10])
    reopened, recovery = CommitLog.open(tmp_path)
    assert (recovery.end_position, recovery.truncated_bytes) == (end, 10)
    reopened.close()


@pytest.mark.parametrize("where", ["payload", "length"])
def test_damage_followed_by_frames_is_reported_and_nothing_is_truncated(tmp_path: Path, where: str) -> None:
    log, _ = CommitLog.open(tmp_path)
    positions = log.append([(1, BATCH, payload(1, index)) for index in range(4)])
    log.sync()
    log.close()
    segment = tmp_path / segment_name(0)
    before = segment.read_bytes()
    offset = positions[1] + (FRAME.size + 10 if where == "payload" else 5)  # byte 5: the payload length
    damaged = bytearray(before)
    damaged[offset] ^= 0x40
    segment.write_bytes(bytes(damaged))
    with pytest.raises(CorruptLogError, match="damage, not a torn write"):
        CommitLog.open(tmp_path)
    assert segment.read_bytes() == bytes(damaged)  # nothing truncated


def test_a_damaged_frame_is_never_served(tmp_path: Path) -> None:
    log, _ = CommitLog.open(tmp_path)
    positions = log.append([(1, BATCH, payload(1, index)) for index in range(3)])
    log.sync()
    fd = os.open(tmp_path / segment_name(0), os.O_RDWR)
    try:
        os.pwrite(fd, b"\xff", positions[2] + FRAME.size + 3)
    finally:
        os.close(fd)
    with pytest.raises(CorruptRecordError, match=f"frame at {positions[2]}"):
        log.read(positions[2])
    with pytest.raises(CorruptRecordError):
        list(log.scan(0))
    assert log.read(positions[1]).payload == payload(1, 1)
    log.close()


def test_segments_that_are_not_contiguous_are_refused(tmp_path: Path) -> None:
    log, _ = CommitLog.open(tmp_path, segment_bytes_max=500)
    for index in range(6):
        log.append([(1, BATCH, payload(1, index))])
        log.sync()
    log.close()
    second = segment_positions(tmp_path)[1]
    (tmp_path / segment_name(second)).unlink()  # a segment lost between two others
    with pytest.raises(CorruptLogError, match="does not start where"):
        CommitLog.open(tmp_path, segment_bytes_max=500)


def test_bad_frames_are_refused_before_anything_is_written(tmp_path: Path) -> None:
    log, _ = CommitLog.open(tmp_path)
    with pytest.raises(ValueError, match="at most"):
        log.append([(1, BATCH, b"ok"), (1, BATCH, bytes(MAX_PAYLOAD_BYTES + 1))])
    with pytest.raises(ValueError, match="out of range"):
        log.append([(-1, BATCH, b"x")])
    with pytest.raises(ValueError, match="out of range"):
        log.append([(1, 256, b"x")])
    assert log.end_position == 0
    with pytest.raises(ValueError, match=r"no whole frame|outside the log"):
        log.read(3)
    log.close()
