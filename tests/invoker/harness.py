"""Test harness for the invoker: handler deployments (the SDK handlers of tests.invoker.handlers,
served by hypercorn in a process of their own) and waiting on weir.v1.Invoker."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import grpc
from weir import Client
from weir.client import NodeClient
from weir.v1 import invoker_pb2, invoker_pb2_grpc
from weir_cli.asgi_serve import AsgiProcess

from tests.conftest import eventually

APP = "tests.invoker.handlers:app"
APP_REQUEST_RESPONSE = "tests.invoker.handlers:app_request_response"


@dataclass
class Deployment(AsgiProcess):
    """Test handlers (`app`: APP or APP_REQUEST_RESPONSE); what they record goes to files in
    `directory` (WEIR_TEST_HANDLER_DIR)."""

    def start(self) -> Deployment:
        self.env = {**self.env, "WEIR_TEST_HANDLER_DIR": str(self.directory)}
        super().start()
        return self

    def lines(self, name: str) -> list[str]:
        path = self.directory / name
        return path.read_text().splitlines() if path.exists() else []


def invoker_stub(address: str) -> tuple[grpc.aio.Channel, invoker_pb2_grpc.InvokerStub]:
    channel = grpc.aio.insecure_channel(address)
    return channel, invoker_pb2_grpc.InvokerStub(channel)


async def wait_for_status(
    stub: invoker_pb2_grpc.InvokerStub, invocation_id: str, statuses: set[Any], timeout_s: float = 30
) -> invoker_pb2.Invocation:
    """The invocation's record once its status is one of `statuses` (`eventually`, asking the invoker)."""
    seen: list[invoker_pb2.Invocation] = []

    async def reached() -> bool:
        try:
            response = await stub.GetInvocation(invoker_pb2.GetInvocationRequest(id=invocation_id))
        except grpc.aio.AioRpcError as error:
            if error.code() != grpc.StatusCode.NOT_FOUND:
                raise
            return False
        seen[:] = [response.invocation]
        return response.invocation.status in statuses

    try:
        await eventually(reached, timeout_s, f"invocation {invocation_id} reaching {statuses}")
    except AssertionError as error:
        raise AssertionError(f"{error}; last seen: {seen[0] if seen else 'not found'}") from None
    return seen[0]


async def no_journals(sdk: Client) -> bool:
    """The journal stream holds no invocation's journal (every partition lists no `j.` subject)."""
    route = await sdk.route("invoker:journal")
    for partition in range(len(route.partitions)):

        async def subjects(node: NodeClient, index: int = partition) -> list[str]:
            return await node.list_subjects("invoker:journal", "j.", index)

        if await sdk.on_leader("invoker:journal", partition, subjects):
            return False
    return True
