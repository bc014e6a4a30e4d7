"""`weir stream move`, `weir stream pin|unpin` and `weir cluster rebalance`: moving partition copies
between nodes while they serve (Router.MovePartition, PlanRebalance, SetPartitionPinned)."""

from __future__ import annotations

import argparse
import json

from weir.cluster import Client
from weir.cluster_info import MoveProgress, PlannedMove, RebalancePlan
from weir.errors import WeirError

from weir_cli.cli_error import CliError
from weir_cli.output import emit, progress, proto_dict, table
from weir_cli.target import cluster_client


def _progress_line(item: MoveProgress) -> str:
    return f"[{item.elapsed_ms / 1000:6.1f}s] {item.step}: {item.message} (epoch {item.leader_epoch})"


async def _run_move(client: Client, move: PlannedMove, args: argparse.Namespace) -> MoveProgress:
    """One move, its progress on stderr (or as JSON lines on stdout with --json); the last item."""
    last = MoveProgress()
    async for item in client.move_partition(
        move.stream, move.partition, move.from_node_id, move.to_node_id, catch_up_timeout_ms=args.catch_up_timeout_ms
    ):
        last = item
        if args.json:
            print(json.dumps(proto_dict(item.to_proto())), flush=True)
        else:
            progress(_progress_line(item))
    return last


async def stream_move(args: argparse.Namespace) -> int:
    """Move one partition's copy (--from: default, the partition's primary) to --to."""
    async with cluster_client(args) as client:
        from_node = args.from_node
        if not from_node:
            route = await client.route(args.name, refresh=True)
            if args.partition >= len(route.partitions):
                raise CliError(f"stream {args.name!r} has {len(route.partitions)} partition(s)")
            from_node = route.partitions[args.partition].primary.node_id
        move = PlannedMove(stream=args.name, partition=args.partition, from_node_id=from_node, to_node_id=args.to_node)
        last = await _run_move(client, move, args)
    if not args.json:
        print(
            f"moved {args.name}[{args.partition}] from {from_node} to {args.to_node} in {last.elapsed_ms} ms "
            f"(publishes stalled at most {last.longest_fence_ms} ms)"
        )
    return 0


async def stream_pin(args: argparse.Namespace) -> int:
    return await _pin(args, True)


async def stream_unpin(args: argparse.Namespace) -> int:
    return await _pin(args, False)


async def _pin(args: argparse.Namespace, pinned: bool) -> int:
    async with cluster_client(args) as client:
        now = await client.set_partition_pinned(args.name, args.partition, pinned)
    emit(
        {"stream": args.name, "pinned_partitions": now},
        args.json,
        f"{args.name}[{args.partition}] {'pinned' if pinned else 'unpinned'}; pinned now: {now or 'none'}",
    )
    return 0


def _shares(plan: RebalancePlan) -> str:
    after = {share.node_id: share for share in plan.after}
    rows = [
        (share.node_id, share.copies, after[share.node_id].copies, share.leads, after[share.node_id].leads)
        for share in plan.before
    ]
    return table(["node", "copies", "after", "primaries", "after"], rows)


async def cluster_rebalance(args: argparse.Namespace) -> int:
    """Plan (PlanRebalance), print the plan, run each move in turn (unless --dry-run); a failed move
    is reported and the next one runs. Exit 1 when any failed."""
    async with cluster_client(args) as client:
        plan = await client.plan_rebalance(args.max_moves)
        if args.json:
            print(json.dumps(proto_dict(plan.to_proto())), flush=True)
        else:
            print(_shares(plan))
            print(f"{len(plan.moves)} move(s) planned" + (" (dry run: nothing moved)" if args.dry_run else ""))
        if args.dry_run or not plan.moves:
            return 0
        failed = 0
        for number, move in enumerate(plan.moves, 1):
            what = f"{move.stream}[{move.partition}] {move.from_node_id} -> {move.to_node_id}"
            try:
                last = await _run_move(client, move, args)
            except WeirError as error:
                failed += 1
                progress(f"move {number}/{len(plan.moves)} {what}: FAILED: {error.result_code.value}: {error.message}")
                continue
            if not args.json:
                print(f"move {number}/{len(plan.moves)} {what}: ok in {last.elapsed_ms} ms", flush=True)
    if failed:
        raise CliError(f"{failed} of {len(plan.moves)} move(s) failed; run `weir cluster rebalance` again")
    return 0
