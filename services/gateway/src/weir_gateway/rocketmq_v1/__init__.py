"""RocketMQ v1's gRPC API (`/apache.rocketmq.v1.MessagingService/*`) over Weir: a topic (namespace,
name) is a stream, a RocketMQ partition a Weir partition, a consumer group a Weir consumer group
(each RocketMQ client one member); see `mapping` for names, headers, tags and offsets, `handles` for
receipt handles and transaction ids, `core` (routes, assignment, send), `receiving`, `transactions`
and `offsets` for what is served, `encoding` for stored messages as RocketMQ messages.
"""
