"""What the runtime does for each journal entry an SDK sends, once it is stored (the specification's
"Journal entries reference"), and what it re-arms when an invocation's journal is loaded again.

- Run / Awakeable / custom entries: stored; nothing else (Run carries its result; an Awakeable waits
  for CompleteAwakeable). Input is the record's (not stored again); Output is kept in memory until
  End, when the record stores it.
- SetState / ClearState / ClearAllState: applied to the state store after they are stored; a
  journal loaded by a new owner (after a restart) applies them again in order, so a crash between
  the two writes leaves no difference (an object's invocations run one at a time, so the journal
  of the running one is the only writer of its key's state).
- GetState / GetStateKeys without a result: completed from the state store.
- Sleep: a timer, completed (empty) at wake_up_time; armed again from the journal after a restart.
- Call / OneWayCall: a child invocation (its id derived from the parent's id and the entry index,
  so storing it twice is one child); a Call is completed with the child's output or failure. A
  call of a workflow's run handler names the workflow's one run for that key (workflow.py): a
  caller that did not start it attaches to it (gets its result when it ends, or at once if it has).
- CompleteAwakeable: completes the named awakeable of another (or the same) invocation.
- GetPromise / PeekPromise / CompletePromise: a workflow's durable promises, per workflow key.
- Any entry awaiting a result, sent while a cancel is armed (cancellation.py): completed with the
  failure 409 `cancelled` instead of being acted on.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable

from weir.errors import InvalidArgumentError, NoSuchHandlerError, WeirError
from weir.v1 import invoker_pb2, types_pb2

from weir_invoker import cancellation, ids, workflow
from weir_invoker.active import Active
from weir_invoker.cancellation import CANCELLED_CODE, CANCELLED_MESSAGE
from weir_invoker.completions import Completions, completion_of, empty, failure, value
from weir_invoker.protocol import COMPLETABLE, Frame, MessageType, encode
from weir_invoker.registry import Registry
from weir_invoker.restate.pb import protocol_pb2 as pb
from weir_invoker.store import JournalStore, StateStore

logger = logging.getLogger(__name__)

STATE_MUTATIONS = (MessageType.SET_STATE, MessageType.CLEAR_STATE, MessageType.CLEAR_ALL_STATE)


class EntryActions:
    """Acts on the entries an SDK sends (see the module docstring). It gets what it calls on from
    the runtime that makes it, never the runtime itself: the journals to store an entry in, the
    completions to complete one with, the registry to look a call's target up in, and `admit` to
    start a child invocation (the runtime's)."""

    def __init__(
        self,
        *,
        journals: JournalStore,
        completions: Completions,
        registry: Registry,
        admit: Callable[[invoker_pb2.Invocation], Awaitable[tuple[invoker_pb2.Invocation, bool]]],
        state: StateStore,
        promises: StateStore,
    ) -> None:
        self.journals = journals
        self.completions = completions
        self.registry = registry
        self.admit = admit
        self.state = state
        self.promises = promises

    async def handle(self, active: Active, index: int, frame: Frame) -> None:
        """Store entry `index` of `active` and act on it (see the module docstring). Errors: the
        store's (the attempt then fails and is retried), JournalConflict, ProtocolViolation."""
        entry = frame.decode()  # an entry that does not decode is refused before it is stored
        assert active.journal is not None
        if frame.type != MessageType.OUTPUT or frame.requires_ack:
            # The Output is kept only in memory: End follows it, and the invocation's record then
            # stores the output; an attempt cut between the two runs again (its Run results replayed)
            # and gives the same output. A trivial handler's journal so costs no write at all.
            await self.journals.append_entry(active.journal, active.record.id, index, frame)
        active.journal.entries.append(frame)
        active.last_stored_ms = int(time.time() * 1000)
        if frame.completed or frame.type not in COMPLETABLE:
            active.completed.add(index)  # stored is acknowledged (an SDK may suspend on a Run's ack)
        if active.cancel_armed and cancellation.awaits_result(frame):  # a cancel that found nothing awaited
            active.cancel_armed = False
            await self.completions.complete(active.record.id, index, failure(CANCELLED_CODE, CANCELLED_MESSAGE))
        else:
            await self._act(active, index, frame.type, entry, frame.completed)
        if frame.requires_ack and active.attempt is not None:
            active.attempt.send(encode(MessageType.ENTRY_ACK, pb.EntryAckMessage(entry_index=index)))

    async def _act(self, active: Active, index: int, kind: int, entry: object, completed: bool) -> None:
        record = active.record
        if kind in STATE_MUTATIONS:
            await self.apply_state(record, kind, entry)
        elif completed or (
            kind not in COMPLETABLE and kind not in (MessageType.ONE_WAY_CALL, MessageType.COMPLETE_AWAKEABLE)
        ):
            return
        elif kind == MessageType.GET_STATE:
            assert isinstance(entry, pb.GetStateEntryMessage)
            stored = await self.state.get(record.service, record.key, entry.key)
            await self.completions.complete(record.id, index, empty() if stored is None else value(stored))
        elif kind == MessageType.GET_STATE_KEYS:
            keys = sorted(await self.state.get_all(record.service, record.key))
            result = pb.GetStateKeysEntryMessage.StateKeys(keys=keys).SerializeToString()
            await self.completions.complete(record.id, index, value(result))
        elif kind == MessageType.SLEEP:
            assert isinstance(entry, pb.SleepEntryMessage)
            self.completions.arm_timer(record.id, index, entry.wake_up_time)
        elif kind == MessageType.CALL:
            assert isinstance(entry, pb.CallEntryMessage)
            await self.call(active, index, entry)
        elif kind == MessageType.ONE_WAY_CALL:
            assert isinstance(entry, pb.OneWayCallEntryMessage)
            await self.call(active, index, entry)
        elif kind == MessageType.COMPLETE_AWAKEABLE:
            assert isinstance(entry, pb.CompleteAwakeableEntryMessage)
            await self.complete_awakeable(entry)
        elif isinstance(entry, (pb.GetPromiseEntryMessage, pb.PeekPromiseEntryMessage, pb.CompletePromiseEntryMessage)):
            await self.promise(active, index, kind, entry)

    async def apply_state(self, record: invoker_pb2.Invocation, kind: int, entry: object) -> None:
        if kind == MessageType.SET_STATE:
            assert isinstance(entry, pb.SetStateEntryMessage)
            await self.state.set(record.service, record.key, entry.key, entry.value)
        elif kind == MessageType.CLEAR_STATE:
            assert isinstance(entry, pb.ClearStateEntryMessage)
            await self.state.clear(record.service, record.key, entry.key)
        else:
            await self.state.clear_all(record.service, record.key)

    async def reapply_state(self, active: Active) -> None:
        """Apply the journal's state mutations again, in order (a new owner of the invocation)."""
        assert active.journal is not None
        for frame in active.journal.entries:
            if frame.type in STATE_MUTATIONS:
                await self.apply_state(active.record, frame.type, frame.decode())

    async def rearm(self, active: Active) -> None:
        """For each stored entry still waiting on the runtime: its timer, its child call, its
        promise waiter (idempotent: what is armed already stays as it is)."""
        assert active.journal is not None
        record = active.record
        for index, frame in enumerate(active.journal.entries):
            if index in active.completed or frame.type not in COMPLETABLE:
                continue
            entry = frame.decode()
            if isinstance(entry, pb.SleepEntryMessage):
                self.completions.arm_timer(record.id, index, entry.wake_up_time)
            elif isinstance(entry, pb.CallEntryMessage):
                await self.call(active, index, entry)
            elif isinstance(entry, pb.GetPromiseEntryMessage):
                await self.promise(active, index, MessageType.GET_PROMISE, entry)
            elif isinstance(entry, (pb.GetStateEntryMessage, pb.GetStateKeysEntryMessage)):
                await self._act(active, index, frame.type, entry, False)

    async def call(self, parent: Active, index: int, entry: pb.CallEntryMessage | pb.OneWayCallEntryMessage) -> None:
        """Start (once) the child invocation of Call/OneWayCall entry `index`; a Call's caller
        awaits it, a one-way call's child starts at its invoke_time."""
        awaits = isinstance(entry, pb.CallEntryMessage)
        not_before_ms = 0 if isinstance(entry, pb.CallEntryMessage) else entry.invoke_time
        service, handler, key = entry.service_name, entry.handler_name, entry.key
        try:
            target = self.registry.target(service, handler)
            if target.keyed != bool(key):
                raise InvalidArgumentError(f"{service}/{handler} {'needs' if target.keyed else 'takes no'} key")
        except (NoSuchHandlerError, InvalidArgumentError) as error:
            if awaits:
                await self.completions.complete(parent.record.id, index, failure(404, error.message))
            else:
                logger.warning("invocation %s: one-way call dropped: %s", parent.record.id, error.message)
            return
        record = invoker_pb2.Invocation(
            id=workflow.invocation_id(target, key, ids.for_call(parent.record.id, index)),
            service=service,
            handler=handler,
            key=key,
            input=entry.parameter,
            headers=[types_pb2.Header(key=header.key, value=header.value) for header in entry.headers],
            parent_id=parent.record.id,
            parent_entry_index=index,
            parent_awaits=awaits,
            not_before_ms=not_before_ms,
        )
        once = awaits and workflow.runs_once_per_key(target)
        if once:  # waiting first, then admitting: a run ending in between is not missed
            self.completions.attach(record.id, parent.record.id, index)
        stored, created = await self.admit(record)
        if once and workflow.attach(stored, created, parent.record.id, index) == workflow.Attach.RESULT_NOW:
            await self.completions.complete_quietly(parent.record.id, index, completion_of(stored))

    async def complete_awakeable(self, entry: pb.CompleteAwakeableEntryMessage) -> None:
        try:
            invocation_id, index = ids.parse_awakeable(entry.id)
            result = (
                failure(entry.failure.code, entry.failure.message) if entry.HasField("failure") else value(entry.value)
            )
            await self.completions.complete_awakeable(invocation_id, index, result)
        except WeirError as error:  # an unknown or finished target: nothing to complete
            logger.warning("CompleteAwakeable %s ignored: %s", entry.id, error.message)

    async def promise(
        self,
        active: Active,
        index: int,
        kind: int,
        entry: pb.GetPromiseEntryMessage | pb.PeekPromiseEntryMessage | pb.CompletePromiseEntryMessage,
    ) -> None:
        record = active.record
        key = entry.key
        if kind == MessageType.GET_PROMISE:
            # waiting first, then looking: a CompletePromise landing in between is not missed
            # (completing an entry twice is a no-op)
            self.completions.wait_for_promise(record.service, record.key, key, record.id, index)
        stored = await self.promises.get(record.service, record.key, key.encode())
        result = None if stored is None else pb.CompletionMessage.FromString(stored)
        if kind == MessageType.COMPLETE_PROMISE:
            assert isinstance(entry, pb.CompletePromiseEntryMessage)
            if result is not None:
                await self.completions.complete(
                    record.id, index, failure(409, f"promise {key!r} was already completed")
                )
                return
            if entry.HasField("completion_failure"):
                given = failure(entry.completion_failure.code, entry.completion_failure.message)
            else:
                given = value(entry.completion_value)
            await self.promises.set(record.service, record.key, key.encode(), given.SerializeToString())
            await self.completions.complete(record.id, index, empty())
            await self.completions.promise_completed(record.service, record.key, key, given)
        elif result is not None:
            await self.completions.complete(record.id, index, result)
        elif kind == MessageType.PEEK_PROMISE:
            await self.completions.complete(record.id, index, empty())
