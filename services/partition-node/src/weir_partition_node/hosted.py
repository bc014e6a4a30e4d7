"""A node's hosted streams and their partition files (node.py's storage section).

`Stream` is what a node holds of one stream: its config, the partitions it hosts (all of them when
standalone) and which of them it leads. `PartitionFiles` owns where partitions live on disk
(<data_dir>/streams/<stream>/<partition>/), the storage threads and WAL checkpointer every
partition log shares, and how a hosted partition is opened: its log (memory or SQLite; at start-up a
replicated partition's unreadable file is moved aside and rebuilt from another copy, storage/rebuild.py)
and its role from the placement.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import shutil
import sqlite3
from collections.abc import Callable, Container, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from weir.errors import NotLeaderError, StorageFailedError, WeirError
from weir.subjects import SubjectFilter
from weir.v1 import types_pb2
from weir_server.replication import InSyncTracker

from weir_partition_node import metrics
from weir_partition_node.changefeed import ChangeFeedClock
from weir_partition_node.clock import Clock
from weir_partition_node.commit_items import CommitLimits
from weir_partition_node.consumers import Consumer
from weir_partition_node.delivery_horizon import DeliveryHorizon, PushHorizon
from weir_partition_node.partition import Partition, StreamView
from weir_partition_node.settings import NodeSettings
from weir_partition_node.storage import rebuild
from weir_partition_node.storage.base import PartitionLog
from weir_partition_node.storage.checkpoint import WalCheckpointer
from weir_partition_node.storage.memory import MemoryPartitionLog
from weir_partition_node.storage.sqlite import SqlitePartitionLog
from weir_partition_node.streamconfig import bounds_of, hosted_partitions

logger = logging.getLogger(__name__)

# The in-sync tracker of a partition the node starts leading (Node.new_tracker):
# (config, placement entry, in-sync node ids, high watermark) -> tracker, None without followers.
NewTracker = Callable[[types_pb2.StreamConfig, types_pb2.PartitionPlacement, list[str], int], InSyncTracker | None]


@dataclass(slots=True)
class Stream:
    """One stream as this node holds it: its effective config, the partitions it hosts, which of
    them it leads and may serve to clients (`led_set`: led and not fenced by a handover), and its
    consumers."""

    config: types_pb2.StreamConfig
    created_at_ms: int
    view: StreamView
    # The partitions this node hosts (all of them when standalone), by index.
    partitions: dict[int, Partition]
    subject_filter: SubjectFilter
    # Set in a cluster (by the router); None = standalone: this node hosts and leads every partition.
    placement: types_pb2.StreamPlacement | None
    # Indexes of the partitions this node leads (its primaries), ascending.
    led: list[int]
    consumers: dict[str, Consumer] = field(default_factory=dict)
    deleted: bool = False
    # Led partitions whose leadership is being handed over (handover.py): clients get not_leader.
    fenced: set[int] = field(default_factory=set)
    # The partitions clients may use here: `led` less `fenced`.
    led_set: frozenset[int] = field(init=False)
    round_robin: itertools.cycle[int] = field(init=False)
    max_msg_bytes: int = field(init=False)

    def __post_init__(self) -> None:
        self.set_led(self.led)
        self.max_msg_bytes = self.config.max_msg_bytes

    def set_led(self, led: Iterable[int]) -> None:
        """Change which partitions this node leads (role changes on failover); a fenced one stays
        closed to clients until its fence is lifted (`fence`)."""
        self.led = sorted(led)
        self.led_set = frozenset(self.led) - self.fenced
        self.round_robin = itertools.cycle(sorted(self.led_set) or [0])

    def fence(self, index: int, fenced: bool) -> None:
        """Close a led partition to clients during a handover, or open it again."""
        if fenced:
            self.fenced.add(index)
        else:
            self.fenced.discard(index)
        self.set_led(self.led)

    def not_leader(self, index: int) -> NotLeaderError:
        """The redirect for a partition this node does not lead (DESIGN §4)."""
        leader = ""
        epoch = 0
        if self.placement is not None and index < len(self.placement.partitions):
            leader = self.placement.partitions[index].primary_node_id
            epoch = self.placement.partitions[index].leader_epoch
        return NotLeaderError(
            f"this node does not lead partition {index} of stream {self.name!r}; its leader is {leader or 'unknown'} "
            "(refresh routes with QueryRoute)",
            stream=self.name,
            partition=index,
            leader_node_id=leader,
            leader_epoch=epoch,
        )

    @property
    def name(self) -> str:
        return self.config.name


class PartitionFiles:
    """See the module docstring. `lease_refusal`: the node's self-fencing as an error (None while
    its lease holds), which every partition checks before it decides an append. `findings_at_open`:
    (stream, partition, finding, detail) found while opening, for the node to record once its
    change feed can take them."""

    def __init__(
        self,
        settings: NodeSettings,
        *,
        feed: ChangeFeedClock,
        clock: Clock,
        lease_refusal: Callable[[], WeirError | None],
        new_tracker: NewTracker,
    ) -> None:
        self.settings = settings
        self._feed = feed
        self._clock = clock
        self._lease_refusal = lease_refusal
        self._new_tracker = new_tracker
        self.executor = ThreadPoolExecutor(max_workers=settings.storage_threads, thread_name_prefix="weir-commit")
        self.checkpointer = (
            WalCheckpointer(metrics.WAL_CHECKPOINT_SECONDS.observe) if settings.wal_checkpoint_bytes > 0 else None
        )
        self.limits = CommitLimits(settings.max_batch_messages, settings.max_batch_bytes, settings.queue_depth)
        self.findings_at_open: list[tuple[str, int, str, str]] = []
        # Woken when any partition opened here appends or removes records (Partition.wake_waiters).
        self.append_waiters: set[asyncio.Future[None]] = set()
        # Clustered: raises a consumer's delivery horizon on replicas (set by the server once it
        # joined the cluster: horizon_push.HorizonPusher); None standalone.
        self.push_horizon: PushHorizon | None = None

    async def _push_horizon(
        self, stream: str, partition: int, consumer: str, horizon: DeliveryHorizon, node_ids: list[str]
    ) -> bool:
        push = self.push_horizon
        return True if push is None else await push(stream, partition, consumer, horizon, node_ids)

    async def close(self) -> None:
        """Stop the storage threads and the checkpointer, off the event loop: a commit thread that
        does not finish must not freeze the loop (the caller's deadline then applies, see
        server.NodeProcess.stop)."""
        await asyncio.to_thread(self.executor.shutdown, True)
        if self.checkpointer is not None:
            await asyncio.to_thread(self.checkpointer.close)

    @property
    def streams_root(self) -> Path:
        return self.settings.data_dir / "streams"

    def stream_dir(self, name: str) -> Path:
        """Where a stream's partition logs live: <data_dir>/streams/<name>/<partition>/."""
        return self.streams_root / name

    async def open_stream(
        self,
        config: types_pb2.StreamConfig,
        created_at_ms: int,
        placement: types_pb2.StreamPlacement | None = None,
        replica_epochs: dict[int, int] | None = None,
        *,
        check: bool = False,
    ) -> Stream:
        """The stream's hosted partitions, opened; with `check` (start-up), each replicated
        partition's file is checked first (`_open_log`). The files are opened on the storage
        threads, several at once (`_open_logs`), not on the event loop: a new file costs ~30 ms
        (SQLite's schema and its fsyncs), so a 256-partition stream held the loop for seconds, and
        the node's heartbeat lease lapsed. Errors: as `_open_log`'s; nothing stays open then."""
        view = configure_view(StreamView(config.name), config)
        hosted, led = hosted_partitions(config, placement, self.settings.node_id)
        logs = await self._open_logs(config, hosted, check=check and placement is not None)
        partitions: dict[int, Partition] = {}
        try:
            for index in hosted:
                partitions[index] = self.open_partition(
                    config,
                    view,
                    index,
                    leading=index in led,
                    placement=placement,
                    replica_epochs=replica_epochs,
                    check=check,
                    log=logs.pop(index, None),
                )
        except BaseException:
            for opened in [*(partition.log for partition in partitions.values()), *logs.values()]:
                opened.close()
            raise
        return Stream(config, created_at_ms, view, partitions, SubjectFilter(config.subjects), placement, led)

    async def _open_logs(
        self, config: types_pb2.StreamConfig, indexes: Iterable[int], *, check: bool
    ) -> dict[int, PartitionLog]:
        """The SQLite logs of `indexes` (none for a memory stream), opened on the storage threads
        (at most `storage_threads` at once). Errors: the first open's; the others are closed."""
        if config.storage == types_pb2.STORAGE_KIND_MEMORY:
            return {}
        loop = asyncio.get_running_loop()
        order = list(indexes)
        outcomes = await asyncio.gather(
            *(loop.run_in_executor(self.executor, self._open_log, config, index, check) for index in order),
            return_exceptions=True,
        )
        failures = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
        if failures:
            for outcome in outcomes:
                if isinstance(outcome, SqlitePartitionLog):
                    outcome.close()
            raise failures[0]
        return {index: log for index, log in zip(order, outcomes, strict=True) if isinstance(log, SqlitePartitionLog)}

    def open_partition(
        self,
        config: types_pb2.StreamConfig,
        view: StreamView,
        index: int,
        *,
        leading: bool,
        placement: types_pb2.StreamPlacement | None,
        replica_epochs: dict[int, int] | None,
        check: bool,
        log: PartitionLog | None = None,
    ) -> Partition:
        """One hosted partition, opened (on `log` when given, already open), with its role from
        the placement."""
        executor: ThreadPoolExecutor | None = self.executor
        if config.storage == types_pb2.STORAGE_KIND_MEMORY:
            log, executor = MemoryPartitionLog(config.name, index), None
        elif log is None:
            log = self._open_log(config, index, check=check and placement is not None)
        rebuilding = isinstance(log, SqlitePartitionLog) and rebuild.is_rebuilding(log.directory)
        partition = Partition(
            view,
            index,
            log,
            feed=self._feed,
            clock=self._clock,
            executor=executor,
            limits=self.limits,
            lease_refusal=self._lease_refusal,
            rebuilding=rebuilding,
            node_append_waiters=self.append_waiters,
            push_horizon=self._push_horizon,
        )
        if isinstance(log, SqlitePartitionLog) and rebuilding:
            logger.warning("%s/%d: rebuilding from another copy (marker in %s)", config.name, index, log.directory)
        if placement is not None:
            entry = placement.partitions[index]
            partition.adopt_replica_epoch((replica_epochs or {}).get(index, entry.leader_epoch))
            if config.replicas > 1:
                # What the other copies hold is not stored: after a restart nothing past the
                # log's start counts as replicated until the followers report again. Starting at
                # the log end would answer a retried msg_id of an unreplicated record as stored
                # by every in-sync replica (and a promoted follower would count the old
                # primary's unconfirmed tail as confirmed).
                partition.replication.forget(partition.first_seq - 1)
            partition.set_role(
                leading=leading,
                leader_epoch=entry.leader_epoch,
                tracker=self._new_tracker(config, entry, list(entry.in_sync_node_ids), partition.high_watermark)
                if leading
                else None,
                min_insync=config.min_insync_replicas or 1,
            )
        return partition

    def _open_log(self, config: types_pb2.StreamConfig, index: int, check: bool) -> SqlitePartitionLog:
        """A partition's SQLite log. With `check` (at start-up, for a partition placed by the
        controller) and more than one copy, a file that does not open or fails SQLite's quick_check
        (a truncated or overwritten file) is moved aside and the partition starts empty, marked
        rebuilding (weir_partition_node.storage.rebuild): it catches up from its primary like a new
        replica and never leads meanwhile. A single copy has nothing to rebuild from: its file stays
        where it is and the error stops the node, naming the file."""
        directory = self.stream_dir(config.name) / str(index)
        problem = ""
        log: SqlitePartitionLog | None = None
        try:
            log = self._sqlite_log(directory, config.name, index)
            log.state()  # reads the log's extent: a file cut short often fails here already
            if check and config.replicas > 1 and not rebuild.is_rebuilding(directory):
                verdict = log.integrity(self.settings.integrity_check_timeout_ms / 1000)
                problem = "" if verdict in ("ok", "interrupted") else f"quick_check: {verdict}"
        except sqlite3.DatabaseError as error:
            problem = f"does not open: {error}"
        if not problem and log is not None:
            return log
        if log is not None:
            log.close()
        if not (check and config.replicas > 1):
            raise StorageFailedError(
                f"{config.name}/{index}: {directory / 'log.sqlite'} {problem or 'does not open'}; a stream with one "
                "copy has nothing to rebuild it from (move the directory aside to start the partition empty)"
            )
        moved = rebuild.quarantine(directory, self.settings.data_dir / "damaged", config.name, index, problem)
        logger.error(
            "%s/%d: the partition's file is unreadable (%s); moved to %s, rebuilding from another copy",
            config.name,
            index,
            problem,
            moved,
        )
        metrics.PARTITIONS_REBUILT.inc()
        self.findings_at_open.append((config.name, index, "file_rebuilding", f"{problem}; moved to {moved}"))
        return self._sqlite_log(directory, config.name, index)

    def _sqlite_log(self, directory: Path, stream: str, index: int) -> SqlitePartitionLog:
        return SqlitePartitionLog(
            directory,
            stream,
            index,
            self.settings.fsync,
            tail_cache_bytes=self.settings.tail_cache_bytes,
            checkpointer=self.checkpointer,
            checkpoint_bytes=self.settings.wal_checkpoint_bytes,
        )

    def remove_orphans(self, known: Container[str]) -> None:
        """Remove partition directories of streams the catalog does not know (a crash between
        creating files and committing the catalog row, or between deleting the row and the files)."""
        root = self.streams_root
        if not root.is_dir():
            return
        for directory in root.iterdir():
            if directory.name not in known:
                logger.warning("removing orphaned stream directory %s", directory)
                shutil.rmtree(directory, ignore_errors=True)


def configure_view(view: StreamView, config: types_pb2.StreamConfig) -> StreamView:
    """Set what a partition needs to know of its stream's (effective) config; returns `view`."""
    view.bounds = bounds_of(config)
    view.retention = config.retention
    view.deliver_up_to_high_watermark = config.deliver_up_to_high_watermark
    view.duplicate_window_ms = config.duplicate_window_ms
    view.duplicate_window_max_msgs = config.duplicate_window_max_msgs
    view.allow_scheduled_messages = config.allow_scheduled_messages
    return view
