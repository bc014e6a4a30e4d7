"""The floors bench.gateway_bench measures the gateway against, on /KafkaPixy/Produce:

- a bare grpc.aio server answering at once: what any gRPC front door in Python pays per call before
  it does anything. Run: ``python -m bench.bare_kafka_pixy PORT``.
- a bare proxy: a grpc.aio server that forwards each call, as one unary call on one channel, to
  another server (UPSTREAM, host:port) and answers with its response: what any gRPC front door in
  Python pays per call that it hands on to a backend, with no translation, batching or bookkeeping.
  Run: ``python -m bench.bare_kafka_pixy PORT UPSTREAM``.

SIGTERM stops either."""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import Any

import grpc
import uvloop
from weir_gateway.kafka_pixy.pb import kafkapixy_pb2 as pb
from weir_gateway.kafka_pixy.pb import kafkapixy_pb2_grpc as pb_grpc
from weir_server.runtime import tune_garbage_collector


class Bare(pb_grpc.KafkaPixyServicer):
    async def Produce(self, request: pb.ProdRq, context: Any) -> pb.ProdRs:
        return pb.ProdRs(partition=0, offset=0)


class BareProxy(pb_grpc.KafkaPixyServicer):
    """Produce handed on as is to `upstream`; its answer (or its status) is this call's."""

    def __init__(self, upstream: pb_grpc.KafkaPixyStub) -> None:
        self.upstream = upstream

    async def Produce(self, request: pb.ProdRq, context: Any) -> pb.ProdRs:
        response: pb.ProdRs = await self.upstream.Produce(request, timeout=30)
        return response


async def serve(port: int, upstream: str | None) -> None:
    """Serve on 127.0.0.1:`port` until SIGTERM/SIGINT: `Bare`, or `BareProxy` to `upstream`."""
    channel = grpc.aio.insecure_channel(upstream) if upstream else None
    servicer = BareProxy(pb_grpc.KafkaPixyStub(channel)) if channel is not None else Bare()
    server = grpc.aio.server()
    pb_grpc.add_KafkaPixyServicer_to_server(servicer, server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    tune_garbage_collector()  # as the gateway does: the floors run as it does
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    await server.stop(1)
    if channel is not None:
        await channel.close()


if __name__ == "__main__":
    uvloop.run(serve(int(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else None))
