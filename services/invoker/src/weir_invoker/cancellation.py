"""Cancelling an invocation as Restate does with service protocol V2 (pure decisions; cancelling.py
and entries.py act on them).

A cancel is not a kill: the handler is told, at its next await, and may compensate (Restate's saga
pattern). V2 has no cancel message, so, as Restate's runtime does for V2 deployments (it cancels the
journal's uncompleted "leaves"), the cancel completes the entries the handler awaits with the failure
409 `cancelled`; the SDK raises it as a
TerminalError where the handler awaits, and whatever the handler does then (ctx.run, calls, sleeps)
runs as usual and is journaled. Precisely:

- an invocation that has not started (no attempt yet: waiting for its key, its delay or a slot)
  ends at once, cancelled, without running;
- a started one: each completable entry of its journal still without a result (a sleep, an
  awakeable, a promise, a state read) is completed with the failure; a Call entry's child invocation
  is cancelled the same way (recursively), and its end (normally that same failure) completes the
  Call; a Call whose child is not running here (a workflow run it attached to, a child that ended)
  is completed with the failure directly; one-way calls' children are left running;
- a started one that awaits nothing yet (busy between two awaits, or not yet at its first) is
  *armed* (Weir's addition, so such a cancel is not lost): the next entry it sends that awaits a
  result gets the failure instead of being acted on. The arming is kept in memory: a cancel armed
  when the invoker stops is lost (the pending entries' failures, once stored, are not).

An invocation whose Output is the failure 409 `cancelled` ends with the status CANCELLED; one whose
handler caught it and returned a value is COMPLETED, as in Restate.
"""

from __future__ import annotations

from dataclasses import dataclass

from weir.v1 import invoker_pb2

from weir_invoker.protocol import COMPLETABLE, Frame, MessageType
from weir_invoker.restate.pb import protocol_pb2 as pb
from weir_invoker.store import Journal

CANCELLED_CODE = 409
CANCELLED_MESSAGE = "cancelled"
Status = invoker_pb2.InvocationStatus
FINISHED = (Status.INVOCATION_STATUS_COMPLETED, Status.INVOCATION_STATUS_FAILED, Status.INVOCATION_STATUS_CANCELLED)


def cancelled_failure() -> pb.Failure:
    return pb.Failure(code=CANCELLED_CODE, message=CANCELLED_MESSAGE)


@dataclass(frozen=True)
class CancelPlan:
    """What cancelling a started invocation does: `fail` the entries to complete with the cancel
    failure, `children` the Call entries whose child invocations to cancel, `armed` (nothing is
    awaited yet: fail the next entry that awaits a result)."""

    fail: tuple[int, ...]
    children: tuple[int, ...]

    @property
    def armed(self) -> bool:
        return not self.fail and not self.children


def started(record: invoker_pb2.Invocation) -> bool:
    """An attempt of `record` has begun (its handler may have run): cancelling it is graceful."""
    return record.attempts > 0


def plan(journal: Journal, completed: set[int]) -> CancelPlan:
    """The plan for a started invocation with `journal` whose entries `completed` have their result."""
    pending = [
        index
        for index, frame in enumerate(journal.entries)
        if frame.type in COMPLETABLE and index not in completed and not frame.completed
    ]
    calls = tuple(index for index in pending if journal.entries[index].type == MessageType.CALL)
    return CancelPlan(fail=tuple(index for index in pending if index not in calls), children=calls)


def awaits_result(frame: Frame) -> bool:
    """A new entry an armed cancel fails: one the SDK awaits a completion of."""
    return frame.type in COMPLETABLE and not frame.completed


def final_status(status: int, result: bytes | pb.Failure) -> int:
    """An ended invocation's status: CANCELLED when it failed with the cancel failure (the handler
    let the TerminalError through), else `status` (from the Output entry)."""
    if isinstance(result, pb.Failure) and (result.code, result.message) == (CANCELLED_CODE, CANCELLED_MESSAGE):
        return Status.INVOCATION_STATUS_CANCELLED
    return status
