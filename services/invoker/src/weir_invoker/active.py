"""An unfinished invocation in memory, what is derived from its journal (its completed entries, when
a suspended one wakes up, how an ended one finished), and the order a batch is admitted in (pure)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from weir.v1 import invoker_pb2

from weir_invoker.protocol import COMPLETABLE, Frame, MessageType
from weir_invoker.restate.pb import protocol_pb2 as pb
from weir_invoker.store import Journal

if TYPE_CHECKING:
    from weir_invoker.attempt import Attempt


@dataclass
class Active:
    """An unfinished invocation in memory."""

    record: invoker_pb2.Invocation
    journal: Journal | None = None
    completed: set[int] = field(default_factory=set)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)  # orders completions with an attempt's set-up
    wakeup: asyncio.Event = field(default_factory=asyncio.Event)
    attempt: Attempt | None = None
    fresh: bool = False  # admitted by this process just now: no journal stored yet
    cancelled: bool = False  # cancelled before it started: it ends without running (cancellation.py)
    cancelling: bool = False  # cancelled once started: its awaited entries failed, it compensates
    cancel_armed: bool = False  # cancelled while awaiting nothing: the next awaited entry fails
    failures_in_row: int = 0
    state_synced: bool = False
    last_stored_ms: int = 0
    task: asyncio.Task[None] | None = None


def input_frame(record: invoker_pb2.Invocation) -> Frame:
    """The journal's entry 0, from the record (pure)."""
    entry = pb.InputEntryMessage(value=record.input)
    entry.headers.extend(pb.Header(key=header.key, value=header.value) for header in record.headers)
    return Frame(MessageType.INPUT, 0, entry.SerializeToString())


def completed_indexes(journal: Journal) -> set[int]:
    """Entries of `journal` an SDK no longer waits on (pure): those with their result, and every
    entry that takes none (stored means acknowledged: a request-response SDK that suspended on a
    Run entry's ack resumes once the entry is stored)."""
    done = {index for index, frame in enumerate(journal.entries) if frame.completed or frame.type not in COMPLETABLE}
    return done | {index for index in journal.completions if index < len(journal.entries)}


def admission_chains(records: list[invoker_pb2.Invocation]) -> list[list[int]]:
    """Indexes into `records`, grouped so that each group is stored one after another and the groups
    concurrently (pure). Records of one (service, key) share a group, in the given order: a later
    record of a key is never stored before an earlier one, so an invoker that takes over after a
    batch was half stored cannot start a later invocation of a key before an earlier one that is
    admitted only when its message is delivered again. A record without a key has a group of its own."""
    chains: dict[tuple[str, str] | int, list[int]] = {}
    for index, record in enumerate(records):
        chains.setdefault((record.service, record.key) if record.key else index, []).append(index)
    return list(chains.values())


def earliest_wake_up_ms(journal: Journal | None, waiting_on: list[int]) -> int:
    """The earliest wake-up time (Unix ms) of the Sleep entries among `waiting_on`, the journal indexes
    a suspended invocation waits on; 0 when it waits on none, or its journal is not loaded (pure).
    Errors: ProtocolViolation (a Sleep entry that does not decode)."""
    if journal is None:
        return 0
    times = [
        journal.entries[index].decode().wake_up_time  # type: ignore[attr-defined]
        for index in waiting_on
        if index < len(journal.entries) and journal.entries[index].type == MessageType.SLEEP
    ]
    return min(times, default=0)


def final_result(journal: Journal) -> tuple[int, bytes | pb.Failure]:
    """How an invocation whose SDK sent End finished, from its journal's last Output entry (pure):
    (INVOCATION_STATUS_FAILED, its failure) or (INVOCATION_STATUS_COMPLETED, its value; b"" without
    an Output entry). Errors: ProtocolViolation (an Output entry that does not decode)."""
    outputs = [frame for frame in journal.entries if frame.type == MessageType.OUTPUT]
    output = outputs[-1].decode() if outputs else pb.OutputEntryMessage(value=b"")
    assert isinstance(output, pb.OutputEntryMessage)
    if output.HasField("failure"):
        return invoker_pb2.InvocationStatus.INVOCATION_STATUS_FAILED, output.failure
    return invoker_pb2.InvocationStatus.INVOCATION_STATUS_COMPLETED, output.value
