"""The node's change feed, read (Node's change-feed section): batches up to the horizon, live
tails, and the lifecycle watch. The feed itself (change seqs, horizon, watermark) is
`changefeed.ChangeFeedClock`; the changes live in the catalog (stream and consumer lifecycle) and in
each partition's log (appends, removals, consumer state), merged here in change-seq order.

Source: weir.v1 Internal.ReadChanges / TailChanges and Streams.WatchStreams's lifecycle changes.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING

from weir.errors import ChangeFeedTruncatedError, InvalidArgumentError, PositionOutOfRangeError
from weir.v1 import types_pb2

from weir_partition_node.catalog import Catalog
from weir_partition_node.changefeed import EVERY_CHANGE, ChangeFeedClock, ChangeFilter
from weir_partition_node.clock import Clock, monotonic_ms

if TYPE_CHECKING:
    from weir_partition_node.hosted import Stream

DEFAULT_CHANGES = 1000
MAX_CHANGES = 10_000
TAIL_IDLE_WAKE_S = 5.0
TAIL_PROGRESS_MS = 1000
_LIFECYCLE_KINDS = frozenset(
    ("stream_created", "stream_updated", "stream_deleted", "consumer_created", "consumer_deleted", "leader_changed")
)


class ChangeFeedReader:
    """Reads of the node's change feed. `streams` is the node's live map of hosted streams,
    `change_floor()` the highest change seq removed by change-feed retention, `closing()` true once
    the node shuts down (tails and watches end)."""

    def __init__(
        self,
        *,
        feed: ChangeFeedClock,
        clock: Clock,
        catalog: Catalog,
        streams: Mapping[str, Stream],
        change_floor: Callable[[], int],
        closing: Callable[[], bool],
    ) -> None:
        self._feed = feed
        self._clock = clock
        self._catalog = catalog
        self._streams = streams
        self._change_floor = change_floor
        self._closing = closing

    def feed_watermark_ms(self) -> int:
        """The change feed's watermark now (ChangeFeedClock.watermark_ms): every change with ts_ms
        below it is at or below any horizon read from now on."""
        return self._feed.watermark_ms(self._clock.now_ms())

    async def read_changes(
        self, from_change_seq: int, max_changes: int, feed_filter: ChangeFilter = EVERY_CHANGE
    ) -> tuple[list[bytes], int, int]:
        """(encoded changes, next_change_seq, horizon): the changes from `from_change_seq` (0 = the
        first retained) up to the horizon that `feed_filter` keeps, at most `max_changes` (0 =
        1,000). Every kept change below next_change_seq is in the answer. Logs that cannot hold a
        kept change past the start are not read at all. Errors: ChangeFeedTruncatedError,
        InvalidArgumentError (max_changes over 10,000)."""
        if max_changes > MAX_CHANGES:
            raise InvalidArgumentError(f"max_changes: at most {MAX_CHANGES}, got {max_changes}")
        limit = max_changes or DEFAULT_CHANGES
        if from_change_seq and from_change_seq <= self._change_floor():
            raise ChangeFeedTruncatedError(
                f"changes before {self._change_floor() + 1} were removed by change-feed retention",
                first_change_seq=self._change_floor() + 1,
            )
        start = max(from_change_seq, self._change_floor() + 1)
        horizon = self._feed.horizon
        if start > horizon:
            return [], start, horizon
        through = horizon  # every kept change up to here is read
        sources: list[list[tuple[int, bytes]]] = []

        def take(rows: list[tuple[int, bytes]], keep: Callable[[bytes], bool] | None) -> None:
            nonlocal through
            if len(rows) == limit:  # cut at the limit: this source is read only up to its last row
                through = min(through, rows[-1][0])
            sources.append(rows if keep is None else [row for row in rows if keep(row[1])])

        if start <= self._catalog.last_change_seq:  # else nothing there: no query on its thread
            rows = await self._catalog.read_changes(start, horizon, limit)
            take(rows, feed_filter.record_check(from_partition_log=False))
        keep_partition_record = feed_filter.record_check(from_partition_log=True)
        for stream in list(self._streams.values()):
            for partition in stream.partitions.values():
                if not feed_filter.reads_partition(stream.config.name, partition.index):
                    continue
                newest = (
                    partition.last_non_append_change_seq if feed_filter.exclude_appends else partition.last_change_seq
                )
                if newest >= start:
                    take(partition.log.read_changes(start, horizon, limit), keep_partition_record)
        merged = list(
            itertools.islice(itertools.takewhile(lambda row: row[0] <= through, heapq.merge(*sources)), limit)
        )
        if len(merged) == limit:
            through = merged[-1][0]
        return [record for _, record in merged], through + 1, horizon

    def check_feed_position(self, from_change_seq: int) -> None:
        """A live read may start at most at the next change seq this node will write. Errors:
        PositionOutOfRangeError (metadata next_change_seq)."""
        next_change_seq = self._feed.horizon + 1
        if from_change_seq > next_change_seq:
            raise PositionOutOfRangeError(
                f"from_change_seq {from_change_seq} is beyond this node's change feed, which continues at "
                f"{next_change_seq} (the node's data was replaced, or the position is another node's); "
                "nothing would ever arrive there",
                next_change_seq=next_change_seq,
            )

    async def tail_changes(
        self, from_change_seq: int, max_per_batch: int, feed_filter: ChangeFilter = EVERY_CHANGE
    ) -> AsyncIterator[tuple[list[bytes], int, int]]:
        """Yield (changes, through_change_seq, horizon) batches from `from_change_seq` on, live,
        until shutdown: every change `feed_filter` keeps up to through_change_seq has been yielded.
        When the filter skipped changes and nothing was yielded for TAIL_PROGRESS_MS, a batch without
        changes carries the new through_change_seq (checked on each commit and every
        TAIL_IDLE_WAKE_S), so a client storing its position does not fall behind change-feed
        retention. Errors: as read_changes, and PositionOutOfRangeError (a start past the feed)."""
        if max_per_batch > MAX_CHANGES:  # bad arguments first, then where the read starts
            raise InvalidArgumentError(f"max_changes: at most {MAX_CHANGES}, got {max_per_batch}")
        self.check_feed_position(from_change_seq)
        cursor = from_change_seq
        reported = cursor - 1
        reported_at = monotonic_ms()
        while not self._closing():
            changes, cursor, horizon = await self.read_changes(cursor, max_per_batch, feed_filter)
            if changes or (cursor - 1 > reported and monotonic_ms() - reported_at >= TAIL_PROGRESS_MS):
                yield changes, cursor - 1, horizon
                reported, reported_at = cursor - 1, monotonic_ms()
                if changes:
                    continue
            await self._feed.wait_past(cursor - 1, TAIL_IDLE_WAKE_S)

    async def watch_lifecycle(self, from_change_seq: int = 0) -> AsyncIterator[types_pb2.Change]:
        """Stream and consumer created/updated/deleted changes from `from_change_seq` (0 = from now on), live,
        until shutdown. Errors: ChangeFeedTruncatedError, PositionOutOfRangeError (a start past the
        feed)."""
        if from_change_seq and from_change_seq <= self._change_floor():
            raise ChangeFeedTruncatedError(
                f"changes before {self._change_floor() + 1} were removed by change-feed retention",
                first_change_seq=self._change_floor() + 1,
            )
        self.check_feed_position(from_change_seq)
        cursor = from_change_seq or self._feed.horizon + 1
        while not self._closing():
            horizon = self._feed.horizon
            if horizon < cursor:
                await self._feed.wait_past(cursor - 1, TAIL_IDLE_WAKE_S)
                continue
            if cursor <= self._catalog.last_change_seq:  # lifecycle changes live in the catalog only
                # In pages: the catalog also keeps deleted streams' archived changes, any number.
                rows = await self._catalog.read_changes(cursor, horizon, DEFAULT_CHANGES)
                for _, record in rows:
                    change = types_pb2.Change.FromString(record)
                    if change.WhichOneof("kind") in _LIFECYCLE_KINDS:
                        yield change
                if len(rows) == DEFAULT_CHANGES:
                    cursor = rows[-1][0] + 1
                    continue
            cursor = horizon + 1
