"""`weir scheduled list|release`: the delayed and held messages a stream's partitions still hold
(streams with allow_scheduled_messages), and delivering or discarding one of them now."""

from __future__ import annotations

import argparse
import datetime

from weir.v1 import types_pb2

from weir_cli.output import emit, table
from weir_cli.streams import partitions_of, target

LIST_PAGE = 1000


def _due(message: types_pb2.Message) -> str:
    if not message.deliver_at_ms:
        return "held"
    return datetime.datetime.fromtimestamp(message.deliver_at_ms / 1000, tz=datetime.UTC).isoformat(
        timespec="milliseconds"
    )


async def scheduled_list(args: argparse.Namespace) -> int:
    """Every partition's (or --partition's) scheduled messages in seq order, at most --max: partition,
    seq, when due (or "held"), the subject it is delivered on, payload size."""
    rows: list[tuple[int, int, str, str, int]] = []
    async with target(args) as to:
        for partition in partitions_of(args, await to.partitions(args.stream)):
            node = await to.node_for(args.stream, partition)
            from_seq = 0
            while len(rows) < args.max:
                page = await node.list_scheduled(
                    args.stream, partition, held_only=args.held, from_seq=from_seq, max_messages=LIST_PAGE
                )
                rows += [(partition, m.seq, _due(m), m.scheduled_subject, len(m.payload)) for m in page.messages]
                if not page.next_seq:
                    break
                from_seq = page.next_seq
    rows = rows[: args.max]
    records = [
        {"partition": p, "seq": seq, "due": due, "subject": subject, "payload_bytes": size}
        for p, seq, due, subject, size in rows
    ]
    emit(records, args.json, table(["partition", "seq", "due (UTC)", "subject", "bytes"], rows) if rows else "(none)")
    return 0


async def scheduled_release(args: argparse.Namespace) -> int:
    """Deliver now (or --discard) the scheduled or held message at SEQ of PARTITION."""
    async with target(args) as to:
        node = await to.node_for(args.stream, args.partition)
        delivered_seq = await node.release_scheduled(args.stream, args.partition, args.seq, discard=args.discard)
    if args.discard:
        emit({"discarded": args.seq}, args.json, f"discarded {args.stream}[{args.partition}] seq {args.seq}")
    else:
        human = f"delivered {args.stream}[{args.partition}] seq {args.seq} as seq {delivered_seq}"
        emit({"delivered_seq": delivered_seq}, args.json, human)
    return 0
