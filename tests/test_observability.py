"""Observability: the Grafana dashboard and the Prometheus rules against what the services export.

The slow test starts a local cluster with its analytics job, runs a workload (replicated stream,
acks, a nak, a dead letter), starts a real Prometheus server (Debian package `prometheus`)
scraping every process with deploy/prometheus/rules.yml loaded, and asks it every query of
deploy/grafana/dashboards/weir.json: each must answer with data. It also scrapes every /metrics
endpoint itself and checks that every metric name the dashboard and the rules use is exported.
"""

from __future__ import annotations

import asyncio
import calendar
import json
import logging
import re
import shutil
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families
from weir.client import consumer_config, stream_config
from weir.cluster import WeirClient
from weir_cli.launcher import LocalCluster, start_node
from weir_cli.process_basics import free_port
from weir_server.logs import formatter, utc_timestamp
from weir_server.metrics_server import LOOP_ANSWER_TIMEOUT_S, readiness, start_metrics_server

from tests.conftest import CLUSTER_NODE_ENV, CLUSTER_REPLICATOR_ENV, CLUSTER_ROUTER_ENV, http_get, needs_own_processes
from tests.system_tools import needs_java, needs_tool

ROOT = Path(__file__).resolve().parent.parent
DASHBOARD = ROOT / "deploy" / "grafana" / "dashboards" / "weir.json"
DATASOURCES = ROOT / "deploy" / "grafana" / "provisioning" / "datasources" / "prometheus.yml"
RULES = ROOT / "deploy" / "prometheus" / "rules.yml"
RUNBOOKS = ROOT / "docs" / "runbooks"
METRIC = re.compile(r"\bweir_[a-z0-9_]+\b")


SELECTOR = re.compile(r"\b(weir_[a-z0-9_]+)(?:\{([^}]*)\})?")
VARIABLES = ("stream", "consumer", "instance")


def dashboard_queries(*, expanded: bool = True) -> list[tuple[str, str]]:
    """(panel title, PromQL) for every target of every panel; `expanded`: with each template variable
    replaced by its "All" value, as Grafana sends it by default (PromQL Prometheus can answer)."""
    dashboard = json.loads(DASHBOARD.read_text())
    all_values = {variable["name"]: variable["allValue"] for variable in dashboard["templating"]["list"]}
    queries = [
        (panel["title"], str(target["expr"]))
        for panel in dashboard["panels"]
        if panel["type"] != "row"
        for target in panel["targets"]
    ]
    if not expanded:
        return queries
    return [(title, re.sub(r"\$(\w+)", lambda match: all_values[match.group(1)], expr)) for title, expr in queries]


def selectors(expr: str) -> list[tuple[str, str]]:
    """(metric name, its label matchers as written, "" for none) for each weir metric in `expr`."""
    return [(match.group(1), match.group(2) or "") for match in SELECTOR.finditer(expr)]


def test_dashboard_is_well_formed() -> None:
    """Unique panel ids, every panel on the provisioned data source, every panel with a query."""
    dashboard = json.loads(DASHBOARD.read_text())
    ids = [panel["id"] for panel in dashboard["panels"]]
    assert len(ids) == len(set(ids))
    uid = re.search(r"uid:\s*(\S+)", DATASOURCES.read_text())
    assert uid is not None
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            continue
        assert panel["targets"], panel["title"]
        assert panel["datasource"]["uid"] == uid.group(1), panel["title"]
        for target in panel["targets"]:
            assert target["datasource"]["uid"] == uid.group(1)
            assert METRIC.search(target["expr"]), f"{panel['title']}: no weir metric in {target['expr']}"


def test_the_dashboard_filters_by_stream_consumer_and_instance() -> None:
    """Template variables stream, consumer and instance (Prometheus label_values queries on the
    provisioned data source, multi-valued, "All" = .*), and every query filters by the ones whose
    label its metric has: instance on every service metric (Prometheus adds it to each scraped
    series), none on the analytics job's cluster-wide figures. Which metrics carry stream and
    consumer is checked against what the services export in the slow test below."""
    dashboard = json.loads(DASHBOARD.read_text())
    uid = re.search(r"uid:\s*(\S+)", DATASOURCES.read_text())
    assert uid is not None
    variables = {variable["name"]: variable for variable in dashboard["templating"]["list"]}
    assert list(variables) == list(VARIABLES)
    for name, variable in variables.items():
        assert variable["type"] == "query" and variable["datasource"]["uid"] == uid.group(1), name
        assert re.fullmatch(rf"label_values\((\w+|\w+\{{[^}}]*\}}), {name}\)", variable["definition"]), variable
        assert variable["query"]["query"] == variable["definition"]
        assert variable["multi"] and variable["includeAll"] and variable["allValue"] == ".*", name
    for title, expr in dashboard_queries(expanded=False):
        assert set(re.findall(r"\$(\w+)", expr)) <= set(VARIABLES), f"{title}: {expr}"
        for metric, matchers in selectors(expr):
            own = not metric.startswith("weir_analytics_")
            assert ('instance=~"$instance"' in matchers) == own, f"{title}: {metric}{{{matchers}}}"
    used = {name for _, expr in dashboard_queries(expanded=False) for name in re.findall(r"\$(\w+)", expr)}
    assert used == set(VARIABLES)


def alerts() -> list[dict[str, Any]]:
    """Every alerting rule of deploy/prometheus/rules.yml."""
    groups = yaml.safe_load(RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


RUNBOOK_METRIC = re.compile(r"`(weir_[a-z0-9_]+)(?:\{[^`]*\})?`")


def test_every_alert_links_its_runbook_and_every_runbook_has_an_alert() -> None:
    """runbook_url: docs/runbooks/<alert in kebab case>.md, a page of this repository that names the
    alert and its expression and says what it means, how to confirm it and what to do."""
    rules = alerts()
    assert rules
    for rule in rules:
        kebab = re.sub(r"(?<!^)(?=[A-Z])", "-", rule["alert"]).lower()
        assert rule["annotations"].get("runbook_url") == f"docs/runbooks/{kebab}.md", rule["alert"]
        page = ROOT / rule["annotations"]["runbook_url"]
        assert page.is_file(), f"{rule['alert']}: no {page.relative_to(ROOT)}"
        text = page.read_text()
        assert text.startswith(f"# {rule['alert']}\n"), page.name
        for section in ("## What it means", "## How to confirm", "## What to do"):
            assert f"\n{section}\n" in text, f"{page.name}: no '{section}'"
        expression = " ".join(str(rule["expr"]).split())
        assert expression in " ".join(text.split()), f"{page.name} does not quote the alert's expression"
    pages = {path.name for path in RUNBOOKS.glob("*.md")}
    linked = {Path(rule["annotations"]["runbook_url"]).name for rule in rules}
    assert pages == linked, f"runbooks no alert links: {sorted(pages - linked)}"


def metric_types(exposition: str) -> dict[str, str]:
    """name -> type from a /metrics page's TYPE lines (present even for a labelled metric with no
    series yet)."""
    types: dict[str, str] = {}
    for line in exposition.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            types[name] = kind
    return types


def exported_names(exposition: str) -> set[str]:
    """Sample names a /metrics page can carry: each TYPE's name with its type's suffixes."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "summary": ("_count", "_sum")}
    names: set[str] = set()
    for name, kind in metric_types(exposition).items():
        names.add(name)
        names.update(name + suffix for suffix in suffixes.get(kind, ()))
    return names


@pytest.fixture(scope="module")
def observed_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """A local cluster with its analytics job (skipped, with the install command, without Java 17+)."""
    needs_own_processes()
    needs_java()
    cluster = LocalCluster.start(
        tmp_path_factory.mktemp("observed-cluster"),
        nodes=3,
        routers=2,
        replicators=1,
        node_env={**CLUSTER_NODE_ENV, "WEIR_NODE_RETENTION_SWEEP_INTERVAL_MS": "200"},
        router_env=CLUSTER_ROUTER_ENV,
        replicator_env=CLUSTER_REPLICATOR_ENV,
        analytics=True,
        analytics_env={"WEIR_ANALYTICS_WINDOW_MS": "1000", "WEIR_ANALYTICS_TRIGGER_INTERVAL_MS": "500"},
    )
    yield cluster
    cluster.stop()


def metrics_ports(cluster: LocalCluster) -> dict[str, list[int]]:
    assert cluster.analytics is not None
    return {
        "weir-router": [router.metrics_port for router in cluster.routers],
        "weir-node": [node.metrics_port for node in cluster.nodes],
        "weir-replicator": [replicator.metrics_port for replicator in cluster.replicators],
        "weir-analytics": [cluster.analytics.metrics_port],
    }


@pytest.fixture(scope="module")
def prometheus(observed_cluster: LocalCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Prometheus server scraping the cluster every second with the deployment's rules."""
    binary = needs_tool("prometheus")
    directory = tmp_path_factory.mktemp("prometheus")
    shutil.copy(RULES, directory / "rules.yml")
    jobs = [
        {"job_name": job, "static_configs": [{"targets": [f"127.0.0.1:{port}" for port in ports]}]}
        for job, ports in metrics_ports(observed_cluster).items()
    ]
    config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"}, "rule_files": ["rules.yml"]}
    config["scrape_configs"] = jobs  # type: ignore[assignment]
    (directory / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
    port = free_port()
    with (directory / "prometheus.log").open("wb") as log:
        process = subprocess.Popen(
            [
                binary,
                f"--config.file={directory / 'prometheus.yml'}",
                f"--storage.tsdb.path={directory / 'data'}",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert process.poll() is None, (directory / "prometheus.log").read_text()[-3000:]
            try:
                http_get(f"{url}/-/ready")
                break
            except OSError:
                time.sleep(0.2)
        else:
            raise AssertionError("prometheus not ready")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


async def run_workload(cluster: LocalCluster) -> None:
    """Replicated publishes, acks, a nak (redelivery) and a dead letter."""
    async with WeirClient(cluster.router_addresses) as client:
        await client.create_stream(stream_config("metered", subjects=["metered.>", "dlq.>"], partitions=2, replicas=2))
        for index in range(200):
            await client.publish("metered", "metered.tick", b"x" * 100, partition=index % 2)
        await client.create_consumer("metered", consumer_config("watcher", filter_subject="metered.>"))
        messages = await client.fetch("metered", "watcher", 0, batch_size=50)
        await client.ack_batch("metered", "watcher", 0, [message.seq for message in messages[:-1]])
        await client.nak("metered", "watcher", 0, messages[-1].seq)
        assert [m.seq for m in await client.fetch("metered", "watcher", 0, batch_size=1)] == [messages[-1].seq]
        await client.create_consumer(
            "metered",
            consumer_config(
                "once", filter_subject="metered.>", ack_wait_ms=200, max_deliver=1, dead_letter_subject="dlq.metered"
            ),
        )
        await client.fetch("metered", "once", 1, batch_size=1)
        deadline = time.monotonic() + 20
        while (await client.consumer_info("metered", "once")).dead_lettered_total < 1:
            assert time.monotonic() < deadline, "no dead letter"
            await asyncio.sleep(0.2)


@pytest.fixture(scope="module")
async def worked_cluster(observed_cluster: LocalCluster) -> LocalCluster:
    """The observed cluster after `run_workload` (once for the module's tests)."""
    await run_workload(observed_cluster)
    return observed_cluster


def query(url: str, expression: str) -> list[Any]:
    encoded = urllib.parse.urlencode({"query": expression})
    answer = json.loads(http_get(f"{url}/api/v1/query?{encoded}"))
    assert answer["status"] == "success", answer
    return list(answer["data"]["result"])


@pytest.mark.slow
async def test_prometheus_answers_every_dashboard_query(worked_cluster: LocalCluster, prometheus: str) -> None:
    pending = dict.fromkeys(expr for _, expr in dashboard_queries())
    deadline = time.monotonic() + 180  # the analytics job's first batch takes ~30-60 s here
    while pending and time.monotonic() < deadline:
        for expression in list(pending):
            if await asyncio.to_thread(query, prometheus, expression):
                del pending[expression]
        await asyncio.sleep(1)
    titles = {expr: title for title, expr in dashboard_queries()}
    assert not pending, "empty answers: " + "; ".join(f"{titles[expr]}: {expr}" for expr in pending)
    targets = json.loads(await asyncio.to_thread(http_get, f"{prometheus}/api/v1/targets"))
    health = {target["labels"]["instance"]: target["health"] for target in targets["data"]["activeTargets"]}
    assert set(health.values()) == {"up"}, health


@pytest.mark.slow
async def test_dashboard_and_rules_use_only_exported_metric_names(observed_cluster: LocalCluster) -> None:
    exported: set[str] = set()
    for ports in metrics_ports(observed_cluster).values():
        for port in ports:
            exported |= exported_names(await asyncio.to_thread(http_get, f"http://127.0.0.1:{port}/metrics"))
    used = {name for _, expr in dashboard_queries() for name in METRIC.findall(expr)}
    used |= set(METRIC.findall(RULES.read_text()))
    used |= {name for page in RUNBOOKS.glob("*.md") for name in RUNBOOK_METRIC.findall(page.read_text())}
    assert used, "no metric names found"
    assert not used - exported, f"used but not exported by any service: {sorted(used - exported)}"


def exported_labels(exposition: str) -> dict[str, set[str]]:
    """Sample name -> the label names its samples carry on a /metrics page."""
    labels: dict[str, set[str]] = {}
    for family in text_string_to_metric_families(exposition):
        for sample in family.samples:
            labels.setdefault(sample.name, set()).update(sample.labels)
    return labels


def declared_labels() -> dict[str, set[str]]:
    """Sample name -> label names, from the router's, nodes' and replicator's metric objects: a
    labelled metric with no series yet (no leader change in this run) has no samples to read them from."""
    from prometheus_client.metrics import MetricWrapperBase
    from weir_partition_node import metrics as node_metrics
    from weir_replicator import metrics as replicator_metrics
    from weir_router import metrics as router_metrics

    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_count", "_sum"), "summary": ("_count", "_sum")}
    labels: dict[str, set[str]] = {}
    for module in (node_metrics, replicator_metrics, router_metrics):
        for metric in vars(module).values():
            if isinstance(metric, MetricWrapperBase):
                for suffix in suffixes.get(str(metric._type), ("",)):
                    labels[metric._name + suffix] = set(metric._labelnames)
    return labels


@pytest.mark.slow
async def test_the_dashboard_filters_each_metric_by_the_stream_and_consumer_labels_it_has(
    worked_cluster: LocalCluster,
) -> None:
    """After the workload every stream and consumer metric has series: a query filters by stream
    (consumer) exactly when its metric's samples carry that label."""
    labels = declared_labels()
    for ports in metrics_ports(worked_cluster).values():
        for port in ports:
            page = await asyncio.to_thread(http_get, f"http://127.0.0.1:{port}/metrics")
            for name, names in exported_labels(page).items():
                labels.setdefault(name, set()).update(names)
    wrong = []
    for title, expr in dashboard_queries(expanded=False):
        for metric, matchers in selectors(expr):
            for label in ("stream", "consumer"):
                if (label in labels.get(metric, set())) != (f'{label}=~"${label}"' in matchers):
                    wrong.append(f"{title}: {metric}{{{matchers}}} (its labels: {sorted(labels.get(metric, ()))})")
    assert not wrong, wrong


@pytest.mark.slow
async def test_prometheus_answers_every_dashboard_variable(worked_cluster: LocalCluster, prometheus: str) -> None:
    """Each variable's label_values(selector, label) as Grafana asks it (the label values API), with
    the other variables at "All": the workload's stream and consumers, and the scraped instances."""
    dashboard = json.loads(DASHBOARD.read_text())
    expected = {"stream": {"metered"}, "consumer": {"watcher", "once"}, "instance": set()}
    for variable in dashboard["templating"]["list"]:
        match = re.fullmatch(r"label_values\((.+), (\w+)\)", variable["definition"])
        assert match is not None
        selector = match.group(1).replace("$stream", ".*")
        url = f"{prometheus}/api/v1/label/{match.group(2)}/values?" + urllib.parse.urlencode({"match[]": selector})
        deadline = time.monotonic() + 60
        while True:
            values = set(json.loads(await asyncio.to_thread(http_get, url))["data"])
            if (expected[variable["name"]] <= values and values) or time.monotonic() > deadline:
                break
            await asyncio.sleep(1)
        assert values and expected[variable["name"]] <= values, (variable["name"], values)


@pytest.mark.slow
async def test_exported_metric_names_follow_prometheus_conventions(observed_cluster: LocalCluster) -> None:
    """weir_ prefix, snake case, counters end in _total, gauges never do, histograms end in a unit,
    durations are in seconds (https://prometheus.io/docs/practices/naming/)."""
    kinds: dict[str, str] = {}
    for ports in metrics_ports(observed_cluster).values():
        for port in ports:
            page = await asyncio.to_thread(http_get, f"http://127.0.0.1:{port}/metrics")
            kinds.update((name, kind) for name, kind in metric_types(page).items() if name.startswith("weir"))
    assert len(kinds) > 40
    problems = []
    for name, kind in sorted(kinds.items()):
        if name.endswith("_created") and name.removesuffix("_created") in kinds:
            continue  # prometheus-client's own creation-time series of a counter or histogram
        if not re.fullmatch(r"weir_[a-z0-9_]+", name):
            problems.append(f"{name}: not weir_ snake case")
        if kind == "gauge" and name.endswith("_total"):
            problems.append(f"{name}: a gauge named like a counter")
        if kind == "histogram" and not name.endswith(("_seconds", "_bytes", "_messages")):
            problems.append(f"{name}: a histogram without a unit suffix")
        if ("duration" in name or "latency" in name) and not name.endswith(("_seconds", "_timestamp_seconds")):
            problems.append(f"{name}: a duration not in seconds")
    assert not problems, problems


# -- log lines (weir_server.logs) -----------------------------------------------------------------

ISO_UTC = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
WHEN = calendar.timegm((2026, 12, 7, 4, 9, 1, 0, 0, 0)) + 0.1234  # 2026-12-07T04:09:01.123Z


def log_record(message: str, *args: object, exc_info: logging._SysExcInfoType | None = None) -> logging.LogRecord:
    record = logging.LogRecord("weir_router.server", logging.WARNING, __file__, 1, message, args, exc_info)
    record.created = WHEN
    return record


def test_log_timestamps_are_iso_8601_utc_with_milliseconds() -> None:
    assert utc_timestamp(WHEN) == "2026-12-07T04:09:01.123Z"
    assert utc_timestamp(0) == "1970-01-01T00:00:00.000Z"
    assert utc_timestamp(WHEN + 0.8765) == "2026-12-07T04:09:01.999Z"  # truncated, as LogRecord.msecs


def test_a_text_log_line_has_a_utc_timestamp() -> None:
    line = formatter("text").format(log_record("router %s serving", "r1"))
    assert line == "2026-12-07T04:09:01.123Z WARNING [weir_router.server] router r1 serving"


def test_a_json_log_line_is_one_object_on_one_line() -> None:
    line = formatter("json").format(log_record("stream %r: %d\nmessages, café", "orders", 3))
    assert "\n" not in line and line.isascii()
    assert json.loads(line) == {
        "ts": "2026-12-07T04:09:01.123Z",
        "level": "WARNING",
        "logger": "weir_router.server",
        "message": "stream 'orders': 3\nmessages, café",
    }
    try:
        raise ValueError("bad seq")
    except ValueError:
        failed = log_record("commit failed", exc_info=sys.exc_info())
    entry = json.loads(formatter("json").format(failed))
    assert entry["message"] == "commit failed"
    assert entry["exc_info"].startswith("Traceback (most recent call last):")
    assert entry["exc_info"].endswith("ValueError: bad seq")
    with pytest.raises(ValueError, match="unknown log format 'xml'"):
        formatter("xml")


# -- the metrics port: /metrics, /healthz, /readyz, 404 (weir_server.metrics_server) ---------------


def http_status(url: str) -> tuple[int, str]:
    """(status, body) of a GET, an error status included."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return int(response.status), response.read().decode()
    except urllib.error.HTTPError as error:
        return int(error.code), error.read().decode()


def test_a_started_node_answers_metrics_health_readiness_and_404(tmp_path: Path) -> None:
    """A real partition node (weir_cli.launcher): its metrics port no longer answers every path."""
    needs_own_processes()
    node = start_node(tmp_path / "data", node_id="probed")
    try:
        base = f"http://127.0.0.1:{node.metrics_port}"
        assert http_status(f"{base}/healthz") == (200, "ok\n")
        assert http_status(f"{base}/readyz") == (200, "ready\n")
        status, page = http_status(f"{base}/metrics")
        assert status == 200 and "# TYPE weir_group_commit_duration_seconds histogram" in page
        status, body = http_status(f"{base}/nope")
        assert status == 404 and "/metrics, /healthz and /readyz" in body
        assert http_status(f"{base}/")[0] == 404
        assert http_status(f"{base}/metrics/x")[0] == 404
    finally:
        assert node.stop() == 0, node.log_tail()
    assert "node probed stopped" in node.log_path.read_text()


def test_readyz_is_the_services_answer_taken_on_its_event_loop() -> None:
    """503 while the service says not ready, or while its event loop does not turn (a wedged loop
    serves nothing, though the HTTP thread still answers /healthz); the socket closes at shutdown."""
    loop = asyncio.new_event_loop()
    ready = threading.Event()
    server = start_metrics_server(0, "127.0.0.1", ready.is_set, loop=loop)
    base = f"http://127.0.0.1:{server.server_port}"
    turning = threading.Thread(target=loop.run_forever, daemon=True)
    try:
        started = time.monotonic()
        wedged = f"not ready: the event loop did not answer within {LOOP_ANSWER_TIMEOUT_S:.1f} s\n"
        assert http_status(f"{base}/readyz") == (503, wedged)
        assert time.monotonic() - started >= LOOP_ANSWER_TIMEOUT_S
        assert http_status(f"{base}/healthz") == (200, "ok\n")
        turning.start()
        assert http_status(f"{base}/readyz") == (503, "not ready\n")
        ready.set()
        assert http_status(f"{base}/readyz") == (200, "ready\n")
    finally:
        loop.call_soon_threadsafe(loop.stop)
        turning.join(timeout=5)
        loop.close()
        server.shutdown()
    assert readiness(ready.is_set, loop) == (False, "not ready: the event loop is closed")
    failing = "not ready: the readiness check failed: ZeroDivisionError('division by zero')"
    assert readiness(lambda: 1 / 0 > 0) == (False, failing)
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(f"{base}/healthz", timeout=2)
