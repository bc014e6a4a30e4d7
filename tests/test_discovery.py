"""How a client with no address finds its cluster (weir.discovery), how `weir cluster up` keeps a
cluster's ports (weir_cli.ports), and how a TLS failure is named (weir.errors.describe_tls_failure):
the decisions, pure or on files a test writes."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from weir import discovery
from weir.errors import describe_tls_failure
from weir_cli.ports import WELL_KNOWN_PORTS, plan_ports, port_is_free, read_ports, wanted_ports, write_ports


def write_cluster(data_dir: Path, routers: list[str], tls: dict[str, str] | None = None) -> Path:
    data_dir.mkdir(parents=True, exist_ok=True)
    state = {"routers": [{"address": address} for address in routers], "tls": tls}
    (data_dir / "cluster.json").write_text(json.dumps(state))
    return data_dir


def test_the_environment_wins_then_the_local_cluster_then_the_last_then_the_default(tmp_path: Path) -> None:
    state = {"XDG_STATE_HOME": str(tmp_path / "state")}
    assert discovery.find_cluster(state, tmp_path) == discovery.FoundCluster(
        ["127.0.0.1:7501", "127.0.0.1:7502"], "the default address"
    )
    last = write_cluster(tmp_path / "elsewhere" / "weir-cluster", ["127.0.0.1:9001"])
    (tmp_path / "state" / "weir").mkdir(parents=True)
    (tmp_path / "state" / "weir" / "last-cluster").write_text(f"{last}\n")
    found = discovery.find_cluster(state, tmp_path)
    assert (found.routers, found.data_dir) == (["127.0.0.1:9001"], last)
    assert found.found_from.startswith("the last local cluster started")
    local = write_cluster(tmp_path / "weir-cluster", ["127.0.0.1:9101", "127.0.0.1:9102"])
    found = discovery.find_cluster(state, tmp_path)
    assert (found.routers, found.data_dir) == (["127.0.0.1:9101", "127.0.0.1:9102"], local)
    moved = write_cluster(tmp_path / "moved", ["127.0.0.1:9201"])
    assert discovery.find_cluster({**state, "WEIR_CLUSTER_DIR": str(moved)}, tmp_path).routers == ["127.0.0.1:9201"]
    named = discovery.find_cluster({**state, "WEIR_ROUTERS": " a:1, b:2 ,"}, tmp_path)
    assert (named.routers, named.found_from, named.data_dir) == (["a:1", "b:2"], "$WEIR_ROUTERS", None)


def test_a_stopped_or_half_written_cluster_is_not_found(tmp_path: Path) -> None:
    (tmp_path / "weir-cluster").mkdir()
    (tmp_path / "weir-cluster" / "cluster.json").write_text('{"routers": [')  # being written
    state = {"XDG_STATE_HOME": str(tmp_path / "state")}
    assert discovery.find_cluster(state, tmp_path).found_from == "the default address"


def test_a_tls_cluster_gives_its_ca_and_a_token_from_the_environment_keeps_it(tmp_path: Path) -> None:
    files = {"ca_file": "/c/ca.pem", "cert_file": "/c/client.pem", "key_file": "/c/client-key.pem"}
    write_cluster(tmp_path / "weir-cluster", ["127.0.0.1:9301"], tls=files)
    state = {"XDG_STATE_HOME": str(tmp_path / "state")}
    security = discovery.find_cluster(state, tmp_path).security
    assert security is not None and str(security.ca_file) == "/c/ca.pem" and str(security.key_file).endswith("key.pem")
    with_token = discovery.find_cluster({**state, "WEIR_TOKEN": "t0k"}, tmp_path).security
    assert with_token is not None and with_token.token == "t0k" and str(with_token.ca_file) == "/c/ca.pem"
    own_ca = discovery.find_cluster({**state, "WEIR_TLS_CA_FILE": "/mine.pem"}, tmp_path)
    assert own_ca.security is None  # the WEIR_TLS_* files of the environment win (the process default)
    write_cluster(tmp_path / "plain" / "weir-cluster", ["127.0.0.1:9302"])
    assert discovery.find_cluster(state, tmp_path / "plain").security is None


def test_ports_are_the_recorded_ones_else_the_well_known_and_a_taken_one_is_said() -> None:
    assert wanted_ports({}) == {name: dict(fields) for name, fields in WELL_KNOWN_PORTS.items()}
    recorded = {"router-1": {"port": 7601, "metrics_port": 7603}, "node-1": {"client_port": 7611}}
    wanted = wanted_ports(recorded)
    assert wanted["router-1"] == {"port": 7601, "metrics_port": 7603} and wanted["router-2"] == {"port": 7502}
    plan, taken = plan_ports(wanted, is_free=lambda port: port != 7502)
    assert plan["router-1"] == {"port": 7601, "metrics_port": 7603} and plan["node-1"] == {"client_port": 7611}
    assert "router-2" not in plan and taken == ["router-2: port 7502 (port) is taken: it takes a free one"]
    doubled, taken = plan_ports({"a": {"port": 9}, "b": {"port": 9}, "c": {"port": 0}}, is_free=lambda _: True)
    assert doubled == {"a": {"port": 9}} and len(taken) == 1  # a port wanted twice goes to the first


def test_ports_round_trip_through_the_data_directory_and_a_listening_port_is_taken(tmp_path: Path) -> None:
    assert read_ports(tmp_path) == {}
    write_ports(tmp_path, {"router-1": {"port": 7501}})
    assert read_ports(tmp_path) == {"router-1": {"port": 7501}}
    (tmp_path / "ports.json").write_text("[1, 2]")
    assert read_ports(tmp_path) == {}  # unreadable: start on the well-known ports
    with socket.create_server(("127.0.0.1", 0)) as listening:
        port = listening.getsockname()[1]
        assert not port_is_free(port)
    assert port_is_free(port)


def test_tls_failures_are_named_with_what_to_pass() -> None:
    prefix = "failed to connect to all addresses; last error: UNKNOWN: ipv4:127.0.0.1:7501: "
    untrusted = describe_tls_failure(
        prefix + "Tls handshake failed (TSI_PROTOCOL_FAILURE): SSL_ERROR_SSL: error:1000007d:SSL routines:"
        "OPENSSL_internal:CERTIFICATE_VERIFY_FAILED: unable to get local issuer certificate: OK",
        secured=True,
    )
    assert untrusted is not None and untrusted.startswith("TLS handshake failed: the server's certificate")
    assert "CERTIFICATE_VERIFY_FAILED: unable to get local issuer certificate)" in untrusted
    assert "--tls-ca" in untrusted
    plain_server = describe_tls_failure(prefix + "Tls handshake failed ... WRONG_VERSION_NUMBER: x: OK", secured=True)
    assert plain_server is not None and "does not serve TLS" in plain_server
    closed = describe_tls_failure(prefix.replace("UNKNOWN", "UNAVAILABLE") + "Socket closed", secured=False)
    assert closed is not None and "TLS-only server" in closed and "--tls-ca" in closed
    refused = prefix + "Failed to connect to remote host: Connection refused"
    assert describe_tls_failure(refused, secured=True) is None and describe_tls_failure(refused, secured=False) is None
    assert describe_tls_failure(prefix + "Socket closed", secured=True) is None
