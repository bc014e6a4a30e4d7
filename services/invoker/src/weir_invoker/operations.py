"""The operator calls of weir.v1.Invoker (invoker.proto), transport-neutral: deployments,
subscriptions, direct invocations, listing and showing invocations with their journals."""

from __future__ import annotations

import datetime

from weir.cluster import Client
from weir.errors import InvalidArgumentError, NoSuchInvocationError, UnavailableError
from weir.v1 import invoker_pb2

from weir_invoker import discovery, ids, metrics, workflow
from weir_invoker.active import input_frame
from weir_invoker.http2 import Endpoint
from weir_invoker.ingress import Ingress
from weir_invoker.leadership import Leadership
from weir_invoker.protocol import COMPLETABLE, Frame, MessageType, ProtocolViolation, type_name
from weir_invoker.registry import normalized_subscription
from weir_invoker.restate.pb import protocol_pb2 as pb
from weir_invoker.runtime import Invoker
from weir_invoker.store import Journal

DEFAULT_LIST_LIMIT = 1000
MAX_LIST_LIMIT = 10_000
MAX_INPUT_BYTES = 4 * 1024 * 1024


class Operations:
    """Registry calls work on any invoker (the store is the truth; the active one reloads it); calls
    that act on running invocations (Invoke, CancelInvocation, CompleteAwakeable) need the active
    one: a standby answers UNAVAILABLE naming it."""

    def __init__(self, invoker: Invoker, ingress: Ingress, client: Client, leadership: Leadership) -> None:
        self.invoker = invoker
        self.ingress = ingress
        self.client = client
        self.leadership = leadership

    async def _require_active(self) -> None:
        if not self.leadership.active:
            holder = await self.leadership.holder()
            where = f"the active invoker is {holder}" if holder else "no invoker is active yet (register a deployment)"
            raise UnavailableError(f"invoker {self.leadership.lease.holder} is standing by; {where}", active=holder)

    async def register_deployment(self, url: str) -> invoker_pb2.Deployment:
        """Errors: InvalidArgumentError (a bad URL), DiscoveryFailedError."""
        try:
            Endpoint.parse(url)
        except ValueError as error:
            raise InvalidArgumentError(str(error)) from None
        deployment = await discovery.discover(url)
        await self.invoker.ensure_stores()
        await self.invoker.registry.add_deployment(deployment)
        await self.leadership.tick_now()  # the first deployment: an invoker can now take the lease
        return deployment

    async def create_subscription(self, requested: invoker_pb2.Subscription) -> invoker_pb2.Subscription:
        """Errors: InvalidArgumentError, InvalidNameError, NoSuchStreamError, NoSuchHandlerError,
        AlreadyExistsError."""
        subscription = normalized_subscription(requested)
        self.invoker.registry.target(subscription.service, subscription.handler)
        await self.client.stream_info(subscription.stream)  # NoSuchStreamError before anything is stored
        for other in (subscription.dead_letter_stream, subscription.reply_stream):
            if other:
                await self.client.stream_info(other)
        stored, _ = await self.invoker.registry.add_subscription(subscription)
        if self.leadership.active:
            self.ingress.start(stored)  # else the active invoker starts it when it reloads the registry
        return stored

    async def delete_subscription(self, subscription_id: str) -> None:
        await self.invoker.registry.remove_subscription(subscription_id)
        await self.ingress.stop(subscription_id)

    async def invoke(self, request: invoker_pb2.InvokeRequest) -> invoker_pb2.Invocation:
        """Start an invocation (its record as stored). A workflow's run handler runs once per key
        (workflow.py, Restate's workflows): a second submit returns the first run's record,
        unfinished (a caller waits on it) or with its result, and runs nothing. Errors:
        NoSuchHandlerError, InvalidArgumentError, UnavailableError (a standby)."""
        await self._require_active()
        target = self.invoker.registry.target(request.service, request.handler)
        if target.keyed and not request.key:
            raise InvalidArgumentError(f"{request.service} is a {target.service.kind.lower()}: give a key")
        if not target.keyed and request.key:
            raise InvalidArgumentError(f"{request.service} is a service: it takes no key")
        if len(request.input) > MAX_INPUT_BYTES:
            raise InvalidArgumentError(f"input of {len(request.input)} bytes: at most {MAX_INPUT_BYTES}")
        requested_id = ids.for_request(request.service, request.handler, request.key, request.idempotency_key)
        record = invoker_pb2.Invocation(
            id=workflow.invocation_id(target, request.key, requested_id),
            service=request.service,
            handler=request.handler,
            key=request.key,
            input=request.input,
            headers=request.headers,
        )
        stored, created = await self.invoker.admit(record)
        if created:
            metrics.ADMITTED.labels("invoke").inc()
        return stored

    async def list_invocations(
        self, request: invoker_pb2.ListInvocationsRequest
    ) -> tuple[list[invoker_pb2.Invocation], bool]:
        if request.limit > MAX_LIST_LIMIT:
            raise InvalidArgumentError(f"limit {request.limit}: at most {MAX_LIST_LIMIT}")
        limit = request.limit or DEFAULT_LIST_LIMIT
        records = {}
        # An invocation finishing during the scan is stored, then leaves the active set: the scan may
        # have read it before (an older status) or missed it, so one that left is read again.
        active_before = set(self.invoker.active)
        if self.invoker.registry.deployments:  # none registered yet: no store to read
            records = {record.id: record async for record in self.invoker.invocations.scan()}
        records.update({key: active.record for key, active in self.invoker.active.items()})
        for key in active_before - self.invoker.active.keys():
            if (finished := await self.invoker.invocations.get(key)) is not None:
                records[key] = finished
        chosen = [
            record
            for record in records.values()
            if (not request.status or record.status == request.status)
            and (not request.service or record.service == request.service)
        ]
        chosen.sort(key=lambda record: (record.created_at_ms, record.ingest_order), reverse=True)
        return chosen[:limit], len(chosen) > limit

    async def get_invocation(self, invocation_id: str) -> tuple[invoker_pb2.Invocation, list[invoker_pb2.JournalEntry]]:
        """Errors: InvalidArgumentError (not an invocation id), NoSuchInvocationError."""
        ids.raw_of(invocation_id)
        record = await self.invoker.record_of(invocation_id)
        finished = record.status in (
            invoker_pb2.INVOCATION_STATUS_COMPLETED,
            invoker_pb2.INVOCATION_STATUS_FAILED,
            invoker_pb2.INVOCATION_STATUS_CANCELLED,
        )
        journal = Journal() if finished else await self.invoker.journals.load(invocation_id, input_frame(record))
        return record, describe_journal(journal, invocation_id)

    async def cancel(self, invocation_id: str) -> invoker_pb2.Invocation:
        ids.raw_of(invocation_id)
        await self._require_active()
        return await self.invoker.cancel(invocation_id)

    async def complete_awakeable(self, request: invoker_pb2.CompleteAwakeableRequest) -> None:
        invocation_id, index = ids.parse_awakeable(request.id)
        await self._require_active()
        if request.WhichOneof("result") == "failure":
            completion = pb.CompletionMessage(
                failure=pb.Failure(code=request.failure.code, message=request.failure.message)
            )
        else:
            completion = pb.CompletionMessage(value=request.value)
        if invocation_id not in self.invoker.active and await self.invoker.invocations.get(invocation_id) is None:
            raise NoSuchInvocationError(f"awakeable {request.id}: its invocation {invocation_id} does not exist")
        await self.invoker.completions.complete_awakeable(invocation_id, index, completion)


def describe_journal(journal: Journal, invocation_id: str) -> list[invoker_pb2.JournalEntry]:
    """Operator views of the stored entries (pure); an Awakeable's summary is the id to complete it
    with (`weir awakeables resolve ID VALUE`)."""
    described = []
    for index, frame in enumerate(journal.entries):
        completed = frame.completed or index in journal.completions
        described.append(
            invoker_pb2.JournalEntry(
                index=index,
                type=frame.type,
                type_name=type_name(frame.type),
                name=_name_of(frame),
                completed=completed or frame.type not in COMPLETABLE,
                summary=ids.awakeable_id(invocation_id, index)
                if frame.type == MessageType.AWAKEABLE
                else summary(frame),
                message=frame.body,
            )
        )
    return described


def _name_of(frame: Frame) -> str:
    try:
        return str(getattr(frame.decode(), "name", ""))
    except ProtocolViolation:
        return ""


def summary(frame: Frame) -> str:
    """A one-line description of an entry (pure)."""
    try:
        entry = frame.decode()
    except ProtocolViolation as error:
        return str(error)
    if frame.type == MessageType.SLEEP:
        wake = datetime.datetime.fromtimestamp(entry.wake_up_time / 1000, tz=datetime.UTC)  # type: ignore[attr-defined]
        return f"until {wake.isoformat(timespec='milliseconds')}"
    if frame.type in (MessageType.CALL, MessageType.ONE_WAY_CALL):
        target = f"{entry.service_name}/{entry.handler_name}"  # type: ignore[attr-defined]
        return target + (f" key {entry.key!r}" if entry.key else "")  # type: ignore[attr-defined]
    if frame.type in (MessageType.GET_STATE, MessageType.SET_STATE, MessageType.CLEAR_STATE):
        return f"key {entry.key!r}"  # type: ignore[attr-defined]
    if frame.type in (MessageType.INPUT, MessageType.OUTPUT, MessageType.RUN):
        if frame.type != MessageType.INPUT and entry.HasField("failure"):
            return f"failure {entry.failure.code}: {entry.failure.message}"  # type: ignore[attr-defined]
        return f"{len(entry.value)} bytes"  # type: ignore[attr-defined]
    return ""
