"""The `weir` command line and the launcher that starts Weir's processes for real (`weir cluster
up`, `weir demo`, the tests and the benchmarks)."""
