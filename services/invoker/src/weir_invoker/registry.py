"""Registered deployments and subscriptions: which deployment serves a service, and what a
subscription binds (validation is pure; the records live in the bucket `invoker-registry`)."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from weir.errors import (
    AlreadyExistsError,
    FailedPreconditionError,
    InvalidArgumentError,
    NoSuchDeploymentError,
    NoSuchHandlerError,
    NoSuchSubscriptionError,
)
from weir.subjects import validate_name, validate_pattern
from weir.v1 import invoker_pb2

from weir_invoker.store import RegistryStore

_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
STARTS = ("earliest", "latest")


@dataclass(frozen=True)
class Target:
    """A handler to invoke: its deployment, service and handler as the manifest gives them."""

    deployment: invoker_pb2.Deployment
    service: invoker_pb2.DeployedService
    handler: invoker_pb2.DeployedHandler

    @property
    def keyed(self) -> bool:
        """A virtual object's or workflow's handler: invocations carry a key."""
        return self.service.kind in ("VIRTUAL_OBJECT", "WORKFLOW")

    @property
    def exclusive(self) -> bool:
        """Runs alone per key (an object's exclusive handler, a workflow's run handler)."""
        return self.keyed and self.handler.kind in ("EXCLUSIVE", "WORKFLOW")

    @property
    def bidi(self) -> bool:
        return self.deployment.protocol_mode == "BIDI_STREAM"


def default_subscription_id(subscription: invoker_pb2.Subscription) -> str:
    """`<stream>-<service>-<handler>` with every other character as '-', cut to 64 (pure)."""
    raw = f"{subscription.stream}-{subscription.service}-{subscription.handler}"
    return re.sub(r"[^A-Za-z0-9_-]", "-", raw)[:64]


def normalized_subscription(subscription: invoker_pb2.Subscription) -> invoker_pb2.Subscription:
    """The subscription with its defaults filled in (pure). Errors: InvalidArgumentError, the
    name errors of weir.subjects (a bad stream, consumer or dead-letter stream name, a bad filter)."""
    result = invoker_pb2.Subscription()
    result.CopyFrom(subscription)
    if not result.stream or not result.service or not result.handler:
        raise InvalidArgumentError("a subscription needs stream, service and handler")
    result.id = result.id or default_subscription_id(result)
    if not _ID.fullmatch(result.id):
        raise InvalidArgumentError(f"subscription id {result.id!r}: use 1..64 characters of A-Z a-z 0-9 - _")
    result.consumer = result.consumer or result.id
    result.start = result.start or "earliest"
    if result.start not in STARTS:
        raise InvalidArgumentError(f"start {result.start!r}: expected earliest or latest")
    validate_name(result.stream, "stream")
    validate_name(result.consumer, "consumer")
    for name in (result.dead_letter_stream, result.reply_stream):
        if name:
            validate_name(name, "stream")
    if result.filter_subject:
        validate_pattern(result.filter_subject)
    result.created_at_ms = result.created_at_ms or int(time.time() * 1000)
    return result


def same_binding(a: invoker_pb2.Subscription, b: invoker_pb2.Subscription) -> bool:
    fields = ("stream", "consumer", "filter_subject", "service", "handler", "dead_letter_stream", "reply_stream")
    return all(getattr(a, name) == getattr(b, name) for name in fields)


class Registry:
    def __init__(self, store: RegistryStore) -> None:
        self.store = store
        self.deployments: dict[str, invoker_pb2.Deployment] = {}
        self.subscriptions: dict[str, invoker_pb2.Subscription] = {}
        self._services: dict[str, tuple[str, invoker_pb2.DeployedService]] = {}  # name -> (deployment id, service)

    async def load(self) -> None:
        """Read the registry from the store again (what another invoker registered included)."""
        deployments, subscriptions = await self.store.load()
        self.deployments, self._services = {}, {}
        for deployment in sorted(deployments, key=lambda item: item.registered_at_ms):
            self._add(deployment)
        self.subscriptions = {subscription.id: subscription for subscription in subscriptions}

    def _add(self, deployment: invoker_pb2.Deployment) -> None:
        self.deployments[deployment.id] = deployment
        for service in deployment.services:
            self._services[service.name] = (deployment.id, service)

    async def add_deployment(self, deployment: invoker_pb2.Deployment) -> None:
        """Register (or refresh) a deployment; its services move to it."""
        await self.store.put_deployment(deployment)
        self._add(deployment)

    async def remove_deployment(self, deployment_id: str) -> None:
        """Errors: NoSuchDeploymentError, FailedPreconditionError (a subscription targets it)."""
        deployment = self.deployments.get(deployment_id)
        if deployment is None:
            raise NoSuchDeploymentError(f"deployment {deployment_id!r} is not registered", deployment=deployment_id)
        served = {name for name, (owner, _) in self._services.items() if owner == deployment_id}
        users = sorted(s.id for s in self.subscriptions.values() if s.service in served)
        if users:
            raise FailedPreconditionError(
                f"deployment {deployment_id} serves the subscriptions {', '.join(users)}: delete them first"
            )
        await self.store.delete("deployment", deployment_id)
        del self.deployments[deployment_id]
        for name in served:
            del self._services[name]
        for other in self.deployments.values():  # a service another deployment also serves goes back to it
            for service in other.services:
                self._services.setdefault(service.name, (other.id, service))

    def target(self, service: str, handler: str) -> Target:
        """Errors: NoSuchHandlerError."""
        found = self._services.get(service)
        if found is not None:
            deployment_id, deployed = found
            for candidate in deployed.handlers:
                if candidate.name == handler:
                    return Target(self.deployments[deployment_id], deployed, candidate)
        raise NoSuchHandlerError(
            f"no registered deployment serves {service}/{handler}: register its deployment first",
            service=service,
            handler=handler,
        )

    async def add_subscription(self, subscription: invoker_pb2.Subscription) -> tuple[invoker_pb2.Subscription, bool]:
        """(the stored subscription, created). Errors: InvalidArgumentError, NoSuchHandlerError,
        AlreadyExistsError (the id is bound otherwise)."""
        self.target(subscription.service, subscription.handler)
        existing = self.subscriptions.get(subscription.id)
        if existing is not None:
            if same_binding(existing, subscription):
                return existing, False
            raise AlreadyExistsError(
                f"subscription {subscription.id!r} exists with another binding: delete it first or pick another id",
                subscription=subscription.id,
            )
        await self.store.put_subscription(subscription)
        self.subscriptions[subscription.id] = subscription
        return subscription, True

    async def remove_subscription(self, subscription_id: str) -> invoker_pb2.Subscription:
        subscription = self.subscriptions.get(subscription_id)
        if subscription is None:
            raise NoSuchSubscriptionError(
                f"subscription {subscription_id!r} does not exist", subscription=subscription_id
            )
        await self.store.delete("subscription", subscription_id)
        # A reload of the registry during the delete may have dropped it already (CI once: KeyError).
        self.subscriptions.pop(subscription_id, None)
        return subscription
