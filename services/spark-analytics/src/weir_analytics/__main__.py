"""`weir-analytics` / `python -m weir_analytics`: run the analytics job (settings: WEIR_ANALYTICS_*)."""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from types import FrameType

from prometheus_client import REGISTRY
from weir_server import tls
from weir_server.logs import configure_logging
from weir_server.metrics_server import start_metrics_server
from weir_server.service import prepare_process
from weir_server.service_settings import load_settings

from weir_analytics.job import AnalyticsJob, StatsPublisher, build_session, start_query
from weir_analytics.metrics import StatsCollector
from weir_analytics.settings import AnalyticsSettings

logger = logging.getLogger("weir_analytics")


def main() -> None:
    allocator_line = prepare_process("weir-analytics")
    settings = load_settings(AnalyticsSettings, "weir-analytics")
    tls.refuse_unless_startable(settings, "weir-analytics")
    configure_logging(settings.log_level, settings.log_format)
    logger.info("weir-analytics: %s", allocator_line)
    # The Spark workers must run a Python that has the weir source installed: this one, unless told.
    os.environ["PYSPARK_PYTHON"] = settings.python or sys.executable
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    tls.configure(settings, "the analytics job")
    # Spark's Python workers (other processes) read the nodes' feeds: they take the same TLS from the
    # environment (weir.tls; on a Spark cluster, set spark.executorEnv.WEIR_TLS_* to files there).
    security = settings.channel_security()
    if security is not None:
        os.environ.update(security.to_environment())
    publisher = StatsPublisher(settings)
    job = AnalyticsJob(settings, publisher)
    REGISTRY.register(StatsCollector(job.snapshot))
    running = threading.Event()  # the ready file is written
    stopping = threading.Event()  # a stop signal arrived
    # /readyz: the query runs (Spark takes 15-30 s to start it); /healthz answers from here on
    httpd = start_metrics_server(
        settings.metrics_port, settings.host, lambda: running.is_set() and not stopping.is_set()
    )
    logger.info("metrics on %s:%d; starting Spark (%s)", settings.host, httpd.server_port, settings.spark_master)
    session = build_session(settings)
    query = start_query(session, settings, job)

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        logger.info("signal %d received, stopping the query", signum)
        stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    if settings.ready_file is not None:
        temporary = settings.ready_file.with_suffix(".tmp")
        temporary.write_text(json.dumps({"pid": os.getpid(), "metrics_port": httpd.server_port}))
        temporary.replace(settings.ready_file)
    running.set()
    logger.info("query %s running (checkpoint %s)", query.name, settings.data_dir.resolve() / "checkpoint")
    exit_code = 0
    try:
        while query.isActive and not stopping.is_set():
            query.awaitTermination(1)
        if query.exception() is not None:
            logger.error("query failed: %s", query.exception())
            exit_code = 1
    except Exception as error:  # StreamingQueryException: the query died (its cause is logged)
        logger.error("query failed: %s", error)
        exit_code = 1
    finally:
        if query.isActive:
            query.stop()
        publisher.close()
        session.stop()
        httpd.shutdown()
    sys.exit(exit_code)


if __name__ == "__main__":
    main()
