"""`weir-numaflow-source` / `python -m weir_numaflow_source`: run the Numaflow source sidecar
(settings from `WEIR_NUMAFLOW_SOURCE_*`)."""

from __future__ import annotations

import logging
import sys

import aiorun
from weir_server import tls
from weir_server.logs import configure_logging
from weir_server.service import prepare_process
from weir_server.service_settings import load_settings

from weir_numaflow_source.server import SourceProcess
from weir_numaflow_source.settings import NumaflowSourceSettings


def main() -> None:
    allocator_line = prepare_process("weir-numaflow-source")
    settings = load_settings(NumaflowSourceSettings, "weir-numaflow-source")
    tls.refuse_unless_startable(settings, "weir-numaflow-source")
    configure_logging(settings.log_level, settings.log_format)
    # pynumaflow's logger prints through handlers of its own (local time, no zone, INFO to stdout):
    # its records go through the service's handler instead, in the service's format
    numaflow_logger = logging.getLogger("pynumaflow._constants")
    for handler in list(numaflow_logger.handlers):
        numaflow_logger.removeHandler(handler)
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
