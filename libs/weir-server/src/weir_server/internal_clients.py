"""Clients of a partition node's internal port (weir.v1.ChangeFeed, Replication, TestClock): the
replicator, the router's controller, the tests and the CLI's `changes` command use them; they are not
part of the public SDK.

Failures raise typed `WeirError`s, as the SDK's clients do.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from weir import tls as weir_tls
from weir.client import DEFAULT_TIMEOUT_S, GrpcClient, LockstepStream
from weir.v1 import internal_pb2, internal_pb2_grpc, types_pb2


class TestClockClient(GrpcClient):
    """weir.v1.TestClock on the internal port of a node started with WEIR_NODE_TEST_CLOCK=true."""

    __test__ = False  # not a pytest test class

    def __init__(
        self, address: str, *, timeout_s: float = DEFAULT_TIMEOUT_S, tls: weir_tls.Security = weir_tls.PROCESS_DEFAULT
    ) -> None:
        super().__init__(address, timeout_s, tls=tls)
        self.stub = internal_pb2_grpc.TestClockStub(self.channel)

    async def advance(self, delta_ms: int) -> int:
        """Move the node's clock forward; returns the node's new time (ms since the epoch)."""
        response = await self._call(self.stub.AdvanceClock, internal_pb2.AdvanceClockRequest(delta_ms=delta_ms))
        return int(response.now_ms)


class ChangeFeedClient(GrpcClient):
    """weir.v1.ChangeFeed on one node's internal port."""

    def __init__(
        self, address: str, *, timeout_s: float = DEFAULT_TIMEOUT_S, tls: weir_tls.Security = weir_tls.PROCESS_DEFAULT
    ) -> None:
        super().__init__(address, timeout_s, tls=tls)
        self.stub = internal_pb2_grpc.ChangeFeedStub(self.channel)

    async def read_changes(self, from_change_seq: int = 0, max_changes: int = 0) -> internal_pb2.ReadChangesResponse:
        request = internal_pb2.ReadChangesRequest(from_change_seq=from_change_seq, max_changes=max_changes)
        return await self._call(self.stub.ReadChanges, request)  # type: ignore[no-any-return]

    def tail_changes(
        self,
        from_change_seq: int = 0,
        max_changes_per_batch: int = 0,
        *,
        stream: str = "",
        partition: int | None = None,
        exclude_appends: bool = False,
    ) -> AsyncIterator[internal_pb2.ChangeBatch]:
        """TailChanges: the feed from `from_change_seq` on, live. `stream` ("" = all), `partition`
        (None = all; needs `stream`) and `exclude_appends` make the node read and send only what
        matches; resume from a batch's `through_change_seq` + 1. Errors: ChangeFeedTruncatedError,
        InvalidArgumentError."""
        request = internal_pb2.TailChangesRequest(
            from_change_seq=from_change_seq,
            max_changes_per_batch=max_changes_per_batch,
            stream=stream,
            partition=partition,
            exclude_appends=exclude_appends,
        )
        return self._stream(self.stub.TailChanges, request)


class ReplicationClient(GrpcClient):
    """weir.v1.Replication on one node's internal port (the replicator, the router's controller)."""

    def __init__(
        self, address: str, *, timeout_s: float = DEFAULT_TIMEOUT_S, tls: weir_tls.Security = weir_tls.PROCESS_DEFAULT
    ) -> None:
        super().__init__(address, timeout_s, tls=tls)
        self.stub = internal_pb2_grpc.ReplicationStub(self.channel)

    async def fetch(
        self, request: internal_pb2.FetchReplicationRequest, timeout_s: float | None = None
    ) -> internal_pb2.FetchReplicationResponse:
        return await self._call(self.stub.FetchReplication, request, timeout_s)  # type: ignore[no-any-return]

    def fetch_stream(
        self,
    ) -> LockstepStream[internal_pb2.FetchReplicationRequest, internal_pb2.FetchReplicationResponse]:
        """FetchReplication exchanges on one long-lived call (FetchReplicationStream)."""
        return LockstepStream(lambda: self.stub.FetchReplicationStream(metadata=self.stream_metadata))

    def replicate_message_stream(
        self,
    ) -> LockstepStream[internal_pb2.ReplicateMessageRequest, internal_pb2.ReplicateResponse]:
        """ReplicateMessage exchanges on one long-lived call (ReplicateMessageStream)."""
        return LockstepStream(lambda: self.stub.ReplicateMessageStream(metadata=self.stream_metadata))

    def fetch_session_stream(
        self,
    ) -> LockstepStream[internal_pb2.FetchSessionRequest, internal_pb2.FetchSessionResponse]:
        """One replication session's fetches from this primary, on one long-lived call
        (FetchReplicationSession: every partition of a node pair in each exchange, issue 53)."""
        return LockstepStream(lambda: self.stub.FetchReplicationSession(metadata=self.stream_metadata))

    def replicate_session_stream(
        self,
    ) -> LockstepStream[internal_pb2.ReplicateSessionRequest, internal_pb2.ReplicateSessionResponse]:
        """One replication session's pushes to this follower, on one long-lived call (ReplicateSession)."""
        return LockstepStream(lambda: self.stub.ReplicateSession(metadata=self.stream_metadata))

    async def replicate(self, method: str, request: Any) -> internal_pb2.ReplicateResponse:
        """One Replicate* call by name (ReplicateMessage, ReplicateTruncate, ...)."""
        return await self._call(getattr(self.stub, method), request)  # type: ignore[no-any-return]

    async def consumer_snapshots(
        self, stream: str, partition: int, leader_epoch: int
    ) -> internal_pb2.GetConsumerSnapshotsResponse:
        request = internal_pb2.GetConsumerSnapshotsRequest(
            stream=stream, partition=partition, leader_epoch=leader_epoch
        )
        return await self._call(self.stub.GetConsumerSnapshots, request)  # type: ignore[no-any-return]

    async def record_checksums(
        self, stream: str, partition: int, from_seq: int, max_count: int = 0
    ) -> internal_pb2.GetRecordChecksumsResponse:
        """GetRecordChecksums: the replica's stored CRC-32s from `from_seq` (at most 1,000)."""
        request = internal_pb2.GetRecordChecksumsRequest(
            stream=stream, partition=partition, from_seq=from_seq, max_count=max_count
        )
        return await self._call(self.stub.GetRecordChecksums, request)  # type: ignore[no-any-return]

    async def replica_state(self, stream: str, partition: int) -> internal_pb2.GetReplicaStateResponse:
        request = internal_pb2.GetReplicaStateRequest(stream=stream, partition=partition)
        return await self._call(self.stub.GetReplicaState, request)  # type: ignore[no-any-return]

    async def transfer_leadership(
        self, stream: str, partition: int, leader_epoch: int, to_node_id: str, timeout_ms: int = 0
    ) -> internal_pb2.TransferLeadershipResponse:
        """Ask the partition's primary to hand leadership to `to_node_id` (see the RPC)."""
        request = internal_pb2.TransferLeadershipRequest(
            stream=stream, partition=partition, leader_epoch=leader_epoch, to_node_id=to_node_id, timeout_ms=timeout_ms
        )
        return await self._call(  # type: ignore[no-any-return]
            self.stub.TransferLeadership, request, (timeout_ms or 5000) / 1000 + self.timeout_s
        )

    async def start_scrub(self) -> internal_pb2.NodeStartScrubResponse:
        """Start the node's next scrub pass now (see the RPC)."""
        return await self._call(self.stub.StartScrub, internal_pb2.NodeStartScrubRequest())  # type: ignore[no-any-return]

    async def apply_placement(self, record: types_pb2.StreamRecord) -> internal_pb2.ApplyPlacementResponse:
        request = internal_pb2.ApplyPlacementRequest(record=record)
        return await self._call(self.stub.ApplyPlacement, request)  # type: ignore[no-any-return]
