"""A primary's batch cache (weir_partition_node.batch_cache): what it answers follows the asker's
log end and holds only what the log holds."""

from __future__ import annotations

from weir_partition_node import record_batch
from weir_partition_node.batch_cache import BatchCache
from weir_partition_node.storage.base import Record, make_record


def _commit(first: int, last: int) -> list[Record]:
    return [make_record(seq, 1_000 + seq, f"orders.{seq % 2}", b"record %d" % seq) for seq in range(first, last + 1)]


def _cache(*commits: tuple[int, int], max_bytes: int = 1 << 20, epoch: int = 3) -> BatchCache:
    cache = BatchCache(max_bytes)
    for first, last in commits:
        cache.add(_commit(first, last), {}, leader_epoch=epoch, previous_crc32=lambda seq: 1234)
    return cache


def _seqs(batches: list[bytes]) -> list[int]:
    return [entry.seq for data in batches for entry in record_batch.decode(data).records]


def test_a_follower_at_a_commit_boundary_gets_the_batches_from_there_each_following_the_last() -> None:
    cache = _cache((1, 3), (4, 4), (5, 8))
    taken = cache.take(3, 1000, 1 << 20)
    assert taken is not None
    batches, count = taken
    assert (_seqs(batches), count) == ([4, 5, 6, 7, 8], 5)
    second = record_batch.decode(batches[1])
    assert (second.previous_seq, second.previous_crc32) == (4, record_batch.decode(batches[0]).records[-1].crc32)
    assert record_batch.decode(_cache((1, 3)).take(0, 10, 1 << 20)[0][0]).previous_crc32 is None  # type: ignore[index]


def test_a_follower_elsewhere_is_sent_to_the_log() -> None:
    cache = _cache((1, 3), (4, 6))
    assert cache.take(2, 1000, 1 << 20) is None  # inside a commit
    assert cache.take(6, 1000, 1 << 20) is None  # caught up
    assert cache.take(0, 2, 1 << 20) is None  # the first batch alone exceeds max_messages


def test_the_bounds_stop_at_a_whole_batch() -> None:
    cache = _cache((1, 3), (4, 6), (7, 9))
    assert _seqs(cache.take(0, 7, 1 << 20)[0]) == [1, 2, 3, 4, 5, 6]  # type: ignore[index]
    assert _seqs(cache.take(0, 1000, 1)[0]) == [1, 2, 3]  # type: ignore[index]


def test_the_previous_records_crc_is_asked_only_when_the_batch_before_is_not_cached() -> None:
    asked: list[int] = []

    def previous_crc32(seq: int) -> int:
        asked.append(seq)
        return 99

    cache = BatchCache()
    for first, last in ((5, 6), (7, 8)):
        cache.add(_commit(first, last), {}, leader_epoch=1, previous_crc32=previous_crc32)
    assert asked == [4]
    assert record_batch.decode(cache.take(4, 10, 1 << 20)[0][0]).previous_crc32 == 99  # type: ignore[index]


def test_a_removed_record_takes_its_batch_out_and_the_chain_stops_before_it() -> None:
    cache = _cache((1, 3), (4, 6), (7, 9))
    cache.removed([5, 100])
    assert _seqs(cache.take(0, 1000, 1 << 20)[0]) == [1, 2, 3]  # type: ignore[index]
    assert cache.take(3, 1000, 1 << 20) is None
    assert _seqs(cache.take(6, 1000, 1 << 20)[0]) == [7, 8, 9]  # type: ignore[index]


def test_a_truncation_takes_out_every_batch_holding_a_seq_below_it() -> None:
    cache = _cache((1, 3), (4, 6), (7, 9))
    cache.truncated(5)
    assert len(cache) == 1
    assert cache.take(6, 1000, 1 << 20) is not None
    cache.truncated(7)  # the first seq kept is the batch's first: it stays
    assert len(cache) == 1


def test_the_cache_keeps_its_newest_batches_within_max_bytes_and_starts_over_on_a_new_epoch() -> None:
    one = len(_cache((1, 3)).take(0, 10, 1 << 20)[0][0])  # type: ignore[index]
    cache = _cache((1, 3), (4, 6), (7, 9), max_bytes=2 * one + 10)
    assert len(cache) == 2
    assert cache.take(0, 1000, 1 << 20) is None
    cache.add(_commit(10, 10), {}, leader_epoch=4, previous_crc32=lambda seq: None)
    assert len(cache) == 1
    assert record_batch.decode(cache.take(9, 10, 1 << 20)[0][0]).leader_epoch == 4  # type: ignore[index]


def test_extras_are_carried_into_the_batch() -> None:
    cache = BatchCache()
    cache.add(_commit(1, 2), {2: ("id-2", 0, 5_000)}, leader_epoch=1, previous_crc32=lambda seq: None)
    entries = record_batch.decode(cache.take(0, 10, 1 << 20)[0][0]).records  # type: ignore[index]
    assert [(entry.msg_id, entry.expires_at_ms) for entry in entries] == [("", 0), ("id-2", 5_000)]


def test_what_every_follower_holds_is_forgotten() -> None:
    cache = _cache((1, 3), (4, 6), (7, 9))
    cache.forget_through(5)  # inside the second batch: a follower still needs it
    assert len(cache) == 2
    assert _seqs(cache.take(3, 1000, 1 << 20)[0]) == [4, 5, 6, 7, 8, 9]  # type: ignore[index]
    cache.forget_through(6)
    assert len(cache) == 1
    assert cache.take(3, 1000, 1 << 20) is None


def test_a_commit_that_cannot_be_a_batch_leaves_the_cache_empty_instead_of_failing_the_commit() -> None:
    cache = _cache((1, 3))
    unfit = [make_record(4, 1_004, "s" * 70_000, b"x")]  # a subject longer than a batch can name
    cache.add(unfit, {}, leader_epoch=3, previous_crc32=lambda seq: None)
    assert len(cache) == 0
    assert cache.take(3, 10, 1 << 20) is None
