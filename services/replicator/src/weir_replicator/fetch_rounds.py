"""One FetchReplication a round for the followers of a partition that are in step (issue 25).

Each follower loop of a `PartitionShipper` pulls what its secondary lacks and pushes it. When the
secondaries keep up, their logs end at the same seq after every round, and each loop would ask the
primary for the same records: two exchanges, two reads and two serializations at the primary for
one answer. `FetchRounds` makes those loops share one fetch:

- A follower that wants the records after `after_seq` joins the round for `after_seq` that is still
  gathering, if there is one; otherwise it opens one.
- The follower that opened a round waits, at most `coalesce_ms`, for the followers that handled
  the same answer as itself in the previous round (they are likely to want the same records
  next); a follower that took another path (a failure, a refusal, an earlier log end) stops being
  waited for as soon as it asks for something else or leaves.
- The round's fetch speaks for every member: they all report `after_seq` as their log end
  (FetchReplicationRequest.sharing_node_ids) and all get its answer.

A follower that falls behind (a stopped or slow secondary) stops being waited for after one
`coalesce_ms` and then fetches alone, so it never holds the others back for longer than that once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass

from weir.errors import UnavailableError, WeirError
from weir.v1 import internal_pb2

# Sends one fetch: (the follower whose stream carries it, the other members, after_seq, wait_ms,
# wait_for_records_only).
SendFetch = Callable[[str, list[str], int, int, bool], Awaitable[internal_pb2.FetchReplicationResponse]]


def followers_to_await(
    node_id: str, previous_after_seq: int | None, handling: Mapping[str, int], members: Collection[str]
) -> set[str]:
    """Whom the round opened by `node_id` still waits for: the other followers that are handling
    the answer to the same fetch position as `node_id` last did (`previous_after_seq`; None: it
    shared no round, nobody) and have not joined (`members`). `handling` maps each follower that
    is handling an answer to the position it fetched after."""
    if previous_after_seq is None:
        return set()
    return {
        other
        for other, after_seq in handling.items()
        if after_seq == previous_after_seq and other != node_id and other not in members
    }


@dataclass(slots=True)
class _Round:
    members: list[str]
    wait_ms: int
    records_only: bool
    answer: asyncio.Future[internal_pb2.FetchReplicationResponse]


class FetchRounds:
    """The fetch rounds of one partition's followers. `coalesce_ms` = 0: every follower fetches
    alone. Not thread-safe (one event loop)."""

    def __init__(self, coalesce_ms: int) -> None:
        self.coalesce_s = coalesce_ms / 1000
        self.sharing = coalesce_ms > 0
        self._handling: dict[str, int] = {}  # follower -> the after_seq of the answer it handles
        self._gathering: dict[int, _Round] = {}  # after_seq -> the round not sent yet
        self._changed = asyncio.Event()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def leave(self, node_id: str) -> None:
        """`node_id` is done with its last answer without fetching again (it failed or re-syncs)."""
        if self._handling.pop(node_id, None) is not None:
            self._notify()

    async def fetch(
        self, node_id: str, after_seq: int, wait_ms: int, send: SendFetch, *, records_only: bool = False
    ) -> internal_pb2.FetchReplicationResponse:
        """The primary's answer for a follower whose log ends at `after_seq`, from a fetch that may
        speak for other followers too (the smallest `wait_ms` of its members; waiting for records
        only if every member asked for that, `records_only`). Errors: the `WeirError` of the fetch
        (every member gets it), UnavailableError when the follower that sent it was cancelled
        first."""
        previous = self._handling.pop(node_id, None)
        joined = self._gathering.get(after_seq) if self.sharing else None
        if joined is not None:
            joined.members.append(node_id)
            joined.wait_ms = min(joined.wait_ms, wait_ms)
            joined.records_only = joined.records_only and records_only
            self._notify()
            response = await asyncio.shield(joined.answer)
            self._handling[node_id] = after_seq
            return response
        round_ = _Round([node_id], wait_ms, records_only, asyncio.get_running_loop().create_future())
        if previous is not None:
            self._notify()  # those waiting for this follower see it move on
        try:
            if self.sharing:
                self._gathering[after_seq] = round_
                await self._gather(round_, previous)
        finally:
            if self._gathering.get(after_seq) is round_:
                del self._gathering[after_seq]
        try:
            response = await send(node_id, round_.members[1:], after_seq, round_.wait_ms, round_.records_only)
        except BaseException as error:
            shared = error if isinstance(error, WeirError) else UnavailableError("the shared fetch was abandoned")
            round_.answer.set_exception(shared)
            round_.answer.exception()  # retrieved here: a round without other members is not an error
            raise
        round_.answer.set_result(response)
        self._handling[node_id] = after_seq
        return response

    async def _gather(self, round_: _Round, previous: int | None) -> None:
        """Until every follower that handled the same answer as the opener has joined or moved on,
        or `coalesce_s` passed."""
        deadline = asyncio.get_running_loop().time() + self.coalesce_s
        while followers_to_await(round_.members[0], previous, self._handling, round_.members):
            remaining = deadline - asyncio.get_running_loop().time()
            if remaining <= 0:
                return
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    await self._changed.wait()
