"""RocketMQ v2's gRPC API (`/apache.rocketmq.v2.MessagingService/*`), the one every RocketMQ 5 SDK
speaks, over Weir on the same core as the v1 door (`weir_gateway.rocketmq_v1`: names, headers,
receipt handles, transactions, receiving): `servicer` decodes and encodes, `telemetry` holds the
clients' Telemetry streams (settings, orphaned transaction checks).
"""
