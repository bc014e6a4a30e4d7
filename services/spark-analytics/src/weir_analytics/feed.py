"""Blocking reads of the nodes' change feeds (weir.v1.ChangeFeed on the internal ports) and node
discovery through the routers (weir.v1.Router GetClusterInfo).

These run inside Spark's Python processes (the streaming source's planner on the driver side and
the read tasks on the executors), which call them synchronously, so this module uses blocking
grpcio channels rather than asyncio. Offsets are change seqs: `next_change_seq` is the first
change not yet read (an exclusive end), change seqs start at 1.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass

import grpc
from weir import tls as weir_tls
from weir.errors import InvalidArgumentError, UnavailableError, WeirError
from weir.v1 import internal_pb2, internal_pb2_grpc, router_pb2, router_pb2_grpc, types_pb2

# ReadChanges serves at most this many changes per call.
MAX_CHANGES_PER_CALL = 10_000
# A from_change_seq above any horizon: ReadChanges then returns no change, only the horizon.
_HORIZON_PROBE = 2**62


@dataclass(frozen=True)
class FeedNode:
    """A node whose change feed the source reads."""

    node_id: str
    internal_address: str
    alive: bool = True


def parse_addresses(text: str) -> list[str]:
    """'host:port[,host:port...]' -> addresses. Errors: InvalidArgumentError when empty or malformed."""
    addresses = [part.strip() for part in text.split(",") if part.strip()]
    if not addresses:
        raise InvalidArgumentError("give at least one address as host:port[,host:port]")
    for address in addresses:
        host, _, port = address.rpartition(":")
        if not host or not port.isdigit():
            raise InvalidArgumentError(f"not a host:port address: {address!r}")
    return addresses


def parse_static_nodes(text: str) -> list[FeedNode]:
    """'node-1=host:port,node-2=host:port' -> nodes (for reading feeds without a router).
    Errors: InvalidArgumentError."""
    nodes: list[FeedNode] = []
    for part in (piece.strip() for piece in text.split(",")):
        if not part:
            continue
        node_id, separator, address = part.partition("=")
        if not separator or not node_id.strip():
            raise InvalidArgumentError(f"nodes: expected node_id=host:port, got {part!r}")
        nodes.append(FeedNode(node_id.strip(), parse_addresses(address)[0]))
    if not nodes:
        raise InvalidArgumentError("nodes: give at least one node_id=host:port")
    return nodes


def discover_nodes(routers: list[str], timeout_s: float) -> list[FeedNode]:
    """Every registered node (alive or not) from the first router that answers GetClusterInfo.
    Errors: UnavailableError when no router answers."""
    last_error: BaseException | None = None
    for address in routers:
        with weir_tls.sync_channel(address) as channel:
            stub = router_pb2_grpc.RouterStub(channel)
            try:
                response = stub.GetClusterInfo(router_pb2.GetClusterInfoRequest(), timeout=timeout_s)
            except grpc.RpcError as error:
                last_error = WeirError.from_rpc_error(error)
                continue
        return sorted(
            (FeedNode(node.node_id, node.internal_address, node.alive) for node in response.nodes),
            key=lambda node: node.node_id,
        )
    raise UnavailableError(f"no router answered GetClusterInfo ({', '.join(routers)}): {last_error}")


class FeedReader:
    """One node's change feed over a blocking channel. Close it (or use `with`)."""

    def __init__(self, node: FeedNode, timeout_s: float) -> None:
        self.node = node
        self.timeout_s = timeout_s
        self._channel = weir_tls.sync_channel(node.internal_address)
        self._stub = internal_pb2_grpc.ChangeFeedStub(self._channel)

    def __enter__(self) -> FeedReader:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def close(self) -> None:
        self._channel.close()

    def _read(self, from_change_seq: int, max_changes: int) -> internal_pb2.ReadChangesResponse:
        request = internal_pb2.ReadChangesRequest(from_change_seq=from_change_seq, max_changes=max_changes)
        try:
            return self._stub.ReadChanges(request, timeout=self.timeout_s)  # type: ignore[no-any-return]
        except grpc.RpcError as error:
            raise WeirError.from_rpc_error(error) from None

    def horizon(self) -> int:
        """The highest change seq committed on the node (0 for an empty feed)."""
        return self.position()[0]

    def position(self) -> tuple[int, int]:
        """(horizon, watermark_ms): the highest change seq committed on the node (0 for an empty
        feed), and a time below which every change of the node is at or below it (ReadChanges'
        watermark_ms; 0 from a node too old to say)."""
        response = self._read(_HORIZON_PROBE, 1)
        return int(response.last_change_seq), int(response.watermark_ms)

    def read_range(self, start: int, end: int, retry_for_s: float = 0.0) -> Iterator[types_pb2.Change]:
        """Every change with start <= change_seq < end, in change_seq order. `end` must not be
        above horizon() + 1 at some earlier moment (the feed never changes below its horizon).
        Unavailable nodes are retried for `retry_for_s`. Errors: ChangeFeedTruncatedError (its
        metadata["first_change_seq"] says where the feed now starts), UnavailableError."""
        cursor = start
        deadline = time.monotonic() + retry_for_s
        while cursor < end:
            try:
                response = self._read(cursor, min(MAX_CHANGES_PER_CALL, end - cursor))
            except WeirError as error:  # change_feed_truncated is not retryable: raised at once
                if not error.retryable or time.monotonic() >= deadline:
                    raise
                time.sleep(0.2)
                continue
            for change in response.changes:
                if change.change_seq >= end:
                    return
                yield change
            if response.next_change_seq <= cursor:
                raise UnavailableError(
                    f"node {self.node.node_id}: change feed did not advance past {cursor} "
                    f"(its horizon is {response.last_change_seq}, the range ends at {end - 1})"
                )
            cursor = response.next_change_seq
