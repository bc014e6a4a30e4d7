"""What only Weir's servers share (not the public SDK): the Redis metadata schema, the replication
and stream-config rules, gRPC interceptors, the internal-port clients and process tuning."""
