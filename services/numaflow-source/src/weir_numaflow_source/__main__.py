"""`weir-numaflow-source` / `python -m weir_numaflow_source`: run the Numaflow source sidecar
(settings from `WEIR_NUMAFLOW_SOURCE_*`)."""

from __future__ import annotations

import logging
import sys

import aiorun
from weir_server import tls
from weir_server.service import LOG_FORMAT, prepare_process
from weir_server.service_settings import load_settings

from weir_numaflow_source.server import SourceProcess
from weir_numaflow_source.settings import NumaflowSourceSettings


def main() -> None:
    allocator_line = prepare_process("weir-numaflow-source")
    settings = load_settings(NumaflowSourceSettings, "weir-numaflow-source")
    tls.refuse_unless_startable(settings, "weir-numaflow-source")
    logging.basicConfig(level=settings.log_level, format=LOG_FORMAT)
    logging.getLogger("pynumaflow._constants").propagate = False  # it prints through a handler of its own
    logging.getLogger(__name__).info("weir-numaflow-source: %s", allocator_line)
    process = SourceProcess(settings)
    try:
        aiorun.run(
            process.run(),
            use_uvloop=True,
            stop_on_unhandled_errors=True,
            shutdown_handler=process.begin_shutdown,
            shutdown_callback=process.shutdown,
        )
    except RuntimeError as error:
        # pynumaflow's server stops the loop itself when it ends; a stop landing in the few loop
        # turns of aiorun's shutdown phase after the leaving finished cuts that phase short, harmlessly
        if not process.left:
            raise
        logging.getLogger(__name__).info("the loop stopped during the shutdown phase (%s); the group was left", error)
    sys.exit(1 if process.failed else 0)


if __name__ == "__main__":
    main()
