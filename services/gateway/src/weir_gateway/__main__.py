"""`weir-gateway` / `python -m weir_gateway`: run one gateway (settings from `WEIR_GATEWAY_*`): with
`--workers 1` this process serves; with more it supervises that many workers (`weir_gateway.workers`)."""

from __future__ import annotations

import sys

from weir_server.logs import configure_logging
from weir_server.service import prepare_process, run_service
from weir_server.service_settings import load_settings
from weir_server.tls import refuse_unless_startable

from weir_gateway.server import serve
from weir_gateway.settings import GatewaySettings
from weir_gateway.workers import die_with_supervisor, supervise, supervisor_pid

PROG = "weir-gateway"


def main() -> None:
    supervisor = supervisor_pid()
    if supervisor is not None:
        die_with_supervisor(supervisor)
    settings = load_settings(GatewaySettings, PROG)
    if settings.workers == 1 or supervisor is not None:
        run_service(GatewaySettings, PROG, serve)
        return
    prepare_process(PROG)
    refuse_unless_startable(settings, PROG)
    configure_logging(settings.log_level, settings.log_format)
    raise SystemExit(supervise(settings, sys.argv[1:]))


if __name__ == "__main__":
    main()
