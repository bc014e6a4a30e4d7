"""One attempt of an invocation: one HTTP/2 stream to the deployment, as the service protocol's
"State machine and journal" section describes.

The runtime sends StartMessage (id, known_entries, the eager state map, complete, and the key) and
the stored journal, each completable entry with its stored completion filled in and the COMPLETED
flag set (replaying). Then the SDK sends new entries (processing); each is stored in the journal
(ack level all) before the runtime acts on it (EntryAck for REQUIRES_ACK, a completion when the
runtime can give one at once). In BIDI_STREAM mode completions that arrive later (a timer, a call's
result, an awakeable) are sent on the open stream; after `inactivity_timeout_ms` without traffic the
runtime ends its side of the stream so the SDK suspends. In REQUEST_RESPONSE mode the runtime ends
its side after the replay and the SDK suspends whenever it waits for a completion. The attempt ends
with EndMessage, SuspensionMessage, ErrorMessage, or a stream that ends without one of them (an
unknown failure, retried).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from weir_invoker.connections import DeploymentConnection
from weir_invoker.http1 import Http1Stream
from weir_invoker.http2 import ClientStream, DeploymentUnreachable
from weir_invoker.protocol import (
    CONTENT_TYPE,
    Frame,
    MessageType,
    ProtocolViolation,
    complete_entry,
    encode,
    is_entry,
    type_name,
)
from weir_invoker.restate.pb import protocol_pb2 as pb

logger = logging.getLogger(__name__)

MAX_QUEUED_FRAMES = 1024  # frames read ahead of the entry handler (bounded; the reader waits)
ABORT_AFTER_SUSPEND_REQUEST_S = 60.0  # an SDK that does not suspend after the runtime ended its side


@dataclass
class Outcome:
    """How an attempt ended: `ended` (EndMessage: the output is in the journal), `suspended`
    (waiting on `waiting_on`), `failed` (retry later: `error`, the SDK's `retry_delay_ms` when it
    gave one) or `aborted` (stopped by the runtime: cancelled, or a journal conflict)."""

    kind: Literal["ended", "suspended", "failed", "aborted"]
    waiting_on: list[int] = field(default_factory=list)
    error: str = ""
    retry_delay_ms: int | None = None
    stored_entries: int = 0


@dataclass
class StartPlan:
    """What an attempt replays: the StartMessage and the stored entries with their completions."""

    start: pb.StartMessage
    entries: list[Frame]
    completions: dict[int, bytes]

    def replay_frames(self) -> list[bytes]:
        frames = [encode(MessageType.START, self.start)]
        for index, stored in enumerate(self.entries):
            entry = stored
            if index in self.completions and not stored.completed:
                entry = complete_entry(stored, pb.CompletionMessage.FromString(self.completions[index]))
            frames.append(encode(entry.type, entry.body, entry.flags))
        return frames


EntryHandler = Callable[[int, Frame], Awaitable[None]]
"""Stores entry `index` and acts on it; it sends what the SDK should get through `Attempt.send`."""


class Attempt:
    """Drive one attempt. `on_entry(index, frame)` is the runtime's entry handling."""

    def __init__(
        self,
        connection: DeploymentConnection,
        *,
        service: str,
        handler: str,
        bidi: bool,
        inactivity_timeout_s: float,
        on_entry: EntryHandler,
    ) -> None:
        self.connection = connection
        self.path = f"/invoke/{service}/{handler}"
        self.bidi = bidi
        self.inactivity_timeout_s = inactivity_timeout_s
        self.on_entry = on_entry
        self.stream: ClientStream | Http1Stream | None = None
        self._outbox: asyncio.Queue[bytes | None] | None = None
        self._writer: asyncio.Task[None] | None = None
        self.open = False  # completions may be sent (the stream's request side is open)
        self.aborted = ""  # why the runtime stopped this attempt (cancelled), "" while it runs
        self._frames: asyncio.Queue[Frame | BaseException | None] | None = None

    def abort(self, reason: str) -> None:
        """Stop the attempt now (a cancellation): the stream is reset and `run` returns `aborted`."""
        self.aborted = reason
        if self.stream is not None:
            self.stream.reset()
        if self._frames is not None:
            with contextlib.suppress(asyncio.QueueFull):  # a full queue is being read: the flag is seen
                self._frames.put_nowait(None)

    def send(self, frame: bytes) -> bool:
        """Queue a frame (a completion, an EntryAck) for the SDK; False when the request side is
        closed (the SDK gets the completion on its next attempt, from the journal)."""
        if not self.open or self._outbox is None:
            return False
        self._outbox.put_nowait(frame)
        return True

    async def start(self, plan: StartPlan) -> None:
        """Open the stream and send the replay. Errors: DeploymentUnreachable, ProtocolViolation."""
        self.stream = await self.connection.request(
            "POST", self.path, [("content-type", CONTENT_TYPE), ("accept", CONTENT_TYPE)]
        )
        await self.stream.send(b"".join(plan.replay_frames()), end_stream=not self.bidi)
        if self.bidi:
            self.open = True
            self._outbox = asyncio.Queue()
            self._writer = asyncio.get_running_loop().create_task(self._write(self.stream, self._outbox))

    async def _write(self, stream: ClientStream | Http1Stream, outbox: asyncio.Queue[bytes | None]) -> None:
        while (frame := await outbox.get()) is not None:
            with contextlib.suppress(DeploymentUnreachable):
                await stream.send(frame)

    async def end_request(self) -> None:
        """End the runtime's side: the SDK suspends when it next waits for a completion."""
        if not self.open:
            return
        self.open = False
        if self._outbox is not None and self._writer is not None:
            self._outbox.put_nowait(None)
            with contextlib.suppress(Exception):
                await self._writer
        if self.stream is not None:
            await self.stream.end()

    async def run(self, first_new_index: int) -> Outcome:
        """Read the SDK's messages until the attempt ends (after `start`)."""
        assert self.stream is not None
        headers = await self.stream.response_headers()
        status = headers.get(":status", "")
        if status != "200":
            return Outcome("failed", error=f"the deployment answered HTTP {status} for {self.path}")
        if headers.get("content-type", "") != CONTENT_TYPE:
            return Outcome("failed", error=f"the deployment answered content-type {headers.get('content-type')!r}")
        frames: asyncio.Queue[Frame | BaseException | None] = asyncio.Queue(MAX_QUEUED_FRAMES)
        self._frames = frames
        reader = asyncio.get_running_loop().create_task(self._read(self.stream, frames))
        try:
            return await self._handle(frames, first_new_index)
        finally:
            reader.cancel()
            with contextlib.suppress(BaseException):
                await reader

    async def _read(
        self, stream: ClientStream | Http1Stream, frames: asyncio.Queue[Frame | BaseException | None]
    ) -> None:
        try:
            while (frame := await stream.read_frame()) is not None:
                await frames.put(frame)
            await frames.put(None)
        except (DeploymentUnreachable, ProtocolViolation) as error:
            await frames.put(error)

    async def _next(self, frames: asyncio.Queue[Frame | BaseException | None]) -> Frame | BaseException | None:
        """The next message; ends the request side after inactivity (BIDI), gives up after a further
        ABORT_AFTER_SUSPEND_REQUEST_S."""
        while True:
            timeout = self.inactivity_timeout_s if self.open else ABORT_AFTER_SUSPEND_REQUEST_S
            try:
                return await asyncio.wait_for(frames.get(), timeout)
            except TimeoutError:
                if not self.open:
                    return DeploymentUnreachable(f"no message for {ABORT_AFTER_SUSPEND_REQUEST_S:g} s after suspending")
                await self.end_request()

    async def _handle(self, frames: asyncio.Queue[Frame | BaseException | None], index: int) -> Outcome:
        stored = 0
        while True:
            item = await self._next(frames)
            if self.aborted:
                return Outcome("aborted", error=self.aborted, stored_entries=stored)
            if item is None:
                return Outcome(
                    "failed", error="the stream ended without End, Suspension or Error", stored_entries=stored
                )
            if isinstance(item, BaseException):
                return Outcome("failed", error=str(item), stored_entries=stored)
            if is_entry(item.type):
                await self.on_entry(index, item)
                index += 1
                stored += 1
                continue
            if item.type == MessageType.END:
                return Outcome("ended", stored_entries=stored)
            if item.type == MessageType.SUSPENSION:
                suspension = item.decode()
                assert isinstance(suspension, pb.SuspensionMessage)
                if not suspension.entry_indexes:
                    return Outcome("failed", error="a SuspensionMessage without entry indexes", stored_entries=stored)
                return Outcome("suspended", waiting_on=list(suspension.entry_indexes), stored_entries=stored)
            if item.type == MessageType.ERROR:
                return self._error_outcome(item, stored)
            return Outcome(
                "failed", error=f"unexpected {type_name(item.type)} message from the SDK", stored_entries=stored
            )

    @staticmethod
    def _error_outcome(frame: Frame, stored: int) -> Outcome:
        error = frame.decode()
        assert isinstance(error, pb.ErrorMessage)
        text = f"{error.code}: {error.message}" if error.message else f"error code {error.code}"
        if error.HasField("related_entry_index"):
            text += f" (entry {error.related_entry_index}"
            text += f" {error.related_entry_name!r})" if error.related_entry_name else ")"
        delay = error.next_retry_delay if error.HasField("next_retry_delay") else None
        return Outcome("failed", error=text, retry_delay_ms=delay, stored_entries=stored)

    async def close(self, abort: bool = False) -> None:
        """Release the stream (reset it when `abort`: cancelled or superseded)."""
        self.open = False
        if self._outbox is not None:
            self._outbox.put_nowait(None)
        if self._writer is not None:
            self._writer.cancel()
            with contextlib.suppress(BaseException):
                await self._writer
        if self.stream is not None:
            if abort:
                self.stream.reset()
            else:
                await self.stream.end()
                self.stream.close()


def start_message(
    *,
    raw_id: bytes,
    invocation_id: str,
    key: str,
    known_entries: int,
    state: dict[bytes, bytes] | None,
    retry_count: int,
    since_last_stored_ms: int,
) -> pb.StartMessage:
    """The StartMessage of an attempt (pure). `state` None: a service's invocation (no state);
    otherwise the complete state map (partial_state false: a key absent here has no value)."""
    start = pb.StartMessage(
        id=raw_id,
        debug_id=invocation_id,
        known_entries=known_entries,
        key=key,
        partial_state=False,
        retry_count_since_last_stored_entry=retry_count,
        duration_since_last_stored_entry=since_last_stored_ms,
    )
    for state_key, value in sorted((state or {}).items()):
        start.state_map.append(pb.StartMessage.StateEntry(key=state_key, value=value))
    return start


def now_ms() -> int:
    return int(time.time() * 1000)
