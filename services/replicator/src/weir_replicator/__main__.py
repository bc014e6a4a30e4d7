"""`weir-replicator` / `python -m weir_replicator`: run one replicator (settings from `WEIR_REPLICATOR_*`)."""

from __future__ import annotations

from weir_server.service import run_service

from weir_replicator.server import serve
from weir_replicator.settings import ReplicatorSettings


def main() -> None:
    run_service(ReplicatorSettings, "weir-replicator", serve)


if __name__ == "__main__":
    main()
