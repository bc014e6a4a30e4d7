"""The invoker's durability under SIGKILL (issue 31): a killed handler deployment replays its
invocations without repeating a stored side effect; a killed invoker together with the node holding
the journal's primary loses nothing, and every message's invocation takes effect exactly once."""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from weir import Client, stream_config
from weir.v1 import invoker_pb2
from weir_cli.launcher import LocalCluster

from tests.conftest import eventually, start_cluster
from tests.invoker.harness import APP, Deployment, invoker_stub, no_journals

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

Status = invoker_pb2.InvocationStatus
FINISHED = {Status.INVOCATION_STATUS_COMPLETED, Status.INVOCATION_STATUS_FAILED, Status.INVOCATION_STATUS_CANCELLED}
INVOKER_ENV = {"WEIR_INVOKER_RETRY_INITIAL_DELAY_MS": "100", "WEIR_INVOKER_RETRY_MAX_DELAY_MS": "1000"}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[LocalCluster]:
    local = start_cluster(tmp_path / "cluster", nodes=3, routers=1)
    yield local
    local.stop()


async def finished_of(stub: object, subscription_id: str) -> list[invoker_pb2.Invocation]:
    listed = await stub.ListInvocations(invoker_pb2.ListInvocationsRequest(limit=1000))  # type: ignore[attr-defined]
    return [i for i in listed.invocations if i.subscription_id == subscription_id and i.status in FINISHED]


async def test_a_killed_deployment_replays_without_repeating_a_stored_side_effect(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    directory = tmp_path / "handlers"
    handler_env = {"WEIR_TEST_PAUSE_AFTER_RUN_MS": "3000"}  # the same code after the restart (else: a journal mismatch)
    deployment = Deployment(APP, directory=directory, env=handler_env).start()
    invoker = cluster.start_invoker(env=INVOKER_ENV)
    channel, stub = invoker_stub(invoker.address)
    try:
        await stub.RegisterDeployment(invoker_pb2.RegisterDeploymentRequest(url=deployment.url))
        async with Client(cluster.router_addresses) as sdk:
            await sdk.create_stream(stream_config("orders", subjects=["orders.>"], partitions=2, replicas=3))
            subscription = invoker_pb2.Subscription(stream="orders", service="effects", handler="charge")
            created = await stub.CreateSubscription(invoker_pb2.CreateSubscriptionRequest(subscription=subscription))
            orders = [f"order-{n}" for n in range(12)]
            for order in orders:
                await sdk.publish("orders", "orders.new", json.dumps(order).encode(), key=order.encode())

        async def all_sleeping() -> bool:
            listed = await stub.ListInvocations(invoker_pb2.ListInvocationsRequest(service="effects"))
            if len(listed.invocations) < len(orders):
                return False
            for invocation in listed.invocations:
                shown = await stub.GetInvocation(invoker_pb2.GetInvocationRequest(id=invocation.id))
                if [entry.type_name for entry in shown.journal][:3] != ["Input", "Run", "Sleep"]:
                    return False
            return True

        await eventually(all_sleeping, 60, "every order charged and sleeping")
        assert sorted(deployment.lines("charges")) == sorted(orders)
        deployment.kill()  # SIGKILL, mid-invocation: each is in its sleep, its charge stored
        replacement = Deployment(APP, directory=directory, env=handler_env, port=deployment.port).start()
        try:

            async def all_done() -> bool:
                return len(await finished_of(stub, created.subscription.id)) == len(orders)

            await eventually(all_done, 60, "every order's invocation finished")
            done = await finished_of(stub, created.subscription.id)
            assert {json.loads(i.output) for i in done} == {f"charged-{order}" for order in orders}
            assert all(i.status == Status.INVOCATION_STATUS_COMPLETED for i in done)
            assert sorted(replacement.lines("charges")) == sorted(orders), "a stored side effect ran again"
        finally:
            replacement.kill()
    finally:
        await channel.close()
        invoker.kill()
        deployment.kill()


async def test_a_killed_invoker_and_journal_primary_lose_nothing(cluster: LocalCluster, tmp_path: Path) -> None:
    deployment = Deployment(APP, directory=tmp_path / "handlers", env={"WEIR_TEST_SLOW_ADD_MS": "1500"}).start()
    env = {**INVOKER_ENV, "WEIR_INVOKER_REPLICAS": "3", "WEIR_INVOKER_INACTIVITY_TIMEOUT_MS": "500"}
    invoker = cluster.start_invoker(env=env)
    channel, stub = invoker_stub(invoker.address)
    sent: dict[str, list[int]] = {}
    try:
        await stub.RegisterDeployment(invoker_pb2.RegisterDeploymentRequest(url=deployment.url))
        async with Client(cluster.router_addresses) as sdk:
            await sdk.create_stream(stream_config("deltas", subjects=["deltas.>"], partitions=2, replicas=3))
            subscription = invoker_pb2.Subscription(stream="deltas", service="counter", handler="add_slowly")
            created = await stub.CreateSubscription(invoker_pb2.CreateSubscriptionRequest(subscription=subscription))
            for n in range(1, 25):
                key = f"k{n % 4}"
                sent.setdefault(key, []).append(n)
                await sdk.publish("deltas", "deltas.add", json.dumps(n).encode(), key=key.encode(), ack_level="all")

            async def some_mid_way() -> bool:
                listed = await stub.ListInvocations(invoker_pb2.ListInvocationsRequest(service="counter"))
                suspended = [i for i in listed.invocations if i.status == Status.INVOCATION_STATUS_SUSPENDED]
                return len(suspended) >= 3 and len(await finished_of(stub, created.subscription.id)) >= 2

            await eventually(some_mid_way, 60, "invocations finished and others mid-way")
            route = await sdk.route("invoker:journal", refresh=True)
            primary = route.partitions[0].primary.node_id
            [node] = [handle for handle in cluster.nodes if handle.name == primary]
            invoker.process.send_signal(signal.SIGKILL)  # type: ignore[union-attr]
            invoker.process.wait(10)  # type: ignore[union-attr]
            node.kill()
            await channel.close()
            invoker = cluster.start_invoker("invoker-2", env=env)
            channel, stub = invoker_stub(invoker.address)

            async def all_done() -> bool:
                return len(await finished_of(stub, created.subscription.id)) == 24

            await eventually(all_done, 120, "all 24 invocations finished after the failover")
            done = await finished_of(stub, created.subscription.id)
            assert all(i.status == Status.INVOCATION_STATUS_COMPLETED for i in done), [i.last_failure for i in done]
            outputs: dict[str, list[int]] = {}
            for invocation in sorted(done, key=lambda i: (i.source_partition, i.source_seq)):
                outputs.setdefault(invocation.key, []).append(json.loads(invocation.output))
            for key, deltas in sent.items():
                assert outputs[key] == [sum(deltas[: i + 1]) for i in range(len(deltas))], key
                request = invoker_pb2.InvokeRequest(service="counter", handler="current", key=key, input=b"null")
                current = await stub.Invoke(request)

                async def answered(invocation_id: str = current.invocation.id) -> bool:
                    got = await stub.GetInvocation(invoker_pb2.GetInvocationRequest(id=invocation_id))
                    return bool(got.invocation.status == Status.INVOCATION_STATUS_COMPLETED)

                await eventually(answered, 30, f"counter {key}")
                got = await stub.GetInvocation(invoker_pb2.GetInvocationRequest(id=current.invocation.id))
                assert json.loads(got.invocation.output) == sum(deltas), (
                    f"state of {key} took an effect twice or lost one"
                )
            # journals the killed invoker had not deleted yet were collected when invoker-2 took over
            await eventually(lambda: no_journals(sdk), 30, "no journal left behind")
    finally:
        await channel.close()
        invoker.kill()
        deployment.kill()


async def test_a_standby_takes_over_from_a_paused_invoker_which_then_stops(
    cluster: LocalCluster, tmp_path: Path
) -> None:
    """Two invokers: the active one drives, the other stands by (and refuses what needs the
    active one, naming it). SIGSTOP the active one past its lease: the standby takes the lease and
    finishes every invocation; the paused one, continued, finds its lease gone and exits (3)."""
    deployment = Deployment(APP, directory=tmp_path / "handlers", env={"WEIR_TEST_SLOW_ADD_MS": "1000"}).start()
    env = {**INVOKER_ENV, "WEIR_INVOKER_LEASE_MS": "2000", "WEIR_INVOKER_INACTIVITY_TIMEOUT_MS": "500"}
    first = cluster.start_invoker("invoker-a", env=env)
    channel, stub = invoker_stub(first.address)
    second = cluster.start_invoker("invoker-b", env=env)
    standby_channel, standby = invoker_stub(second.address)
    try:
        await stub.RegisterDeployment(invoker_pb2.RegisterDeploymentRequest(url=deployment.url))

        async def standby_knows() -> bool:  # it reloads the registry every lease_ms / 3
            listed = await standby.ListDeployments(invoker_pb2.ListDeploymentsRequest())
            return len(listed.deployments) == 1

        await eventually(standby_knows, 10, "the standby reading the registry")
        with pytest.raises(grpc.aio.AioRpcError) as refused:
            await standby.Invoke(invoker_pb2.InvokeRequest(service="counter", handler="add", key="k", input=b"1"))
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE
        assert "the active invoker is invoker-a" in (refused.value.details() or "")
        async with Client(cluster.router_addresses) as sdk:
            await sdk.create_stream(stream_config("steps", subjects=["steps.>"], partitions=2, replicas=3))
            subscription = invoker_pb2.Subscription(stream="steps", service="counter", handler="add_slowly")
            created = await standby.CreateSubscription(invoker_pb2.CreateSubscriptionRequest(subscription=subscription))
            for n in range(1, 13):
                await sdk.publish("steps", "steps.add", json.dumps(n).encode(), key=f"k{n % 3}".encode())

        async def started() -> bool:  # the active one picked the subscription up from the registry
            listed = await stub.ListInvocations(invoker_pb2.ListInvocationsRequest(service="counter"))
            return len(listed.invocations) >= 3

        await eventually(started, 30, "the active invoker running the subscription")
        first.process.send_signal(signal.SIGSTOP)  # type: ignore[union-attr]
        try:

            async def all_done() -> bool:
                return len(await finished_of(standby, created.subscription.id)) == 12

            await eventually(all_done, 90, "the standby finishing every invocation")
        finally:
            first.process.send_signal(signal.SIGCONT)  # type: ignore[union-attr]
        assert first.process.wait(30) == 3, "the paused invoker did not stop after losing its lease"  # type: ignore[union-attr]
        done = await finished_of(standby, created.subscription.id)
        assert all(i.status == Status.INVOCATION_STATUS_COMPLETED for i in done), [i.last_failure for i in done]
        for key in ("k0", "k1", "k2"):
            outputs = [
                json.loads(i.output)
                for i in sorted(done, key=lambda i: (i.source_partition, i.source_seq))
                if i.key == key
            ]
            deltas = [n for n in range(1, 13) if f"k{n % 3}" == key]
            assert outputs == [sum(deltas[: i + 1]) for i in range(len(deltas))], key
    finally:
        await channel.close()
        await standby_channel.close()
        first.kill()
        second.kill()
        deployment.kill()


async def test_a_workflow_runs_once_per_key_across_an_invoker_kill(cluster: LocalCluster, tmp_path: Path) -> None:
    """The rule is kept in the store, not in the invoker's memory: two submits racing start one run;
    after the invoker's SIGKILL its successor attaches a third submit to the same run, which runs
    the body's side effect once."""
    deployment = Deployment(APP, directory=tmp_path / "handlers").start()
    env = {**INVOKER_ENV, "WEIR_INVOKER_LEASE_MS": "2000", "WEIR_INVOKER_INACTIVITY_TIMEOUT_MS": "500"}
    invoker = cluster.start_invoker(env=env)
    channel, stub = invoker_stub(invoker.address)
    run = invoker_pb2.InvokeRequest(service="once_flow", handler="run", key="wf-k", input=b'"a"')
    try:
        await stub.RegisterDeployment(invoker_pb2.RegisterDeploymentRequest(url=deployment.url))
        raced = await asyncio.gather(stub.Invoke(run), stub.Invoke(run))
        assert raced[0].invocation.id == raced[1].invocation.id
        run_id = raced[0].invocation.id

        async def suspended() -> bool:
            got = await stub.GetInvocation(invoker_pb2.GetInvocationRequest(id=run_id))
            return bool(got.invocation.status == Status.INVOCATION_STATUS_SUSPENDED)

        await eventually(suspended, 30, "the run waiting on its promise")
        invoker.process.send_signal(signal.SIGKILL)  # type: ignore[union-attr]
        invoker.process.wait(10)  # type: ignore[union-attr]
        await channel.close()
        invoker = cluster.start_invoker("invoker-2", env=env)
        channel, stub = invoker_stub(invoker.address)
        submitted: list[invoker_pb2.InvokeResponse] = []

        async def submitted_again() -> bool:  # refused (UNAVAILABLE) until invoker-2 holds the lease
            try:
                submitted.append(await stub.Invoke(run))
            except grpc.aio.AioRpcError as error:
                if error.code() != grpc.StatusCode.UNAVAILABLE:
                    raise
                return False
            return True

        await eventually(submitted_again, 60, "invoker-2 active")
        assert submitted[0].invocation.id == run_id and submitted[0].invocation.status not in FINISHED
        go = invoker_pb2.InvokeRequest(service="once_flow", handler="go", key="wf-k", input=b'"on"')
        await stub.Invoke(go)

        async def finished() -> bool:
            got = await stub.GetInvocation(invoker_pb2.GetInvocationRequest(id=run_id))
            return got.invocation.status in FINISHED

        await eventually(finished, 60, "the run finished")
        after = await stub.Invoke(run)
        assert (after.invocation.id, json.loads(after.invocation.output)) == (run_id, "a went on")
        assert deployment.lines("workflow-runs") == ["wf-k a"]
    finally:
        await channel.close()
        invoker.kill()
        deployment.kill()
