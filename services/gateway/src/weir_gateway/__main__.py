"""`weir-gateway` / `python -m weir_gateway`: run one gateway (settings from `WEIR_GATEWAY_*`)."""

from __future__ import annotations

import logging

import uvloop
from weir_server.service_settings import load_settings

from weir_gateway.server import serve
from weir_gateway.settings import GatewaySettings


def main() -> None:
    settings = load_settings(GatewaySettings, "weir-gateway")
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s [%(name)s] %(message)s",
    )
    uvloop.run(serve(settings))


if __name__ == "__main__":
    main()
