"""A bare grpc.aio server answering /KafkaPixy/Produce at once (bench.gateway_bench's floor: what any
gRPC front door in Python pays per call before it does anything). Run: ``python -m
bench.bare_kafka_pixy PORT``; SIGTERM stops it."""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import Any

import grpc
import uvloop
from weir_gateway.kafka_pixy.pb import kafkapixy_pb2 as pb
from weir_gateway.kafka_pixy.pb import kafkapixy_pb2_grpc as pb_grpc


class Bare(pb_grpc.KafkaPixyServicer):
    async def Produce(self, request: pb.ProdRq, context: Any) -> pb.ProdRs:
        return pb.ProdRs(partition=0, offset=0)


async def serve(port: int) -> None:
    server = grpc.aio.server()
    pb_grpc.add_KafkaPixyServicer_to_server(Bare(), server)
    server.add_insecure_port(f"127.0.0.1:{port}")
    await server.start()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await stop.wait()
    await server.stop(1)


if __name__ == "__main__":
    uvloop.run(serve(int(sys.argv[1])))
