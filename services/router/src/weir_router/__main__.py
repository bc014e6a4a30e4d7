"""`weir-router` / `python -m weir_router`: run one router (settings from `WEIR_ROUTER_*`)."""

from __future__ import annotations

import logging

import uvloop
from weir_server.service_settings import load_settings

from weir_router.server import serve
from weir_router.settings import RouterSettings


def main() -> None:
    settings = load_settings(RouterSettings, "weir-router")
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s [%(name)s] %(message)s",
    )
    uvloop.run(serve(settings))


if __name__ == "__main__":
    main()
