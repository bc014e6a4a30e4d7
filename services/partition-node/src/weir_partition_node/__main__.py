"""`weir-partition-node` / `python -m weir_partition_node`: run one partition node.

Settings come from `WEIR_NODE_*` environment variables (see settings.py and the README).
"""

from __future__ import annotations

import logging

import uvloop
from weir_server.service_settings import load_settings

from weir_partition_node.server import serve
from weir_partition_node.settings import NodeSettings


def main() -> None:
    settings = load_settings(NodeSettings, "weir-partition-node")
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s [%(name)s] %(message)s",
    )
    uvloop.run(serve(settings))


if __name__ == "__main__":
    main()
