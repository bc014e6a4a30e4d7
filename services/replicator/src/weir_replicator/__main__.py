"""`weir-replicator` / `python -m weir_replicator`: run one replicator (settings from `WEIR_REPLICATOR_*`)."""

from __future__ import annotations

import logging

import uvloop
from weir_server.service_settings import load_settings

from weir_replicator.server import serve
from weir_replicator.settings import ReplicatorSettings


def main() -> None:
    settings = load_settings(ReplicatorSettings, "weir-replicator")
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s [%(name)s] %(message)s",
    )
    uvloop.run(serve(settings))


if __name__ == "__main__":
    main()
