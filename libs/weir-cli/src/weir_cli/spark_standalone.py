"""A Spark standalone cluster from the installed pyspark: one master and N workers as local
processes on loopback ports (`spark-class org.apache.spark.deploy.master.Master` / `...Worker`),
for running the analytics job against `spark://127.0.0.1:<port>` the way it runs against a real
Spark cluster (tests; trying the job on a cluster without installing Spark).

The workers run the executors with the job's own Python (the job sets PYSPARK_PYTHON), so the
`weir-spark-analytics` package they import is this environment's. Needs Java 17+ (as the job does).
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from weir_cli.process_basics import LaunchError, free_port, with_parent_death

READY_TIMEOUT_S = 60.0
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"


def spark_home() -> Path:
    """The installed pyspark's directory (it is a Spark home: bin/spark-class, jars/)."""
    import pyspark

    return Path(pyspark.__file__).parent


def _environment(log_dir: Path) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        SPARK_HOME=str(spark_home()),
        SPARK_LOCAL_IP="127.0.0.1",  # every daemon and executor on loopback
        SPARK_LOG_DIR=str(log_dir),
        # no REST submission server (a fixed port, 6066) on a cluster only this process submits to
        SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
    )
    return env


@dataclass
class SparkStandalone:
    """`SparkStandalone.start(directory, workers=2)`; `master_url`; `stop()`."""

    directory: Path
    master_port: int = 0
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    @classmethod
    def start(
        cls, directory: Path, *, workers: int = 2, worker_cores: int = 1, worker_memory: str = "1g"
    ) -> SparkStandalone:
        """Start the master, then `workers` workers, each registered before this returns. Errors:
        LaunchError with the end of the process's log."""
        cluster = cls(directory)
        directory.mkdir(parents=True, exist_ok=True)
        cluster.master_port = free_port()
        try:
            cluster._run(
                "master",
                [MASTER_CLASS, "--host", "127.0.0.1", "--port", str(cluster.master_port), "--webui-port", "0"],
                ready=r"I have been elected leader",
            )
            for index in range(1, workers + 1):
                work_dir = directory / f"worker-{index}"
                arguments = [WORKER_CLASS, cluster.master_url, "--host", "127.0.0.1", "--webui-port", "0"]
                arguments += ["--cores", str(worker_cores), "--memory", worker_memory, "--work-dir", str(work_dir)]
                cluster._run(f"worker-{index}", arguments, ready=r"Successfully registered with master")
        except BaseException:
            cluster.stop()
            raise
        return cluster

    def _run(self, name: str, arguments: list[str], *, ready: str) -> None:
        log = self.directory / f"{name}.log"
        self.logs.append(log)
        command = with_parent_death([str(spark_home() / "bin" / "spark-class"), *arguments])
        with open(log, "ab") as output:
            process = subprocess.Popen(
                command, env=_environment(self.directory), stdout=output, stderr=subprocess.STDOUT
            )
        self.processes.append(process)
        deadline = time.monotonic() + READY_TIMEOUT_S
        pattern = re.compile(ready)
        while time.monotonic() < deadline:
            if pattern.search(log.read_text(errors="replace")):
                return
            if process.poll() is not None:
                break
            time.sleep(0.1)
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-30:])
        raise LaunchError(f"spark {name} did not come up (looked for {ready!r}):\n{tail}")

    def stop(self) -> None:
        """Stop the workers, then the master (SIGTERM, then SIGKILL after 10 s)."""
        for process in reversed(self.processes):
            if process.poll() is None:
                process.terminate()
        for process in reversed(self.processes):
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes.clear()
