"""One test suite for both `PartitionLog` implementations (SQLite WAL and memory)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from weir.errors import CorruptRecordError
from weir.v1 import types_pb2
from weir_partition_node.storage.base import CommitBatch, PartitionLog, Record, make_record
from weir_partition_node.storage.memory import MemoryPartitionLog
from weir_partition_node.storage.sqlite import SqlitePartitionLog


@pytest.fixture(params=["sqlite", "memory"])
def log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[PartitionLog]:
    partition_log: PartitionLog
    if request.param == "sqlite":
        partition_log = SqlitePartitionLog(tmp_path / "p0", "orders", 0)
    else:
        partition_log = MemoryPartitionLog("orders", 0)
    yield partition_log
    partition_log.close()


def record(seq: int, subject: str = "orders.eu", payload: bytes = b"x", ts_ms: int = 1000) -> Record:
    encoded = types_pb2.Message(seq=seq, subject=subject, ts_ms=ts_ms, payload=payload).SerializeToString()
    return make_record(seq, ts_ms, subject, encoded)


def append(log: PartitionLog, records: list[Record], **batch: object) -> None:
    log.commit(CommitBatch(records=records, last_seq=records[-1][0] if records else 0, **batch))  # type: ignore[arg-type]


def seqs(rows: list[tuple[int, bytes]]) -> list[int]:
    return [seq for seq, _ in rows]


def test_empty_log_state(log: PartitionLog) -> None:
    state = log.state()
    assert (state.msg_count, state.bytes, state.first_seq, state.last_seq, state.last_change_seq) == (
        0,
        0,
        1,
        0,
        0,
    )
    assert log.read(1, 10, 1 << 20) == []
    assert log.get(1) is None


def test_append_and_read_back(log: PartitionLog) -> None:
    records = [record(seq, payload=bytes([seq]) * 10) for seq in range(1, 6)]
    append(log, records)
    state = log.state()
    assert (state.msg_count, state.first_seq, state.last_seq) == (5, 1, 5)
    assert state.bytes == sum(r[3] for r in records)
    rows = log.read(2, 2, 1 << 20)
    assert seqs(rows) == [2, 3]
    assert types_pb2.Message.FromString(rows[0][1]).payload == b"\x02" * 10
    assert log.get(5) == records[4][5]


def test_read_bounded_by_bytes_returns_at_least_one(log: PartitionLog) -> None:
    append(log, [record(seq, payload=b"p" * 100) for seq in range(1, 11)])
    assert seqs(log.read(1, 100, 1)) == [1]
    size = log.read(1, 1, 1 << 20)[0][1]
    assert seqs(log.read(1, 100, len(size) * 3)) == [1, 2, 3]


def test_subject_lookups(log: PartitionLog) -> None:
    append(
        log,
        [
            record(1, "kv.a"),
            record(2, "kv.b"),
            record(3, "kv.a", payload=b"new"),
            record(4, "other.z"),
        ],
    )
    latest = log.latest_at_subject("kv.a")
    assert latest is not None
    assert types_pb2.Message.FromString(latest).payload == b"new"
    assert log.latest_at_subject("kv.none") is None
    assert log.subject_last_seq("kv.a") == 3
    assert log.subject_last_seq("kv.none") == 0
    assert log.subjects_with_prefix("kv.", 100) == ["kv.a", "kv.b"]
    assert log.subjects_with_prefix("", 100) == ["kv.a", "kv.b", "other.z"]
    assert log.subjects_with_prefix("", 2) == ["kv.a", "kv.b"]
    assert seqs(log.scan_subject("kv.a", 0, 10)) == [1, 3]
    assert seqs(log.scan_subject("kv.a", 2, 10)) == [3]
    assert [row.seq for row in log.subject_excess("kv.a", 1)] == [1]
    assert log.subject_excess("kv.a", 2) == []


def test_truncate_and_remove(log: PartitionLog) -> None:
    append(log, [record(seq, f"s.{seq % 2}") for seq in range(1, 11)])
    log.commit(CommitBatch(truncate_before=4, remove_seqs=[6], last_seq=10))
    assert seqs(log.read(0, 100, 1 << 20)) == [4, 5, 7, 8, 9, 10]
    state = log.state()
    assert (state.msg_count, state.first_seq, state.last_seq) == (6, 4, 10)
    assert [row.seq for row in log.oldest(0, 2)] == [4, 5]


def test_last_seq_survives_removing_everything(log: PartitionLog) -> None:
    append(log, [record(1), record(2)])
    log.commit(CommitBatch(truncate_before=3, last_seq=2))
    state = log.state()
    assert (state.msg_count, state.first_seq, state.last_seq) == (0, 3, 2)


def test_changes_are_stored_with_the_batch(log: PartitionLog) -> None:
    append(log, [record(1)], changes=[(7, 1000, b"seven"), (9, 1000, b"nine")])
    assert log.read_changes(0, 100, 10) == [(7, b"seven"), (9, b"nine")]
    assert log.read_changes(8, 100, 10) == [(9, b"nine")]
    assert log.read_changes(0, 8, 10) == [(7, b"seven")]
    assert log.state().last_change_seq == 9
    log.commit(CommitBatch(last_seq=1, drop_changes_before=8))
    assert log.read_changes(0, 100, 10) == [(9, b"nine")]


def test_failed_commit_stores_nothing(log: PartitionLog) -> None:
    append(log, [record(1)])
    with pytest.raises((ValueError, sqlite3.IntegrityError)):
        append(log, [record(2), record(1)], changes=[(5, 0, b"c")])
    state = log.state()
    assert (state.msg_count, state.last_seq, state.last_change_seq) == (1, 1, 0)
    assert log.get(2) is None


def corrupt(log: PartitionLog, seq: int) -> None:
    if isinstance(log, SqlitePartitionLog):
        db = sqlite3.connect(log.directory / "log.sqlite")
        db.execute("UPDATE messages SET record = ? WHERE seq = ?", (b"\x00garbage", seq))
        db.commit()
        db.close()
    else:
        assert isinstance(log, MemoryPartitionLog)
        log._messages[seq].record = b"\x00garbage"


def test_checksum_mismatch_names_partition_and_seq(log: PartitionLog) -> None:
    append(log, [record(seq) for seq in range(1, 4)])
    corrupt(log, 2)
    for read in (
        lambda: log.get(2),
        lambda: log.read(1, 10, 1 << 20),
        lambda: log.scan_subject("orders.eu", 0, 10),
    ):
        with pytest.raises(CorruptRecordError) as caught:
            read()
        assert caught.value.metadata == {"stream": "orders", "partition": "0", "seq": "2"}
    assert log.get(3) is not None


def test_sqlite_log_reopens_with_its_state(tmp_path: Path) -> None:
    log = SqlitePartitionLog(tmp_path / "p", "orders", 0)
    append(log, [record(seq) for seq in range(1, 4)], changes=[(3, 0, b"c")])
    log.commit(CommitBatch(truncate_before=4, last_seq=3))
    log.close()
    reopened = SqlitePartitionLog(tmp_path / "p", "orders", 0)
    state = reopened.state()
    assert (state.msg_count, state.first_seq, state.last_seq, state.last_change_seq) == (0, 4, 3, 3)
    reopened.destroy()
    assert not (tmp_path / "p").exists()
