"""Record batches as the SQLite log's unit of storage (issue 25): the stored format, one batch row a
commit, batches going with their last record, a damaged byte of a stored batch found and never
served, and a log written in the earlier row-per-message layout opened and upgraded."""

from __future__ import annotations

import contextlib
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from weir.errors import CorruptRecordError
from weir.v1 import types_pb2
from weir_partition_node.storage import layout_upgrade, sqlite_batches, stored_batch
from weir_partition_node.storage.base import CommitBatch, Record, make_record
from weir_partition_node.storage.sqlite import SqlitePartitionLog

from tests.stored_records import flip_stored_bytes, stored_record


def record(seq: int, subject: str = "orders.eu", payload: bytes = b"x" * 100, ts_ms: int = 1000) -> Record:
    encoded = types_pb2.Message(seq=seq, subject=subject, ts_ms=ts_ms, payload=payload).SerializeToString()
    return make_record(seq, ts_ms, subject, encoded)


@pytest.fixture
def log(tmp_path: Path) -> Iterator[SqlitePartitionLog]:
    """A SQLite log without a tail cache: every read goes to the stored batches."""
    partition_log = SqlitePartitionLog(tmp_path / "p0", "orders", 0, tail_cache_bytes=0)
    yield partition_log
    partition_log.close()


def database(log: SqlitePartitionLog) -> contextlib.closing[sqlite3.Connection]:
    return contextlib.closing(sqlite3.connect(log.directory / "log.sqlite", isolation_level=None))


def batch_rows(log: SqlitePartitionLog) -> list[tuple[int, int]]:
    with database(log) as db:
        return [(int(base), int(last)) for base, last in db.execute("SELECT base_seq, last_seq FROM batches")]


# -- the format ------------------------------------------------------------------------------------


def test_a_stored_batch_lists_each_record_where_it_lies() -> None:
    records = [record(seq, ts_ms=seq * 10) for seq in (5, 6, 9)]
    data, offsets = stored_batch.encode(records)
    stored_batch.check(data)
    base_seq, last_seq, count, first_ts_ms, max_ts_ms = stored_batch.HEADER.unpack_from(data)[2:]
    assert (base_seq, last_seq, count, first_ts_ms, max_ts_ms) == (5, 9, 3, 50, 90)
    entries = stored_batch.HEADER.size
    assert offsets[0] == entries + 3 * stored_batch.ENTRY.size
    for index, (stored, offset) in enumerate(zip(records, offsets, strict=True)):
        assert data[offset : offset + stored[3]] == stored[5]
        entry = stored_batch.ENTRY.unpack_from(data, entries + index * stored_batch.ENTRY.size)
        assert entry == (stored[0] - 5, stored[3], stored[4])  # seq relative to the base, length, CRC-32


def test_every_flipped_byte_of_a_stored_batch_is_detected() -> None:
    data, _ = stored_batch.encode([record(1), record(2)])
    for index in range(len(data)):
        damaged = bytearray(data)
        damaged[index] ^= 0x01
        with pytest.raises(stored_batch.StoredBatchError):
            stored_batch.check(bytes(damaged))


def test_a_stored_batch_refuses_what_is_not_ascending_or_empty() -> None:
    with pytest.raises(stored_batch.StoredBatchError, match="at least one"):
        stored_batch.encode([])
    with pytest.raises(stored_batch.StoredBatchError, match="does not follow"):
        stored_batch.encode([record(2), record(2)])


def test_a_large_commit_is_split_into_batches_of_at_most_max_bytes() -> None:
    records = [record(seq, payload=b"p" * 1000) for seq in range(1, 101)]
    runs = list(stored_batch.split(records, max_bytes=10_000))
    assert [run[0][0] for run in runs] == list(range(1, 101, 9))
    assert all(sum(row[3] for row in run) <= 10_000 for run in runs)
    assert [row for run in runs for row in run] == records
    assert [len(run) for run in stored_batch.split([record(1, payload=b"p" * 5000)], max_bytes=10)] == [1]


# -- the log ---------------------------------------------------------------------------------------


def test_a_commit_is_stored_as_one_batch_and_reads_take_records_from_it(log: SqlitePartitionLog) -> None:
    records = [record(seq, subject=f"orders.{seq % 3}") for seq in range(1, 101)]
    log.commit(CommitBatch(records=records, last_seq=100))
    log.commit(CommitBatch(records=[record(101)], last_seq=101))
    assert batch_rows(log) == [(1, 100), (101, 101)]
    assert log.read(1, 1000, 10**9) == [(row[0], row[5]) for row in [*records, record(101)]]
    assert log.get(57) == records[56][5]
    assert log.scan_subject("orders.1", 90, 10, 10**9) == [(seq, records[seq - 1][5]) for seq in (91, 94, 97, 100)]
    assert log.latest_at_subject("orders.2") == records[97][5]
    rows, last, done = log.read_matching(95, 3, 10**9, lambda subject: subject == "orders.0", 1000)
    assert ([seq for seq, _ in rows], last, done) == ([96, 99], 101, True)
    state = log.state()
    assert (state.msg_count, state.first_seq, state.last_seq) == (101, 1, 101)
    assert state.bytes == sum(row[3] for row in [*records, record(101)])


def test_a_sparse_filtered_read_takes_its_records_from_one_batch_in_spans(log: SqlitePartitionLog) -> None:
    """Matches far apart in one batch are read as spans of their own, and come back as stored."""
    records = [
        record(seq, subject="hit" if seq in (1, 2, 60, 100) else "miss", payload=b"r" * 2000) for seq in range(1, 101)
    ]
    log.commit(CommitBatch(records=records, last_seq=100))
    rows, last, done = log.read_matching(1, 10, 10**9, lambda subject: subject == "hit", 1000)
    assert (rows, last, done) == ([(seq, records[seq - 1][5]) for seq in (1, 2, 60, 100)], 100, True)


def test_a_batch_goes_with_its_last_record_and_a_truncation_takes_the_batches_below(log: SqlitePartitionLog) -> None:
    for first in (1, 11, 21):
        log.commit(CommitBatch(records=[record(seq) for seq in range(first, first + 10)], last_seq=first + 9))
    log.commit(CommitBatch(remove_seqs=[12, 13, 14, 15, 16, 17, 18, 19], last_seq=30))
    assert batch_rows(log) == [(1, 10), (11, 20), (21, 30)]
    assert [seq for seq, _ in log.read(11, 5, 10**9)] == [11, 20, 21, 22, 23]
    log.commit(CommitBatch(remove_seqs=[11, 20], last_seq=30))
    assert batch_rows(log) == [(1, 10), (21, 30)]
    log.commit(CommitBatch(truncate_before=25, last_seq=30))
    assert batch_rows(log) == [(21, 30)]
    assert [seq for seq, _ in log.read(1, 100, 10**9)] == [25, 26, 27, 28, 29, 30]
    log.commit(CommitBatch(truncate_before=31, last_seq=30))
    assert batch_rows(log) == []
    assert log.state().last_seq == 30


def batch_sizes(log: SqlitePartitionLog) -> dict[int, tuple[int, int, int]]:
    """base seq -> (last seq, live bytes, data bytes) of every stored batch."""
    with database(log) as db:
        rows = db.execute("SELECT base_seq, last_seq, live_bytes, length(data) FROM batches")
        return {int(base): (int(last), int(live), int(size)) for base, last, live, size in rows}


def test_records_removed_out_of_order_free_their_batch_once_a_quarter_is_left(log: SqlitePartitionLog) -> None:
    """A work queue acked out of order: the batch is rewritten with the records still stored once
    they are under a quarter of its bytes, every one of them still reads as it was (and scrubs
    clean), and the batch goes with the last of them."""
    log.commit(CommitBatch(records=[record(1)], last_seq=1))  # the head: a stuck first message
    records = [record(seq, payload=bytes([seq]) * 2000) for seq in range(2, 102)]
    log.commit(CommitBatch(records=records, last_seq=101))
    full = batch_sizes(log)[2][2]
    assert full > 100 * 2000
    kept = [5, 50, 77, 80, 81, 99, 100, 101]
    first_removals = [seq for seq in range(2, 102) if seq not in kept][:60]
    log.commit(CommitBatch(remove_seqs=first_removals, last_seq=101))
    assert batch_sizes(log)[2][2] == full  # 40 of 100 left: not yet
    log.commit(CommitBatch(remove_seqs=[seq for seq in range(2, 102) if seq not in kept][60:], last_seq=101))
    last_seq, live, size = batch_sizes(log)[2]
    assert (last_seq, live) == (101, sum(records[seq - 2][3] for seq in kept))
    assert size < live + 500  # the header and entries of 8 records
    assert log.read(2, 100, 10**9) == [(seq, records[seq - 2][5]) for seq in kept]
    assert log.get(77) == records[75][5]
    page = log.scrub(1, 10**9)
    assert (page.checked_records, page.corrupt_seqs, page.corrupt_batches) == (9, (), ())
    log.commit(CommitBatch(remove_seqs=kept, last_seq=101))
    assert list(batch_sizes(log)) == [1]


def test_a_seq_removed_twice_in_one_commit_counts_once(log: SqlitePartitionLog) -> None:
    """Retention and a consumer can both name one seq in a commit: its bytes come off its batch
    once, and the batch stays while a record of it does."""
    records = [record(seq) for seq in range(1, 11)]
    log.commit(CommitBatch(records=records, last_seq=10))
    # 3 again after 500 others (not stored): the removal reads sizes 500 seqs at a time
    log.commit(CommitBatch(remove_seqs=[3, 4, *range(100, 600), 3], last_seq=10))
    assert batch_sizes(log)[1][1] == sum(row[3] for row in records) - records[2][3] - records[3][3]
    log.commit(CommitBatch(remove_seqs=[1, 2, *range(5, 11), 1], last_seq=10))
    assert batch_sizes(log) == {}
    assert log.state().msg_count == 0


def test_a_batch_left_with_no_record_is_dropped_when_resealed(log: SqlitePartitionLog) -> None:
    log.commit(CommitBatch(records=[record(seq) for seq in range(1, 4)], last_seq=3))
    with database(log) as db:
        db.execute("DELETE FROM messages")  # index rows gone behind the batch's back
    log.commit(CommitBatch(reseal_batches=[1], last_seq=3))
    assert batch_sizes(log) == {}


def test_the_batch_holding_the_first_record_is_not_compacted(log: SqlitePartitionLog) -> None:
    """A queue consumed in order empties its oldest batch soon: it is left as it is."""
    log.commit(CommitBatch(records=[record(seq, payload=b"q" * 2000) for seq in range(1, 101)], last_seq=100))
    full = batch_sizes(log)[1][2]
    log.commit(CommitBatch(remove_seqs=list(range(1, 91)), last_seq=100))
    assert batch_sizes(log)[1][2] == full
    log.commit(CommitBatch(truncate_before=101, last_seq=100))
    assert batch_sizes(log) == {}


def test_a_damaged_record_byte_in_a_stored_batch_is_found_and_never_served(log: SqlitePartitionLog) -> None:
    """One byte of one record flipped inside a 50-record batch: a read of it answers
    CorruptRecordError naming the seq, the records around it are still served, the scrub names
    it, and a repair with the intact bytes makes the batch whole again."""
    records = [record(seq) for seq in range(1, 51)]
    log.commit(CommitBatch(records=records, last_seq=50))
    with database(log) as db:
        flip_stored_bytes(db, 20)
    with pytest.raises(CorruptRecordError) as raised:
        log.get(20)
    assert raised.value.metadata == {"stream": "orders", "partition": "0", "seq": "20"}
    with pytest.raises(CorruptRecordError):
        log.read(15, 10, 10**9)
    assert [seq for seq, _ in log.read(21, 100, 10**9)] == list(range(21, 51))
    page = log.scrub(1, 10**9)
    assert (page.corrupt_seqs, page.corrupt_batches, page.checked_records, page.done) == ((20,), (), 50, True)
    log.commit(CommitBatch(repairs=[(20, records[19][4], records[19][5])], last_seq=50))
    assert log.get(20) == records[19][5]
    page = log.scrub(1, 10**9)
    assert (page.corrupt_seqs, page.corrupt_batches) == ((), ())


def test_a_damaged_byte_outside_the_records_is_found_by_the_scrub(log: SqlitePartitionLog) -> None:
    """A byte of a batch's header flipped: no record is damaged, so every one is still served,
    the scrub reports the batch by its base seq, and a reseal rewrites it whole from them."""
    log.commit(CommitBatch(records=[record(seq) for seq in range(1, 11)], last_seq=10))
    log.commit(CommitBatch(records=[record(seq) for seq in range(11, 21)], last_seq=20))
    with database(log) as db, db.blobopen("batches", "data", 11) as blob:
        blob.seek(stored_batch.HEADER.size - 1)
        last_header_byte = blob.read(1)
        blob.seek(stored_batch.HEADER.size - 1)
        blob.write(bytes([last_header_byte[0] ^ 0x40]))
    assert len(log.read(1, 100, 10**9)) == 20
    page = log.scrub(1, 10**9)
    assert (page.corrupt_seqs, page.corrupt_batches) == ((), (11,))
    assert log.scrub(12, 10).corrupt_batches == (11,)  # a step from inside the batch checks it too
    before = log.read(1, 100, 10**9)
    log.commit(CommitBatch(reseal_batches=[11, 999], last_seq=20))  # 999: not stored, nothing to do
    assert log.scrub(1, 10**9).corrupt_batches == ()
    assert log.read(1, 100, 10**9) == before


def test_a_scrub_step_of_one_byte_checks_one_record(log: SqlitePartitionLog) -> None:
    log.commit(CommitBatch(records=[record(seq) for seq in range(1, 11)], last_seq=10))
    page = log.scrub(4, 1)
    assert (page.checked_records, page.next_seq, page.done) == (1, 5, False)
    assert log.scrub(11, 1).done


# -- the upgrade from one row per message --------------------------------------------------------

# The log's message table as every version before issue 25 created it.
ROW_PER_MESSAGE_SCHEMA = """
CREATE TABLE messages (
    seq INTEGER PRIMARY KEY,
    ts_ms INTEGER NOT NULL,
    subject TEXT NOT NULL,
    size INTEGER NOT NULL,
    crc INTEGER NOT NULL,
    record BLOB NOT NULL
);
CREATE INDEX messages_by_subject ON messages (subject, seq);
CREATE TABLE expiries (seq INTEGER PRIMARY KEY, expires_at_ms INTEGER NOT NULL);
CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE consumers (
    name TEXT PRIMARY KEY,
    incarnation INTEGER NOT NULL,
    ack_floor INTEGER NOT NULL,
    last_delivered INTEGER NOT NULL,
    delivered INTEGER NOT NULL,
    acked INTEGER NOT NULL,
    redelivered INTEGER NOT NULL,
    dead_lettered INTEGER NOT NULL,
    dropped INTEGER NOT NULL,
    termed INTEGER NOT NULL
);
CREATE TABLE pending (
    consumer TEXT NOT NULL,
    seq INTEGER NOT NULL,
    delivered_at_ms INTEGER NOT NULL,
    deliver_count INTEGER NOT NULL,
    redeliver_at_ms INTEGER NOT NULL,
    PRIMARY KEY (consumer, seq)
) WITHOUT ROWID;
"""


def write_row_per_message_log(directory: Path, records: list[Record]) -> None:
    directory.mkdir(parents=True)
    with contextlib.closing(sqlite3.connect(directory / "log.sqlite")) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.executescript(ROW_PER_MESSAGE_SCHEMA)
        with db:
            db.executemany("INSERT INTO messages VALUES (?, ?, ?, ?, ?, ?)", records)
            db.execute("INSERT INTO meta VALUES ('last_seq', ?)", (records[-1][0] + 2,))
            db.execute("INSERT INTO consumers VALUES ('billing', 1, 3, 5, 5, 3, 0, 0, 0, 0)")
            db.execute("INSERT INTO pending VALUES ('billing', 5, 100, 1, 30100)")
            db.execute("INSERT INTO expiries VALUES (7, 99000)")


def test_a_log_written_one_row_per_message_is_upgraded_when_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The old layout, written as earlier versions wrote it (a removed seq, a consumer with a
    pending delivery, an expiry, and one record already damaged on disk): after the upgrade every
    record, subject, total, consumer and expiry reads as before, the damaged record is still
    refused, the old table is gone, and opening it again changes nothing."""
    monkeypatch.setattr(layout_upgrade, "UPGRADE_BATCH_RECORDS", 40)
    monkeypatch.setattr(layout_upgrade, "LOG_EVERY_RECORDS", 100)
    records = [record(seq, subject=f"orders.{seq % 4}", ts_ms=1000 + seq) for seq in range(1, 301) if seq != 9]
    damaged = bytearray(records[99][5])
    damaged[len(damaged) // 2] ^= 0x10
    records[99] = (*records[99][:5], bytes(damaged))  # seq 101: its CRC-32 no longer matches
    directory = tmp_path / "p0"
    write_row_per_message_log(directory, records)

    with caplog.at_level(logging.INFO, logger=layout_upgrade.__name__):
        log = SqlitePartitionLog(directory, "orders", 0, tail_cache_bytes=0)
    try:
        assert "upgrading log orders/0 to record batches: 299 records" in caplog.text
        assert "upgrading log orders/0: 200 of 299 records" in caplog.text
        assert "upgraded log orders/0: 299 records" in caplog.text
        state = log.state()
        assert (state.msg_count, state.first_seq, state.last_seq) == (299, 1, 302)
        assert state.bytes == sum(row[3] for row in records)
        assert log.read(1, 99, 10**9) == [(row[0], row[5]) for row in records[:99]]
        assert log.get(9) is None
        with pytest.raises(CorruptRecordError):
            log.get(101)
        assert log.subject_last_seq("orders.3") == 299
        assert log.first_seq_at_time(1150) == 150
        assert log.expired_seqs(99000, 10) == [7]
        billing = log.load_consumers()["billing"]
        assert (billing.ack_floor, billing.last_delivered, billing.pending) == (3, 5, [(5, 100, 1, 30100)])
        assert len(batch_rows(log)) == 8  # 299 records, 40 a batch
        with database(log) as db:
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            assert "messages_rows" not in tables
            assert stored_record(db, 300)[0] == records[-1][5]
    finally:
        log.close()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger=layout_upgrade.__name__):
        reopened = SqlitePartitionLog(directory, "orders", 0, tail_cache_bytes=0)
    try:
        assert "upgrad" not in caplog.text
        assert reopened.state().msg_count == 299
        reopened.commit(CommitBatch(records=[record(303)], last_seq=303))
        assert reopened.get(303) == record(303)[5]
    finally:
        reopened.close()


def test_an_upgrade_that_fails_leaves_the_old_layout_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    records = [record(seq) for seq in range(1, 101)]
    directory = tmp_path / "p0"
    write_row_per_message_log(directory, records)

    def fail(*_: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(sqlite_batches, "write_records", fail)
    with pytest.raises(OSError, match="disk full"):
        SqlitePartitionLog(directory, "orders", 0)
    with contextlib.closing(sqlite3.connect(directory / "log.sqlite")) as db:
        assert layout_upgrade.needs_upgrade(db)
        assert db.execute("SELECT count(*) FROM messages").fetchone() == (100,)
    monkeypatch.undo()
    log = SqlitePartitionLog(directory, "orders", 0)
    try:
        assert log.read(1, 1000, 10**9) == [(row[0], row[5]) for row in records]
    finally:
        log.close()
