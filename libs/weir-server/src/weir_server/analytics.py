"""What the router, the CLI and spark-analytics agree on about the stats stream (DESIGN §6).

spark-analytics publishes one `weir.v1.ClusterAnalytics` (protobuf, the message payload) per
micro-batch that saw changes to `DEFAULT_STATS_STREAM` under `STATS_SUBJECT`, partition 0;
GetClusterStreamStats returns the latest one as `analytics`.
"""

from __future__ import annotations

DEFAULT_STATS_STREAM = "weir-analytics"
STATS_SUBJECT = "stats"
