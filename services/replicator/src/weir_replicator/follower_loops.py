"""One pull-and-push loop per follower of one partition (DESIGN §5): the replicator's default way
to drive a `PartitionShipper`'s rounds; `sessions.py` is the other (one session per node pair,
`WEIR_REPLICATOR_REPLICATION_SESSIONS`). Both drive the same partition steps
(`sessions.SessionPartition`: sync_position, prepare_fetch, push_for, accept_push, finish_round).

Each loop pulls from the primary on one long-lived FetchReplicationStream call and pushes on one
ReplicateMessageStream call. Followers in step share one fetch a round (`fetch_rounds.FetchRounds`,
`fetch_coalesce_ms`). After a failure the pause doubles (from retry_backoff_ms up to
sessions.MAX_BACKOFF_S) so a dead node costs little; it is logged when it starts failing and then
every LOG_EVERY failures.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from weir.errors import WeirError
from weir.v1 import internal_pb2
from weir_server.internal_clients import ReplicationClient
from weir_server.replication import ReplicationResult

from weir_replicator import metrics
from weir_replicator.fetch_rounds import FetchRounds
from weir_replicator.followers import FollowerState
from weir_replicator.sessions import LOG_EVERY, ReplicationClients, SessionPartition, backoff_s

logger = logging.getLogger(__name__)


class FollowerLoops:
    """The loops of one partition's followers, for one leader epoch."""

    def __init__(
        self,
        partition: SessionPartition,
        followers: list[FollowerState],
        *,
        primary_address: str,
        clients: ReplicationClients,
        fetch_coalesce_ms: int,
        timeout_s: float,
        retry_backoff_s: float,
    ) -> None:
        self._partition = partition
        self._followers = followers
        self._primary_address = primary_address
        self._clients = clients
        self._rounds = FetchRounds(fetch_coalesce_ms)
        self._timeout_s = timeout_s
        self._retry_backoff_s = retry_backoff_s
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        name = "/".join(self._partition.labels)
        self._tasks = [
            loop.create_task(self._follow(follower), name=f"follow:{name}:{follower.node_id}")
            for follower in self._followers
        ]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for follower in self._followers:
            follower.close_streams()

    async def _follow(self, follower: FollowerState) -> None:
        failures = 0
        while True:
            await self._partition.lease_valid.wait()
            try:
                if await self._step(follower):
                    if failures >= LOG_EVERY:
                        logger.info("%s/%s -> %s: replicating again", *self._partition.labels, follower.node_id)
                    failures = 0
                    continue
            except WeirError as error:
                metrics.ERRORS.labels(error.result_code.value).inc()
                if failures % LOG_EVERY == 0:
                    logger.warning(
                        "%s/%s -> %s: %s (failure %d)", *self._partition.labels, follower.node_id, error, failures + 1
                    )
                follower.last_seq = None
            self._rounds.leave(follower.node_id)  # nobody waits for this follower's next fetch
            failures += 1
            await asyncio.sleep(backoff_s(failures, self._retry_backoff_s))

    async def _step(self, follower: FollowerState) -> bool:
        """One pull-and-push round; False when the caller should back off."""
        partition = self._partition
        if follower.last_seq is None and not await partition.sync_position(follower):
            return False
        prepared = partition.prepare_fetch(follower)
        entry = prepared.request

        async def send(
            node_id: str, sharing: list[str], after_seq: int, wait_ms: int, records_only: bool
        ) -> internal_pb2.FetchReplicationResponse:
            # The entry is this round's own: it becomes the fetch the round sends (no copy).
            entry.follower_last_seq = after_seq
            entry.max_wait_ms = wait_ms
            entry.wait_for_records_only = records_only
            entry.sharing_node_ids.extend(sharing)
            return await self._send_fetch(follower, entry)

        response = await self._rounds.fetch(
            follower.node_id, entry.follower_last_seq, prepared.wait_ms, send, records_only=entry.wait_for_records_only
        )
        pushed, push = await partition.push_for(follower, response)
        if not pushed:
            return False
        if push is not None:
            if follower.push_stream is None:
                follower.push_stream = self._target(follower).replicate_message_stream()
            reply = await follower.push_stream.exchange(push, timeout_s=self._timeout_s)
            if not partition.accept_push(follower, push, response, reply):
                return False
        await partition.finish_round(follower, prepared, response)
        return True

    def _target(self, follower: FollowerState) -> ReplicationClient:
        return self._clients.replication(follower.address)

    async def _send_fetch(
        self, follower: FollowerState, request: internal_pb2.FetchReplicationRequest
    ) -> internal_pb2.FetchReplicationResponse:
        """One FetchReplication on `follower`'s stream (the round's opener), speaking for the
        request's sharing_node_ids too."""
        if follower.fetch_stream is None:
            follower.fetch_stream = self._clients.replication(self._primary_address).fetch_stream()
        response = await follower.fetch_stream.exchange(request, timeout_s=self._timeout_s + request.max_wait_ms / 1000)
        if request.sharing_node_ids and response.result_code == ReplicationResult.OK and not response.sharing_reported:
            # A primary of an earlier version: the others' progress reaches it with their own fetches.
            logger.info("%s/%s: the primary does not take shared fetches", *self._partition.labels)
            self._rounds.sharing = False
        outcome = "records" if response.record_batches or response.records else "empty"
        metrics.FETCHES.labels(*self._partition.labels, outcome).inc()
        metrics.FETCHED_FOR.labels(*self._partition.labels).inc(1 + len(request.sharing_node_ids))
        return response
