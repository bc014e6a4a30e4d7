"""Completions of journal entries: each is stored in the journal (ack level all), then handed
to its invocation, on the open stream of a BIDI attempt or by waking the suspended invocation; and
what produces them inside the invoker: sleep timers and workflow promise waiters (calls complete
their caller when they end, runtime.finish; awakeables come from CompleteAwakeable)."""

from __future__ import annotations

import asyncio
import contextlib

from weir.errors import FailedPreconditionError, NoSuchInvocationError
from weir.v1 import invoker_pb2

from weir_invoker.active import Active, completed_indexes, input_frame
from weir_invoker.attempt import now_ms
from weir_invoker.protocol import COMPLETABLE, MessageType, encode
from weir_invoker.restate.pb import protocol_pb2 as pb
from weir_invoker.store import JournalStore


def failure(code: int, message: str) -> pb.CompletionMessage:
    return pb.CompletionMessage(failure=pb.Failure(code=code, message=message))


def empty() -> pb.CompletionMessage:
    completion = pb.CompletionMessage()
    completion.empty.SetInParent()
    return completion


def value(data: bytes) -> pb.CompletionMessage:
    return pb.CompletionMessage(value=data)


def completion_of(record: invoker_pb2.Invocation) -> pb.CompletionMessage:
    """A finished invocation's result as its caller's Call completion."""
    if record.WhichOneof("result") == "failure":
        return failure(record.failure.code, record.failure.message)
    return value(record.output)


class Completions:
    def __init__(self, active: dict[str, Active], journals: JournalStore) -> None:
        self.active = active  # the invoker's unfinished invocations (shared, not copied)
        self.journals = journals
        self._timers: dict[tuple[str, int], asyncio.Task[None]] = {}
        self._promise_waiters: dict[tuple[str, str, str], set[tuple[str, int]]] = {}
        self._attached: dict[str, set[tuple[str, int]]] = {}  # workflow run -> callers' Call entries

    async def complete(self, invocation_id: str, index: int, completion: pb.CompletionMessage) -> bool:
        """Store the completion of entry `index` and hand it to the invocation (on its open stream,
        or by waking it). False when that entry was completed already. Errors:
        NoSuchInvocationError (not unfinished here), FailedPreconditionError (not a completable entry)."""
        active = self.active.get(invocation_id)
        if active is None:
            raise NoSuchInvocationError(f"invocation {invocation_id} is not running here (finished or unknown)")
        async with active.lock:
            if active.journal is None:
                active.journal = await self.journals.load(invocation_id, input_frame(active.record))
                active.completed = completed_indexes(active.journal)
            if index in active.completed:
                return False
            if index >= len(active.journal.entries) or active.journal.entries[index].type not in COMPLETABLE:
                raise FailedPreconditionError(f"entry {index} of invocation {invocation_id} takes no completion")
            payload = completion.SerializeToString()
            await self.journals.append_completion(active.journal, invocation_id, index, payload)
            active.journal.completions[index] = payload
            active.completed.add(index)
            completion.entry_index = index
            if active.attempt is not None:
                active.attempt.send(encode(MessageType.COMPLETION, completion))
            active.wakeup.set()
        return True

    async def complete_awakeable(self, invocation_id: str, index: int, completion: pb.CompletionMessage) -> None:
        """Errors: NoSuchInvocationError, FailedPreconditionError (completed already, not an awakeable)."""
        active = self.active.get(invocation_id)
        if active is None:
            raise NoSuchInvocationError(f"invocation {invocation_id} of that awakeable has finished or never existed")
        journal = active.journal
        if (
            journal is not None
            and index < len(journal.entries)
            and journal.entries[index].type != MessageType.AWAKEABLE
        ):
            raise FailedPreconditionError(f"entry {index} of {invocation_id} is not an awakeable")
        if not await self.complete(invocation_id, index, completion):
            raise FailedPreconditionError(f"awakeable {index} of {invocation_id} was completed already")

    def arm_timer(self, invocation_id: str, index: int, wake_up_time_ms: int) -> None:
        if (invocation_id, index) in self._timers:
            return

        async def fire() -> None:
            await asyncio.sleep(max(0, wake_up_time_ms - now_ms()) / 1000)
            with contextlib.suppress(NoSuchInvocationError, FailedPreconditionError):
                await self.complete(invocation_id, index, empty())
            self._timers.pop((invocation_id, index), None)

        self._timers[(invocation_id, index)] = asyncio.get_running_loop().create_task(fire())

    def wait_for_promise(self, service: str, key: str, name: str, invocation_id: str, index: int) -> None:
        self._promise_waiters.setdefault((service, key, name), set()).add((invocation_id, index))

    async def promise_completed(self, service: str, key: str, name: str, result: pb.CompletionMessage) -> None:
        for invocation_id, index in self._promise_waiters.pop((service, key, name), set()):
            with contextlib.suppress(NoSuchInvocationError, FailedPreconditionError):
                await self.complete(invocation_id, index, result)

    async def complete_quietly(self, invocation_id: str, index: int, completion: pb.CompletionMessage) -> None:
        """`complete`, where an invocation that has ended or an entry completed already is no error."""
        with contextlib.suppress(NoSuchInvocationError, FailedPreconditionError):
            await self.complete(invocation_id, index, completion)

    def attach(self, run_id: str, caller_id: str, index: int) -> None:
        """Complete Call entry `index` of `caller_id` when the workflow run `run_id` ends
        (`run_finished`). Kept in memory: a restarted invoker re-arms the caller's uncompleted Call
        entry from its journal, which attaches it again."""
        self._attached.setdefault(run_id, set()).add((caller_id, index))

    async def run_finished(self, record: invoker_pb2.Invocation) -> None:
        """Hand a finished invocation's result to the callers attached to it."""
        for caller_id, index in self._attached.pop(record.id, set()):
            await self.complete_quietly(caller_id, index, completion_of(record))

    def cancel_timers(self, invocation_id: str) -> None:
        """Forget an ended invocation's timers."""
        for timer_key in [key for key in self._timers if key[0] == invocation_id]:
            self._timers.pop(timer_key).cancel()

    async def stop(self) -> None:
        timers = list(self._timers.values())
        for task in timers:
            task.cancel()
        for task in timers:
            with contextlib.suppress(BaseException):
                await task
