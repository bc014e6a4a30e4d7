"""The replicator's fetch rounds (weir_replicator.fetch_rounds, issue 25): followers in step share
one FetchReplication; one that falls behind never holds the others back for longer than
`coalesce_ms` once. The sending side here records what would go to the primary; the real
exchange is covered by tests/test_replication_api.py (sharing_node_ids) and the cluster tests."""

from __future__ import annotations

import asyncio
import time

import pytest
from weir.errors import UnavailableError
from weir.v1 import internal_pb2
from weir_replicator.fetch_rounds import FetchRounds, followers_to_await

COALESCE_MS = 1000  # far above what the steps here take, so a bound that holds is not luck


class Primary:
    """Answers fetches as a primary whose log ends at `last_seq`, recording each one sent."""

    def __init__(self, last_seq: int = 10, fail: Exception | None = None) -> None:
        self.last_seq = last_seq
        self.fail = fail
        self.sent: list[tuple[str, list[str], int, int]] = []
        self.records_only: list[bool] = []  # each fetch's wait_for_records_only

    async def send(
        self, node_id: str, sharing: list[str], after_seq: int, wait_ms: int, records_only: bool
    ) -> internal_pb2.FetchReplicationResponse:
        self.sent.append((node_id, sharing, after_seq, wait_ms))
        self.records_only.append(records_only)
        await asyncio.sleep(0.01)
        if self.fail is not None:
            raise self.fail
        return internal_pb2.FetchReplicationResponse(result_code="ok", last_seq=self.last_seq)


def test_followers_to_await_are_those_handling_the_same_answer() -> None:
    handling = {"b": 5, "c": 7}
    assert followers_to_await("a", 5, handling, ["a"]) == {"b"}
    assert followers_to_await("a", 5, handling, ["a", "b"]) == set()
    assert followers_to_await("a", 6, handling, ["a"]) == set()
    assert followers_to_await("a", None, handling, ["a"]) == set()  # it shared nothing last: nobody
    assert followers_to_await("b", 5, handling, ["b"]) == set()  # never itself


async def test_followers_in_step_share_one_fetch_from_the_second_round_on() -> None:
    rounds = FetchRounds(COALESCE_MS)
    primary = Primary()
    # First round: nobody shared anything yet, so each fetches at once, alone.
    first = await asyncio.gather(rounds.fetch("a", 0, 100, primary.send), rounds.fetch("b", 0, 100, primary.send))
    assert [answer.last_seq for answer in first] == [10, 10]
    assert [(node, sharing) for node, sharing, _, _ in primary.sent] == [("a", []), ("b", [])]

    # Both handled an answer to a fetch after 0; whoever asks first waits for the other.
    primary.sent.clear()
    late = 0.05

    async def b_later() -> internal_pb2.FetchReplicationResponse:
        await asyncio.sleep(late)  # its push took a little longer
        return await rounds.fetch("b", 10, 0, primary.send)

    started = time.monotonic()
    answers = await asyncio.gather(rounds.fetch("a", 10, 100, primary.send), b_later())
    took = time.monotonic() - started
    assert primary.sent == [("a", ["b"], 10, 0)], "one fetch, for both, with the smaller wait"
    assert answers[0] is answers[1]
    assert late <= took < COALESCE_MS / 1000, took


async def test_a_follower_that_falls_behind_is_waited_for_once_then_not_at_all() -> None:
    rounds = FetchRounds(COALESCE_MS)
    primary = Primary()
    await asyncio.gather(rounds.fetch("a", 0, 0, primary.send), rounds.fetch("b", 0, 0, primary.send))
    await asyncio.gather(rounds.fetch("a", 10, 0, primary.send), rounds.fetch("b", 10, 0, primary.send))
    primary.sent.clear()
    # "b" is stuck in its push (a stopped secondary): "a" waits the coalescing bound once...
    started = time.monotonic()
    await rounds.fetch("a", 20, 0, primary.send)
    assert time.monotonic() - started >= COALESCE_MS / 1000
    # ...and then no more: "b" handles an answer "a" no longer shares.
    started = time.monotonic()
    await rounds.fetch("a", 30, 0, primary.send)
    assert time.monotonic() - started < COALESCE_MS / 1000
    assert primary.sent == [("a", [], 20, 0), ("a", [], 30, 0)]


async def test_a_follower_that_leaves_or_asks_for_other_records_ends_the_wait_at_once() -> None:
    rounds = FetchRounds(COALESCE_MS)
    primary = Primary()
    for after_seq in (0, 10):
        await asyncio.gather(
            rounds.fetch("a", after_seq, 0, primary.send), rounds.fetch("b", after_seq, 0, primary.send)
        )
    waiting = asyncio.create_task(rounds.fetch("a", 20, 0, primary.send))
    await asyncio.sleep(0.02)
    assert not waiting.done()
    rounds.leave("b")  # its push failed: it re-syncs instead of fetching
    started = time.monotonic()
    await waiting
    assert time.monotonic() - started < COALESCE_MS / 2000

    await asyncio.gather(rounds.fetch("a", 20, 0, primary.send), rounds.fetch("b", 20, 0, primary.send))
    waiting = asyncio.create_task(rounds.fetch("a", 30, 0, primary.send))
    await asyncio.sleep(0.02)
    await rounds.fetch("b", 25, 0, primary.send)  # its log ended elsewhere: a fetch of its own
    await waiting
    assert sorted(primary.sent[-2:]) == [("a", [], 30, 0), ("b", [], 25, 0)]


async def test_every_member_of_a_round_gets_its_failure() -> None:
    rounds = FetchRounds(COALESCE_MS)
    primary = Primary()
    await asyncio.gather(rounds.fetch("a", 0, 0, primary.send), rounds.fetch("b", 0, 0, primary.send))
    primary.fail = UnavailableError("primary went away")
    results = await asyncio.gather(
        rounds.fetch("a", 10, 0, primary.send), rounds.fetch("b", 10, 0, primary.send), return_exceptions=True
    )
    assert [type(result) for result in results] == [UnavailableError, UnavailableError]
    assert len(primary.sent) == 2 + 1, "one shared fetch failed"


async def test_a_round_whose_sender_is_cancelled_fails_its_other_members() -> None:
    rounds = FetchRounds(COALESCE_MS)
    primary = Primary()
    await asyncio.gather(rounds.fetch("a", 0, 0, primary.send), rounds.fetch("b", 0, 0, primary.send))

    async def hangs(
        node: str, sharing: list[str], after_seq: int, wait_ms: int, records_only: bool
    ) -> internal_pb2.FetchReplicationResponse:
        await asyncio.sleep(60)
        raise AssertionError("not reached")

    sender = asyncio.create_task(rounds.fetch("a", 10, 0, hangs))
    await asyncio.sleep(0.01)
    member = asyncio.create_task(rounds.fetch("b", 10, 0, hangs))
    await asyncio.sleep(0.02)
    sender.cancel()
    with pytest.raises(UnavailableError, match="abandoned"):
        await asyncio.wait_for(member, 5)


async def test_without_coalescing_every_follower_fetches_alone() -> None:
    rounds = FetchRounds(0)
    primary = Primary()
    for after_seq in (0, 10, 20):
        await asyncio.gather(
            rounds.fetch("a", after_seq, 0, primary.send), rounds.fetch("b", after_seq, 0, primary.send)
        )
    assert all(sharing == [] for _, sharing, _, _ in primary.sent)
    assert len(primary.sent) == 6


async def test_a_shared_fetch_waits_for_records_only_when_every_member_asked_for_that() -> None:
    """A follower with consumer state due at a time of its own need not be woken by each ack; one
    without still must be, so a round speaking for both waits for either."""
    rounds = FetchRounds(COALESCE_MS)
    primary = Primary()
    await asyncio.gather(rounds.fetch("a", 0, 0, primary.send), rounds.fetch("b", 0, 0, primary.send))
    assert primary.records_only == [False, False]
    primary.records_only.clear()
    await asyncio.gather(
        rounds.fetch("a", 10, 0, primary.send, records_only=True),
        rounds.fetch("b", 10, 0, primary.send, records_only=False),
    )
    await asyncio.gather(
        rounds.fetch("a", 10, 0, primary.send, records_only=True),
        rounds.fetch("b", 10, 0, primary.send, records_only=True),
    )
    assert [sharing for _, sharing, _, _ in primary.sent[-2:]] == [["b"], ["b"]]
    assert primary.records_only == [False, True]
