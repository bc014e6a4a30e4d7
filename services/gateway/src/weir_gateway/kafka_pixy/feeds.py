"""The consumer-group memberships this gateway instance holds for ConsumeNAck: one `GroupFeed` per
(topic, group) asked for, each a Weir consumer-group member (`Client.consume`) with a small buffer.

kafka-pixy instances join a group through ZooKeeper and split its partitions; here each instance
joins through the router's QueryAssignment the same way, so several gateways behind the same routers
share a group's partitions, and a dead one's partitions move to the others after the group session
timeout. A feed nobody asked for within `idle_timeout_s` is left (its partitions go to the other
members and its buffered messages are handed back at once).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from dataclasses import dataclass, field

from weir import Client, Message, consumer_config
from weir.consuming import Subscription
from weir.errors import NoMessageError, OverloadedError

logger = logging.getLogger(__name__)

MAX_FEEDS = 10_000  # (topic, group) pairs one instance serves at once
FETCH_BATCH = 16  # messages a partition's fetch brings at a time (the buffer holds two batches)


@dataclass(frozen=True, slots=True)
class FeedSettings:
    member_prefix: str
    ack_timeout_ms: int
    max_pending_messages: int
    max_waiting_requests: int
    idle_timeout_s: float
    new_group_start: str  # "earliest" | "latest"


@dataclass(slots=True)
class GroupFeed:
    """One group membership: `next(timeout_s)` hands out the group's next message."""

    topic: str
    group: str
    subscription: Subscription
    max_waiting: int
    waiting: int = 0
    last_used: float = field(default_factory=time.monotonic)

    async def next(self, timeout_s: float) -> Message:
        """The next message; NoMessageError after `timeout_s` without one; OverloadedError when
        `max_waiting` calls already wait; the membership's own errors (NoSuchStreamError, ...)."""
        if self.waiting >= self.max_waiting:
            raise OverloadedError(
                f"{self.waiting} ConsumeNAck calls already wait for group {self.group!r} of {self.topic!r} on this "
                "gateway: use fewer consuming threads or raise WEIR_GATEWAY_KAFKA_PIXY_MAX_WAITING_REQUESTS"
            )
        self.waiting += 1
        self.last_used = time.monotonic()
        try:
            return await asyncio.wait_for(anext(self.subscription), timeout_s)
        except TimeoutError:
            raise NoMessageError(
                f"no message for group {self.group!r} of {self.topic!r} within {timeout_s:g} s; call again"
            ) from None
        except StopAsyncIteration:
            raise NoMessageError(f"group {self.group!r} of {self.topic!r} is being left; call again") from None
        finally:
            self.waiting -= 1
            self.last_used = time.monotonic()


class GroupFeeds:
    """The feeds of one gateway instance, created on first ConsumeNAck and left when idle."""

    def __init__(self, client: Client, settings: FeedSettings) -> None:
        self.client = client
        self.settings = settings
        self._feeds: dict[tuple[str, str], GroupFeed] = {}
        self._reaper: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return len(self._feeds)

    def get(self, topic: str, group: str) -> GroupFeed:
        """The feed of (topic, group), joining the group on first use. Errors: OverloadedError when
        this instance already serves MAX_FEEDS pairs."""
        feed = self._feeds.get((topic, group))
        if feed is not None and not feed.subscription.stopped:
            return feed
        if len(self._feeds) >= MAX_FEEDS:
            raise OverloadedError(f"this gateway serves {MAX_FEEDS} (topic, group) pairs already")
        settings = self.settings
        config = consumer_config(
            group,
            deliver_policy="all" if settings.new_group_start == "earliest" else "new",
            ack_wait_ms=settings.ack_timeout_ms,
            max_ack_pending=settings.max_pending_messages,
        )
        subscription = self.client.consume(
            topic,
            group,
            consumer_config=config,
            batch_size=FETCH_BATCH,
            max_wait_ms=500,
            client_id=f"{settings.member_prefix}-{uuid.uuid4().hex[:8]}",
        )
        feed = GroupFeed(topic, group, subscription, settings.max_waiting_requests)
        self._feeds[(topic, group)] = feed
        if self._reaper is None:
            self._reaper = asyncio.get_running_loop().create_task(self._reap(), name="kafka-pixy-feed-reaper")
        return feed

    async def forget(self, topic: str, group: str) -> None:
        """Leave a group whose membership failed (the next call joins again)."""
        feed = self._feeds.pop((topic, group), None)
        if feed is not None:
            await feed.subscription.stop()

    async def _reap(self) -> None:
        """Leave the groups nobody asked for within idle_timeout_s (checked a few times a timeout)."""
        interval_s = max(0.05, min(1.0, self.settings.idle_timeout_s / 4))
        while True:
            await asyncio.sleep(interval_s)
            deadline = time.monotonic() - self.settings.idle_timeout_s
            idle = [key for key, feed in self._feeds.items() if feed.waiting == 0 and feed.last_used < deadline]
            for key in idle:
                feed = self._feeds.pop(key)
                logger.info("leaving idle group %r of %r", feed.group, feed.topic)
                with contextlib.suppress(Exception):
                    await feed.subscription.stop()

    async def close(self) -> None:
        """Leave every group (buffered messages are handed back)."""
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        for feed in list(self._feeds.values()):
            with contextlib.suppress(Exception):
                await feed.subscription.stop()
        self._feeds.clear()
