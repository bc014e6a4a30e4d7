"""One active invoker per cluster: a lease in the bucket `invoker-registry` (key `lease`).

Several invokers may run (for availability); the one holding the lease drives invocations and
subscriptions, the others stand by and take it over when it lapses. The lease is a key-value entry
written with a TTL (`lease_ms`): an invoker acquires it with Create (only when the key has no
value: never written, or expired), and its holder renews it every lease_ms / 3 with Update on the
revision it last wrote, so a holder that paused past its TTL finds another revision and knows it
lost the lease. A holder that cannot renew within lease_ms of its last renewal stops driving at
once (the process exits, and its supervisor starts it again as a standby): another invoker may
hold the lease by then. The bucket exists once a deployment was registered; before that there is
nothing to drive and every invoker waits.

Source: the lease pattern of NATS JetStream's KV (a key with a TTL, compare-and-set renewal) and
Kafka's controller; what a lease gives here is single-writer journals between invokers.
"""

from __future__ import annotations

import logging
import time

from weir.errors import NoSuchBucketError, WeirError, WrongRevisionError
from weir.kv import KeyValue

from weir_invoker.store import REGISTRY_BUCKET

logger = logging.getLogger(__name__)

LEASE_KEY = "lease"


class Lease:
    def __init__(self, kv: KeyValue, holder: str, lease_ms: int) -> None:
        self.kv = kv
        self.holder = holder
        self.lease_ms = lease_ms
        self.revision = 0
        self.renewed_at = 0.0  # monotonic time of the last successful write

    @property
    def held(self) -> bool:
        """This invoker holds the lease and its last renewal is within lease_ms."""
        return self.revision > 0 and time.monotonic() - self.renewed_at < self.lease_ms / 1000

    async def try_acquire(self) -> bool:
        """Take the lease if nobody holds it. False when another holds it or there is no bucket yet."""
        started = time.monotonic()
        try:
            self.revision = await self.kv.create(REGISTRY_BUCKET, LEASE_KEY, self.holder.encode(), ttl_ms=self.lease_ms)
        except (WrongRevisionError, NoSuchBucketError):
            return False
        self.renewed_at = started
        logger.info("invoker %s holds the lease (revision %d)", self.holder, self.revision)
        return True

    async def renew(self) -> bool:
        """Extend the lease. False when it was lost (another revision: it lapsed and was taken);
        a failure to reach the cluster is retried by the caller until `held` turns false."""
        started = time.monotonic()
        try:
            self.revision = await self.kv.update(
                REGISTRY_BUCKET, LEASE_KEY, self.holder.encode(), self.revision, ttl_ms=self.lease_ms
            )
        except (WrongRevisionError, NoSuchBucketError):
            self.revision = 0
            return False
        except WeirError as error:
            logger.warning("invoker %s: renewing the lease failed: %s", self.holder, error)
            return self.held
        self.renewed_at = started
        return True

    async def current_holder(self) -> str:
        """Who holds the lease ('' when nobody does)."""
        try:
            entry = await self.kv.get(REGISTRY_BUCKET, LEASE_KEY)
        except NoSuchBucketError:
            return ""
        return "" if entry is None else entry.value.decode(errors="replace")
