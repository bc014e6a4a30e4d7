"""The `weir` PySpark Python Data Source: the nodes' change feeds as a DataFrame.

    spark.dataSource.register(WeirDataSource)
    changes = spark.readStream.format("weir").option("router", "127.0.0.1:7501").load()   # streaming
    history = spark.read.format("weir").option("router", "127.0.0.1:7501").load()         # batch

Rows follow `rows.CHANGE_SCHEMA` (one per change). Streaming offsets are {node_id: next_change_seq}
with each node's watermark (see `offsets`), planned as one or more input partitions per node, so a
query restarted from its checkpoint neither loses nor repeats a change. Every streaming micro-batch
also holds one `watermark` row (node_id "", ts_ms = the batch's watermark: every change with ts_ms
below it, on every node that answered, is in this batch or an earlier one), so a consumer of the
stream knows which time windows are complete; the offsets move with the watermark, so a batch runs
every trigger even when no node has new changes (an idle window closes, with zeros).

Options (all strings, as Spark passes them):
- `router`: router addresses host:port[,host:port]; the nodes are discovered with GetClusterInfo.
- `nodes`: instead of `router`, node_id=internal_host:port[,...] (a fixed set of nodes).
- `startingOffsets`: "earliest" (default), "latest" or JSON {node_id: change_seq}.
- `endingOffsets` (batch reads only): "latest" (default) or JSON {node_id: change_seq} (exclusive).
- `maxChangesPerTrigger`: most changes in one micro-batch, shared over the nodes (default: no bound).
- `changesPerPartition`: most change seqs one Spark task reads (default 100,000).
- `failOnDataLoss`: "true" (default) fails the query when change-feed retention removed changes
  it had not read yet; "false" skips them and emits one `feed_gap` row (message_count = how many
  change seqs were skipped, first_seq..last_seq = which).
- `timeoutMs`: deadline of one call to a node or router (default 10,000); unavailable nodes are
  retried that long inside a read task.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, ReadMaxRows, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType
from weir.errors import ChangeFeedTruncatedError, InvalidArgumentError, WeirError

from weir_analytics import feed, offsets, rows

logger = logging.getLogger("weir_analytics.source")

FEED_GAP = "feed_gap"
WATERMARK = "watermark"


class FeedRangePartition(InputPartition):
    """One Spark task: a node's changes [start, end) at `address`."""

    def __init__(self, node_id: str, address: str, start: int, end: int) -> None:
        super().__init__((node_id, start, end))
        self.node_id = node_id
        self.address = address
        self.start = start
        self.end = end


class WatermarkPartition(InputPartition):
    """The Spark task that emits the batch's watermark row."""

    def __init__(self, watermark_ms: int) -> None:
        super().__init__(("watermark", watermark_ms))
        self.watermark_ms = watermark_ms


class SourceOptions:
    """The data source options, checked once (InvalidArgumentError names the bad option)."""

    def __init__(self, options: Mapping[str, str]) -> None:
        lowered = {key.lower(): value for key, value in options.items()}
        self.routers: list[str] = []
        self.static_nodes: list[feed.FeedNode] = []
        if lowered.get("nodes"):
            self.static_nodes = feed.parse_static_nodes(lowered["nodes"])
        elif lowered.get("router"):
            self.routers = feed.parse_addresses(lowered["router"])
        else:
            raise InvalidArgumentError('the weir source needs option "router" (host:port[,...]) or "nodes"')
        self.starting = offsets.parse_starting_offsets(lowered.get("startingoffsets", "earliest"))
        ending = lowered.get("endingoffsets", "latest").strip()
        self.ending: str | offsets.Offsets = ending
        if ending != "latest":
            try:
                self.ending = offsets.validate_offsets(json.loads(ending), "endingOffsets")
            except json.JSONDecodeError:
                raise InvalidArgumentError(
                    f'endingOffsets: expected "latest" or a JSON object, got {ending!r}'
                ) from None
        self.max_changes = _positive_int(lowered, "maxchangespertrigger", None)
        self.changes_per_partition = _positive_int(lowered, "changesperpartition", 100_000) or 100_000
        self.timeout_s = (_positive_int(lowered, "timeoutms", 10_000) or 10_000) / 1000
        fail = lowered.get("failondataloss", "true").strip().lower()
        if fail not in ("true", "false"):
            raise InvalidArgumentError(f'failOnDataLoss: expected "true" or "false", got {fail!r}')
        self.fail_on_data_loss = fail == "true"

    def nodes(self) -> list[feed.FeedNode]:
        if self.static_nodes:
            return list(self.static_nodes)
        return feed.discover_nodes(self.routers, self.timeout_s)


def _positive_int(options: Mapping[str, str], key: str, default: int | None) -> int | None:
    if key not in options:
        return default
    try:
        value = int(options[key])
    except ValueError:
        raise InvalidArgumentError(f"{key}: expected a positive integer, got {options[key]!r}") from None
    if value < 1:
        raise InvalidArgumentError(f"{key}: expected a positive integer, got {value}")
    return value


def horizons(nodes: Sequence[feed.FeedNode], timeout_s: float) -> dict[str, tuple[int, int]]:
    """(horizon, watermark_ms) of every node that answers; nodes marked dead or not answering are
    left out (their offsets stay where they are until they answer again)."""
    found: dict[str, tuple[int, int]] = {}
    for node in nodes:
        if not node.alive or not node.internal_address:
            continue
        try:
            with feed.FeedReader(node, timeout_s) as reader:
                found[node.node_id] = reader.position()
        except WeirError as error:
            logger.warning("change feed of %s (%s) not readable now: %s", node.node_id, node.internal_address, error)
    return found


def read_partition(partition: FeedRangePartition, options: SourceOptions) -> Iterator[tuple[Any, ...]]:
    """The rows of one input partition (runs in a Spark Python worker)."""
    node = feed.FeedNode(partition.node_id, partition.address)
    start = partition.start
    with feed.FeedReader(node, options.timeout_s) as reader:
        while True:
            try:
                for change in reader.read_range(start, partition.end, retry_for_s=options.timeout_s):
                    yield rows.change_row(partition.node_id, change)
                return
            except ChangeFeedTruncatedError as error:
                first = int(error.metadata.get("first_change_seq", "0") or 0)
                if options.fail_on_data_loss or first <= start:
                    raise ChangeFeedTruncatedError(
                        f"node {partition.node_id}: change-feed retention removed changes {start}.."
                        f"{first - 1} before the weir source read them (set failOnDataLoss=false to skip "
                        f"them, counted as a feed_gap row)",
                        first_change_seq=first,
                    ) from None
                skipped_to = min(first, partition.end)
                print(
                    f"weir source: node {partition.node_id}: skipping changes {start}..{skipped_to - 1} "
                    "removed by change-feed retention",
                    file=sys.stderr,
                )
                yield _gap_row(partition.node_id, start, skipped_to)
                start = skipped_to


def _watermark_row(watermark_ms: int) -> tuple[Any, ...]:
    values: dict[str, Any] = {"node_id": "", "change_seq": 0, "kind": WATERMARK, "ts_ms": watermark_ms, "stream": ""}
    values.update(partition=0, role=rows.PRIMARY)
    return tuple(values.get(column) for column in rows.COLUMNS)


def _gap_row(node_id: str, start: int, end: int) -> tuple[Any, ...]:
    values: dict[str, Any] = {
        "node_id": node_id,
        "change_seq": start,
        "kind": FEED_GAP,
        "first_seq": start,
        "last_seq": end - 1,
        "message_count": end - start,
        "stream": "",
        "partition": 0,
        "role": rows.PRIMARY,
        "ts_ms": 0,
    }
    return tuple(values.get(column) for column in rows.COLUMNS)


def _partitions(
    options: SourceOptions,
    start: Mapping[str, int],
    end: Mapping[str, int],
    known: Sequence[feed.FeedNode] = (),
) -> list[InputPartition]:
    """The input partitions of [start, end). `known` are the nodes the caller just discovered;
    the routers are asked again only when a node with changes to read is not among them (a batch
    replayed after a restart, a node that moved)."""
    ranges = offsets.plan_ranges(start, end, options.changes_per_partition)
    if not ranges:
        return []
    addresses = {node.node_id: node.internal_address for node in known}
    if any(not addresses.get(piece.node_id) for piece in ranges):
        addresses = {node.node_id: node.internal_address for node in options.nodes()}
    planned: list[InputPartition] = []
    for piece in ranges:
        address = addresses.get(piece.node_id)
        if not address:
            raise InvalidArgumentError(
                f"node {piece.node_id} has changes {piece.start}..{piece.end - 1} to read but is no longer "
                "registered with the routers"
            )
        planned.append(FeedRangePartition(piece.node_id, address, piece.start, piece.end))
    return planned


class WeirStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Streaming reads: latestOffset asks every node for its horizon. With Trigger.AvailableNow the
    horizons at the query's start are the target: later changes are left for the next run."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options
        self._target: dict[str, tuple[int, int]] | None = None
        # the nodes found by the last discovery (latestOffset runs just before partitions)
        self._known: list[feed.FeedNode] = []

    def _discover(self) -> list[feed.FeedNode]:
        self._known = self.options.nodes()
        return self._known

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = horizons(self._discover(), self.options.timeout_s)

    def initialOffset(self) -> dict[str, Any]:
        found = horizons(self._discover(), self.options.timeout_s)
        start = offsets.initial_offsets(self.options.starting, {node: seq for node, (seq, _) in found.items()})
        return offsets.join_offset(start, {})

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.options.max_changes is None:
            return ReadAllAvailable()
        return ReadMaxRows(self.options.max_changes)

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        current, watermarks = offsets.split_offset(start, "start offset")
        # Trigger.AvailableNow: the horizons at the query's start are the end
        target = self._target
        found = dict(target) if target is not None else horizons(self._discover(), self.options.timeout_s)
        budget = limit.max_rows if isinstance(limit, ReadMaxRows) else None
        end = offsets.latest_offsets(current, {node: seq for node, (seq, _) in found.items()}, budget)
        return offsets.join_offset(end, offsets.next_watermarks(watermarks, end, found))

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        first, _ = offsets.split_offset(start, "start offset")
        last, watermarks = offsets.split_offset(end, "end offset")
        planned = _partitions(self.options, first, last, self._known)
        if watermarks:
            planned.append(WatermarkPartition(offsets.batch_watermark(watermarks)))
        return planned

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        if isinstance(partition, WatermarkPartition):
            return iter([_watermark_row(partition.watermark_ms)])
        assert isinstance(partition, FeedRangePartition)
        return read_partition(partition, self.options)

    def commit(self, end: dict[str, Any]) -> None:
        logger.debug("weir source: committed through %s", end)


class WeirBatchReader(DataSourceReader):
    """Batch reads: every node from startingOffsets to endingOffsets (default: its horizon now)."""

    def __init__(self, options: SourceOptions) -> None:
        self.options = options

    def partitions(self) -> Sequence[InputPartition]:
        if self.options.starting == "latest":
            raise InvalidArgumentError(
                'startingOffsets "latest" reads nothing in a batch query; use "earliest" or a JSON object'
            )
        nodes = self.options.nodes()
        found = {node: seq for node, (seq, _) in horizons(nodes, self.options.timeout_s).items()}
        start = offsets.initial_offsets(self.options.starting, found)
        if isinstance(self.options.ending, dict):
            end = {**start, **self.options.ending}
        else:
            end = offsets.latest_offsets(start, found, None)
        return _partitions(self.options, start, end, nodes)

    def read(self, partition: InputPartition) -> Iterator[tuple[Any, ...]]:
        assert isinstance(partition, FeedRangePartition)
        return read_partition(partition, self.options)


class WeirDataSource(DataSource):
    """`format("weir")`: Weir's change feeds (DESIGN §6). See the module docstring for options."""

    def __init__(self, options: dict[str, str]) -> None:
        super().__init__(options)
        self.source_options = SourceOptions(options)

    @classmethod
    def name(cls) -> str:
        return "weir"

    def schema(self) -> StructType | str:
        return rows.CHANGE_SCHEMA

    def reader(self, schema: StructType) -> DataSourceReader:
        return WeirBatchReader(self.source_options)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return WeirStreamReader(self.source_options)
