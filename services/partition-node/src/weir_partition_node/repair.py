"""Repair of a secondary's damaged records from its primary (issue 32): what the scrub calls when a
partition this node follows holds records whose stored bytes fail their checksum. The primary's
copy of each is read over its client port (GetMessage, which verifies the primary's own checksum)
and put back only where the secondary's stored checksum equals the copy's (`Partition.repair`), so a
copy that is not byte for byte the record that was replicated changes nothing.

A primary's own damaged records are not repaired here yet: reads of them answer DATA_LOSS
(`corrupt`), and `weir doctor` keeps reporting them.
"""

from __future__ import annotations

import logging

from weir import tls as sdk_tls
from weir.client import NodeClient
from weir.errors import CorruptRecordError, NoSuchMessageError

from weir_partition_node.membership import Membership
from weir_partition_node.node import Node
from weir_partition_node.partition import Partition
from weir_partition_node.storage.base import checksum

logger = logging.getLogger(__name__)


class RepairFromPrimary:
    """The scrub's `repair` on a clustered node."""

    def __init__(
        self,
        node: Node,
        membership: Membership,
        timeout_s: float = 5.0,
        *,
        security: sdk_tls.Security = sdk_tls.PROCESS_DEFAULT,
    ) -> None:
        """`security`: how the primary's client port is called (the node's TLS identity and, with
        an auth file, the services' token; see NodeProcess._service_security)."""
        self.node = node
        self.membership = membership
        self.timeout_s = timeout_s
        self.security = security

    async def __call__(self, stream: str, index: int, partition: Partition, seqs: list[int]) -> None:
        hosted = self.node.hosted_stream(stream)
        if partition.leading or hosted is None or hosted.placement is None:
            return  # a primary's (or a standalone node's) records: no other copy is asked yet
        primary = hosted.placement.partitions[index].primary_node_id
        address = await self.membership.leader_address(primary)
        if not address:
            raise ConnectionError(f"the primary {primary!r} of {stream}/{index} has no known address")
        repairs: list[tuple[int, int, bytes]] = []
        async with NodeClient(address, timeout_s=self.timeout_s, tls=self.security) as client:
            for seq in seqs:
                try:
                    message = await client.get_message(stream, index, seq)
                except (NoSuchMessageError, CorruptRecordError) as error:  # gone there, or damaged there too
                    logger.warning(
                        "repair of %s/%d seq %d: the primary has no intact copy: %s", stream, index, seq, error
                    )
                    continue
                record = message.SerializeToString()
                repairs.append((seq, checksum(record), record))
        await partition.repair(repairs)
