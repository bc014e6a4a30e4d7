"""`weir-invoker` / `python -m weir_invoker`: run the invoker (settings from `WEIR_INVOKER_*`)."""

from __future__ import annotations

from weir_server.service import run_service

from weir_invoker.server import serve
from weir_invoker.settings import InvokerSettings


def main() -> None:
    run_service(InvokerSettings, "weir-invoker", serve)


if __name__ == "__main__":
    main()
