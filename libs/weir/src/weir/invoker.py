"""Asyncio client of the invoker's operator API (proto/weir/v1/invoker.proto, service weir.v1.Invoker).

The invoker (services/invoker) runs durable handlers written with Restate's SDKs over Weir streams:
an operator registers a handler deployment by URL, binds subscriptions (a stream's consumer group ->
service/handler), starts invocations directly, inspects them with their journals, cancels them and
completes awakeables.

    async with InvokerClient("127.0.0.1:7720") as invoker:
        deployment = await invoker.register_deployment("http://127.0.0.1:9080")
        invocation = await invoker.invoke("Greeter", "greet", b'"world"')
        finished = await invoker.wait_for_invocation(invocation.id)

Values a handler takes and returns are the bytes its SDK's serde reads and writes: JSON with the
Restate SDKs' defaults (`b'"world"'` is the string "world"). Every failed call raises a typed
`WeirError` with the invoker's result code: NoSuchDeploymentError, NoSuchSubscriptionError,
NoSuchInvocationError, NoSuchHandlerError, DiscoveryFailedError, FailedPreconditionError,
InvalidArgumentError, AlreadyExistsError, NoSuchStreamError; transport failures raise
UnavailableError (retryable). Messages are the protoc-generated ones of weir.v1.invoker_pb2.

Source: invoker.proto (its comments are the contract).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable, Mapping
from typing import cast

from weir import tls as tls_module
from weir.client import DEFAULT_TIMEOUT_S, GrpcClient, headers_of
from weir.errors import InvalidArgumentError, UnavailableError
from weir.options import DEFAULT_FAILURE_CODE, DEFAULT_INVOKER_ADDRESS, DEFAULT_INVOKER_PORT
from weir.v1 import invoker_pb2, invoker_pb2_grpc

Deployment = invoker_pb2.Deployment
Subscription = invoker_pb2.Subscription
Invocation = invoker_pb2.Invocation
JournalEntry = invoker_pb2.JournalEntry
InvocationStatus = invoker_pb2.InvocationStatus

DEFAULT_PORT = DEFAULT_INVOKER_PORT
DEFAULT_ADDRESS = DEFAULT_INVOKER_ADDRESS
# The invoker gives a deployment this long to answer GET /discover; a register call waits this much
# longer than the client's timeout.
DISCOVERY_TIMEOUT_S = 10.0
_STATUS_PREFIX = "INVOCATION_STATUS_"
# Status names as people write them ("suspended", "backing_off"), UNSPECIFIED left out.
STATUS_NAMES: dict[str, invoker_pb2.InvocationStatus] = {
    name.removeprefix(_STATUS_PREFIX).lower(): cast(invoker_pb2.InvocationStatus, value)
    for name, value in invoker_pb2.InvocationStatus.items()
    if value != invoker_pb2.INVOCATION_STATUS_UNSPECIFIED
}
FINISHED_STATUSES = frozenset(
    {
        invoker_pb2.INVOCATION_STATUS_COMPLETED,
        invoker_pb2.INVOCATION_STATUS_FAILED,
        invoker_pb2.INVOCATION_STATUS_CANCELLED,
    }
)
FIRST_POLL_INTERVAL_S = 0.05
MAX_POLL_INTERVAL_S = 1.0


def invocation_status(status: str | int | None) -> invoker_pb2.InvocationStatus:
    """The InvocationStatus of a name ("suspended", "BACKING-OFF", "INVOCATION_STATUS_FAILED"; case
    and '-' for '_' do not matter), of an enum value as is, or UNSPECIFIED for None and "" (= any
    status, in a listing). Errors: InvalidArgumentError naming the statuses there are."""
    if status is None or status == "":
        return invoker_pb2.INVOCATION_STATUS_UNSPECIFIED
    if isinstance(status, int):
        if status not in invoker_pb2.InvocationStatus.values():
            raise InvalidArgumentError(f"invocation status {status} does not exist")
        return cast(invoker_pb2.InvocationStatus, status)
    name = status.strip().lower().replace("-", "_").removeprefix(_STATUS_PREFIX.lower())
    found = STATUS_NAMES.get(name)
    if found is None:
        raise InvalidArgumentError(f"invocation status {status!r} does not exist: one of {', '.join(STATUS_NAMES)}")
    return found


def status_name(status: int) -> str:
    """An InvocationStatus as people write it: "suspended", "backing_off" ("unspecified" for 0,
    the number as text for a value this SDK does not know)."""
    if status not in invoker_pb2.InvocationStatus.values():
        return str(status)
    return invoker_pb2.InvocationStatus.Name(status).removeprefix(_STATUS_PREFIX).lower()


def is_finished(invocation: invoker_pb2.Invocation) -> bool:
    """Completed, failed or cancelled: its status no longer changes."""
    return invocation.status in FINISHED_STATUSES


class InvokerClient(GrpcClient):
    """weir.v1.Invoker on one invoker. `address` is ``host:port`` of its gRPC port (default port 7720);
    `timeout_s` bounds each call; `tls` as every Weir client (weir.tls: default, the process's)."""

    def __init__(
        self,
        address: str = DEFAULT_ADDRESS,
        *,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        tls: tls_module.Security = tls_module.PROCESS_DEFAULT,
    ) -> None:
        super().__init__(address, timeout_s, tls=tls)
        self.stub = invoker_pb2_grpc.InvokerStub(self.channel)

    # -- deployments ---------------------------------------------------------------------------------

    async def register_deployment(self, url: str) -> invoker_pb2.Deployment:
        """Have the invoker ask `url` (http(s)://host:port[/path]) for its endpoint manifest (GET
        {url}/discover) and register what it serves; returns the Deployment (id dp_<hex>, derived
        from the URL; its services with their handlers and kinds; protocol mode and versions). A
        service another deployment served moves to this one. Waits up to the client's timeout plus
        DISCOVERY_TIMEOUT_S. Errors: InvalidArgumentError (a URL that is not
        http(s)://host:port[/path]), DiscoveryFailedError (the URL answered no usable manifest: the
        message says why). Source: invoker.proto RegisterDeployment."""
        request = invoker_pb2.RegisterDeploymentRequest(url=url)
        response = await self._call(self.stub.RegisterDeployment, request, self.timeout_s + DISCOVERY_TIMEOUT_S)
        return response.deployment  # type: ignore[no-any-return]

    async def list_deployments(self) -> list[invoker_pb2.Deployment]:
        """Every registered deployment. Source: invoker.proto ListDeployments."""
        response = await self._call(self.stub.ListDeployments, invoker_pb2.ListDeploymentsRequest())
        return list(response.deployments)

    async def remove_deployment(self, id: str) -> None:
        """Unregister deployment `id` (dp_...). Errors: NoSuchDeploymentError, FailedPreconditionError
        (a subscription targets one of its services: delete that first). Source: invoker.proto
        RemoveDeployment."""
        await self._call(self.stub.RemoveDeployment, invoker_pb2.RemoveDeploymentRequest(id=id))

    # -- subscriptions -------------------------------------------------------------------------------

    async def create_subscription(
        self,
        stream: str,
        service: str,
        handler: str,
        *,
        id: str = "",
        consumer: str = "",
        filter_subject: str = "",
        dead_letter_stream: str = "",
        reply_stream: str = "",
        start: str = "earliest",
    ) -> invoker_pb2.Subscription:
        """Bind `stream`'s consumer group to `service`/`handler`: every message becomes one invocation
        (for a virtual object or workflow, keyed by the message key). `id`: 1..64 of A-Z a-z 0-9 - _
        ("" = <stream>-<service>-<handler>, cleaned); `consumer`: the group ("" = the id);
        `filter_subject`: only matching subjects ("" = all); `dead_letter_stream`: where a message
        whose invocation failed terminally is published ("" = none); `reply_stream`: where each
        output is published ("" = none); `start`: where a new group starts, "earliest" or "latest".
        The same binding again returns the existing subscription. Errors: NoSuchStreamError,
        NoSuchHandlerError, InvalidArgumentError (a workflow's shared handler, a bad id or start),
        AlreadyExistsError (the id is another binding's). Source: invoker.proto CreateSubscription."""
        subscription = invoker_pb2.Subscription(
            id=id,
            stream=stream,
            consumer=consumer,
            filter_subject=filter_subject,
            service=service,
            handler=handler,
            dead_letter_stream=dead_letter_stream,
            reply_stream=reply_stream,
            start=start,
        )
        request = invoker_pb2.CreateSubscriptionRequest(subscription=subscription)
        response = await self._call(self.stub.CreateSubscription, request)
        return response.subscription  # type: ignore[no-any-return]

    async def list_subscriptions(self) -> list[invoker_pb2.Subscription]:
        """Every subscription. Source: invoker.proto ListSubscriptions."""
        response = await self._call(self.stub.ListSubscriptions, invoker_pb2.ListSubscriptionsRequest())
        return list(response.subscriptions)

    async def delete_subscription(self, id: str) -> None:
        """Stop subscription `id` (its consumer group keeps its position). Errors:
        NoSuchSubscriptionError. Source: invoker.proto DeleteSubscription."""
        await self._call(self.stub.DeleteSubscription, invoker_pb2.DeleteSubscriptionRequest(id=id))

    # -- invocations ---------------------------------------------------------------------------------

    async def invoke(
        self,
        service: str,
        handler: str,
        input: bytes = b"",
        *,
        key: str = "",
        headers: Mapping[str, str] | Iterable[tuple[str, str]] | None = None,
        idempotency_key: str = "",
    ) -> invoker_pb2.Invocation:
        """Start an invocation of `service`/`handler` with `input` (the bytes the handler's serde
        reads: JSON with the Restate SDKs' defaults; b"" = none); returns its record (id
        inv_<32 hex>, its status as of now). `key`: the virtual object's or workflow's key (none for
        a service); `headers`: the invocation's headers (name -> value, or pairs);
        `idempotency_key`: the same one (per service, handler and key) returns the existing
        invocation instead of starting another. Errors: NoSuchHandlerError, InvalidArgumentError (a
        key for a service, none for an object or workflow, input too large). Source: invoker.proto
        Invoke."""
        request = invoker_pb2.InvokeRequest(
            service=service,
            handler=handler,
            key=key,
            input=input,
            headers=headers_of(headers),
            idempotency_key=idempotency_key,
        )
        response = await self._call(self.stub.Invoke, request)
        return response.invocation  # type: ignore[no-any-return]

    async def list_invocations(
        self, *, status: str | int | None = None, service: str = "", limit: int = 0
    ) -> tuple[list[invoker_pb2.Invocation], bool]:
        """Invocations, newest first, and whether `limit` cut the list: every unfinished one and
        finished ones until the invoker's completed_retention_ms after they finished. `status`: only
        these (a name such as "suspended", or an InvocationStatus; None = any); `service`: only its
        ("" = all); `limit`: at most this many (0 = 1,000; at most 10,000). Errors:
        InvalidArgumentError (an unknown status name, a limit above 10,000). Source: invoker.proto
        ListInvocations."""
        request = invoker_pb2.ListInvocationsRequest(status=invocation_status(status), service=service, limit=limit)
        response = await self._call(self.stub.ListInvocations, request)
        return list(response.invocations), bool(response.truncated)

    async def get_invocation(self, id: str) -> tuple[invoker_pb2.Invocation, list[invoker_pb2.JournalEntry]]:
        """Invocation `id` and its journal, in entry order (a finished invocation's journal is
        deleted when it finishes; its output or failure stays). Errors: NoSuchInvocationError.
        Source: invoker.proto GetInvocation."""
        response = await self._call(self.stub.GetInvocation, invoker_pb2.GetInvocationRequest(id=id))
        return response.invocation, list(response.journal)

    async def cancel_invocation(self, id: str) -> invoker_pb2.Invocation:
        """Cancel invocation `id` as Restate does (not a kill); returns its record as of now. One not
        started yet ends at once with the failure 409 "cancelled"; a started one has the entries it
        awaits completed with that failure and its awaited child calls cancelled, so its handler gets
        a TerminalError and may compensate first (a caller waiting on it gets how it ended). Errors:
        NoSuchInvocationError, FailedPreconditionError (it has finished, or is being cancelled).
        Source: invoker.proto CancelInvocation."""
        response = await self._call(self.stub.CancelInvocation, invoker_pb2.CancelInvocationRequest(id=id))
        return response.invocation  # type: ignore[no-any-return]

    async def wait_for_invocation(
        self,
        id: str,
        *,
        timeout_s: float | None = None,
        on_change: Callable[[invoker_pb2.Invocation], None] | None = None,
    ) -> invoker_pb2.Invocation:
        """Poll GetInvocation until invocation `id` is completed, failed or cancelled; returns its
        final record (`output`, or `failure` with code and message). Polls every 50 ms at first, then
        less often, up to once a second. `timeout_s`: give up after this long (None = never);
        `on_change`: called with the record each time its status changes. Errors:
        NoSuchInvocationError, UnavailableError when `timeout_s` passes."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        interval_s, last_status = FIRST_POLL_INTERVAL_S, None
        while True:
            invocation, _ = await self.get_invocation(id)
            if invocation.status != last_status and on_change is not None:
                on_change(invocation)
            last_status = invocation.status
            if is_finished(invocation):
                return invocation
            if deadline is not None and time.monotonic() + interval_s > deadline:
                raise UnavailableError(
                    f"invocation {id} did not finish within {timeout_s:g} s (it is {status_name(last_status)})",
                    invocation=id,
                )
            await asyncio.sleep(interval_s)
            interval_s = min(MAX_POLL_INTERVAL_S, interval_s * 1.5)

    # -- awakeables ----------------------------------------------------------------------------------

    async def resolve_awakeable(self, id: str, value: bytes) -> None:
        """Complete awakeable `id` (prom_1..., as the handler got it from ctx.awakeable()) with
        `value` (the bytes its serde reads: JSON with the Restate SDKs' defaults). Errors:
        InvalidArgumentError (not an awakeable id), NoSuchInvocationError, FailedPreconditionError
        (already completed). Source: invoker.proto CompleteAwakeable."""
        request = invoker_pb2.CompleteAwakeableRequest(id=id, value=value)
        await self._call(self.stub.CompleteAwakeable, request)

    async def reject_awakeable(self, id: str, message: str, code: int = DEFAULT_FAILURE_CODE) -> None:
        """Complete awakeable `id` with a failure: the handler's await raises a terminal error with
        `code` (an HTTP status code, as the protocol's Failure) and `message`. Errors: as
        `resolve_awakeable`. Source: invoker.proto CompleteAwakeable."""
        failure = invoker_pb2.InvocationFailure(code=code, message=message)
        request = invoker_pb2.CompleteAwakeableRequest(id=id, failure=failure)
        await self._call(self.stub.CompleteAwakeable, request)
