"""`weir-gateway` / `python -m weir_gateway`: run one gateway (settings from `WEIR_GATEWAY_*`)."""

from __future__ import annotations

from weir_server.service import run_service

from weir_gateway.server import serve
from weir_gateway.settings import GatewaySettings


def main() -> None:
    run_service(GatewaySettings, "weir-gateway", serve)


if __name__ == "__main__":
    main()
