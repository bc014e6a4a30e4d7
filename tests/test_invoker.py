"""The invoker runs handlers written with Restate's Python SDK (restate-sdk 0.4.1, service
protocol V2) from Weir streams (issue 31): a real cluster, a real invoker process, handler
deployments under hypercorn, all over their real transports (gRPC to the invoker, HTTP/2 from the
invoker to the deployments)."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import grpc
import pytest
from weir import Client, stream_config
from weir.v1 import invoker_pb2, invoker_pb2_grpc
from weir_cli.launcher import InvokerHandle, LocalCluster
from weir_invoker import ids

from tests.conftest import eventually, start_cluster
from tests.invoker.harness import APP, APP_REQUEST_RESPONSE, Deployment, invoker_stub, no_journals, wait_for_status

pytestmark = pytest.mark.timeout(180)

Status = invoker_pb2.InvocationStatus
FINISHED = {Status.INVOCATION_STATUS_COMPLETED, Status.INVOCATION_STATUS_FAILED, Status.INVOCATION_STATUS_CANCELLED}
INVOKER_ENV = {
    "WEIR_INVOKER_INACTIVITY_TIMEOUT_MS": "1000",
    "WEIR_INVOKER_RETRY_INITIAL_DELAY_MS": "200",
    "WEIR_INVOKER_RETRY_MAX_DELAY_MS": "2000",
}


@pytest.fixture(scope="module")
def invoker_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    local = start_cluster(tmp_path_factory.mktemp("invoker-cluster"), nodes=3, routers=1)
    yield local
    local.stop()


@pytest.fixture(scope="module")
def invoker(invoker_cluster: LocalCluster) -> Iterator[InvokerHandle]:
    handle = invoker_cluster.start_invoker(env=INVOKER_ENV)
    yield handle
    handle.kill()


@pytest.fixture(scope="module")
def deployment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployment]:
    started = Deployment(APP, directory=tmp_path_factory.mktemp("handlers")).start()
    yield started
    started.kill()


@pytest.fixture(scope="module")
async def stub(invoker: InvokerHandle, deployment: Deployment) -> AsyncIterator[invoker_pb2_grpc.InvokerStub]:
    channel, invoker_stub_ = invoker_stub(invoker.address)
    await invoker_stub_.RegisterDeployment(invoker_pb2.RegisterDeploymentRequest(url=deployment.url))
    yield invoker_stub_
    await channel.close()


@pytest.fixture(scope="module")
async def sdk(invoker_cluster: LocalCluster) -> AsyncIterator[Client]:
    async with Client(invoker_cluster.router_addresses) as client:
        yield client


async def invoke(
    stub: invoker_pb2_grpc.InvokerStub, target: str, value: object, key: str = "", timeout_s: float = 30
) -> invoker_pb2.Invocation:
    service, handler = target.split("/")
    request = invoker_pb2.InvokeRequest(service=service, handler=handler, key=key, input=json.dumps(value).encode())
    started = await stub.Invoke(request)
    return await wait_for_status(stub, started.invocation.id, FINISHED, timeout_s)


async def status_code(call: object) -> grpc.StatusCode:
    with pytest.raises(grpc.aio.AioRpcError) as raised:
        await call  # type: ignore[misc]
    return raised.value.code()


def test_the_kept_proto_is_the_seed_laid_out_on_lines() -> None:
    import re

    seed = next(Path(__file__).resolve().parents[2].glob("shared/seeds/002_*.txt"), None)
    kept = Path(__file__).resolve().parents[1] / "proto/invoker/weir_invoker/restate/pb/protocol.proto"
    if seed is None:
        pytest.skip("the seeds are not beside this checkout")
    assert re.sub(r"\s+", " ", seed.read_text()).strip() == re.sub(r"\s+", " ", kept.read_text()).strip()


async def test_discovery_registers_what_the_deployment_serves(stub: invoker_pb2_grpc.InvokerStub) -> None:
    listed = await stub.ListDeployments(invoker_pb2.ListDeploymentsRequest())
    [deployment] = listed.deployments
    assert (deployment.protocol_mode, deployment.http_version) == ("BIDI_STREAM", "HTTP/2")
    assert (deployment.min_protocol_version, deployment.max_protocol_version) == (2, 2)
    kinds = {service.name: service.kind for service in deployment.services}
    assert kinds == {
        "counter": "VIRTUAL_OBJECT",
        "effects": "SERVICE",
        "order_flow": "WORKFLOW",
        "once_flow": "WORKFLOW",
        "saga": "SERVICE",
    }
    handlers = {(s.name, h.name): h.kind for s in deployment.services for h in s.handlers}
    assert handlers[("counter", "add")] == "EXCLUSIVE" and handlers[("counter", "current")] == "SHARED"
    assert deployment.server.startswith("restate-sdk-python/0.4")


async def test_a_counter_object_runs_each_key_in_partition_order(
    stub: invoker_pb2_grpc.InvokerStub, sdk: Client
) -> None:
    await sdk.create_stream(stream_config("deltas", subjects=["deltas.>"], partitions=2))
    subscription = invoker_pb2.Subscription(stream="deltas", service="counter", handler="add")
    created = await stub.CreateSubscription(invoker_pb2.CreateSubscriptionRequest(subscription=subscription))
    assert created.subscription.id == "deltas-counter-add" and created.subscription.consumer == "deltas-counter-add"
    sent: dict[str, list[int]] = {}
    for n in range(1, 31):
        key = f"k{n % 3}"
        sent.setdefault(key, []).append(n)
        await sdk.publish("deltas", "deltas.add", json.dumps(n).encode(), key=key.encode())

    async def all_done() -> bool:
        listed = await stub.ListInvocations(invoker_pb2.ListInvocationsRequest(service="counter"))
        done = [i for i in listed.invocations if i.subscription_id == "deltas-counter-add" and i.status in FINISHED]
        return len(done) == 30

    await eventually(all_done, 60, "30 invocations of counter/add")
    listed = await stub.ListInvocations(invoker_pb2.ListInvocationsRequest(service="counter"))
    outputs: dict[str, list[int]] = {}
    for invocation in sorted(listed.invocations, key=lambda i: (i.source_partition, i.source_seq)):
        assert invocation.status == Status.INVOCATION_STATUS_COMPLETED, invocation
        outputs.setdefault(invocation.key, []).append(json.loads(invocation.output))
    for key, deltas in sent.items():
        running = [sum(deltas[: i + 1]) for i in range(len(deltas))]
        assert outputs[key] == running, key  # one at a time, in publish order: each saw the one before
        current = await invoke(stub, "counter/current", None, key=key)
        assert json.loads(current.output) == sum(deltas)


async def test_a_side_effect_runs_once_and_a_sleep_sleeps(
    stub: invoker_pb2_grpc.InvokerStub, deployment: Deployment
) -> None:
    charged = await invoke(stub, "effects/charge", "order-1")
    assert json.loads(charged.output) == "charged-order-1"
    assert deployment.lines("charges").count("order-1") == 1
    started = time.monotonic()
    napped = await invoke(stub, "effects/nap", 1500)  # longer than the inactivity timeout: it suspends
    assert json.loads(napped.output) == "slept 1500"
    assert time.monotonic() - started >= 1.5
    assert napped.attempts >= 2, "it suspended during the sleep and was resumed by the timer"


async def test_an_awakeable_waits_until_it_is_resolved(
    stub: invoker_pb2_grpc.InvokerStub, deployment: Deployment
) -> None:
    request = invoker_pb2.InvokeRequest(service="effects", handler="wait_for_approval", input=b'"order-7"')
    started = await stub.Invoke(request)

    async def published() -> bool:
        return any(line.startswith("order-7 ") for line in deployment.lines("awakeables"))

    await eventually(published, 20, "the handler's awakeable id")
    awakeable_id = next(line.split()[1] for line in deployment.lines("awakeables") if line.startswith("order-7 "))
    await wait_for_status(stub, started.invocation.id, {Status.INVOCATION_STATUS_SUSPENDED}, 20)
    shown = await stub.GetInvocation(invoker_pb2.GetInvocationRequest(id=started.invocation.id))
    assert [entry.type_name for entry in shown.journal] == ["Input", "Awakeable"]
    assert shown.journal[1].summary == awakeable_id  # what an operator resolves it with
    await stub.CompleteAwakeable(invoker_pb2.CompleteAwakeableRequest(id=awakeable_id, value=b'"approved"'))
    done = await wait_for_status(stub, started.invocation.id, FINISHED)
    assert json.loads(done.output) == "order-7: approved"
    again = stub.CompleteAwakeable(invoker_pb2.CompleteAwakeableRequest(id=awakeable_id, value=b'"twice"'))
    assert await status_code(again) == grpc.StatusCode.NOT_FOUND  # its invocation has finished


def weir_cli(*arguments: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "weir_cli.cli", *arguments]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


async def test_an_awakeable_is_resolved_from_the_command_line(
    stub: invoker_pb2_grpc.InvokerStub, deployment: Deployment, invoker: InvokerHandle
) -> None:
    """The operator's path: `weir invocations show` prints the awakeable's id, `weir awakeables
    resolve` completes it, `weir invoke --wait` prints an output."""
    started = await stub.Invoke(
        invoker_pb2.InvokeRequest(service="effects", handler="wait_for_approval", input=b'"o-9"')
    )
    await wait_for_status(stub, started.invocation.id, {Status.INVOCATION_STATUS_SUSPENDED}, 20)
    shown = await asyncio.to_thread(
        weir_cli, "--json", "--invoker", invoker.address, "invocations", "show", started.invocation.id
    )
    assert shown.returncode == 0, shown.stderr
    awakeable_id = next(line.split()[1] for line in deployment.lines("awakeables") if line.startswith("o-9 "))
    assert awakeable_id in shown.stdout
    resolved = await asyncio.to_thread(
        weir_cli, "--invoker", invoker.address, "awakeables", "resolve", awakeable_id, '"signed"'
    )
    assert resolved.returncode == 0, resolved.stderr
    done = await wait_for_status(stub, started.invocation.id, FINISHED)
    assert json.loads(done.output) == "o-9: signed"
    invoked = await asyncio.to_thread(
        weir_cli, "--invoker", invoker.address, "invoke", "effects/charge", "--data", '"cli-1"', "--wait"
    )
    assert invoked.returncode == 0, invoked.stderr
    assert "charged-cli-1" in invoked.stdout
    refused = await asyncio.to_thread(weir_cli, "--invoker", invoker.address, "awakeables", "resolve", "prom_1x", "1")
    assert refused.returncode != 0 and "awakeable id" in refused.stderr


async def test_a_handler_calls_an_object(stub: invoker_pb2_grpc.InvokerStub) -> None:
    first = await invoke(stub, "effects/count_via_object", "called")
    second = await invoke(stub, "effects/count_via_object", "called")
    assert (json.loads(first.output), json.loads(second.output)) == (10, 20)


async def test_a_failing_handler_is_retried_with_backoff_until_it_succeeds(
    stub: invoker_pb2_grpc.InvokerStub, deployment: Deployment
) -> None:
    done = await invoke(stub, "effects/flaky", "f1")
    assert json.loads(done.output) == "ok after 3"
    assert done.attempts == 3 and "flaky failure 2 of f1" in done.last_failure


async def test_a_terminal_failure_is_dead_lettered(stub: invoker_pb2_grpc.InvokerStub, sdk: Client) -> None:
    await sdk.create_stream(stream_config("refusals", subjects=["refusals.>"]))
    await sdk.create_stream(stream_config("refusals-dead", subjects=["refusals.>"]))
    subscription = invoker_pb2.Subscription(
        stream="refusals", service="effects", handler="refuse", dead_letter_stream="refusals-dead"
    )
    await stub.CreateSubscription(invoker_pb2.CreateSubscriptionRequest(subscription=subscription))
    await sdk.publish("refusals", "refusals.one", b'"r1"', headers={"trace": "t-1"})

    async def dead_lettered() -> bool:
        info = await sdk.stream_info("refusals-dead")
        return info.msg_count >= 1

    await eventually(dead_lettered, 30, "the dead letter")
    async with sdk.consume("refusals-dead", "check") as messages:
        message = await anext(aiter(messages))
        await message.ack()
    assert (message.subject, message.payload) == ("refusals.one", b'"r1"')
    assert message.headers["trace"] == "t-1"
    assert message.headers["weir-invoker-failure-code"] == "422"
    assert message.headers["weir-invoker-failure-message"] == "refused r1"
    failed = await wait_for_status(stub, message.headers["weir-invoker-invocation"], FINISHED)
    assert failed.status == Status.INVOCATION_STATUS_FAILED and failed.attempts == 1


async def test_a_workflow_waits_on_its_promise(stub: invoker_pb2_grpc.InvokerStub) -> None:
    request = invoker_pb2.InvokeRequest(service="order_flow", handler="run", key="o-1", input=b'"o-1"')
    run = await stub.Invoke(request)
    await wait_for_status(stub, run.invocation.id, {Status.INVOCATION_STATUS_SUSPENDED}, 20)
    await invoke(stub, "order_flow/ship", "dhl", key="o-1")
    done = await wait_for_status(stub, run.invocation.id, FINISHED)
    assert json.loads(done.output) == "o-1 shipped by dhl"


async def test_a_workflow_runs_once_per_key(stub: invoker_pb2_grpc.InvokerStub, deployment: Deployment) -> None:
    """Restate's workflows: a second submit of run for a key (an Invoke while it runs, a handler's
    call, an Invoke after it finished) runs nothing; each gets the first run's result. The shared
    handler go runs every time it is invoked."""
    first = await stub.Invoke(invoker_pb2.InvokeRequest(service="once_flow", handler="run", key="wf1", input=b'"a"'))
    await wait_for_status(stub, first.invocation.id, {Status.INVOCATION_STATUS_SUSPENDED}, 20)
    second = await stub.Invoke(invoker_pb2.InvokeRequest(service="once_flow", handler="run", key="wf1", input=b'"b"'))
    assert second.invocation.id == first.invocation.id  # attached to the running one
    assert second.invocation.status not in FINISHED
    caller = await stub.Invoke(invoker_pb2.InvokeRequest(service="effects", handler="attach_to_flow", input=b'"wf1"'))
    await wait_for_status(stub, caller.invocation.id, {Status.INVOCATION_STATUS_SUSPENDED}, 20)
    await invoke(stub, "once_flow/go", "east", key="wf1")
    done = await wait_for_status(stub, first.invocation.id, FINISHED)
    assert json.loads(done.output) == "a went east"
    called = await wait_for_status(stub, caller.invocation.id, FINISHED)
    assert called.output == done.output
    after = await stub.Invoke(invoker_pb2.InvokeRequest(service="once_flow", handler="run", key="wf1", input=b'"c"'))
    assert (after.invocation.id, after.invocation.status) == (first.invocation.id, Status.INVOCATION_STATUS_COMPLETED)
    assert after.invocation.output == done.output
    again = await invoke(stub, "once_flow/go", "west", key="wf1")  # a shared handler still runs
    assert again.status == Status.INVOCATION_STATUS_FAILED and again.failure.code == 409  # promise already set
    assert deployment.lines("workflow-runs") == ["wf1 a"]  # the body's side effect ran once


async def test_a_workflows_messages_of_one_key_run_it_once(
    stub: invoker_pb2_grpc.InvokerStub, sdk: Client, deployment: Deployment
) -> None:
    """A subscription to a workflow's run: a second message for a key is acknowledged without a
    second run, and the run's output is replied once."""
    await sdk.create_stream(stream_config("flows", subjects=["flows.>"]))
    await sdk.create_stream(stream_config("flow-replies", subjects=["flows.>"]))
    subscription = invoker_pb2.Subscription(
        stream="flows", service="once_flow", handler="run", reply_stream="flow-replies"
    )
    created = await stub.CreateSubscription(invoker_pb2.CreateSubscriptionRequest(subscription=subscription))
    for order in ("m1", "m2"):
        await sdk.publish("flows", "flows.start", json.dumps(order).encode(), key=b"wf-m", ack_level="all")

    async def both_admitted() -> bool:
        info = await sdk.consumer_info("flows", created.subscription.consumer)
        return info.acked_total == 2

    await eventually(both_admitted, 30, "both messages acknowledged")
    run_id = ids.for_workflow_run("once_flow", "wf-m")
    await wait_for_status(stub, run_id, {Status.INVOCATION_STATUS_SUSPENDED}, 20)
    await invoke(stub, "once_flow/go", "north", key="wf-m")
    done = await wait_for_status(stub, run_id, FINISHED)
    assert json.loads(done.output) == "m1 went north"
    assert [line for line in deployment.lines("workflow-runs") if line.startswith("wf-m")] == ["wf-m m1"]

    async def replied() -> bool:
        return (await sdk.stream_info("flow-replies")).msg_count >= 1

    await eventually(replied, 30, "the run's reply")
    assert (await sdk.stream_info("flow-replies")).msg_count == 1


async def test_a_cancelled_invocation_ends_with_409(stub: invoker_pb2_grpc.InvokerStub) -> None:
    started = await stub.Invoke(invoker_pb2.InvokeRequest(service="effects", handler="nap", input=b"600000"))
    await wait_for_status(stub, started.invocation.id, {Status.INVOCATION_STATUS_SUSPENDED}, 20)
    await stub.CancelInvocation(invoker_pb2.CancelInvocationRequest(id=started.invocation.id))
    done = await wait_for_status(stub, started.invocation.id, FINISHED)
    assert done.status == Status.INVOCATION_STATUS_CANCELLED
    assert (done.failure.code, done.failure.message) == (409, "cancelled")
    again = stub.CancelInvocation(invoker_pb2.CancelInvocationRequest(id=started.invocation.id))
    assert await status_code(again) == grpc.StatusCode.FAILED_PRECONDITION


async def test_a_running_invocation_is_cancelled_at_once(stub: invoker_pb2_grpc.InvokerStub, tmp_path: Path) -> None:
    """An open attempt (the handler awaits an awakeable; cancelled as soon as it is seen running,
    well inside the 1 s inactivity timeout) is stopped at once, not waited out."""
    started = await stub.Invoke(invoker_pb2.InvokeRequest(service="effects", handler="wait_for_approval", input=b'"x"'))
    running = await wait_for_status(stub, started.invocation.id, {Status.INVOCATION_STATUS_RUNNING}, 20)
    assert running.deployment_id.startswith("dp_")
    began = time.monotonic()
    await stub.CancelInvocation(invoker_pb2.CancelInvocationRequest(id=started.invocation.id))
    done = await wait_for_status(stub, started.invocation.id, FINISHED, 10)
    assert done.status == Status.INVOCATION_STATUS_CANCELLED and time.monotonic() - began < 5


async def test_a_cancel_lets_the_handler_compensate_and_cancels_its_child(
    stub: invoker_pb2_grpc.InvokerStub, deployment: Deployment
) -> None:
    """Cancel is not a kill (Restate's cancellation): the parent, awaiting its child's call, and the
    child, asleep, each get a TerminalError (409 cancelled) where they await; the child releases,
    the parent compensates (a ctx.run and a call, which run as usual) and lets the error through."""
    started = await stub.Invoke(invoker_pb2.InvokeRequest(service="saga", handler="book", input=b'"t1"'))
    children: list[invoker_pb2.Invocation] = []

    async def child_asleep() -> bool:
        listed = await stub.ListInvocations(invoker_pb2.ListInvocationsRequest(service="saga"))
        children[:] = [i for i in listed.invocations if i.parent_id == started.invocation.id]
        return bool(children) and children[0].status == Status.INVOCATION_STATUS_SUSPENDED

    await eventually(child_asleep, 30, "the child's sleep")
    await stub.CancelInvocation(invoker_pb2.CancelInvocationRequest(id=started.invocation.id))
    done = await wait_for_status(stub, started.invocation.id, FINISHED)
    assert done.status == Status.INVOCATION_STATUS_CANCELLED
    assert (done.failure.code, done.failure.message) == (409, "cancelled")
    child = await wait_for_status(stub, children[0].id, FINISHED)
    assert child.status == Status.INVOCATION_STATUS_CANCELLED
    assert deployment.lines("saga") == [
        "reserve t1",
        "hold t1 released after 409 cancelled",
        "refund t1 after 409 cancelled",
        "compensated t1",
    ]


async def test_bad_requests_get_clear_errors(
    stub: invoker_pb2_grpc.InvokerStub, invoker: InvokerHandle, deployment: Deployment
) -> None:
    cases = [
        (
            stub.RegisterDeployment(invoker_pb2.RegisterDeploymentRequest(url="ftp://x")),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (
            stub.RegisterDeployment(invoker_pb2.RegisterDeploymentRequest(url="http://127.0.0.1:1")),
            grpc.StatusCode.FAILED_PRECONDITION,
        ),
        (
            stub.RegisterDeployment(
                invoker_pb2.RegisterDeploymentRequest(url=f"http://127.0.0.1:{invoker.metrics_port}")
            ),
            grpc.StatusCode.FAILED_PRECONDITION,
        ),
        (
            stub.CreateSubscription(
                invoker_pb2.CreateSubscriptionRequest(
                    subscription=invoker_pb2.Subscription(stream="nowhere", service="effects", handler="charge")
                )
            ),
            grpc.StatusCode.NOT_FOUND,
        ),
        (
            stub.CreateSubscription(
                invoker_pb2.CreateSubscriptionRequest(
                    subscription=invoker_pb2.Subscription(stream="deltas", service="effects", handler="nothing")
                )
            ),
            grpc.StatusCode.NOT_FOUND,
        ),
        (stub.Invoke(invoker_pb2.InvokeRequest(service="counter", handler="add")), grpc.StatusCode.INVALID_ARGUMENT),
        (
            stub.Invoke(invoker_pb2.InvokeRequest(service="effects", handler="charge", key="k")),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (stub.GetInvocation(invoker_pb2.GetInvocationRequest(id="inv_zz")), grpc.StatusCode.INVALID_ARGUMENT),
        (stub.GetInvocation(invoker_pb2.GetInvocationRequest(id="inv_" + "0" * 32)), grpc.StatusCode.NOT_FOUND),
        (
            stub.CompleteAwakeable(invoker_pb2.CompleteAwakeableRequest(id="prom_1xyz")),
            grpc.StatusCode.INVALID_ARGUMENT,
        ),
        (stub.DeleteSubscription(invoker_pb2.DeleteSubscriptionRequest(id="none")), grpc.StatusCode.NOT_FOUND),
        (stub.RemoveDeployment(invoker_pb2.RemoveDeploymentRequest(id="dp_none")), grpc.StatusCode.NOT_FOUND),
    ]
    for call, expected in cases:
        assert await status_code(call) == expected
    with pytest.raises(grpc.aio.AioRpcError) as not_an_sdk:
        await stub.RegisterDeployment(invoker_pb2.RegisterDeploymentRequest(url=deployment.url + "/elsewhere"))
    assert "answered 404" in (not_an_sdk.value.details() or "")


async def test_request_response_deployments_suspend_and_resume(
    stub: invoker_pb2_grpc.InvokerStub, tmp_path: Path, deployment: Deployment
) -> None:
    request_response = Deployment(directory=tmp_path / "rr", app=APP_REQUEST_RESPONSE).start()
    try:
        registered = await stub.RegisterDeployment(invoker_pb2.RegisterDeploymentRequest(url=request_response.url))
        assert registered.deployment.protocol_mode == "REQUEST_RESPONSE"
        charged = await invoke(stub, "effects/charge", "order-rr")
        assert json.loads(charged.output) == "charged-order-rr"
        assert request_response.lines("charges") == ["order-rr"] and "order-rr" not in deployment.lines("charges")
        napped = await invoke(stub, "effects/nap", 300)
        assert json.loads(napped.output) == "slept 300"
        counted = await invoke(stub, "effects/count_via_object", "rr")
        assert json.loads(counted.output) == 10
    finally:
        await stub.RegisterDeployment(invoker_pb2.RegisterDeploymentRequest(url=deployment.url))  # services move back
        request_response.kill()


async def test_an_http1_only_deployment_runs_in_request_response_mode(
    stub: invoker_pb2_grpc.InvokerStub, tmp_path: Path, deployment: Deployment
) -> None:
    """A deployment that speaks HTTP/1.1 only (uvicorn; a function URL is the same): discovery falls
    back to HTTP/1.1, the SDK answers REQUEST_RESPONSE, and invocations run over httpx (one request
    body, one response body per attempt), suspending and resuming as any request-response one."""
    http1 = Deployment(APP, directory=tmp_path / "h1", http1_only=True).start()
    try:
        registered = await stub.RegisterDeployment(invoker_pb2.RegisterDeploymentRequest(url=http1.url))
        assert (registered.deployment.http_version, registered.deployment.protocol_mode) == (
            "HTTP/1.1",
            "REQUEST_RESPONSE",
        )
        charged = await invoke(stub, "effects/charge", "order-h1")
        assert json.loads(charged.output) == "charged-order-h1" and http1.lines("charges") == ["order-h1"]
        napped = await invoke(stub, "effects/nap", 200)
        assert json.loads(napped.output) == "slept 200"
        counted = await invoke(stub, "effects/count_via_object", "h1")
        assert json.loads(counted.output) == 10
    finally:
        await stub.RegisterDeployment(invoker_pb2.RegisterDeploymentRequest(url=deployment.url))  # services move back
        http1.kill()


async def test_more_invocations_than_a_deployment_serves_on_one_connection(
    stub: invoker_pb2_grpc.InvokerStub, sdk: Client
) -> None:
    """hypercorn ends an HTTP/2 connection after 1,000 requests (a GOAWAY): the invoker moves to a
    new connection before that, so 1,500 invocations each finish in their first attempt, none hangs."""
    await sdk.create_stream(stream_config("reads", subjects=["reads.>"], partitions=4))
    subscription = invoker_pb2.Subscription(stream="reads", service="counter", handler="current")
    created = await stub.CreateSubscription(invoker_pb2.CreateSubscriptionRequest(subscription=subscription))
    futures = [await sdk.publish_nowait("reads", "reads.one", b"null", key=b"r%d" % (n % 50)) for n in range(1500)]
    await sdk.flush()
    for future in futures:
        await future

    async def all_done() -> bool:
        listed = await stub.ListInvocations(invoker_pb2.ListInvocationsRequest(service="counter", limit=10_000))
        mine = [i for i in listed.invocations if i.subscription_id == created.subscription.id and i.status in FINISHED]
        return len(mine) == 1500

    await eventually(all_done, 90, "1,500 invocations finished")
    listed = await stub.ListInvocations(invoker_pb2.ListInvocationsRequest(service="counter", limit=10_000))
    mine = [i for i in listed.invocations if i.subscription_id == created.subscription.id]
    assert {(i.status, i.attempts) for i in mine} == {(Status.INVOCATION_STATUS_COMPLETED, 1)}


async def test_finished_invocations_leave_no_journal(stub: invoker_pb2_grpc.InvokerStub, sdk: Client) -> None:
    """A finished invocation's journal is deleted (in batches, every 100 ms): once every invocation
    of this module has finished, the journal stream holds no subject."""
    listed = await stub.ListInvocations(invoker_pb2.ListInvocationsRequest())
    assert listed.invocations and all(i.status in FINISHED for i in listed.invocations)

    await eventually(lambda: no_journals(sdk), 10, "every finished invocation's journal deleted")
