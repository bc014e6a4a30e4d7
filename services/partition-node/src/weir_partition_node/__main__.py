"""`weir-partition-node` / `python -m weir_partition_node`: run one partition node.

Settings come from `WEIR_NODE_*` environment variables (see settings.py and the README).
"""

from __future__ import annotations

from weir_server.service import run_service

from weir_partition_node.server import serve
from weir_partition_node.settings import NodeSettings


def main() -> None:
    run_service(NodeSettings, "weir-partition-node", serve)


if __name__ == "__main__":
    main()
