"""Every setting the services read is set in deploy/docker-compose.yml and documented in README.md;
the example Numaflow pipeline (deploy/numaflow/pipeline.yaml) gives its source sidecar only real settings;
every Weir service of compose has a development certificate and every metrics port in compose is
scraped by deploy/prometheus/prometheus.yml.

The variables come from the pydantic-settings classes themselves: field `x` of a class whose
`model_config["env_prefix"]` is `WEIR_NODE_` is `WEIR_NODE_X`. A compose service runs a program when
its `image:` is that program's image (weir/partition-node, ...), whatever the service is called. The
checks run both ways: a setting missing from compose or the README fails, and so does a `WEIR_*`
variable in compose or a README row that names no setting (a typo, or a removed setting).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError
from pydantic_settings import BaseSettings
from weir_analytics.settings import AnalyticsSettings
from weir_gateway.settings import GatewaySettings
from weir_invoker.settings import InvokerSettings
from weir_numaflow_source.settings import NumaflowSourceSettings
from weir_partition_node.settings import NodeSettings
from weir_replicator.settings import ReplicatorSettings
from weir_router.settings import RouterSettings

ROOT = Path(__file__).resolve().parents[1]
COMPOSE_FILE = ROOT / "deploy" / "docker-compose.yml"
NUMAFLOW_PIPELINE_FILE = ROOT / "deploy" / "numaflow" / "pipeline.yaml"
PROMETHEUS_FILE = ROOT / "deploy" / "prometheus" / "prometheus.yml"
README_FILE = ROOT / "README.md"


@dataclass(frozen=True)
class Program:
    name: str
    settings: type[BaseSettings]
    image: str  # the image repository, without the tag (compose's, or the Numaflow pipeline's)
    readme_section: str  # the README heading of its configuration table


# The programs deploy/docker-compose.yml runs.
PROGRAMS = [
    Program("partition-node", NodeSettings, "weir/partition-node", "Configuration (partition node)"),
    Program("router", RouterSettings, "weir/router", "Configuration (router)"),
    Program("replicator", ReplicatorSettings, "weir/replicator", "Configuration (replicator)"),
    Program("spark-analytics", AnalyticsSettings, "weir/spark-analytics", "Configuration (analytics)"),
    Program("gateway", GatewaySettings, "weir/gateway", "Configuration (gateway)"),
    Program("invoker", InvokerSettings, "weir/invoker", "Configuration (invoker)"),
]
# Not in compose: Numaflow runs it in a source vertex's pods (deploy/numaflow/pipeline.yaml).
NUMAFLOW_SOURCE = Program(
    "numaflow-source", NumaflowSourceSettings, "weir-numaflow-source", "Configuration (numaflow-source)"
)
# Every program with a configuration table in the README.
DOCUMENTED = [*PROGRAMS, NUMAFLOW_SOURCE]

# Variables that must NOT be set in compose. They are still documented in the README.
COMPOSE_EXEMPT = {
    # Written by the local launcher (weir_cli.launcher) to learn the bound ports; compose has fixed ports.
    "WEIR_NODE_READY_FILE",
    "WEIR_ROUTER_READY_FILE",
    "WEIR_REPLICATOR_READY_FILE",
    "WEIR_ANALYTICS_READY_FILE",
    "WEIR_GATEWAY_READY_FILE",
    "WEIR_INVOKER_READY_FILE",
    # Tests only: replaces the node's clock with one moved by the TestClock service.
    "WEIR_NODE_TEST_CLOCK",
    # A one-shot mode (process what the feeds hold, then exit), not a long-running service.
    "WEIR_ANALYTICS_ONCE",
    # The image sets PYSPARK_PYTHON itself; unset, the job uses its own interpreter (the image's venv python).
    "WEIR_ANALYTICS_PYTHON",
}

README_ROW = re.compile(r"^\|\s*`(WEIR_[A-Z0-9_]+)`\s*\|", re.MULTILINE)


def variables(program: Program) -> dict[str, str]:
    """Environment variable -> field name, derived from the settings class."""
    prefix = program.settings.model_config.get("env_prefix", "")
    assert prefix.startswith("WEIR_"), f"{program.settings.__name__}: env_prefix {prefix!r}"
    result = {}
    for field_name, field in program.settings.model_fields.items():
        # An alias would change the variable's name; none of the settings classes uses one.
        assert field.alias is None and field.validation_alias is None, (
            f"{program.settings.__name__}.{field_name} has an alias: derive its variable from it"
        )
        result[prefix + field_name.upper()] = field_name
    return result


def load_compose() -> dict[str, Any]:
    # safe_load resolves the anchors and `<<:` merge keys the compose file uses.
    document = yaml.safe_load(COMPOSE_FILE.read_text())
    assert isinstance(document, dict)
    return document


def image_repository(image: str) -> str:
    """weir/router:dev -> weir/router (a registry host:port before the last / is kept)."""
    last = image.rsplit("/", 1)[-1]
    return image[: len(image) - len(last)] + last.split(":", 1)[0].split("@", 1)[0]


def compose_services(program: Program) -> dict[str, dict[str, Any]]:
    """The compose services running `program`: service name -> service definition."""
    services = load_compose()["services"]
    return {
        name: service
        for name, service in services.items()
        # the optional Spark cluster runs the analytics image's Spark daemons, not the job
        if image_repository(str(service.get("image", ""))) == program.image and "entrypoint" not in service
    }


def environment(service: dict[str, Any]) -> dict[str, str | None]:
    """A service's environment, as a mapping (compose also allows a list of KEY=VALUE)."""
    env = service.get("environment") or {}
    if isinstance(env, list):
        pairs = [item.split("=", 1) for item in env]
        return {pair[0]: pair[1] if len(pair) == 2 else None for pair in pairs}
    return {str(key): None if value is None else str(value) for key, value in env.items()}


def readme_rows(section: str) -> list[str]:
    """The variables named in the first cell of the table rows under `## <section>`."""
    text = README_FILE.read_text()
    match = re.search(rf"^## {re.escape(section)}\n(.*?)(?=^## |\Z)", text, re.MULTILINE | re.DOTALL)
    assert match, f"README.md has no '## {section}' section"
    return README_ROW.findall(match.group(1))


PROGRAM_IDS = [program.name for program in PROGRAMS]
DOCUMENTED_IDS = [program.name for program in DOCUMENTED]


def test_every_weir_service_runs_a_known_program() -> None:
    images = {program.image for program in PROGRAMS}
    unknown = {
        name: service["image"]
        for name, service in load_compose()["services"].items()
        if str(service.get("image", "")).startswith("weir/") and image_repository(service["image"]) not in images
    }
    assert not unknown, f"compose services with a weir image this test does not know: {unknown}"
    for program in PROGRAMS:
        assert compose_services(program), f"no compose service runs {program.image}"


@pytest.mark.parametrize("program", PROGRAMS, ids=PROGRAM_IDS)
def test_compose_sets_every_variable(program: Program) -> None:
    missing = [
        f"{service_name}: {variable} (not set in its environment)"
        for service_name, service in compose_services(program).items()
        for variable in variables(program)
        if variable not in COMPOSE_EXEMPT and environment(service).get(variable) is None
    ]
    assert not missing, f"{COMPOSE_FILE.name} lacks {program.settings.__name__} settings:\n" + "\n".join(missing)


@pytest.mark.parametrize("program", PROGRAMS, ids=PROGRAM_IDS)
def test_compose_sets_only_real_variables(program: Program) -> None:
    known = variables(program)
    wrong = [
        f"{service_name}: {variable}"
        + (" (exempt: must not be set in compose)" if variable in COMPOSE_EXEMPT else " (no such setting)")
        for service_name, service in compose_services(program).items()
        for variable in environment(service)
        # pydantic-settings matches names case-insensitively; compose must use the upper-case name.
        if variable.upper().startswith("WEIR_") and (variable not in known or variable in COMPOSE_EXEMPT)
    ]
    assert not wrong, f"{COMPOSE_FILE.name} sets variables {program.settings.__name__} does not read:\n" + "\n".join(
        wrong
    )


@pytest.mark.parametrize("program", PROGRAMS, ids=PROGRAM_IDS)
def test_compose_values_are_valid(program: Program) -> None:
    """The values compose sets pass the settings' own validation (types, ranges, choices)."""
    known = variables(program)
    invalid = []
    for service_name, service in compose_services(program).items():
        values = {known[key]: value for key, value in environment(service).items() if key in known}
        try:
            # model_validate does not read the process environment: only these values are checked.
            program.settings.model_validate(values)
        except ValidationError as error:
            invalid.append(f"{service_name}: {error}")
    assert not invalid, f"invalid {program.settings.__name__} values in {COMPOSE_FILE.name}:\n" + "\n".join(invalid)


@pytest.mark.parametrize("program", DOCUMENTED, ids=DOCUMENTED_IDS)
def test_readme_documents_every_variable(program: Program) -> None:
    rows = readme_rows(program.readme_section)
    missing = [variable for variable in variables(program) if variable not in rows]
    assert not missing, f"README.md '## {program.readme_section}' has no row for: {', '.join(missing)}"


@pytest.mark.parametrize("program", DOCUMENTED, ids=DOCUMENTED_IDS)
def test_readme_rows_are_real_variables(program: Program) -> None:
    rows = readme_rows(program.readme_section)
    known = variables(program)
    unknown = [variable for variable in rows if variable not in known]
    assert not unknown, (
        f"README.md '## {program.readme_section}' documents variables {program.settings.__name__} "
        f"does not read: {', '.join(unknown)}"
    )
    duplicated = sorted({variable for variable in rows if rows.count(variable) > 1})
    assert not duplicated, f"README.md '## {program.readme_section}' repeats rows: {', '.join(duplicated)}"


def test_exemptions_are_real_variables() -> None:
    every = {variable for program in PROGRAMS for variable in variables(program)}
    stale = sorted(COMPOSE_EXEMPT - every)
    assert not stale, f"COMPOSE_EXEMPT names variables no settings class reads: {stale}"


def weir_services() -> dict[str, dict[str, Any]]:
    """The compose services running one of PROGRAMS (not the certs job, not the Spark daemons)."""
    return {name: service for program in PROGRAMS for name, service in compose_services(program).items()}


def test_every_weir_service_has_a_development_certificate_for_its_name() -> None:
    """The certs service names every Weir service (`devcerts --name`), so its certificate is valid
    for the host name the others dial it by."""
    entrypoint = [str(part) for part in load_compose()["services"]["certs"]["entrypoint"]]
    named = {entrypoint[index + 1] for index, part in enumerate(entrypoint[:-1]) if part == "--name"}
    missing = sorted(set(weir_services()) - named)
    assert not missing, f"the certs service makes no certificate for: {missing}"


def test_prometheus_scrapes_every_metrics_port_of_compose() -> None:
    """Each Weir service's WEIR_*_METRICS_PORT, as `<service>:<port>`, is a target of
    deploy/prometheus/prometheus.yml; and every target names a compose service."""
    config = yaml.safe_load(PROMETHEUS_FILE.read_text())
    targets = {
        str(target)
        for job in config["scrape_configs"]
        for static in job.get("static_configs", [])
        for target in static.get("targets", [])
    }
    expected = {
        f"{name}:{value}"
        for name, service in weir_services().items()
        for variable, value in environment(service).items()
        if variable.startswith("WEIR_") and variable.endswith("_METRICS_PORT")
    }
    assert expected, "no WEIR_*_METRICS_PORT in compose"
    assert not expected - targets, f"{PROMETHEUS_FILE.name} does not scrape: {sorted(expected - targets)}"
    services = set(load_compose()["services"])
    unknown = sorted(target for target in targets if target.rsplit(":", 1)[0] not in services)
    assert not unknown, f"{PROMETHEUS_FILE.name} scrapes hosts compose does not run: {unknown}"


# -- the example Numaflow pipeline ----------------------------------------------------------------


def load_numaflow_pipeline() -> dict[str, Any]:
    document = yaml.safe_load(NUMAFLOW_PIPELINE_FILE.read_text())
    assert isinstance(document, dict)
    return document


def udsource_containers() -> dict[str, dict[str, Any]]:
    """The pipeline's user-defined source containers: vertex name -> `source.udsource.container`."""
    vertices = load_numaflow_pipeline()["spec"]["vertices"]
    return {
        vertex["name"]: vertex["source"]["udsource"]["container"]
        for vertex in vertices
        if "udsource" in (vertex.get("source") or {})
    }


def test_the_numaflow_pipeline_reads_weir_through_the_sidecar_and_its_edges_connect_its_vertices() -> None:
    pipeline = load_numaflow_pipeline()
    assert pipeline["apiVersion"] == "numaflow.numaproj.io/v1alpha1"
    assert pipeline["kind"] == "Pipeline"
    containers = udsource_containers()
    assert containers, f"{NUMAFLOW_PIPELINE_FILE.name}: no vertex has a `source: udsource: container:`"
    for vertex, container in containers.items():
        assert image_repository(str(container.get("image", ""))) == NUMAFLOW_SOURCE.image, (
            f"{vertex}: the udsource image is not {NUMAFLOW_SOURCE.image}"
        )
    vertices = [vertex["name"] for vertex in pipeline["spec"]["vertices"]]
    assert len(set(vertices)) == len(vertices), f"repeated vertex names: {vertices}"
    edges = [(edge["from"], edge["to"]) for edge in pipeline["spec"]["edges"]]
    dangling = [edge for edge in edges if not set(edge) <= set(vertices)]
    assert not dangling, f"edges naming no vertex: {dangling}"
    connected = {name for edge in edges for name in edge}
    assert connected == set(vertices), f"vertices no edge connects: {sorted(set(vertices) - connected)}"
    sources = {vertex["name"] for vertex in pipeline["spec"]["vertices"] if "source" in vertex}
    sinks = {vertex["name"] for vertex in pipeline["spec"]["vertices"] if "sink" in vertex}
    assert sources and sinks
    wrong_way = [edge for edge in edges if edge[1] in sources or edge[0] in sinks]
    assert not wrong_way, f"edges into a source or out of a sink: {wrong_way}"


def test_the_numaflow_pipeline_gives_the_sidecar_only_real_and_valid_settings() -> None:
    known = variables(NUMAFLOW_SOURCE)
    for vertex, container in udsource_containers().items():
        env = {str(item["name"]): item.get("value") for item in container.get("env") or []}
        unknown = [name for name in env if name.upper().startswith("WEIR_") and name not in known]
        assert not unknown, f"{vertex}: variables NumaflowSourceSettings does not read: {unknown}"
        assert env.get("WEIR_NUMAFLOW_SOURCE_STREAM"), f"{vertex}: WEIR_NUMAFLOW_SOURCE_STREAM is required"
        values = {known[name]: value for name, value in env.items() if name in known and value is not None}
        # model_validate does not read the process environment: only these values are checked.
        NUMAFLOW_SOURCE.settings.model_validate(values)


def test_the_compose_redis_serves_tls_with_the_password_the_certs_service_made(tmp_path: Path) -> None:
    """The compose Redis as a process: the certs service's files (devcerts --redis-owner), the
    redis service's command with a free port, the services' way in (rediss://, the password file,
    the service certificate), and the compose health check's own command."""
    import os
    import shutil
    import subprocess
    import time

    import redis
    from weir_cli.metadata_store import redis_access, redis_server_binary, redis_supports_tls
    from weir_cli.process_basics import free_port
    from weir_server import devcerts

    binary, _ = redis_server_binary()
    cli_path = f"{Path(binary).parent}:{os.defpath}"  # the redis-cli beside that server (the venv's may lack TLS)
    if not redis_supports_tls(binary) or shutil.which("redis-cli", path=cli_path) is None:
        pytest.skip("needs a redis-server built with TLS and redis-cli (Debian: apt-get install redis-server)")
    certs = tmp_path / "certs"
    assert devcerts.main([str(certs), "--name", "redis", "--redis-owner", str(os.getuid())]) == 0
    service = yaml.safe_load(COMPOSE_FILE.read_text())["services"]["redis"]
    port = free_port()
    command = [binary, *(part.replace("/certs", str(certs)) for part in service["command"][1:])]
    command += ["--tls-port", str(port), "--dir", str(tmp_path), "--bind", "127.0.0.1"]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        access = redis_access(f"rediss://127.0.0.1:{port}/0", certs / "redis.password", certs)
        for _ in range(100):
            client = redis.Redis.from_url(access.url, **access.options(), socket_timeout=1)
            try:
                if client.ping():
                    break
            except (redis.ConnectionError, OSError):
                pass
            finally:
                client.close()
            assert process.poll() is None, "the compose redis command did not start"
            time.sleep(0.05)
        else:
            pytest.fail("the compose Redis never answered over TLS with the password")
        health = service["healthcheck"]["test"][1].replace("/certs", str(certs)).replace("ping", f"-p {port} ping")
        checked = subprocess.run(
            ["sh", "-c", health.replace("$$", "$")],
            env={"PATH": cli_path},
            timeout=10,
            check=False,
            capture_output=True,
            text=True,
        )
        assert checked.returncode == 0, (health, checked.stdout, checked.stderr)
        plain = redis.Redis(host="127.0.0.1", port=port, socket_timeout=1, password="x")
        with pytest.raises((redis.ConnectionError, redis.TimeoutError)):
            plain.ping()
    finally:
        process.kill()
        process.wait()


# -- health checks ---------------------------------------------------------------------------------

READYZ_PROBE = re.compile(r"http://127\.0\.0\.1:(\d+)/readyz")


def health_probe(service: dict[str, Any]) -> list[str]:
    """A service's `healthcheck.test` as an exec form (CMD, then the command)."""
    test = (service.get("healthcheck") or {}).get("test")
    assert isinstance(test, list) and test[0] == "CMD", f"healthcheck.test is not an exec form: {test!r}"
    return [str(part) for part in test[1:]]


def test_every_weir_service_is_probed_on_readyz_of_its_own_metrics_port() -> None:
    """Each Weir service's health check asks /readyz on its WEIR_*_METRICS_PORT (the metrics port's
    other paths, /metrics included, say nothing about readiness)."""
    for name, service in weir_services().items():
        ports = [value for key, value in environment(service).items() if key.endswith("_METRICS_PORT")]
        assert len(ports) == 1, f"{name}: metrics ports {ports}"
        probe = health_probe(service)
        assert probe[:2] == ["python", "-c"], f"{name}: {probe}"
        assert READYZ_PROBE.findall(probe[2]) == ports, f"{name} probes {probe[2]!r}, its metrics port is {ports}"
        assert service["healthcheck"]["timeout"] == "3s"


def test_the_compose_probe_passes_on_a_ready_node_and_fails_where_nothing_listens(tmp_path: Path) -> None:
    """The partition nodes' probe command itself, run against a real node's metrics port (the image
    runs it with its venv's python), exits 0; against a port with nothing behind it, not 0."""
    import subprocess
    import sys

    from weir_cli.launcher import start_node
    from weir_cli.process_basics import free_port

    from tests.conftest import needs_own_processes

    needs_own_processes()
    probe = health_probe(compose_services(PROGRAMS[0])["partition-node-1"])

    def run_probe(port: int) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, probe[1], READYZ_PROBE.sub(f"http://127.0.0.1:{port}/readyz", probe[2])]
        return subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)

    node = start_node(tmp_path / "data", node_id="probed")
    try:
        ready = run_probe(node.metrics_port)
        assert ready.returncode == 0, ready.stderr
    finally:
        node.stop()
    assert run_probe(free_port()).returncode != 0


def test_every_image_probes_readyz_on_its_default_metrics_port() -> None:
    """An image run outside compose checks itself the same way: its HEALTHCHECK asks /readyz on the
    metrics port its settings default to."""
    from weir_analytics.settings import AnalyticsSettings
    from weir_gateway.settings import GatewaySettings
    from weir_invoker.settings import InvokerSettings
    from weir_partition_node.settings import NodeSettings
    from weir_replicator.settings import ReplicatorSettings
    from weir_router.settings import RouterSettings

    defaults: dict[str, type[BaseSettings]] = {
        "gateway": GatewaySettings,
        "invoker": InvokerSettings,
        "partition-node": NodeSettings,
        "replicator": ReplicatorSettings,
        "router": RouterSettings,
        "spark-analytics": AnalyticsSettings,
    }
    services = Path(__file__).resolve().parents[1] / "services"
    for service, settings in defaults.items():
        text = (services / service / "Dockerfile").read_text()
        check = text.split("HEALTHCHECK", 1)[1].split("\n", 2)[:2]
        port = settings.model_fields["metrics_port"].default
        assert READYZ_PROBE.findall(check[1]) == [str(port)], f"{service}: {check[1]!r}, metrics port {port}"
