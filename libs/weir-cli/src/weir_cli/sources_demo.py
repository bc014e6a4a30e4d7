"""`weir demo`'s stream sources: a replicas-3 stream copies the European orders out of a two-partition
orders stream and every refund out of a second stream, renaming the orders' subjects; each matching
message must arrive once, in its source partition's order, with its provenance headers, and the
tails' status must show both sources read to their end (over the cluster's TLS, with the services'
token, as the demo runs it)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from weir import Client, stream_config, stream_source
from weir.client import NodeClient
from weir.v1 import streams_pb2, types_pb2

from weir_cli.output import progress

ORDERS, REFUNDS, LEDGER = "demo-orders", "demo-refunds", "demo-ledger"
FINISH_TIMEOUT_S = 30.0


async def sources_round_trip(routers: list[str], messages: int = 200) -> dict[str, Any]:
    """Returns the sourced counts per source, the status, and `verified`."""
    progress(f"sources: {LEDGER} copies EU orders (renamed) and every refund, replicas 3 ...")
    async with Client(routers) as client:
        await client.create_stream(stream_config(ORDERS, partitions=2, replicas=3))
        await client.create_stream(stream_config(REFUNDS, replicas=3))
        for index in range(messages):
            region = "eu" if index % 2 else "us"
            await client.publish(ORDERS, f"orders.{region}.{index}", b"%d" % index, key=b"%d" % index)
            if index % 4 == 0:
                await client.publish(REFUNDS, f"refunds.{index}", b"%d" % index)
        await client.create_stream(
            stream_config(
                LEDGER,
                replicas=3,
                sources=[
                    stream_source(
                        ORDERS, filter_subject="orders.eu.*", transform=("orders.*.*", "ledger.{{wildcard(2)}}")
                    ),
                    stream_source(REFUNDS),
                ],
            )
        )
        expected = messages // 2 + (messages + 3) // 4
        found = await _read_until(client, expected)
        status = (await client.stream_info(LEDGER)).sources_status
    per_origin: dict[tuple[str, str], list[int]] = {}
    for message in found:
        headers = {header.key: header.value for header in message.headers}
        origin = (headers.get("waymaker-source-stream", ""), headers.get("waymaker-source-partition", ""))
        per_origin.setdefault(origin, []).append(int(headers.get("waymaker-source-seq", "0")))
    in_order = all(seqs == sorted(seqs) and len(set(seqs)) == len(seqs) for seqs in per_origin.values())
    renamed = all(message.subject.startswith(("ledger.", "refunds.")) for message in found)
    healthy = len(status) == 3 and not any(entry.last_error for entry in status)
    verified = len(found) == expected and in_order and renamed and healthy
    counts = {f"{stream}/{partition}": len(seqs) for (stream, partition), seqs in sorted(per_origin.items())}
    progress(f"sources: {len(found)} of {expected} messages copied ({counts}), in order per source partition")
    return {
        "sourced": counts,
        "status": [
            {"source": f"{entry.source_stream}/{entry.source_partition}", "last_sourced_seq": entry.last_sourced_seq}
            for entry in status
        ],
        "verified": verified,
    }


async def _read_until(client: Client, count: int) -> list[types_pb2.Message]:
    """The ledger's messages once `count` are there (or what is there after FINISH_TIMEOUT_S)."""
    deadline = time.monotonic() + FINISH_TIMEOUT_S
    found: list[types_pb2.Message] = []
    while time.monotonic() < deadline:
        found = []
        position = 0
        while True:
            read = await client.on_leader(LEDGER, 0, _reader(position))
            found.extend(message for message in read.messages if not message.subject.startswith("$weir."))
            if read.next_seq > read.last_seq:
                break
            position = read.next_seq
        if len(found) >= count:
            break
        await asyncio.sleep(0.2)
    return found


def _reader(position: int) -> Any:
    async def read(node: NodeClient) -> streams_pb2.ReadMessagesResponse:
        return await node.read_messages(LEDGER, 0, position, max_messages=1000)

    return read
