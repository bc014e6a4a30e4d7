"""One test suite for both `PartitionLog` implementations (SQLite WAL and memory)."""

from __future__ import annotations

import contextlib
import random
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from weir.errors import CorruptRecordError
from weir.v1 import types_pb2
from weir_partition_node.catalog import Catalog
from weir_partition_node.storage import msgids, source_positions
from weir_partition_node.storage import sqlite as sqlite_storage
from weir_partition_node.storage.base import CommitBatch, PartitionLog, Record, SourcePosition, make_record
from weir_partition_node.storage.checkpoint import WalCheckpointer
from weir_partition_node.storage.memory import MemoryPartitionLog
from weir_partition_node.storage.sqlite import SqlitePartitionLog

from tests.stored_records import flip_stored_bytes

TAIL_CACHE_BYTES = {"sqlite": 4 * 1024 * 1024, "sqlite-tiny-tail-cache": 60, "sqlite-no-tail-cache": 0}


@pytest.fixture(params=[*TAIL_CACHE_BYTES, "memory"])
def log(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[PartitionLog]:
    """Each log kind; the SQLite one with its default tail cache, one that holds about two
    records (reads straddle it), and none."""
    partition_log: PartitionLog
    if request.param in TAIL_CACHE_BYTES:
        partition_log = SqlitePartitionLog(
            tmp_path / "p0", "orders", 0, tail_cache_bytes=TAIL_CACHE_BYTES[request.param]
        )
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


def test_reads_of_large_records_stop_at_max_bytes(log: PartitionLog) -> None:
    """max_messages far above what max_bytes lets through: every read path stops at the bytes."""
    append(log, [record(seq, subject="big.a", payload=b"b" * 10_000) for seq in range(1, 51)])
    size = len(log.get(1) or b"")
    assert seqs(log.read(1, 10_000, 3 * size)) == [1, 2, 3]
    assert seqs(log.scan_subject("big.a", 0, 10_000, 3 * size)) == [1, 2, 3]
    assert seqs(log.scan_subject("big.a", 0, 10_000, 1)) == [1]  # at least one
    rows, last, at_end = log.read_matching(1, 10_000, 3 * size, None, 10_000)
    assert (seqs(rows), last, at_end) == ([1, 2, 3], 3, False)
    rows, last, at_end = log.read_matching(1, 10_000, 3 * size, lambda subject: True, 10_000)
    assert (seqs(rows), last) == ([1, 2, 3], 3)


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
    assert seqs(log.scan_subject("kv.a", 0, 10, 1 << 20)) == [1, 3]
    assert seqs(log.scan_subject("kv.a", 2, 10, 1 << 20)) == [3]
    assert [row.seq for row in log.subject_excess("kv.a", 1)] == [1]
    assert log.subject_excess("kv.a", 2) == []


def test_truncate_and_remove(log: PartitionLog) -> None:
    append(log, [record(seq, f"s.{seq % 2}") for seq in range(1, 11)])
    log.commit(CommitBatch(truncate_before=4, remove_seqs=[6], last_seq=10))
    assert seqs(log.read(0, 100, 1 << 20)) == [4, 5, 7, 8, 9, 10]
    state = log.state()
    assert (state.msg_count, state.first_seq, state.last_seq) == (6, 4, 10)
    assert [row.seq for row in log.oldest(0, 2)] == [4, 5]


def test_checksums_come_from_the_index_in_seq_order(log: PartitionLog) -> None:
    """What the replicator compares to find where a diverged copy last matched its primary."""
    records = [record(seq, f"s.{seq % 2}") for seq in range(1, 11)]
    append(log, records)
    log.commit(CommitBatch(truncate_before=3, remove_seqs=[6], last_seq=10))
    expected = [(r[0], r[4]) for r in records if r[0] >= 3 and r[0] != 6]
    assert log.checksums(0, 100) == expected
    assert log.checksums(5, 3) == expected[2:5]
    assert log.checksums(11, 10) == []


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
        flip_stored_bytes(db, seq, at=0, count=4)
        db.commit()
        db.close()
    else:
        assert isinstance(log, MemoryPartitionLog)
        log._messages[seq].record = b"\x00garbage"


def test_checksum_mismatch_names_partition_and_seq(tmp_path: Path, log: PartitionLog) -> None:
    append(log, [record(seq) for seq in range(1, 4)])
    corrupt(log, 2)
    if isinstance(log, SqlitePartitionLog):  # as read after a restart: from disk, not the tail cache
        log.close()
        log = SqlitePartitionLog(log.directory, "orders", 0)
    for read in (
        lambda: log.get(2),
        lambda: log.read(1, 10, 1 << 20),
        lambda: log.scan_subject("orders.eu", 0, 10, 1 << 20),
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


def test_the_tail_cache_serves_committed_records_from_memory(tmp_path: Path) -> None:
    """The tail cache starts with the first read; records committed after it are read from memory
    (a corrupted disk copy goes unseen until a restart reads it from disk, checked)."""
    log = SqlitePartitionLog(tmp_path / "p", "orders", 0)
    append(log, [record(1, payload=b"p1")])
    assert log.get(1) is not None  # starts the cache, past seq 1
    append(log, [record(seq, payload=b"p%d" % seq) for seq in range(2, 4)])
    corrupt(log, 2)
    assert log.get(2) == record(2, payload=b"p2")[5]
    assert seqs(log.read(2, 10, 1 << 20)) == [2, 3]
    with pytest.raises(CorruptRecordError):  # from seq 1: older than the cache, read from disk
        log.read(1, 10, 1 << 20)
    log.close()
    reopened = SqlitePartitionLog(tmp_path / "p", "orders", 0)
    with pytest.raises(CorruptRecordError):
        reopened.get(2)
    reopened.close()


def test_a_rewritten_tail_is_read_back_as_rewritten(log: PartitionLog) -> None:
    """A secondary drops a divergent tail and stores the new primary's records at the same seqs."""
    append(log, [record(seq, payload=b"old") for seq in range(1, 6)])
    log.commit(CommitBatch(remove_seqs=[4, 5], last_seq=3))
    append(log, [record(seq, payload=b"new") for seq in (4, 5, 6)])
    assert [types_pb2.Message.FromString(row).payload for _, row in log.read(1, 10, 1 << 20)] == [
        b"old",
        b"old",
        b"old",
        b"new",
        b"new",
        b"new",
    ]
    assert log.get(5) == record(5, payload=b"new")[5]


def test_reads_with_and_without_the_tail_cache_agree(tmp_path: Path) -> None:
    """The same random appends, removals and truncations applied to a log with a small tail cache
    (now and then dropped or restarted, as on role changes) and to one without: every read answers
    the same after every commit."""
    rng = random.Random(8)
    cached = SqlitePartitionLog(tmp_path / "cached", "orders", 0, tail_cache_bytes=2_000)
    plain = SqlitePartitionLog(tmp_path / "plain", "orders", 0, tail_cache_bytes=0)
    stored: list[int] = []
    next_seq = 1
    for _ in range(150):
        batch = CommitBatch()
        for _ in range(rng.randint(0, 12)):
            batch.records.append(record(next_seq, f"s.{rng.randint(0, 3)}", payload=bytes(rng.randint(1, 200))))
            stored.append(next_seq)
            next_seq += 1
        if stored and rng.random() < 0.3:
            batch.remove_seqs = rng.sample(stored, min(len(stored), rng.randint(1, 3)))
            stored = [seq for seq in stored if seq not in batch.remove_seqs]
        if stored and rng.random() < 0.1:
            batch.truncate_before = rng.choice(stored)
            stored = [seq for seq in stored if seq >= batch.truncate_before]
        batch.last_seq = next_seq - 1
        if rng.random() < 0.05:
            cached.keep_tail(rng.random() < 0.7)  # a role change: the cache starts empty or is dropped
        for target in (cached, plain):
            target.commit(batch)
        for from_seq in {1, max(1, next_seq - 30), max(1, next_seq - 5), next_seq}:
            for max_messages, max_bytes in ((1000, 1 << 20), (3, 1 << 20), (100, 300)):
                assert cached.read(from_seq, max_messages, max_bytes) == plain.read(from_seq, max_messages, max_bytes)
                for accepts in (None, lambda subject: subject == "s.1"):
                    answers = [
                        log.read_matching(from_seq, max_messages, max_bytes, accepts, 7) for log in (cached, plain)
                    ]
                    assert answers[0][:2] == answers[1][:2]  # rows, last seq looked at
                    for _, last, at_end in answers:  # "nothing further" must be true (False may be cautious)
                        assert not at_end or plain.read(last + 1, 1, 1 << 20) == []
            assert cached.get(from_seq) == plain.get(from_seq)
        assert [seq for seq, _ in plain.read(1, 10_000, 1 << 30)] == stored
    cached.close()
    plain.close()


# -- WAL checkpoints on a background thread ------------------------------------------------------


def database_file_rows(directory: Path) -> list[int]:
    """The seqs in ``log.sqlite`` alone, as it would be without its WAL: what checkpoints copied."""
    copy = directory.parent / f"{directory.name}-without-wal.sqlite"
    shutil.copyfile(directory / "log.sqlite", copy)
    with contextlib.closing(sqlite3.connect(copy)) as db:
        if db.execute("SELECT 1 FROM sqlite_master WHERE name = 'messages'").fetchone() is None:
            return []  # not even the schema was copied yet
        return [row[0] for row in db.execute("SELECT seq FROM messages ORDER BY seq")]


def wait_idle(checkpointer: WalCheckpointer, completed: int) -> None:
    deadline = time.monotonic() + 10
    while checkpointer.pending() or checkpointer.completed < completed:
        assert time.monotonic() < deadline, (checkpointer.pending(), checkpointer.completed)
        time.sleep(0.01)


CHECKPOINT_TEST_BYTES = 1024 * 1024


def one_mebibyte_of_records(first_seq: int = 1) -> list[Record]:
    return [record(seq, payload=bytes(1024)) for seq in range(first_seq, first_seq + 1030)]


def test_background_checkpoints_copy_the_wal_into_the_database_file(tmp_path: Path) -> None:
    """Once 1 MiB is committed the log asks its checkpointer, whose thread copies the WAL into the
    database file. SQLite's own checkpoint cannot have done it: the log moved it to 4 MiB (the
    valve) and SQLite's default is 1,000 pages (16 MiB). The log answers the same before and after,
    and after a reopen."""
    checkpointer = WalCheckpointer()
    log = SqlitePartitionLog(
        tmp_path / "p0", "orders", 0, checkpointer=checkpointer, checkpoint_bytes=CHECKPOINT_TEST_BYTES
    )
    try:
        append(log, one_mebibyte_of_records())
        wait_idle(checkpointer, 1)
        assert checkpointer.completed == 1
        assert database_file_rows(tmp_path / "p0") == list(range(1, 1031))
        append(log, [record(1031)])  # far below the next request: stays in the WAL
        wait_idle(checkpointer, 1)
        assert database_file_rows(tmp_path / "p0") == list(range(1, 1031))
        assert seqs(log.read(1, 2000, 1 << 30)) == list(range(1, 1032))
    finally:
        log.close()
        checkpointer.close()
    reopened = SqlitePartitionLog(tmp_path / "p0", "orders", 0)
    assert seqs(reopened.read(1, 2000, 1 << 30)) == list(range(1, 1032))
    reopened.close()


def test_without_a_checkpointer_commits_stay_in_the_wal(tmp_path: Path) -> None:
    """The control for the test above: the same commit with no checkpointer stays in the WAL (until
    SQLite's own checkpoint at 1,000 pages)."""
    log = SqlitePartitionLog(tmp_path / "p0", "orders", 0, checkpoint_bytes=CHECKPOINT_TEST_BYTES)
    append(log, one_mebibyte_of_records())
    assert database_file_rows(tmp_path / "p0") == []
    log.close()


def test_commits_and_background_checkpoints_together_lose_nothing(tmp_path: Path) -> None:
    """Random appends, removals and truncations with a checkpoint requested every few commits, the
    checkpoint thread racing the commits: the log always reads what was stored, and so does a
    reopened copy of it."""
    rng = random.Random(11)
    checkpointer = WalCheckpointer()
    log = SqlitePartitionLog(tmp_path / "p0", "orders", 0, checkpointer=checkpointer, checkpoint_bytes=1)
    stored: list[int] = []
    next_seq = 1
    try:
        for _ in range(300):
            batch = CommitBatch()
            for _ in range(rng.randint(1, 20)):
                batch.records.append(record(next_seq, payload=bytes(rng.randint(1, 2000))))
                stored.append(next_seq)
                next_seq += 1
            if rng.random() < 0.2:
                batch.remove_seqs = rng.sample(stored, min(len(stored), 3))
                stored = [seq for seq in stored if seq not in batch.remove_seqs]
            if rng.random() < 0.05:
                batch.truncate_before = rng.choice(stored)
                stored = [seq for seq in stored if seq >= batch.truncate_before]
            batch.last_seq = next_seq - 1
            log.commit(batch)
            assert seqs(log.read(1, 100_000, 1 << 30)) == stored
        assert checkpointer.completed > 10
    finally:
        log.close()  # waits for a checkpoint in progress
        checkpointer.close()
    reopened = SqlitePartitionLog(tmp_path / "p0", "orders", 0)
    assert seqs(reopened.read(1, 100_000, 1 << 30)) == stored
    assert reopened.state().last_seq == next_seq - 1
    reopened.close()


class CountingLog:
    def __init__(self, fail: bool = False) -> None:
        self.calls = 0
        self.fail = fail
        self.release = threading.Event()

    def checkpoint(self) -> None:
        self.calls += 1
        self.release.wait(10)
        if self.fail:
            raise sqlite3.OperationalError("disk I/O error")


def test_checkpointer_queues_a_log_once_and_survives_a_failing_one() -> None:
    checkpointer = WalCheckpointer()
    blocked, other, failing = CountingLog(), CountingLog(), CountingLog(fail=True)
    try:
        checkpointer.request(blocked)
        deadline = time.monotonic() + 10
        while blocked.calls == 0:  # the thread is inside blocked.checkpoint()
            assert time.monotonic() < deadline
            time.sleep(0.01)
        for _ in range(3):  # asked again and again while queued: one pending request each
            checkpointer.request(failing)
            checkpointer.request(other)
        assert checkpointer.pending() == 2
        for log in (blocked, failing, other):
            log.release.set()
        wait_idle(checkpointer, 2)  # the failing log's checkpoint is not counted as completed
        assert (blocked.calls, failing.calls, other.calls) == (1, 1, 1)
        checkpointer.request(other)  # the thread survived the failure
        wait_idle(checkpointer, 3)
        assert other.calls == 2
    finally:
        checkpointer.close()
    checkpointer.request(other)  # after close (the thread is joined): not even queued
    assert checkpointer.pending() == 0
    assert other.calls == 2


# -- duplicate window rows (dedupe.py) ------------------------------------------------------------------


def test_msg_id_rows_are_stored_with_their_records_and_outlive_the_messages(log: PartitionLog) -> None:
    append(log, [record(1), record(2), record(3)], msg_ids=[(1, "a", 100), (3, "c", 110)])
    assert log.recent_msg_ids(0, 10) == [("a", 1, 100), ("c", 3, 110)]
    log.commit(CommitBatch(truncate_before=4, last_seq=3))  # retention removes every message
    assert log.recent_msg_ids(0, 10) == [("a", 1, 100), ("c", 3, 110)]
    assert log.recent_msg_ids(105, 10) == [("c", 3, 110)]
    assert log.recent_msg_ids(0, 1) == [("c", 3, 110)]  # the newest `limit`, oldest first


def test_msg_id_rows_of_a_divergent_tail_go_and_the_seqs_take_new_ids(log: PartitionLog) -> None:
    append(log, [record(1), record(2), record(3)], msg_ids=[(1, "a", 100), (2, "b", 100), (3, "c", 100)])
    log.commit(CommitBatch(remove_seqs=[2, 3], last_seq=1, msg_ids_after=1))
    append(log, [record(2)], msg_ids=[(2, "b2", 120)])
    assert log.recent_msg_ids(0, 10) == [("a", 1, 100), ("b2", 2, 120)]


def test_a_second_row_for_a_seq_fails_the_commit_and_stores_nothing(log: PartitionLog) -> None:
    append(log, [record(1)], msg_ids=[(1, "a", 100)])
    with pytest.raises((ValueError, sqlite3.IntegrityError)):
        append(log, [record(2)], msg_ids=[(2, "b", 100), (1, "again", 100)])
    assert log.recent_msg_ids(0, 10) == [("a", 1, 100)]
    assert log.get(2) is None


def test_msg_id_retention_keeps_the_window_by_time_and_by_count(log: PartitionLog) -> None:
    append(log, [record(seq) for seq in range(1, 7)], msg_ids=[(seq, f"id{seq}", 100 + seq) for seq in range(1, 7)])
    log.commit(CommitBatch(last_seq=6, msg_id_retention=(103, 10)))  # stored before 103 goes
    assert [row[1] for row in log.recent_msg_ids(0, 100)] == [3, 4, 5, 6]
    append(log, [record(7)], msg_ids=[(7, "id7", 107)], msg_id_retention=(0, 2))  # at most 2 rows
    assert log.recent_msg_ids(0, 100) == [("id6", 6, 106), ("id7", 7, 107)]
    log.commit(CommitBatch(last_seq=7, msg_id_retention=(10_000, 2)))
    assert log.recent_msg_ids(0, 100) == []


def test_msg_id_rows_survive_a_reopen_and_retention_counts_them_again(tmp_path: Path) -> None:
    log = SqlitePartitionLog(tmp_path / "p", "orders", 0)
    append(log, [record(seq) for seq in range(1, 5)], msg_ids=[(seq, f"id{seq}", seq) for seq in range(1, 5)])
    log.close()
    reopened = SqlitePartitionLog(tmp_path / "p", "orders", 0)
    assert [row[0] for row in reopened.recent_msg_ids(0, 10)] == ["id1", "id2", "id3", "id4"]
    append(reopened, [record(5)], msg_ids=[(5, "id5", 5)], msg_id_retention=(0, 3))
    assert [row[0] for row in reopened.recent_msg_ids(0, 10)] == ["id3", "id4", "id5"]
    reopened.close()


@pytest.mark.parametrize("seed", range(4))
def test_msg_id_rows_match_a_reference_model_under_random_commits(log: PartitionLog, seed: int) -> None:
    rng = random.Random(seed)
    model: dict[int, tuple[str, int]] = {}
    last = 0
    now = 0
    for _ in range(120):
        now += rng.randint(0, 5)
        batch = CommitBatch(last_seq=last)
        count = rng.randint(0, 4)
        if last and rng.random() < 0.15:  # a divergent tail (alone in its commit, as the partition does it)
            batch.msg_ids_after = rng.randint(0, last)
            model = {seq: row for seq, row in model.items() if seq <= batch.msg_ids_after}
            batch.remove_seqs = list(range(batch.msg_ids_after + 1, last + 1))
            last = batch.last_seq = batch.msg_ids_after
            count = 0
        batch.records = [record(seq) for seq in range(last + 1, last + 1 + count)]
        batch.msg_ids = [(seq, f"m{seq}-{rng.randint(0, 9)}", now) for seq in range(last + 1, last + 1 + count)]
        for seq, msg_id, stored_at in batch.msg_ids:
            model[seq] = (msg_id, stored_at)
        last = batch.last_seq = last + count
        if rng.random() < 0.3:
            before, max_rows = now - rng.randint(0, 30), rng.randint(1, 25)
            batch.msg_id_retention = (before, max_rows)
            ordered = sorted(model)
            first_kept = next((seq for seq in ordered if model[seq][1] >= before), None)
            ordered = [seq for seq in ordered if first_kept is not None and seq >= first_kept]
            model = {seq: model[seq] for seq in ordered[max(0, len(ordered) - max_rows) :]}
        log.commit(batch)
        since = now - rng.randint(0, 40)
        limit = rng.randint(1, 30)
        expected = [(model[seq][0], seq, model[seq][1]) for seq in sorted(model) if model[seq][1] >= since]
        assert log.recent_msg_ids(since, limit) == expected[max(0, len(expected) - limit) :]


def test_msg_id_rows_pack_any_utf8_id() -> None:
    entries = [(1, ""), (2, "a\x00b"), (3, "é" * 128), (2**64 - 1, "\U0010ffff")]
    assert msgids.unpack(msgids.pack(entries)) == entries


def test_msg_ids_with_odd_characters_survive_a_reopen(tmp_path: Path) -> None:
    log = SqlitePartitionLog(tmp_path / "p", "orders", 0)
    odd = ["a\x00b", "é" * 128, "line\nbreak"]
    append(log, [record(seq) for seq in (1, 2, 3)], msg_ids=[(seq, odd[seq - 1], 7) for seq in (1, 2, 3)])
    log.close()
    reopened = SqlitePartitionLog(tmp_path / "p", "orders", 0)
    assert reopened.recent_msg_ids(0, 10) == [(odd[0], 1, 7), (odd[1], 2, 7), (odd[2], 3, 7)]
    reopened.close()


def test_subject_lookups_for_last_per_subject_delivery(log: PartitionLog) -> None:
    subjects = ["k.a", "k.b", "k.a", "k.c", "k.a", "k.b"]  # seqs 1..6
    append(log, [record(seq, subject) for seq, subject in enumerate(subjects, start=1)])
    assert [log.next_subject_seq("k.a", after) for after in (0, 1, 3, 5)] == [1, 3, 5, 0]
    assert log.next_subject_seq("k.none", 0) == 0
    # newest at or below the horizon 4: k.a 3, k.b 2, k.c 4
    assert log.count_newest_per_subject(0, 4, None) == 3
    assert log.count_newest_per_subject(2, 4, None) == 2
    assert log.count_newest_per_subject(2, 4, lambda subject: subject != "k.c") == 1
    assert log.count_newest_per_subject(4, 4, None) == 0


def test_a_log_written_before_last_per_subject_opens_with_no_horizon(tmp_path: Path) -> None:
    directory = tmp_path / "p0"
    directory.mkdir()
    old = sqlite3.connect(directory / "log.sqlite")
    old.execute(
        "CREATE TABLE consumers (name TEXT PRIMARY KEY, incarnation INTEGER NOT NULL, ack_floor INTEGER NOT NULL, "
        "last_delivered INTEGER NOT NULL, delivered INTEGER NOT NULL, acked INTEGER NOT NULL, redelivered INTEGER "
        "NOT NULL, dead_lettered INTEGER NOT NULL, dropped INTEGER NOT NULL, termed INTEGER NOT NULL)"
    )
    old.execute("INSERT INTO consumers VALUES ('c', 7, 2, 3, 3, 2, 0, 0, 0, 0)")
    old.commit()
    old.close()
    log = SqlitePartitionLog(directory, "orders", 0)
    try:
        stored = log.load_consumers()["c"]
        assert (stored.incarnation, stored.last_delivered, stored.last_per_subject_until) == (7, 3, 0)
        log.commit(CommitBatch(consumer_states=[("c", 7, 3, 4, 4, 3, 0, 0, 0, 0, 9)]))
        assert log.load_consumers()["c"].last_per_subject_until == 9
    finally:
        log.close()


async def test_a_catalog_written_before_last_per_subject_opens_with_no_horizons(tmp_path: Path) -> None:
    path = tmp_path / "catalog.sqlite"
    old = sqlite3.connect(path)
    old.execute(
        "CREATE TABLE consumers (stream TEXT NOT NULL, name TEXT NOT NULL, config BLOB NOT NULL, created_at_ms "
        "INTEGER NOT NULL, incarnation INTEGER NOT NULL, start_seqs TEXT NOT NULL, PRIMARY KEY (stream, name))"
    )
    old.execute("INSERT INTO consumers VALUES ('s', 'c', x'', 1, 2, '[0, 4]')")
    old.commit()
    old.close()
    catalog = await Catalog.open(path)
    try:
        (row,) = await catalog.load_consumers()
        assert (row.start_seqs, row.last_per_subject_until) == ([0, 4], [])
    finally:
        await catalog.close()


def test_consumer_state_is_read_as_of_one_commit_while_commits_land(tmp_path: Path) -> None:
    """load_consumers reads the cursors and the pending sets in one read transaction: with commits
    landing from another thread (the commit thread), the pending set read is always the one the
    cursor was stored with. Two separate reads once gave a cursor of one commit and the pending
    set of the next, which a secondary's commit loop refused (and stopped on)."""
    log = SqlitePartitionLog(tmp_path / "p0", "orders", 0)
    stop = threading.Event()
    commits = 0

    def commit_deliveries() -> None:
        nonlocal commits
        for seq in range(1, 100_000):
            if stop.is_set():
                return
            log.commit(
                CommitBatch(
                    consumer_states=[("c", 1, seq - 1, seq, seq, seq - 1, 0, 0, 0, 0, 0)],
                    pending_upserts=[("c", seq, 1000, 1, 61_000)],
                    pending_deletes=[("c", seq - 1)],
                )
            )
            commits = seq

    writer = threading.Thread(target=commit_deliveries)
    writer.start()
    reads = 0
    try:
        deadline = time.monotonic() + 3.0
        while time.monotonic() < deadline and (reads < 300 or commits < 300):
            stored = log.load_consumers().get("c")
            if stored is not None:
                assert [seq for seq, *_ in stored.pending] == [stored.last_delivered], (
                    f"read {reads}: cursor at {stored.last_delivered}, pending {stored.pending}"
                )
            reads += 1
    finally:
        stop.set()
        writer.join()
        log.close()
    assert reads >= 100 and commits >= 100, (reads, commits)


def test_a_commit_that_defers_its_sync_skips_the_fsync_for_at_most_a_second(tmp_path: Path) -> None:
    """CommitBatch.sync False (a secondary's copy of consumer state, issue 25): under fsync=always
    the commit runs with synchronous=NORMAL (WAL written, no fsync) and the connection is back to
    FULL right after; once the last synced commit is MAX_DEFERRED_SYNC_S old it syncs anyway.
    Records always sync. Whatever the mode, the commit is stored."""
    log = SqlitePartitionLog(tmp_path / "p", "orders", 0)
    statements: list[str] = []
    log._writer.set_trace_callback(statements.append)  # what the writer connection runs
    try:
        state = ("c", 1, 0, 1, 1, 0, 0, 0, 0, 0, 0)
        log.commit(CommitBatch(consumer_states=[state], sync=False))
        assert [s for s in statements if "synchronous" in s] == ["PRAGMA synchronous=NORMAL", "PRAGMA synchronous=FULL"]
        assert log.load_consumers()["c"].last_delivered == 1
        statements.clear()
        log.commit(CommitBatch(records=[make_record(1, 1, "a", b"x")], last_seq=1))
        assert not [s for s in statements if "synchronous" in s], "records wait for the disk"
        log._synced_at -= sqlite_storage.MAX_DEFERRED_SYNC_S  # the last sync is a second old
        statements.clear()
        log.commit(CommitBatch(consumer_states=[("c", 1, 0, 2, 2, 0, 0, 0, 0, 0, 0)], sync=False))
        assert not [s for s in statements if "synchronous" in s], "a second without a sync: this one syncs"
        assert log._writer.execute("PRAGMA synchronous").fetchone() == (2,)  # FULL
        assert log.load_consumers()["c"].last_delivered == 2
    finally:
        log.close()


def test_source_positions_are_stored_beside_the_records_not_among_them(log: PartitionLog) -> None:
    """A sourcing stream's positions (issue 55): committed with the records, in no count, seq or read."""
    append(log, [record(1), record(2)], source_positions=[("orders", 0, 2, 7), ("orders", 1, 2, 3)])
    assert log.source_positions() == {("orders", 0): SourcePosition(7, 2), ("orders", 1): SourcePosition(3, 2)}
    state = log.state()
    assert (state.msg_count, state.last_seq) == (2, 2)
    assert seqs(log.read(1, 100, 1 << 20)) == [1, 2] and log.subjects_with_prefix("", 10) == ["orders.eu"]
    log.commit(CommitBatch(last_seq=2, source_positions=[("orders", 0, 2, 9)]))  # progress over filtered-out ones
    log.commit(CommitBatch(last_seq=2, source_positions=[("orders", 0, 2, 4)]))  # never back
    assert log.source_positions()[("orders", 0)] == SourcePosition(9, 2)
    with pytest.raises((ValueError, sqlite3.IntegrityError)):  # a failing batch stores no position either
        append(log, [record(2)], source_positions=[("orders", 0, 2, 50)])
    assert log.source_positions()[("orders", 0)] == SourcePosition(9, 2)


def test_a_divergent_tail_cut_takes_the_positions_it_settled(log: PartitionLog) -> None:
    """Rows above a tail cut go (CommitBatch.msg_ids_after); the newest row left describes records
    the copy still holds, and only the newest KEPT_PER_SOURCE rows of a source are kept."""
    for seq in range(1, 13):
        append(log, [record(seq)], source_positions=[("orders", 0, seq, seq * 10)])
    log.commit(CommitBatch(last_seq=12, msg_ids_after=9))
    assert log.source_positions() == {("orders", 0): SourcePosition(90, 9)}
    log.commit(CommitBatch(last_seq=12, msg_ids_after=4))  # below every kept row: nothing left to resume from
    assert log.source_positions() == {}


def test_source_positions_survive_a_reopen(tmp_path: Path) -> None:
    log = SqlitePartitionLog(tmp_path / "p0", "mirror", 0)
    append(log, [record(1)], source_positions=[("orders", 0, 1, 5)])
    log.close()
    reopened = SqlitePartitionLog(tmp_path / "p0", "mirror", 0)
    assert reopened.source_positions() == {("orders", 0): SourcePosition(5, 1)}
    reopened.close()


def test_merged_source_positions_follow_the_rules() -> None:
    stored = {("a", 0): {3: 30, 5: 50}}
    assert source_positions.merged(stored, [("a", 0, 4, 25)], None) == stored  # behind the row at 3: never back
    assert source_positions.merged(stored, [("a", 0, 6, 49)], None) == stored  # behind the row at 5
    assert source_positions.merged(stored, [("b", 1, 6, 1)], 4) == {("a", 0): {3: 30}, ("b", 1): {6: 1}}
    assert stored == {("a", 0): {3: 30, 5: 50}}  # pure
