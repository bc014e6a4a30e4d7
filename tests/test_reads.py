"""ReadMessages beyond a plain range, through a real node over gRPC: a subject filter, each
subject's newest message below a horizon (what a key-value watch reads first), and the long poll a
tail reader waits in; every bad argument refused with a clear message."""

from __future__ import annotations

import asyncio
import time

import pytest
from weir.client import NodeClient, stream_config
from weir.errors import InvalidArgumentError, InvalidSubjectError


async def fill(client: NodeClient, stream: str, subjects: list[str]) -> None:
    await client.create_stream(stream_config(stream, subjects=["kv.>"]))
    for index, subject in enumerate(subjects, start=1):
        await client.publish(stream, subject, f"{subject}={index}".encode())


def seqs_of(response: object) -> list[int]:
    return [message.seq for message in response.messages]  # type: ignore[attr-defined]


async def test_a_filtered_read_returns_the_matching_messages_and_passes_over_the_rest(
    client: NodeClient, stream_name: str
) -> None:
    await fill(client, stream_name, ["kv.a", "kv.b", "kv.a.x", "kv.b", "kv.a"])
    exact = await client.read_messages(stream_name, filter_subject="kv.a")
    assert (seqs_of(exact), exact.next_seq, exact.last_seq) == ([1, 5], 6, 5)
    wildcard = await client.read_messages(stream_name, filter_subject="kv.a.>")
    assert (seqs_of(wildcard), wildcard.next_seq) == ([3], 6)
    paged = await client.read_messages(stream_name, filter_subject="kv.b", max_messages=1)
    assert (seqs_of(paged), paged.next_seq) == ([2], 4)  # 3 was looked at and passed over
    rest = await client.read_messages(stream_name, from_seq=paged.next_seq, filter_subject="kv.b")
    assert (seqs_of(rest), rest.next_seq) == ([4], 6)
    none = await client.read_messages(stream_name, filter_subject="kv.zzz")
    assert (seqs_of(none), none.next_seq) == ([], 6)


async def test_a_last_per_subject_read_gives_each_subjects_newest_then_every_later_message(
    client: NodeClient, stream_name: str
) -> None:
    await fill(client, stream_name, ["kv.a", "kv.b", "kv.a", "kv.c", "kv.b"])  # newest at 5: a 3, c 4, b 5
    first = await client.read_messages(stream_name, last_per_subject_until=5)
    assert [(m.seq, m.payload) for m in first.messages] == [(3, b"kv.a=3"), (4, b"kv.c=4"), (5, b"kv.b=5")]
    for subject in ("kv.a", "kv.a"):  # 6, 7: after the horizon, every one
        await client.publish(stream_name, subject, b"later")
    after = await client.read_messages(stream_name, from_seq=first.next_seq, last_per_subject_until=5)
    assert seqs_of(after) == [6, 7]
    # A superseding message above the horizon does not count: at 2 nothing is passed over, at 3
    # kv.a 1 is (by 3).
    assert seqs_of(await client.read_messages(stream_name, last_per_subject_until=2)) == [1, 2, 3, 4, 5, 6, 7]
    assert seqs_of(await client.read_messages(stream_name, last_per_subject_until=3)) == [2, 3, 4, 5, 6, 7]
    combined = await client.read_messages(stream_name, last_per_subject_until=7, filter_subject="kv.a")
    assert seqs_of(combined) == [7]


async def test_a_long_poll_read_answers_when_a_message_arrives_or_when_its_wait_is_over(
    client: NodeClient, stream_name: str
) -> None:
    await fill(client, stream_name, ["kv.a"])
    started = time.monotonic()
    empty = await client.read_messages(stream_name, from_seq=2, max_wait_ms=300)
    assert (seqs_of(empty), empty.next_seq) == ([], 2)
    assert time.monotonic() - started >= 0.25
    waiting = asyncio.create_task(
        client.read_messages(stream_name, from_seq=2, filter_subject="kv.b", max_wait_ms=10_000)
    )
    await asyncio.sleep(0.2)
    await client.publish(stream_name, "kv.a", b"not for the filter")  # seq 2: wakes it, passes over
    await asyncio.sleep(0.2)
    assert not waiting.done()
    await client.publish(stream_name, "kv.b", b"wanted")  # seq 3
    answered = await asyncio.wait_for(waiting, 5)
    assert (seqs_of(answered), answered.next_seq) == ([3], 4)


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"filter_subject": "kv..a"}, InvalidSubjectError, "kv..a"),
        ({"max_wait_ms": 300_001}, InvalidArgumentError, "max_wait_ms: at most 300000, got 300001"),
        ({"max_messages": 10_001}, InvalidArgumentError, "max_messages: at most 10000"),
    ],
)
async def test_bad_read_arguments_are_refused_with_what_was_wrong(
    client: NodeClient, stream_name: str, options: dict[str, object], error: type[Exception], message: str
) -> None:
    await fill(client, stream_name, ["kv.a"])
    with pytest.raises(error, match=message.replace(".", r"\.")):
        await client.read_messages(stream_name, **options)  # type: ignore[arg-type]
