"""The seed's cluster admin RPCs over Weir's router: stats, moves, rebalancing, pinning and
authority overrides. A seed stream is a one-partition Weir stream; a node's seed id is the number
the cluster gave it at its first registration (Router.GetClusterInfo's `number`).

How the seed's words map onto Weir's placement (`mapping.authority_of` decides the view):
- the *ring owner* is the partition's preferred leader (the first copy in preference order);
- an *authority override* is in force while another copy leads it (after a failover, a move, or
  a RebalanceStreams onto a copy): claimant = that primary, fence_epoch = the leader epoch;
- *ClearStreamAuthority* unpins the stream, so the controller's preferred-leader rebalance hands
  leadership back to the owner at its next pass (`WEIR_ROUTER_LEADER_REBALANCE_INTERVAL_MS`);
- *SetStreamPinned* pins every partition: no move, no rebalance plan and no preferred-leader
  handover touches it;
- *MigrateStream* moves the copy held by `source_node_id` to the alive node holding the fewest
  copies that holds none of this stream's (the gateway is no node, so it cannot be "the receiving
  side"); *RebalanceStreams* moves each stream to its plan's target (leadership only when the
  target already holds a copy), step by step, each with its own outcome;
- *TransferStream* is the seed's handover of a stream from its current owner, served as a fenced
  leadership transfer (Router.MovePartition from the primary onto another copy): the primary fences
  the stream, drains it and waits until that copy holds its whole log, then the copy leads under the
  next leader epoch (and takes the old owner's place in the preference order, so it is the ring
  owner from then on). The old owner keeps its copy as a secondary (the seed deletes its file; the
  stream keeps its replicas); a one-copy stream has no other copy, so its copy moves first, as
  MigrateStream's, and the old owner's copy goes as the seed's file does. No store file travels
  through the call: the call streams no `data` chunk and exactly one `summary`, whose
  `stream_last_seq` is the log end the old primary fenced at (the new epoch starts after it) and
  whose `total_bytes` is what the data chunks carried, 0. Publishers need not drain first (the seed
  refuses while a writer holds the stream): a publish stalls while the stream is fenced and goes on
  at the new primary.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

import grpc
from weir import Client
from weir.cluster_info import ClusterInfo, MoveProgress
from weir.errors import (
    FailedPreconditionError,
    InvalidArgumentError,
    NoSuchStreamError,
    UnavailableError,
    WeirError,
)
from weir.v1 import streams_pb2

from weir_gateway import metrics
from weir_gateway.waymaker_streams import mapping
from weir_gateway.waymaker_streams.mapping import MultiPartitionError
from weir_gateway.waymaker_streams.pb import waymaker_streams_pb2 as seed
from weir_gateway.waymaker_streams.rpc import OK, PROTOCOL, seed_rpc

INFO_CONCURRENCY = 16  # stream infos asked at once by the listing calls
TRANSFER_CATCH_UP_TIMEOUT_MS = 60_000  # TransferStream: how long the new leader may take to be in sync


class NodeNumbers:
    """Node ids <-> the seed's numbers, from one GetClusterInfo."""

    def __init__(self, info: ClusterInfo) -> None:
        self.number = {node.node_id: node.number for node in info.nodes}
        self.node_id = {node.number: node.node_id for node in info.nodes if node.number}
        self.alive = {node.node_id for node in info.nodes if node.alive}

    def of_number(self, number: int, what: str) -> str:
        node_id = self.node_id.get(number)
        if node_id is None:
            raise InvalidArgumentError(f"{what}: no node has number {number} (known: {sorted(self.node_id)})")
        return node_id


class ClusterAdmin:
    """The cluster admin half of WaymakerStreamsServicer (a mixin: it needs `client`)."""

    client: Client

    async def numbers(self) -> NodeNumbers:
        return NodeNumbers(await self.client.cluster_info())

    async def stream_infos(self) -> list[streams_pb2.GetStreamInfoResponse]:
        """Every stream's info (a stream deleted meanwhile is left out), INFO_CONCURRENCY at once."""
        limit = asyncio.Semaphore(INFO_CONCURRENCY)

        async def info(name: str) -> streams_pb2.GetStreamInfoResponse | None:
            async with limit:
                try:
                    return (await self.client.stream_info(name)).to_proto()
                except NoSuchStreamError:
                    return None

        found = await asyncio.gather(*(info(name) for name in await self.client.list_streams()))
        return [item for item in found if item is not None]

    @seed_rpc(seed.GetClusterStreamStatsResponse)
    async def GetClusterStreamStats(self, request: seed.GetClusterStreamStatsRequest, context: Any) -> Any:
        if request.local_only:
            raise InvalidArgumentError(
                "local_only asks one node for its own registry; the gateway is no cluster member and answers for "
                "the whole cluster: leave local_only unset"
            )
        numbers = await self.numbers()
        figures = await self.client.cluster_stats(include_per_stream=request.include_per_stream)
        return mapping.cluster_stats_to_seed(figures, numbers.number)

    @seed_rpc(seed.SetStreamPinnedResponse)
    async def SetStreamPinned(self, request: seed.SetStreamPinnedRequest, context: Any) -> Any:
        route = await self.client.route(request.stream, refresh=True)
        for partition in range(len(route.partitions)):
            await self.client.set_partition_pinned(request.stream, partition, request.pinned)
        return seed.SetStreamPinnedResponse(**OK)

    @seed_rpc(seed.ClearStreamAuthorityResponse)
    async def ClearStreamAuthority(self, request: seed.ClearStreamAuthorityRequest, context: Any) -> Any:
        route = await self.client.route(request.stream, refresh=True)
        for partition in range(len(route.partitions)):
            await self.client.set_partition_pinned(request.stream, partition, False)
        return seed.ClearStreamAuthorityResponse(
            **OK,
            message="unpinned: leadership returns to the preferred leader at the controller's next rebalance pass",
        )

    @seed_rpc(seed.ListStreamAuthorityOverridesResponse)
    async def ListStreamAuthorityOverrides(self, request: Any, context: Any) -> Any:
        numbers = await self.numbers()
        entries = []
        for info in await self.stream_infos():
            authority = mapping.authority_of(info, numbers.number)
            if authority.override is not None:
                entries.append(
                    seed.AuthorityOverrideEntry(
                        stream=info.config.name,
                        claimant_node_id=authority.override.claimant_node_id,
                        fence_epoch=authority.override.fence_epoch,
                    )
                )
        return seed.ListStreamAuthorityOverridesResponse(**OK, entries=entries)

    async def _move(self, stream: str, from_node_id: str, to_node_id: str, timeout_ms: int) -> MoveProgress:
        last = MoveProgress()
        async for item in self.client.move_partition(
            stream, 0, from_node_id, to_node_id, catch_up_timeout_ms=timeout_ms
        ):
            last = item
        return last

    async def _emptiest_elsewhere(self, numbers: NodeNumbers, copies: list[str]) -> str | None:
        """The alive node holding the fewest partition copies among those holding none of `copies`."""
        plan = await self.client.plan_rebalance(max_moves=1)
        held = {share.node_id: share.copies for share in plan.before}
        candidates = sorted((held.get(node_id, 0), node_id) for node_id in numbers.alive if node_id not in copies)
        return candidates[0][1] if candidates else None

    @seed_rpc(seed.MigrateStreamResponse)
    async def MigrateStream(self, request: seed.MigrateStreamRequest, context: Any) -> Any:
        numbers = await self.numbers()
        source = numbers.node_id.get(request.source_node_id)
        info = (await self.client.stream_info(request.name)).to_proto()
        copies = mapping.copies_of(info)
        if source is None or source not in copies:
            return seed.MigrateStreamResponse(
                success=False,
                result_code="source_unreachable",
                message=f"node {request.source_node_id} holds no copy of {request.name!r} (copies on "
                f"{sorted(numbers.number.get(node_id, 0) for node_id in copies)})",
            )
        target = await self._emptiest_elsewhere(numbers, copies)
        if target is None:
            return seed.MigrateStreamResponse(
                success=False,
                result_code="already_exists",
                message=f"every alive node already holds a copy of {request.name!r}: there is nowhere to move it",
            )
        try:
            await self._move(request.name, source, target, 0)
        except FailedPreconditionError as error:
            return seed.MigrateStreamResponse(success=False, result_code="source_busy", message=error.message)
        after = await self.client.stream_info(request.name)
        return seed.MigrateStreamResponse(
            **OK,
            message=f"moved from node {request.source_node_id} to node {numbers.number[target]}",
            total_bytes=after.bytes,
            stream_last_seq=max((partition.last_seq for partition in after.partitions), default=0),
        )

    @seed_rpc(seed.RebalanceStreamsResponse)
    async def RebalanceStreams(self, request: seed.RebalanceStreamsRequest, context: Any) -> Any:
        if not request.plan:
            return seed.RebalanceStreamsResponse(success=False, result_code="no_plan", message="the plan is empty")
        numbers = await self.numbers()
        steps = [await self._rebalance_step(entry, numbers, request.per_step_timeout_ms) for entry in request.plan]
        done = all(step.success for step in steps)
        return seed.RebalanceStreamsResponse(
            success=done,
            result_code="ok" if done else "partial",
            message=f"{sum(step.success for step in steps)} of {len(steps)} step(s) done",
            steps=steps,
        )

    async def _rebalance_step(
        self, entry: seed.RebalancePlanEntry, numbers: NodeNumbers, timeout_ms: int
    ) -> seed.RebalanceStepOutcome:
        outcome = seed.RebalanceStepOutcome(name=entry.name, target_node_id=entry.target_node_id)
        try:
            target = numbers.of_number(entry.target_node_id, "target_node_id")
            info = await self.client.stream_info(entry.name)
            primary = info.placement[0].primary_node_id if info.placement else ""
            if not primary:
                outcome.result_code, outcome.message = "no_source", f"{entry.name!r} has no primary now"
                return outcome
            if primary == target:
                outcome.success, outcome.result_code = True, "skipped_same_node"
                outcome.message = f"node {entry.target_node_id} already leads {entry.name!r}"
                return outcome
            last = await self._move(entry.name, primary, target, timeout_ms)
            outcome.success, outcome.result_code, outcome.message = True, "ok", last.message
        except (FailedPreconditionError, UnavailableError) as error:
            outcome.result_code, outcome.message = "source_busy", error.message
        except WeirError as error:
            outcome.result_code, outcome.message = mapping.seed_result_code("RebalanceStreams", error), error.message
        return outcome

    async def TransferStream(
        self, request: seed.TransferStreamRequest, context: grpc.aio.ServicerContext
    ) -> AsyncIterator[seed.TransferStreamChunk]:
        """The seed's handover of stream `name` from its owner, as a fenced leadership transfer to
        another in-sync copy (see the module docstring): no `data` chunk, then one `summary`
        (`stream_last_seq`: the last seq the old primary held when it fenced; `total_bytes`: 0, no
        bytes were shipped). The seed's chunk has no result fields, so a refusal ends the call with
        a status and changes nothing: INVALID_ARGUMENT (no name, a stream of several partitions),
        NOT_FOUND (no such stream), FAILED_PRECONDITION (pinned, a move of its copies under way, no
        other alive copy to take over, the placement changed meanwhile), UNAVAILABLE (its primary
        is down: retry after the failover)."""
        started = time.perf_counter()
        try:
            summary = await self._transfer_leadership(request.name)
        except WeirError as error:
            metrics.RPC_ERRORS.labels(PROTOCOL, "TransferStream", error.result_code.value).inc()
            await context.abort(error.status_code, error.message)
        finally:
            metrics.RPC_SECONDS.labels(PROTOCOL, "TransferStream").observe(time.perf_counter() - started)
        yield seed.TransferStreamChunk(summary=summary)

    async def _transfer_leadership(self, name: str) -> seed.TransferStreamSummary:
        """Hand stream `name`'s leadership from its primary to its first other alive copy (in sync
        first, then in preference order): MovePartition onto a copy, leadership only; a stream with
        no other alive copy moves its copy, as MigrateStream does, to the alive node holding the
        fewest copies, leadership with it. Errors: see TransferStream."""
        if not name:
            raise InvalidArgumentError("name: the stream to transfer is required")
        info = (await self.client.stream_info(name)).to_proto()
        if len(info.placement.partitions) != 1:
            raise MultiPartitionError(
                f"stream {name!r} has {len(info.placement.partitions)} partitions; the waymaker.streams API "
                "addresses one-partition streams (move each partition with weir.v1 Router.MovePartition)"
            )
        if 0 in info.pinned_partitions:
            raise FailedPreconditionError(f"stream {name!r} is pinned: unpin it (SetStreamPinned) to transfer it")
        entry, copies = info.placement.partitions[0], mapping.copies_of(info)
        if len(copies) != info.config.replicas:
            raise FailedPreconditionError(
                f"stream {name!r} has {len(copies)} copies for {info.config.replicas} replicas: a move of its "
                "copies is under way; transfer it once that is done"
            )
        numbers = await self.numbers()
        others = [node_id for node_id in copies if node_id != entry.primary_node_id and node_id in numbers.alive]
        others.sort(key=lambda node_id: node_id not in entry.in_sync_node_ids)  # in sync first, else by preference
        target = others[0] if others else await self._emptiest_elsewhere(numbers, copies)
        if target is None:
            raise FailedPreconditionError(
                f"stream {name!r} has no other alive copy, and no alive node without one, to take its leadership"
            )
        handed_over_in = 0
        async for item in self.client.move_partition(
            name, 0, entry.primary_node_id, target, catch_up_timeout_ms=TRANSFER_CATCH_UP_TIMEOUT_MS
        ):
            if item.step == "hand_over":
                handed_over_in = item.leader_epoch
        after = (await self.client.stream_info(name)).to_proto().placement.partitions[0]
        start = next((item.start_seq for item in after.epoch_starts if item.leader_epoch == handed_over_in), 0)
        if not start:
            raise FailedPreconditionError(f"stream {name!r}: the placement changed during the transfer; run it again")
        return seed.TransferStreamSummary(total_bytes=0, stream_last_seq=start - 1)
