"""`weir doctor`: each node's health as its background scrub sees it (issue 32): alive or not, the
scrub's complete passes and when the last one ended, the records whose stored bytes failed their
checksum in the last pass (reads of them answer DATA_LOSS), what SQLite's own check of the
partition files found, the partitions it rebuilds from another copy because their file was
unreadable at start-up, and the diverged tails it cut and copied again from the primary since it
started (healed: not a problem). Exit status 1 when a node is dead or anything was found. `--scrub` first
starts a pass on every node and waits until each ended (instead of the scrub's own interval)."""

from __future__ import annotations

import argparse
import asyncio
import time
from typing import Any

from weir_cli.cli_error import CliError
from weir_cli.output import emit, progress, table
from weir_cli.target import cluster_client


def _age(last_ms: int, now_ms: int) -> str:
    if not last_ms:
        return "not yet"
    seconds = max(0, now_ms - last_ms) // 1000
    return f"{seconds} s ago" if seconds < 120 else f"{seconds // 60} min ago"


SCRUB_WAIT_S = 600.0  # how long --scrub waits for the passes it started


async def _scrub_now(client: Any) -> None:
    """Start a pass on every alive node, then wait until each started pass ended (its node's
    scrub_passes grew, as its heartbeat reports), saying what it waits for."""
    started = await client.start_scrub()
    waiting = {node.node_id: node.passes for node in started.nodes if node.started}
    for node in started.nodes:
        if not node.started:
            progress(f"{node.node_id}: no scrub started: {node.error}")
    progress(f"scrubbing {len(waiting)} node(s) now: every stored record re-read and checked ...")
    deadline = time.monotonic() + SCRUB_WAIT_S
    while waiting and time.monotonic() < deadline:
        await asyncio.sleep(0.5)
        info = await client.cluster_info()
        for node in info.nodes:
            if node.node_id in waiting and node.scrub_passes > waiting[node.node_id]:
                del waiting[node.node_id]
                progress(f"{node.node_id}: pass done")
    if waiting:
        raise CliError(
            f"weir doctor --scrub: no pass ended within {SCRUB_WAIT_S:.0f} s on {', '.join(sorted(waiting))}"
        )


async def doctor(args: argparse.Namespace) -> int:
    async with cluster_client(args) as client:
        if args.scrub:
            await _scrub_now(client)
        info = await client.cluster_info()
    now_ms = int(time.time() * 1000)
    nodes: list[dict[str, Any]] = [
        {
            "node_id": node.node_id,
            "alive": node.alive,
            "scrub_passes": node.scrub_passes,
            "scrub_last_pass_ms": node.scrub_last_pass_ms,
            "corrupt_records": node.corrupt_records,
            "integrity": node.integrity or "ok",
            "rebuilding_partitions": list(node.rebuilding_partitions),
            # healed, not a problem: a copy that diverged from its primary was cut and copied again
            "diverged_tails_cut": node.diverged_tails_cut,
        }
        for node in info.nodes
    ]
    healthy = all(
        node["alive"]
        and not node["corrupt_records"]
        and node["integrity"] == "ok"
        and not node["rebuilding_partitions"]
        for node in nodes
    )
    rows = [
        (
            node["node_id"],
            "alive" if node["alive"] else "DEAD",
            node["scrub_passes"],
            _age(node["scrub_last_pass_ms"], now_ms),
            node["corrupt_records"],
            node["integrity"],
            ", ".join(node["rebuilding_partitions"]) or "-",
            node["diverged_tails_cut"],
        )
        for node in nodes
    ]
    verdict = (
        "no problem found"
        if healthy
        else "PROBLEMS FOUND: corrupt records answer DATA_LOSS when read; rebuilding partitions catch up from a primary"
    )
    columns = [
        "node",
        "state",
        "scrub passes",
        "last pass",
        "corrupt records",
        "storage check",
        "rebuilding",
        "diverged tails healed",
    ]
    human = "\n".join([table(columns, rows), verdict])
    emit({"nodes": nodes, "healthy": healthy}, args.json, human)
    return 0 if healthy else 1
