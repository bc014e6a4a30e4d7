"""kafka-pixy's gRPC API (`/KafkaPixy/*`) over Weir: topics are streams, offsets are seqs - 1,
consumer groups are Weir consumer groups (this gateway instance is one member per group it serves).
"""
