"""Standing by and taking over: the loop that holds the lease (lease.py) and, while it is held,
drives invocations and subscriptions. Every lease_ms / 3 it acquires or renews the lease; an active
invoker (and a standby) also reloads the registry from the store then, so a deployment or a
subscription registered through another invoker is picked up (the active one starts new
subscriptions and stops deleted ones)."""

from __future__ import annotations

import asyncio
import contextlib
import logging

from weir.errors import NoSuchBucketError, NoSuchStreamError, WeirError

from weir_invoker.ingress import Ingress
from weir_invoker.lease import Lease
from weir_invoker.runtime import Invoker

logger = logging.getLogger(__name__)


class Leadership:
    def __init__(self, invoker: Invoker, ingress: Ingress, lease: Lease) -> None:
        self.invoker = invoker
        self.ingress = ingress
        self.lease = lease
        self.active = False
        self.lost = asyncio.Event()  # set when the lease was lost: the process must stop driving
        self._ticking = asyncio.Lock()

    async def tick_now(self) -> None:
        """Acquire (or renew) now instead of at the next tick: the first deployment was just
        registered, so the invoker that registered it is usually the one that becomes active."""
        async with self._ticking:
            await self._tick()

    async def run(self) -> None:
        interval_s = self.lease.lease_ms / 3000
        while not self.lost.is_set():
            try:
                async with self._ticking:
                    await self._tick()
            except WeirError as error:  # the cluster is briefly unreachable: the next tick tries again
                logger.warning("invoker %s: lease tick failed: %s", self.lease.holder, error)
            if self.active and not self.lease.held:
                logger.error("invoker %s lost the lease: it stops driving invocations", self.lease.holder)
                self.lost.set()
                return
            await asyncio.sleep(interval_s)

    async def _tick(self) -> None:
        if not self.active:
            if await self.lease.try_acquire():
                await self.invoker.start()
                self.active = True
                await self._sync_subscriptions()
            else:  # a standby answers registry calls: it keeps its view current too
                with contextlib.suppress(NoSuchBucketError, NoSuchStreamError):
                    await self.invoker.registry.load()
            return
        if await self.lease.renew():
            with contextlib.suppress(NoSuchBucketError, NoSuchStreamError):
                await self.invoker.registry.load()
            await self._sync_subscriptions()

    async def _sync_subscriptions(self) -> None:
        wanted = self.invoker.registry.subscriptions
        for subscription_id in [known for known in self.ingress.consumers if known not in wanted]:
            await self.ingress.stop(subscription_id)
        for subscription in wanted.values():
            self.ingress.start(subscription)

    async def holder(self) -> str:
        """The active invoker's id ('' when none is)."""
        return self.lease.holder if self.active else await self.lease.current_holder()
