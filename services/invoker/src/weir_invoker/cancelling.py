"""Cancelling invocations: the runtime's side of cancellation.py's decisions (Restate's cancel, not
a kill). It gets what it acts on from the runtime that makes it, never the runtime itself: the
unfinished invocations and the per-key queues (shared, not copied), the records and journals, the
completions, and `finish` to end an invocation that never started."""

from __future__ import annotations

import collections
from collections.abc import Awaitable, Callable

from weir.errors import FailedPreconditionError, NoSuchInvocationError
from weir.v1 import invoker_pb2

from weir_invoker import cancellation, ids
from weir_invoker.active import Active, completed_indexes, input_frame
from weir_invoker.completions import Completions, failure
from weir_invoker.restate.pb import protocol_pb2 as pb
from weir_invoker.store import InvocationStore, JournalStore

Status = invoker_pb2.InvocationStatus
Finish = Callable[[Active, int, "bytes | pb.Failure"], Awaitable[None]]


class Cancelling:
    def __init__(
        self,
        *,
        active: dict[str, Active],
        keys: dict[tuple[str, str], collections.deque[Active]],
        invocations: InvocationStore,
        journals: JournalStore,
        completions: Completions,
        finish: Finish,
    ) -> None:
        self.active = active
        self.keys = keys
        self.invocations = invocations
        self.journals = journals
        self.completions = completions
        self.finish = finish

    async def cancel(self, invocation_id: str) -> invoker_pb2.Invocation:
        """Cancel unfinished invocation `invocation_id`; returns its record as of now. One that has
        not started ends at once, CANCELLED (a driver waiting for its key, its delay or a slot sees
        `cancelled` and ends it); a started one has its awaited entries completed with the failure
        409 `cancelled` and its awaited children cancelled (recursively), so its handler gets a
        TerminalError where it awaits and may compensate before it ends. Errors:
        NoSuchInvocationError, FailedPreconditionError (finished, or being cancelled already);
        nothing changes then. Source: Restate's CancelInvocation (cancellation.py)."""
        active = self.active.get(invocation_id)
        if active is None:
            stored = await self.invocations.get(invocation_id)
            if stored is None:
                raise NoSuchInvocationError(f"invocation {invocation_id} does not exist", invocation=invocation_id)
            raise FailedPreconditionError(f"invocation {invocation_id} has finished ({Status.Name(stored.status)})")
        record = active.record
        if active.cancelled or active.cancelling or record.status in cancellation.FINISHED:
            raise FailedPreconditionError(
                f"invocation {invocation_id} is being cancelled or is ending ({Status.Name(record.status)})"
            )
        if cancellation.started(record):
            active.cancelling = True
            await self._cancel_started(active)
            return record
        active.cancelled = True
        active.wakeup.set()
        queue = self.keys.get((record.service, record.key))
        if queue is not None and active in queue and queue[0] is not active:  # waiting for its key: ends now
            queue.remove(active)
            await self.finish(active, Status.INVOCATION_STATUS_CANCELLED, cancellation.cancelled_failure())
        return record

    async def _cancel_started(self, active: Active) -> None:
        """Fail the entries `active` awaits and cancel its awaited children, or arm the cancel."""
        record = active.record
        async with active.lock:
            if active.journal is None:  # resumed by this process and not loaded yet
                active.journal = await self.journals.load(record.id, input_frame(record))
                active.completed = completed_indexes(active.journal)
            plan = cancellation.plan(active.journal, active.completed)
            active.cancel_armed = plan.armed
        failed = failure(cancellation.CANCELLED_CODE, cancellation.CANCELLED_MESSAGE)
        for index in plan.fail:
            await self.completions.complete_quietly(record.id, index, failed)
        for index in plan.children:
            try:
                await self.cancel(ids.for_call(record.id, index))  # the child's end completes the Call
            except (NoSuchInvocationError, FailedPreconditionError):  # not running here: fail the Call itself
                await self.completions.complete_quietly(record.id, index, failed)
