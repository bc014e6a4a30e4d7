"""The `weir` command line end to end, each command a real subprocess (`python -m weir_cli.cli`):
`weir cluster up` starts a local cluster (redis-server, 2 routers, 3 partition nodes, a replicator,
a gateway and an invoker, whose streams appear only once a deployment is registered) that outlives
the command, the other commands find its routers through ``cluster.json`` under ``--data-dir``,
and `weir cluster down` stops every process it started.

The tests share one cluster (module fixture) and run in file order; the last one takes the cluster
down. The fixture's teardown runs `weir cluster down` again whatever happened (it must exit 0 and
leave no process behind) and, as a last resort, kills the processes of this cluster itself.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis
from weir.partitioning import partition_for_key
from weir_cli.launcher import pid_alive, read_cluster_state, stop_pids

from tests.conftest import needs_own_processes

pytestmark = pytest.mark.slow

TIMEOUT_S = 120.0
# Variables that would point the CLI somewhere other than the cluster under test.
_FOREIGN_ENV = ("WEIR_ROUTER", "WEIR_ROUTERS", "WEIR_SERVER", "WEIR_CLUSTER_DIR")


def weir(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run `weir ARGS` as a subprocess (the interpreter running the tests, so the same install)."""
    env = {key: value for key, value in os.environ.items() if key not in _FOREIGN_ENV}
    env["XDG_STATE_HOME"] = str(cwd / ".state")  # the last-cluster record stays in the test's directory
    return subprocess.run(
        [sys.executable, "-m", "weir_cli.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )


def ok(result: subprocess.CompletedProcess[str]) -> str:
    """stdout of a command that must have succeeded."""
    assert result.returncode == 0, f"{result.args} exited {result.returncode}:\n{result.stderr}"
    assert "Traceback" not in result.stderr, result.stderr
    return result.stdout


def state_pids(state: dict[str, Any]) -> list[int]:
    """Every pid an up-JSON / cluster.json names: routers, nodes, replicators, gateways, invokers, redis."""
    groups = ("routers", "nodes", "replicators", "gateways", "invokers")
    pids = [int(entry["pid"]) for group in groups for entry in state.get(group, []) or []]
    pids.append(int(state.get("redis", {}).get("pid", 0)))
    return [pid for pid in pids if pid > 0]


def pids_using(data_dir: Path) -> list[int]:
    """Processes whose command line or environment names `data_dir` (the processes of this cluster,
    also when `cluster up` died before writing cluster.json). Last-resort cleanup only."""
    marker = str(data_dir.resolve()).encode()
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker in (entry / "cmdline").read_bytes() or marker in (entry / "environ").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@dataclass
class CliCluster:
    root: Path  # the commands' working directory
    data_dir: Path
    up: dict[str, Any]  # what `weir --json cluster up` printed
    up_stderr: str

    @property
    def pids(self) -> list[int]:
        return state_pids(self.up)

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return weir(*args, cwd=self.root)

    @property
    def dir_flag(self) -> tuple[str, str]:
        return ("--data-dir", str(self.data_dir))


@pytest.fixture(scope="module")
def cli_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CliCluster]:
    needs_own_processes()
    root = tmp_path_factory.mktemp("cli")
    data_dir = root / "D"
    known: set[int] = set()
    try:
        result = weir("--json", "cluster", "up", "--data-dir", str(data_dir), cwd=root)
        state = read_cluster_state(data_dir)
        known.update(state_pids(state) if state else [])
        out = ok(result)
        up = json.loads(out)
        known.update(state_pids(up))
        yield CliCluster(root, data_dir, up, result.stderr)
    finally:
        state = read_cluster_state(data_dir)
        known.update(state_pids(state) if state else [])
        down: subprocess.CompletedProcess[str] | None = None
        with contextlib.suppress(subprocess.TimeoutExpired):
            down = weir("--json", "cluster", "down", "--data-dir", str(data_dir), cwd=root)
        leftover = sorted(pid for pid in known | set(pids_using(data_dir)) if pid_alive(pid))
        if leftover:  # last resort: never leak processes, even when the CLI misbehaves
            stop_pids(leftover, timeout_s=5)  # SIGTERM, then SIGKILL what is still running
        assert down is not None, "weir cluster down timed out"
        assert down.returncode == 0, down.stderr
        assert leftover == [], f"processes still running after weir cluster down: {leftover}"


def test_cluster_up_prints_the_cluster_and_leaves_it_running(cli_cluster: CliCluster) -> None:
    up = cli_cluster.up
    assert up["data_dir"] == str(cli_cluster.data_dir.resolve())
    assert [router["router_id"] for router in up["routers"]] == ["router-1", "router-2"]
    assert [node["node_id"] for node in up["nodes"]] == ["node-1", "node-2", "node-3"]
    assert [replicator["replicator_id"] for replicator in up["replicators"]] == ["replicator-1"]
    assert up["router_address"] == up["routers"][0]["address"]
    assert up["router_address"].startswith("127.0.0.1:")
    assert up["redis"]["url"].startswith("redis://127.0.0.1:")
    assert [gateway["gateway_id"] for gateway in up["gateways"]] == ["gateway-1"]
    assert [invoker["invoker_id"] for invoker in up["invokers"]] == ["invoker-1"]
    assert up["invokers"][0]["address"].startswith("127.0.0.1:")
    assert len(set(cli_cluster.pids)) == 9
    # The command has returned; its processes keep serving.
    assert all(pid_alive(pid) for pid in cli_cluster.pids), cli_cluster.pids
    assert "starting the local cluster under" in cli_cluster.up_stderr
    # cluster.json says the same (the other commands read it).
    state = read_cluster_state(cli_cluster.data_dir)
    assert state is not None
    assert state_pids(state) == cli_cluster.pids
    assert [router["address"] for router in state["routers"]] == [router["address"] for router in up["routers"]]
    # Each gateway's front doors: where it says they serve (its RocketMQ port serves both v1 and
    # RocketMQ 5's v2) is what cluster.json records for a client.
    assert state["gateways"] == up["gateways"]
    for gateway in state["gateways"]:
        doors = {door: gateway[f"{door}_address"] for door in ("kafka_pixy", "rocketmq", "waymaker_streams")}
        assert all(address.startswith("127.0.0.1:") for address in doors.values()), doors
        assert gateway["metrics_port"] > 0
        serving = (
            f"{gateway['gateway_id']} serving kafka-pixy at {doors['kafka_pixy']}, RocketMQ (v1 and 5.x/v2) at "
            f"{doors['rocketmq']}, waymaker.streams at {doors['waymaker_streams']}"
        )
        assert serving in cli_cluster.up_stderr, cli_cluster.up_stderr


def test_the_default_clusters_redis_refuses_a_client_without_its_password(cli_cluster: CliCluster) -> None:
    """`weir cluster up` without --tls: its Redis refuses an unauthenticated client (NOAUTH) and a
    wrong password, and answers with the generated one (owner-only, beside the data, never on a
    command line); every service reached it with the file (all 3 nodes registered)."""
    url = cli_cluster.up["redis"]["url"]
    password_file = Path(cli_cluster.up["redis"]["password_file"])
    assert password_file == cli_cluster.data_dir.resolve() / "redis.password"
    assert password_file.stat().st_mode & 0o077 == 0
    password = password_file.read_text().strip()
    assert len(password) == 64 and password not in url

    def ping(**options: Any) -> bool:
        client = redis.Redis.from_url(url, socket_timeout=2, socket_connect_timeout=2, **options)
        try:
            return bool(client.ping())
        finally:
            client.close()

    with pytest.raises(redis.AuthenticationError):
        ping()
    parts = urlsplit(url)
    assert parts.hostname is not None and parts.port is not None
    with socket.create_connection((parts.hostname, parts.port), timeout=5) as plain:
        plain.sendall(b"PING\r\nSET weir:intruder x\r\n")
        time.sleep(0.2)
        answer = plain.recv(4096)
    assert answer.startswith(b"-NOAUTH") and b"+" not in answer, answer
    with pytest.raises(redis.AuthenticationError):
        ping(password="not-" + password)
    assert ping(password=password)
    client = redis.Redis.from_url(url, password=password, socket_timeout=2, decode_responses=True)
    try:
        keys = client.keys("*")
    finally:
        client.close()
    assert keys and "weir:intruder" not in keys, keys
    for pid in [*cli_cluster.pids, int(cli_cluster.up["redis"]["pid"])]:
        with contextlib.suppress(OSError):
            assert password.encode() not in Path(f"/proc/{pid}/cmdline").read_bytes(), pid


def test_second_cluster_up_on_the_same_dir_fails_and_leaves_the_first_running(cli_cluster: CliCluster) -> None:
    before = (cli_cluster.data_dir / "cluster.json").read_text()

    result = cli_cluster.run("--json", "cluster", "up", *cli_cluster.dir_flag)

    assert result.returncode != 0
    assert "already running" in result.stderr
    assert "weir cluster down" in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    assert (cli_cluster.data_dir / "cluster.json").read_text() == before
    assert all(pid_alive(pid) for pid in cli_cluster.pids)


def test_cluster_status_shows_live_nodes_and_a_controller(cli_cluster: CliCluster) -> None:
    deadline = time.monotonic() + 30
    while True:  # the nodes register within a heartbeat of starting; normally true at once
        result = cli_cluster.run("--json", "cluster", "status", *cli_cluster.dir_flag)
        if result.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    status = json.loads(ok(result))

    assert status["router_address"] == cli_cluster.up["router_address"]
    assert status["controller"] in {"router-1", "router-2"}
    assert sorted(node["node_id"] for node in status["nodes"]) == ["node-1", "node-2", "node-3"]
    assert all(node["alive"] for node in status["nodes"])
    addresses = {node["node_id"]: node["client_address"] for node in cli_cluster.up["nodes"]}
    assert {node["node_id"]: node["client_address"] for node in status["nodes"]} == addresses
    processes = status["local_processes"]
    assert processes["redis"]["running"] is True
    assert processes["routers"] == {"router-1": True, "router-2": True}
    assert processes["nodes"] == {"node-1": True, "node-2": True, "node-3": True}
    assert processes["gateways"] == {"gateway-1": True}
    assert processes["invokers"] == {"invoker-1": True}


def _messages(stdout: str) -> list[dict[str, Any]]:
    """One JSON message per line (read / fetch output)."""
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def test_stream_publish_read_consume_and_stats(cli_cluster: CliCluster) -> None:
    flag = cli_cluster.dir_flag

    created = json.loads(ok(cli_cluster.run("stream", "create", "orders", "--partitions", "4", "--json", *flag)))
    assert created["name"] == "orders"
    assert created["partitions"] == 4

    published = json.loads(ok(cli_cluster.run("pub", "orders", "orders.x", "hello", "--key", "k1", "--json", *flag)))
    partition = partition_for_key(b"k1", 4)
    assert published == {"partition": partition, "seq": 1, "duplicate": False, "scheduled": False}

    (message,) = _messages(ok(cli_cluster.run("--json", "read", "orders", "--partition", str(partition), *flag)))
    assert (message["payload"], message["key"]) == ("hello", "k1")
    assert message["subject"] == "orders.x"
    assert (int(message["seq"]), message["partition"]) == (1, partition)
    other = (partition + 1) % 4
    assert _messages(ok(cli_cluster.run("--json", "read", "orders", "--partition", str(other), *flag))) == []
    (everywhere,) = _messages(ok(cli_cluster.run("--json", "read", "orders", *flag)))  # every partition
    assert everywhere == message

    info_out = ok(cli_cluster.run("--json", "stream", "info", "orders", *flag))
    assert "\n" not in info_out.strip()  # --json: one line
    info = json.loads(info_out)
    assert info["config"]["name"] == "orders"
    assert info["config"]["partitions"] == 4
    assert int(info["stats"]["msg_count"]) == 1
    per_partition = {entry["partition"]: int(entry["msg_count"]) for entry in info["stats"]["partitions"]}
    assert per_partition == {index: 1 if index == partition else 0 for index in range(4)}

    consumer = json.loads(ok(cli_cluster.run("--json", "consumer", "create", "orders", "c1", *flag)))
    assert consumer["config"]["name"] == "c1"
    assert int(consumer["num_pending"]) == 1

    (fetched,) = _messages(ok(cli_cluster.run("--json", "fetch", "orders", "c1", "--ack", *flag)))  # every partition
    assert (fetched["payload"], fetched["partition"]) == ("hello", partition)
    assert (int(fetched["seq"]), fetched["deliver_count"]) == (1, 1)
    # Acknowledged: nothing left to fetch, nothing pending.
    assert ok(cli_cluster.run("--json", "fetch", "orders", "c1", *flag)).strip() == ""
    state = json.loads(ok(cli_cluster.run("--json", "consumer", "info", "orders", "c1", *flag)))
    assert (int(state["acked_total"]), int(state["num_ack_pending"]), int(state["num_pending"])) == (1, 0, 0)

    stats = json.loads(ok(cli_cluster.run("--json", "stats", *flag)))
    assert int(stats["total_msg_count"]) == 1
    assert int(stats["total_stream_count"]) == 1
    assert sorted(node["node_id"] for node in stats["nodes"]) == ["node-1", "node-2", "node-3"]
    assert all(node["status"] == "ok" for node in stats["nodes"])
    (stream,) = stats["streams"]
    assert (stream["name"], int(stream["msg_count"])) == ("orders", 1)

    assert json.loads(ok(cli_cluster.run("--json", "stream", "list", *flag))) == ["orders"]

    # --msg-id: the second publish with the same id stores nothing and answers the first one's seq.
    for duplicate in (False, True):
        again = ok(
            cli_cluster.run("pub", "--json", "orders", "orders.x", "hi", "--key", "k1", "--msg-id", "hello-1", *flag)
        )
        assert json.loads(again) == {"partition": partition, "seq": 2, "duplicate": duplicate, "scheduled": False}
    # --router instead of --data-dir, from a directory that has no cluster: same answer.
    elsewhere = cli_cluster.root / "elsewhere"
    elsewhere.mkdir()
    routers = ",".join(router["address"] for router in cli_cluster.up["routers"])
    listing = weir("--json", "stream", "list", "--router", routers, cwd=elsewhere)
    assert json.loads(ok(listing)) == ["orders"]

    # stream update: --json is UpdateStreamResponse's JSON (the effective config, pruned); then
    # --max-msgs 0 clears the bound again.
    bounded = json.loads(ok(cli_cluster.run("--json", "stream", "update", "orders", "--max-msgs", "1", *flag)))
    assert (bounded["config"]["limits"]["max_msgs"], bounded["pruned"]) == (1, 1)  # the keyed partition held 2
    human = ok(cli_cluster.run("stream", "update", "orders", "--max-msgs", "0", *flag))
    assert human.strip() == "updated stream orders: max_msgs 0; 0 message(s) pruned"
    cleared = json.loads(ok(cli_cluster.run("--json", "stream", "info", "orders", *flag)))
    assert "max_msgs" not in cleared["config"]["limits"]


def test_delayed_and_held_messages_from_the_command_line(cli_cluster: CliCluster) -> None:
    flag = cli_cluster.dir_flag
    ok(cli_cluster.run("stream", "create", "later", "--allow-scheduled-messages", *flag))
    delayed = ok(cli_cluster.run("pub", "later", "later.x", "in a minute", "--delay-ms", "60000", *flag))
    assert delayed.strip() == "published to later[0] seq 1 (scheduled: delivered in 60000 ms under a new seq)"
    held = json.loads(ok(cli_cluster.run("--json", "pub", "later", "later.x", "half", "--hold", *flag)))
    assert held == {"partition": 0, "seq": 2, "duplicate": False, "scheduled": True}
    listing = json.loads(ok(cli_cluster.run("--json", "scheduled", "list", "later", *flag)))
    assert [(entry["seq"], entry["subject"]) for entry in listing] == [(1, "later.x"), (2, "later.x")]
    assert listing[1]["due"] == "held" and listing[0]["due"].endswith("+00:00")
    held_only = json.loads(ok(cli_cluster.run("--json", "scheduled", "list", "later", "--held", *flag)))
    assert [entry["seq"] for entry in held_only] == [2]
    assert _messages(ok(cli_cluster.run("--json", "read", "later", *flag))) == []  # nothing deliverable yet

    released = ok(cli_cluster.run("scheduled", "release", "later", "0", "2", *flag))
    assert released.strip() == "delivered later[0] seq 2 as seq 3"
    recalled = ok(cli_cluster.run("scheduled", "release", "later", "0", "1", "--discard", *flag))
    assert recalled.strip() == "discarded later[0] seq 1"
    assert [m["payload"] for m in _messages(ok(cli_cluster.run("--json", "read", "later", *flag)))] == ["half"]
    assert ok(cli_cluster.run("scheduled", "list", "later", *flag)).strip() == "(none)"
    gone = cli_cluster.run("scheduled", "release", "later", "0", "2", "--discard", *flag)
    # released already, by a commit: a contradicting discard is refused and says so (held_resolutions)
    assert gone.returncode == 1 and "already_resolved" in gone.stderr and "Traceback" not in gone.stderr
    refused = cli_cluster.run("pub", "orders", "orders.x", "x", "--delay-ms", "10", *flag)
    assert refused.returncode == 1 and "scheduling_disabled" in refused.stderr


def test_key_value_buckets_from_the_command_line(cli_cluster: CliCluster) -> None:
    flag = cli_cluster.dir_flag
    ok(cli_cluster.run("kv", "create", "settings", "--history", "2", *flag))
    first = json.loads(ok(cli_cluster.run("--json", "kv", "put", "settings", "db.host", "alpha", *flag)))
    assert first["key"] == "db.host"
    assert ok(cli_cluster.run("kv", "get", "settings", "db.host", *flag)).strip() == "alpha"
    stale = cli_cluster.run("kv", "put", "settings", "db.host", "beta", "--expected-revision", "999", *flag)
    assert stale.returncode == 1 and "wrong_revision" in stale.stderr, stale.stderr
    value_file = cli_cluster.root / "value.bin"
    value_file.write_bytes(b"\xff\x00gamma")
    ok(cli_cluster.run("kv", "put", "settings", "db.host", "--file", str(value_file), *flag))
    got = json.loads(ok(cli_cluster.run("--json", "kv", "get", "settings", "db.host", *flag)))
    assert base64.b64decode(got["value"]) == b"\xff\x00gamma"
    ok(cli_cluster.run("kv", "put", "settings", "db.port", "5432", "--create", *flag))
    ok(cli_cluster.run("kv", "del", "settings", "db.port", *flag))
    missing = cli_cluster.run("kv", "get", "settings", "db.port", *flag)
    assert missing.returncode == 1 and "has no value" in missing.stderr
    keys = [
        json.loads(line)
        for line in ok(cli_cluster.run("--json", "kv", "keys", "settings", "--all", *flag)).splitlines()
    ]
    assert [(entry["key"], entry["deleted"]) for entry in keys] == [("db.host", False), ("db.port", True)]
    history = ok(cli_cluster.run("--json", "kv", "history", "settings", "db.host", *flag)).splitlines()
    assert len(history) == 2  # history depth 2: the newest two of three
    events = [
        json.loads(line)
        for line in ok(cli_cluster.run("--json", "kv", "watch", "settings", "--count", "2", *flag)).splitlines()
    ]
    assert [(event["event"], event["key"]) for event in events] == [("put", "db.host"), ("delete", "db.port")]
    purged = json.loads(ok(cli_cluster.run("--json", "kv", "purge", "settings", "db.host", *flag)))
    left = [
        json.loads(line)
        for line in ok(cli_cluster.run("--json", "kv", "history", "settings", "db.host", *flag)).splitlines()
    ]
    assert [(int(entry["revision"]), entry["deleted"]) for entry in left] == [(purged["revision"], True)]
    leased = json.loads(
        ok(cli_cluster.run("--json", "kv", "put", "settings", "lease", "me", "--ttl-ms", "60000", *flag))
    )
    touched = json.loads(ok(cli_cluster.run("--json", "kv", "touch", "settings", "lease", "--ttl-ms", "1000", *flag)))
    assert touched["revision"] > leased["revision"]
    bad = cli_cluster.run("kv", "put", "settings", "a..b", "x", *flag)
    assert bad.returncode == 1 and "invalid_key" in bad.stderr
    ok(cli_cluster.run("kv", "rm-bucket", "settings", *flag))


def test_hash_set_and_queue_stores_from_the_command_line(cli_cluster: CliCluster) -> None:
    flag = cli_cluster.dir_flag
    for kind in ("hash", "set", "queue"):
        ok(cli_cluster.run(kind, "create", "demo", *flag))
    ok(cli_cluster.run("hash", "set", "demo", "user:1", "name", "Ada", *flag))
    ok(cli_cluster.run("hash", "set", "demo", "user:1", "lang", "en", *flag))
    assert ok(cli_cluster.run("hash", "get", "demo", "user:1", "name", *flag)).strip() == "Ada"
    every = json.loads(ok(cli_cluster.run("--json", "hash", "getall", "demo", "user:1", *flag)))
    assert [(entry["field"], entry["value"]) for entry in every] == [("lang", "en"), ("name", "Ada")]
    ok(cli_cluster.run("set", "add", "demo", "tags", "blue", *flag))
    ok(cli_cluster.run("set", "add", "demo", "tags", "blue", *flag))
    assert ok(cli_cluster.run("set", "members", "demo", "tags", *flag)).split() == ["blue"]
    assert cli_cluster.run("set", "ismember", "demo", "tags", "red", *flag).returncode == 1
    for job in ("first", "second"):
        ok(cli_cluster.run("queue", "push", "demo", job, *flag))
    assert ok(cli_cluster.run("queue", "len", "demo", *flag)).strip() == "2"
    assert ok(cli_cluster.run("queue", "pop", "demo", *flag)).strip() == "first"
    assert ok(cli_cluster.run("queue", "pop", "demo", *flag)).strip() == "second"
    empty = cli_cluster.run("queue", "pop", "demo", *flag)
    assert empty.returncode == 1 and "is empty" in empty.stderr
    for kind in ("hash", "set", "queue"):
        ok(cli_cluster.run(kind, "rm-store", "demo", *flag))


def test_objects_stream_from_and_to_files_from_the_command_line(cli_cluster: CliCluster) -> None:
    flag = cli_cluster.dir_flag
    ok(cli_cluster.run("object", "create", "files", *flag))
    original = os.urandom(700_000)
    source = cli_cluster.root / "upload.bin"
    source.write_bytes(original)
    put = json.loads(ok(cli_cluster.run("--json", "object", "put", "files", "a/b.bin", str(source), *flag)))
    assert (put["total_bytes"], put["chunk_count"]) == (700_000, 3)
    target = cli_cluster.root / "download.bin"
    ok(cli_cluster.run("object", "get", "files", "a/b.bin", str(target), *flag))
    assert target.read_bytes() == original and not (cli_cluster.root / "download.bin.partial").exists()
    listed = [json.loads(line) for line in ok(cli_cluster.run("--json", "object", "ls", "files", *flag)).splitlines()]
    assert listed == [{"name": "a/b.bin", "total_bytes": 700_000, "deleted": False}]
    assert (
        json.loads(ok(cli_cluster.run("--json", "object", "info", "files", "a/b.bin", *flag)))["sha256"]
        == put["sha256"]
    )
    ok(cli_cluster.run("object", "rm", "files", "a/b.bin", *flag))
    missing = cli_cluster.run("object", "get", "files", "a/b.bin", str(target), *flag)
    assert missing.returncode == 1 and "no_such_object" in missing.stderr
    assert json.loads(ok(cli_cluster.run("--json", "object", "gc", "files", *flag)))["removed"] == 0
    ok(cli_cluster.run("object", "rm-bucket", "files", *flag))


def test_errors_exit_1_with_the_result_code(cli_cluster: CliCluster) -> None:
    flag = cli_cluster.dir_flag

    missing = cli_cluster.run("stream", "info", "nope", *flag)
    assert missing.returncode == 1
    assert "no_such_stream" in missing.stderr
    assert "'nope'" in missing.stderr
    assert missing.stdout == ""
    assert "Traceback" not in missing.stderr

    unknown_pub = cli_cluster.run("pub", "nope", "nope.x", "hello", *flag)
    assert (unknown_pub.returncode, "no_such_stream" in unknown_pub.stderr) == (1, True), unknown_pub.stderr

    bad_name = cli_cluster.run("stream", "create", "a b", *flag)
    assert (bad_name.returncode, "invalid_name" in bad_name.stderr) == (1, True), bad_name.stderr

    no_consumer = cli_cluster.run("fetch", "orders", "c-nope", *flag)
    assert (no_consumer.returncode, "no_such_consumer" in no_consumer.stderr) == (1, True), no_consumer.stderr

    # Global options go before or after the verb.
    after = json.loads(ok(cli_cluster.run("stream", "info", "orders", *flag, "--json")))
    assert after["config"]["name"] == "orders"


def _names(state: dict[str, Any]) -> dict[str, int]:
    """process name (its log is <name>.log) -> pid."""
    names = {entry["router_id"]: int(entry["pid"]) for entry in state["routers"]}
    names.update({entry["node_id"]: int(entry["pid"]) for entry in state["nodes"]})
    names.update({entry["invoker_id"]: int(entry["pid"]) for entry in state["invokers"]})
    names["redis"] = int(state["redis"]["pid"])
    return names


def _log_tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def test_a_node_added_to_the_running_cluster_is_planned_its_share(cli_cluster: CliCluster) -> None:
    added = json.loads(ok(cli_cluster.run("--json", "cluster", "add-node", *cli_cluster.dir_flag)))
    assert added["node_id"] == "node-4"
    state = read_cluster_state(cli_cluster.data_dir)
    assert state is not None and [node["node_id"] for node in state["nodes"]][-1] == "node-4"
    status = ok(cli_cluster.run("cluster", "status", *cli_cluster.dir_flag))
    assert "node-4" in status
    plan = ok(cli_cluster.run("cluster", "rebalance", "--dry-run", *cli_cluster.dir_flag))
    (row,) = [line.split() for line in plan.splitlines() if line.startswith("node-4 ")]
    assert row[1] == "0" and int(row[2]) > 0, plan  # no copy now, its share after the plan
    assert "dry run: nothing moved" in plan


def test_cluster_down_stops_every_process_and_keeps_the_data(cli_cluster: CliCluster) -> None:
    pids = cli_cluster.pids
    assert all(pid_alive(pid) for pid in pids)

    result = cli_cluster.run("--json", "cluster", "down", *cli_cluster.dir_flag)

    summary = json.loads(ok(result))
    assert summary["stopped"] == 10  # 9 started by `cluster up`, node-4 by `cluster add-node`
    killed = summary["killed_after_timeout"]
    assert killed == [], (
        "did not stop within 20 s of SIGTERM (drain, flush, close) and had to be killed:\n"
        + "\n".join(
            f"== {name} (pid {pid}):\n{_log_tail(cli_cluster.data_dir / f'{name}.log')}"
            for name, pid in _names(cli_cluster.up).items()
            if pid in killed
        )
    )
    assert [pid for pid in pids if pid_alive(pid)] == []
    assert not (cli_cluster.data_dir / "cluster.json").exists()
    for name in ("redis", "router-1", "router-2", "node-1", "node-2", "node-3", "gateway-1", "invoker-1"):
        assert (cli_cluster.data_dir / name).is_dir(), name
    # Down again: nothing to stop, still a success.
    assert json.loads(ok(cli_cluster.run("--json", "cluster", "down", *cli_cluster.dir_flag))) == {"stopped": 0}
