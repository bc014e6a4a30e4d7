"""The background scrub (issue 32): every stored record of every partition re-read from disk and
checked against its checksum, at a bounded rate, pass after pass; the storage's own consistency
check (SQLite's quick_check) once per partition and pass. What it finds is logged, counted
(`weir_scrub_*` metrics), kept per partition (`ScrubFindings`, bounded) and reported in the node's
registration, so `weir doctor` shows it for every node.

A record that fails its checksum is never served: every read verifies it and answers DATA_LOSS
(`corrupt`) naming stream, partition and seq. The scrub finds such records before a reader does,
and with a `repair` (weir_partition_node.repair: a secondary's records from its primary) puts
intact copies back; what it could not repair stays reported.

Pacing: a pass reads `scrub_bytes_per_second` at most (`Pacer`), in steps of `STEP_BYTES` on a
worker thread, so the publish path keeps its CPU and disk; passes start `scrub_interval_ms` apart.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

from weir_partition_node import metrics
from weir_partition_node.commit_items import ResealBatches
from weir_partition_node.partition import Partition

logger = logging.getLogger(__name__)
STEP_BYTES = 256 * 1024
MAX_SEQS_KEPT = 100  # corrupt seqs remembered per partition (the count goes on)
DAMAGED_RECHECK_S = 5.0  # the pass interval while a partition is damaged


# (stream, partition, finding, seqs, detail) -> a change-feed entry (Node.record_storage_finding)
Finding = Callable[[str, int, str, list[int], str], Awaitable[None]]


def damaged_batches_finding(base_seqs: set[int]) -> str:
    """What the storage check says of stored batches whose CRC32C failed (their base seqs): a
    damaged byte outside any record still served (a batch's header, its entries, or a removed
    record's bytes). The records themselves are checked one by one, and a damaged one is reported
    as a corrupt record."""
    shown = sorted(base_seqs)[:10]
    more = f" and {len(base_seqs) - len(shown)} more" if len(base_seqs) > len(shown) else ""
    return f"stored batches failing their CRC32C (by base seq): {', '.join(map(str, shown))}{more}"


class Pacer:
    """At most `bytes_per_second` on average (pure: the caller gives the time): `delay_s(n, now)`
    charges n bytes and says how long to wait before the next read."""

    def __init__(self, bytes_per_second: int) -> None:
        if bytes_per_second <= 0:
            raise ValueError("a scrub rate needs bytes_per_second > 0")
        self.bytes_per_second = bytes_per_second
        self._free_at = 0.0

    def delay_s(self, size: int, now_s: float) -> float:
        self._free_at = max(self._free_at, now_s) + size / self.bytes_per_second
        return max(0.0, self._free_at - now_s)


@dataclass
class PartitionFindings:
    """What the last pass over one partition found (the pass in progress replaces it at its end)."""

    corrupt_records: int = 0
    corrupt_seqs: list[int] = field(default_factory=list)  # the first MAX_SEQS_KEPT, in seq order
    integrity: str = "ok"

    def replace(self, seqs: Sequence[int], count: int) -> list[int]:
        """The pass found `count` corrupt records, the first of them `seqs`; returns those of
        `seqs` the previous pass had not (to log once)."""
        known = set(self.corrupt_seqs)
        self.corrupt_records, self.corrupt_seqs = count, list(seqs[:MAX_SEQS_KEPT])
        return [seq for seq in seqs if seq not in known]


@dataclass
class ScrubFindings:
    """What the scrub found so far, per (stream, partition), and its progress."""

    passes: int = 0
    last_pass_ms: int = 0
    checked_bytes: int = 0
    by_partition: dict[tuple[str, int], PartitionFindings] = field(default_factory=dict)

    def of(self, stream: str, partition: int) -> PartitionFindings:
        return self.by_partition.setdefault((stream, partition), PartitionFindings())

    @property
    def corrupt_records(self) -> int:
        return sum(found.corrupt_records for found in self.by_partition.values())

    @property
    def integrity_problems(self) -> list[str]:
        return [
            f"{stream}/{partition}: {found.integrity}"
            for (stream, partition), found in sorted(self.by_partition.items())
            if found.integrity not in ("ok", "interrupted")
        ]

    @property
    def damaged(self) -> tuple[tuple[str, int], ...]:
        """The partitions whose last pass found damaged records or a failed storage check."""
        return tuple(
            key
            for key, found in sorted(self.by_partition.items())
            if found.corrupt_records or found.integrity not in ("ok", "interrupted")
        )

    def forget(self, present: set[tuple[str, int]]) -> list[tuple[str, str]]:
        """Drop partitions this node no longer hosts (a deleted stream's findings go with it);
        returns their metric labels."""
        gone = [key for key in self.by_partition if key not in present]
        for key in gone:
            del self.by_partition[key]
        return [(stream, str(index)) for stream, index in gone]


# Fetch intact copies of a partition's damaged records from another replica and put them back
# (stream, index, partition, seqs); see weir_partition_node.server for the cluster's.
Repair = Callable[[str, int, Partition, list[int]], Awaitable[None]]


class Scrubber:
    """Runs passes over `partitions()` ((stream, index, partition) triples) until cancelled."""

    def __init__(
        self,
        partitions: Callable[[], list[tuple[str, int, Partition]]],
        *,
        bytes_per_second: int,
        interval_s: float,
        integrity_timeout_s: float,
        on_pass: Callable[[ScrubFindings], None] = lambda findings: None,
        repair: Repair | None = None,
        on_finding: Finding | None = None,
    ) -> None:
        self.partitions = partitions
        self.pacer = Pacer(bytes_per_second)
        self.interval_s = interval_s
        self.integrity_timeout_s = integrity_timeout_s
        self.on_pass = on_pass
        self.repair = repair
        self.on_finding = on_finding
        self.findings = ScrubFindings()
        self._start_now = asyncio.Event()

    def request_pass(self) -> int:
        """Start the next pass now (`weir doctor --scrub`) instead of at the interval; returns the
        passes completed so far."""
        self._start_now.set()
        return self.findings.passes

    async def check_storage(self) -> list[str]:
        """The storage check of every partition once (at start-up, before the node serves: bounded
        by `integrity_timeout_s` each); returns the problems found ("stream/partition: ...")."""
        for stream, index, partition in self.partitions():
            found = self.findings.of(stream, index)
            found.integrity = await asyncio.to_thread(partition.log.integrity, self.integrity_timeout_s)
            if found.integrity not in ("ok", "interrupted"):
                logger.error("start-up check: %s/%d storage check failed: %s", stream, index, found.integrity)
        return self.findings.integrity_problems

    async def run(self) -> None:
        while True:
            started = time.monotonic()
            await self.one_pass()
            # While something is damaged, look again soon: a repair (as a follower, once the
            # controller moved leadership away) shows in the next pass.
            interval_s = min(self.interval_s, DAMAGED_RECHECK_S) if self.findings.damaged else self.interval_s
            with contextlib.suppress(TimeoutError):  # the interval passed, or a pass was asked for
                await asyncio.wait_for(self._start_now.wait(), max(0.0, interval_s - (time.monotonic() - started)))
            self._start_now.clear()

    async def one_pass(self) -> ScrubFindings:
        """Scrub every partition once; returns the findings (also handed to `on_pass`)."""
        hosted = self.partitions()
        for stream, index, partition in hosted:
            try:
                await self._scrub(stream, index, partition)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # a partition closed or deleted meanwhile: the next pass sees
                logger.info("scrub of %s/%d stopped: %r", stream, index, error)
        for gone in self.findings.forget({(stream, index) for stream, index, _ in hosted}):
            with contextlib.suppress(KeyError):  # never set for it
                metrics.SCRUB_CORRUPT.remove(*gone)
        self.findings.passes += 1
        self.findings.last_pass_ms = int(time.time() * 1000)
        metrics.SCRUB_PASSES.inc()
        self.on_pass(self.findings)
        return self.findings

    async def _repaired(self, stream: str, index: int, partition: Partition, seqs: list[int]) -> set[int]:
        """Ask `repair` for intact copies of `seqs`, then check each again; the seqs now intact."""
        assert self.repair is not None
        try:
            await self.repair(stream, index, partition, seqs)
        except Exception as error:  # no copy to take them from now (a failover, a peer down): next pass
            logger.warning("scrub: %s/%d: repair of %d record(s) failed: %r", stream, index, len(seqs), error)
            return set()
        intact: set[int] = set()
        for seq in seqs:
            page = await asyncio.to_thread(partition.log.scrub, seq, 1)
            if page.checked_records and page.next_seq == seq + 1 and not page.corrupt_seqs:
                intact.add(seq)
        if intact:
            logger.warning(
                "scrub: %s/%d: repaired %d record(s) from another copy: %s",
                stream,
                index,
                len(intact),
                sorted(intact)[:10],
            )
            metrics.SCRUB_REPAIRED.inc(len(intact))
            await self._report(stream, index, "repaired_records", sorted(intact), "")
        return intact

    async def _resealed(self, stream: str, index: int, partition: Partition, base_seqs: set[int]) -> set[int]:
        """Report stored batches whose CRC32C failed while each of their records passes its own,
        rewrite them from those records (through the commit loop), check each again; the base seqs
        now whole."""
        shown = sorted(base_seqs)[:MAX_SEQS_KEPT]
        detail = damaged_batches_finding(base_seqs)
        logger.error("scrub: %s/%d: %s", stream, index, detail)
        await self._report(stream, index, "corrupt_batches", shown, detail)
        try:
            await partition.replica_edit(ResealBatches(sorted(base_seqs)))
        except Exception as error:  # a stopped partition, a failed commit: the next pass tries again
            logger.warning("scrub: %s/%d: rewriting %d batch(es) failed: %r", stream, index, len(base_seqs), error)
            return set()
        whole: set[int] = set()
        for base_seq in sorted(base_seqs):
            page = await asyncio.to_thread(partition.log.scrub, base_seq, 1)
            if base_seq not in page.corrupt_batches:
                whole.add(base_seq)
        if whole:
            logger.warning("scrub: %s/%d: rewrote %d stored batch(es) from their records", stream, index, len(whole))
            metrics.SCRUB_RESEALED.inc(len(whole))
            await self._report(stream, index, "resealed_batches", sorted(whole)[:MAX_SEQS_KEPT], "")
        return whole

    async def _report(self, stream: str, index: int, finding: str, seqs: list[int], detail: str) -> None:
        if self.on_finding is not None:
            await self.on_finding(stream, index, finding, seqs, detail)

    async def _scrub(self, stream: str, index: int, partition: Partition) -> None:
        log, found = partition.log, self.findings.of(stream, index)
        integrity = await asyncio.to_thread(log.integrity, self.integrity_timeout_s)
        seq, count = partition.first_seq, 0
        corrupt: list[int] = []
        damaged_batches: set[int] = set()
        while True:
            page = await asyncio.to_thread(log.scrub, seq, STEP_BYTES)
            self.findings.checked_bytes += page.checked_bytes
            metrics.SCRUB_BYTES.inc(page.checked_bytes)
            metrics.SCRUB_RECORDS.inc(page.checked_records)
            count += len(page.corrupt_seqs)
            corrupt.extend(page.corrupt_seqs[: max(0, MAX_SEQS_KEPT - len(corrupt))])
            damaged_batches.update(page.corrupt_batches)
            if page.done:
                break
            seq = page.next_seq
            await asyncio.sleep(self.pacer.delay_s(page.checked_bytes, time.monotonic()))
        if damaged_batches:
            damaged_batches -= await self._resealed(stream, index, partition, damaged_batches)
        if damaged_batches and integrity in ("ok", "interrupted"):
            integrity = damaged_batches_finding(damaged_batches)
        if integrity not in (found.integrity, "interrupted"):
            if integrity != "ok":
                logger.error("scrub: %s/%d storage check failed: %s", stream, index, integrity)
                await self._report(stream, index, "storage_check_failed", [], integrity)
            found.integrity = integrity
        known = set(found.corrupt_seqs)
        if fresh := [seq for seq in corrupt if seq not in known]:  # before any repair: found, then put back
            await self._report(stream, index, "corrupt_records", fresh, "")
        if corrupt and self.repair is not None:
            repaired = await self._repaired(stream, index, partition, corrupt)
            corrupt, count = [seq for seq in corrupt if seq not in repaired], count - len(repaired)
        for bad in found.replace(corrupt, count):
            logger.error(
                "scrub: %s/%d seq %d: stored record fails its checksum (served as DATA_LOSS)", stream, index, bad
            )
        metrics.SCRUB_CORRUPT.labels(stream, str(index)).set(count)
