"""`weir-router` / `python -m weir_router`: run one router (settings from `WEIR_ROUTER_*`)."""

from __future__ import annotations

from weir_server.service import run_service

from weir_router.server import serve
from weir_router.settings import RouterSettings


def main() -> None:
    run_service(RouterSettings, "weir-router", serve)


if __name__ == "__main__":
    main()
