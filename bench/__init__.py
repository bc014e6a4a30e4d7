"""Weir benchmarks (run as modules, e.g. ``python -m bench.node_bench``)."""
