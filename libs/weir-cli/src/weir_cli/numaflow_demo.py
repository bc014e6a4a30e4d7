"""`weir demo`'s Numaflow round trip: a Numaflow source sidecar (services/numaflow-source) reads a
stream as Numaflow's data plane would call it (over its Unix socket: handshake, reads closed by an
end-of-transmission response, acks, pending, partitions), and every message must come back once with
its key, after which nothing is pending and the sidecar stops cleanly (SIGTERM).

The sidecar (weir-numaflow-source) is not a dependency of the CLI: pynumaflow pins protobuf < 7,
where the servers the CLI starts need protobuf 7, so it is installed on its own (its image), or next
to the CLI with that pin overridden as the workspace does. Where it is not importable the step is
skipped and says how to add it."""

from __future__ import annotations

import importlib.util
import time
from typing import Any

from weir import Client, stream_config

from weir_cli.launcher import LocalCluster
from weir_cli.output import progress

STREAM = "demo-numaflow"
PARTITIONS = 4
SKIPPED = "weir-numaflow-source is not installed"


def sidecar_installed() -> bool:
    """The sidecar runs as `python -m weir_numaflow_source` with this interpreter, and the demo reads
    it with its DataPlane client (pynumaflow's stubs): both need the package here."""
    return importlib.util.find_spec("weir_numaflow_source") is not None


async def numaflow_round_trip(cluster: LocalCluster, messages: int = 200) -> dict[str, Any]:
    """Returns the counts, the partitions the sidecar held, and `verified`; without the sidecar,
    `{"skipped": ..., "verified": True}`."""
    if not sidecar_installed():
        progress(
            "numaflow source sidecar: skipped (weir-numaflow-source is not installed; pynumaflow pins protobuf < 7, "
            "so add it with protobuf 7 forced, as the workspace does: echo 'protobuf>=7.35,<8' > over.txt && "
            "uv tool install weir-cli --with weir-numaflow-source --overrides over.txt)"
        )
        return {"skipped": SKIPPED, "verified": True}
    from weir_numaflow_source.data_plane import DataPlane

    async with Client(cluster.router_addresses) as client:
        await client.create_stream(stream_config(STREAM, partitions=PARTITIONS))
        acks = [
            await future
            for future in [
                await client.publish_nowait(STREAM, "events", b"numaflow %d" % number, key=b"user-%d" % (number % 16))
                for number in range(messages)
            ]
        ]
        expected = {b"numaflow %d" % number: b"user-%d" % (number % 16) for number in range(messages)}
        progress(f"numaflow source sidecar: reading {len(acks)} messages of {STREAM!r} through its Unix socket ...")
        sidecar = cluster.start_numaflow_source("numaflow-source-1", STREAM)
        try:
            async with DataPlane(str(sidecar.socket_path)) as source:
                ready = await source.ready()
                held = sorted(await source.partitions())
                read: dict[bytes, tuple[str, ...]] = {}
                repeats = 0
                deadline = time.monotonic() + 60
                while len(read) < messages and time.monotonic() < deadline:
                    data = await source.read(500, 1000)  # Numaflow's default read batch and timeout
                    for datum in data:
                        repeats += datum.payload in read
                        read[datum.payload] = datum.keys
                    await source.ack(data)
                pending = await source.pending()
            info = await client.consumer_info(STREAM, "numaflow")
        finally:
            stopped = sidecar.stop()
    keys_kept = all(read.get(payload) == (key.decode(),) for payload, key in expected.items())
    verified = (
        ready
        and held == list(range(PARTITIONS))
        and set(read) == set(expected)
        and repeats == 0
        and keys_kept
        and pending == 0
        and info.num_ack_pending == 0
        and stopped == 0
    )
    progress(f"numaflow source: read {len(read)} of {messages} once each with their keys; pending after acks {pending}")
    return {
        "messages": messages,
        "read_once": len(read) - repeats,
        "partitions_held": held,
        "pending_after_acks": pending,
        "verified": verified,
    }
