"""Pushes a consumer's delivery horizon to the in-sync replicas of a partition this node leads
(delivery_horizon.py says why and when): the imperative shell of those decisions."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from weir import tls as sdk_tls
from weir.errors import ResultCode
from weir.v1 import internal_pb2
from weir_server.internal_clients import ReplicationClient
from weir_server.replication import ReplicationResult

from weir_partition_node import metrics
from weir_partition_node.delivery_horizon import DeliveryHorizon

logger = logging.getLogger(__name__)

# How long a fetch waits for its horizon push (each in-sync replica in parallel) before it answers anyway.
HORIZON_PUSH_TIMEOUT_S = 1.0


class HorizonPusher:
    """Pushes a consumer's delivery horizon to replicas (ReplicateConsumerState with
    `horizon_only`), over one cached Replication channel per replica, with this node's service
    identity. `internal_address`: a node id's registered internal address ("" when unknown)."""

    def __init__(
        self,
        internal_address: Callable[[str], Awaitable[str]],
        *,
        security: sdk_tls.Security,
        timeout_s: float = HORIZON_PUSH_TIMEOUT_S,
    ) -> None:
        self._internal_address = internal_address
        self._security = security
        self._timeout_s = timeout_s
        self._clients: dict[str, ReplicationClient] = {}  # by address: one per replica of this node's partitions

    async def __call__(
        self, stream: str, partition: int, consumer: str, horizon: DeliveryHorizon, node_ids: list[str]
    ) -> bool:
        request = internal_pb2.ReplicateConsumerStateRequest(
            stream=stream,
            leader_epoch=horizon.leader_epoch,
            horizon_only=True,
            snapshot=internal_pb2.ConsumerSnapshot(
                consumer=consumer,
                partition=partition,
                delivery_horizon=horizon.seq,
                horizon_since_ms=horizon.since_ms,
            ),
        )
        metrics.HORIZON_PUSHES.inc()
        answers = await asyncio.gather(*(self._push(node_id, request) for node_id in node_ids))
        return all(answers)

    async def _push(self, node_id: str, request: internal_pb2.ReplicateConsumerStateRequest) -> bool:
        try:
            address = await self._internal_address(node_id)
            if not address:
                raise ConnectionError(f"{node_id} has no known internal address")
            client = self._clients.get(address)
            if client is None:
                client = self._clients[address] = ReplicationClient(
                    address, timeout_s=self._timeout_s, tls=self._security
                )
            reply = await asyncio.wait_for(client.replicate("ReplicateConsumerState", request), self._timeout_s)
        except Exception as error:  # whatever failed (no address, refused, timed out): the fetch is answered anyway
            return self._failed(node_id, request, str(error) or type(error).__name__)
        # a replica without the consumer yet has nothing to deliver from: it is not a failure
        if reply.result_code not in (ReplicationResult.OK, ResultCode.NO_SUCH_CONSUMER):
            return self._failed(node_id, request, f"{reply.result_code} {reply.message}")
        return True

    def _failed(self, node_id: str, request: internal_pb2.ReplicateConsumerStateRequest, why: str) -> bool:
        metrics.HORIZON_PUSH_FAILURES.inc()
        logger.info(
            "%s/%d consumer %r: delivery horizon %d not confirmed by %s (%s); delivering anyway",
            request.stream,
            request.snapshot.partition,
            request.snapshot.consumer,
            request.snapshot.delivery_horizon,
            node_id,
            why,
        )
        return False

    async def close(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            await client.close()
