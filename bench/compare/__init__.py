"""Side-by-side benchmarks of Weir, NATS JetStream and Redis Streams (issue 8): ``python -m bench.compare``."""
