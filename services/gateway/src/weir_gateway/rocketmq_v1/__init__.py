"""RocketMQ v1's gRPC API (`/apache.rocketmq.v1.MessagingService/*`) over Weir: a topic (namespace,
name) is a stream, a RocketMQ partition a Weir partition, a consumer group a Weir consumer group
(each RocketMQ client one member); see `mapping` for names and headers, `core` for what is served.
"""
