"""A development CA and certificates for running Weir with TLS on one machine or in compose
(`weir cluster up --tls`; the compose stack's `certs` service: `python -m weir_server.devcerts DIR
--name router-1 ...`). Made with `cryptography`; not for production, where an operator's own CA
issues the certificates.

Files (PEM) under the directory: `ca.pem` / `ca-key.pem` (the cluster CA), `service.pem` /
`service-key.pem` (every cluster service's certificate: server and client authentication, valid for
localhost, 127.0.0.1, ::1 and the given names), `client.pem` / `client-key.pem` (a client
certificate for users' tools), and `service.token` (the services' bearer token for a cluster with an
auth file: their `token_file` and the routers' and nodes' `service_token_file`); with `--admin-auth`
also `auth.json`, an auth file whose one user `admin` may do everything, and `admin.token`, its
token (the compose stack runs with them); with `--redis-owner UID` also `redis.password`, and
`redis.conf`, `sentinel.conf` and `redis-key.pem` for a metadata Redis, its replicas and their
sentinels serving TLS only with that password (the compose stack's). Keys, tokens and passwords
are written owner-only. Existing files are kept, so a restarted cluster keeps its CA and tokens.
"""

from __future__ import annotations

import argparse
import datetime
import ipaddress
import json
import os
import secrets
import sys
from collections.abc import Sequence
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from weir_server import auth

VALID_DAYS = 825  # the most browsers accept for a leaf certificate; the CA lives ten years
LOCAL_NAMES = ("localhost", "127.0.0.1", "::1")
CA, SERVICE, CLIENT = "ca", "service", "client"
SERVICE_TOKEN = "service.token"
ADMIN_TOKEN, AUTH_FILE = "admin.token", "auth.json"
PROMETHEUS_TOKEN = "prometheus.token"  # the `prometheus` user's: the metrics grant only
REDIS_PASSWORD = "redis.password"


def _write(path: Path, data: bytes, *, secret: bool) -> None:
    temporary = path.with_suffix(path.suffix + ".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if secret else 0o644)
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
    temporary.replace(path)


def _key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _names(names: Sequence[str]) -> list[x509.GeneralName]:
    entries: list[x509.GeneralName] = []
    for name in dict.fromkeys([*LOCAL_NAMES, *names]):
        try:
            entries.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            entries.append(x509.DNSName(name))
    return entries


def _ca(directory: Path) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    cert_path, key_path = directory / f"{CA}.pem", directory / f"{CA}-key.pem"
    if cert_path.exists() and key_path.exists():
        certificate = x509.load_pem_x509_certificate(cert_path.read_bytes())
        key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
        assert isinstance(key, ec.EllipticCurvePrivateKey)
        return certificate, key
    key = _key()
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Weir development CA")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=3650))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(False, False, False, False, False, True, True, False, False), critical=True
        )  # key_cert_sign, crl_sign
        .sign(key, hashes.SHA256())
    )
    _write(key_path, _key_pem(key), secret=True)
    _write(cert_path, certificate.public_bytes(serialization.Encoding.PEM), secret=False)
    return certificate, key


def _leaf(
    directory: Path,
    stem: str,
    *,
    common_name: str,
    usages: list[x509.ObjectIdentifier],
    names: Sequence[str] | None,
    ca: tuple[x509.Certificate, ec.EllipticCurvePrivateKey],
) -> None:
    cert_path, key_path = directory / f"{stem}.pem", directory / f"{stem}-key.pem"
    if cert_path.exists() and key_path.exists():
        return
    key = _key()
    issuer, ca_key = ca
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
        .issuer_name(issuer.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=VALID_DAYS))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
    )
    if names is not None:  # a server certificate: the local names and the given ones
        builder = builder.add_extension(x509.SubjectAlternativeName(_names(names)), critical=False)
    certificate = builder.sign(ca_key, hashes.SHA256())
    _write(key_path, _key_pem(key), secret=True)
    _write(cert_path, certificate.public_bytes(serialization.Encoding.PEM), secret=False)


def make_dev_certificates(directory: Path, names: Sequence[str] = ()) -> Path:
    """Create (or keep) the development CA, the service and the client certificates under
    `directory`; returns it. `names`: more host names or addresses the services answer on."""
    directory.mkdir(parents=True, exist_ok=True)
    ca = _ca(directory)
    server_and_client = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
    _leaf(directory, SERVICE, common_name="weir-service", usages=server_and_client, names=names, ca=ca)
    _leaf(directory, CLIENT, common_name="weir-client", usages=[ExtendedKeyUsageOID.CLIENT_AUTH], names=None, ca=ca)
    if not (directory / SERVICE_TOKEN).exists():
        _write(directory / SERVICE_TOKEN, secrets.token_urlsafe(32).encode() + b"\n", secret=True)
    return directory


def make_admin_auth(directory: Path) -> Path:
    """Create (or keep) `auth.json` with two users: `admin`, allowed everything on every stream, its
    token in `admin.token`, and `prometheus`, allowed only the services' /metrics (the metrics grant),
    its token in `prometheus.token` (a scraper's credentials_file); returns the auth file."""
    auth_path = directory / AUTH_FILE
    tokens = {name: directory / file for name, file in (("admin", ADMIN_TOKEN), ("prometheus", PROMETHEUS_TOKEN))}
    for token_path in tokens.values():
        if not token_path.exists():
            _write(token_path, secrets.token_urlsafe(32).encode() + b"\n", secret=True)
    if not auth_path.exists():
        grants = {"admin": list(auth.ACTIONS), "prometheus": [auth.METRICS]}
        users = [
            {
                "name": name,
                "token_sha256": auth.token_hash(auth.read_token(tokens[name])),
                "allow": [{"actions": grants[name], "streams": ["*"]}],
            }
            for name in tokens
        ]
        _write(auth_path, json.dumps({"users": users}, indent=2).encode() + b"\n", secret=False)
    return auth_path


def redis_config(directory: Path, password: str, port: int, *, tls: bool, key_file: Path | None = None) -> str:
    """A redis-server config for the metadata Redis of a cluster with these certificates: the
    password (requirepass) and, with `tls`, TLS only on `port` with a client certificate of the CA
    required, replicating over TLS too (`tls_listener`; `key_file`: a copy of the service key the
    Redis process can read; default the service's own)."""
    listener = tls_listener(directory, port, key_file) if tls else [f"port {port}"]
    return "\n".join([f"requirepass {password}", *listener]) + "\n"


def tls_listener(directory: Path, port: int, key_file: Path | None = None) -> list[str]:
    """The config lines of a redis-server or sentinel serving TLS only on `port` with these
    certificates, a client certificate of the CA required, and TLS to the servers it replicates
    from or watches (`key_file`: a copy of the service key the Redis process can read)."""
    key = key_file or directory / f"{SERVICE}-key.pem"
    return [
        "port 0",
        f"tls-port {port}",
        f"tls-cert-file {directory / f'{SERVICE}.pem'}",
        f"tls-key-file {key}",
        f"tls-ca-cert-file {directory / f'{CA}.pem'}",
        "tls-auth-clients yes",
        "tls-replication yes",
    ]


# Redis Sentinel for the metadata Redis (`weir cluster up --ha`, compose): the master's name, the
# sentinels that must agree it is down, and how long they wait for a silent primary before they
# agree and fail over, and one failover may take before another is tried (Sentinel's defaults: 30 s
# and 3 min, for WAN links; the store the cluster's own failovers depend on must fail over in seconds).
SENTINEL_MASTER_NAME = "weir"
SENTINEL_QUORUM = 2
SENTINEL_DOWN_AFTER_MS = 1000
SENTINEL_FAILOVER_TIMEOUT_MS = 5000
SENTINEL_PORT = 26379


def sentinel_config(
    password: str, primary: tuple[str, int], listener: Sequence[str], *, hostnames: bool = False
) -> str:
    """A Redis Sentinel config watching the metadata Redis at `primary` (host, port): `listener`'s
    port lines (plaintext `port N`, or TLS lines as `redis_config` writes them, plus
    `tls-replication yes` to reach the servers and the other sentinels over TLS), the one password
    for clients, the servers and the other sentinels, a quorum of SENTINEL_QUORUM, and with
    `hostnames` (compose: containers found by name) host names resolved and announced, so the
    services get names their TLS certificate holds."""
    host, port = primary
    lines = [
        *listener,
        f"requirepass {password}",
        f"sentinel monitor {SENTINEL_MASTER_NAME} {host} {port} {SENTINEL_QUORUM}",
        f"sentinel auth-pass {SENTINEL_MASTER_NAME} {password}",
        f"sentinel sentinel-pass {password}",
        f"sentinel down-after-milliseconds {SENTINEL_MASTER_NAME} {SENTINEL_DOWN_AFTER_MS}",
        f"sentinel failover-timeout {SENTINEL_MASTER_NAME} {SENTINEL_FAILOVER_TIMEOUT_MS}",
        f"sentinel parallel-syncs {SENTINEL_MASTER_NAME} 1",
    ]
    if hostnames:
        lines = [
            *lines[: len(listener)],
            "sentinel resolve-hostnames yes",
            "sentinel announce-hostnames yes",
            *lines[len(listener) :],
        ]  # fmt: skip  (before `monitor`, which names a host)
    return "\n".join(lines) + "\n"


def make_redis_files(directory: Path, owner: int | None, port: int = 6379) -> Path:
    """For a metadata Redis in containers of its own: `redis.password` (kept; the services'
    redis_password_file), `redis-key.pem` (a copy of the service key), `redis.conf` (TLS only,
    the password, which a replica also gives its primary: see `redis_config`) and `sentinel.conf`
    (a sentinel watching `redis:port`, TLS only on SENTINEL_PORT, host names announced: see
    `sentinel_config`; each sentinel copies it, since Sentinel rewrites its config), the last three
    given to `owner` (the Redis image's user); returns the Redis config."""
    password_path = directory / REDIS_PASSWORD
    if not password_path.exists():
        _write(password_path, secrets.token_hex(32).encode() + b"\n", secret=True)
    key_copy = directory / "redis-key.pem"
    _write(key_copy, (directory / f"{SERVICE}-key.pem").read_bytes(), secret=True)
    password = password_path.read_text().strip()
    config = directory / "redis.conf"
    text = redis_config(directory, password, port, tls=True, key_file=key_copy)
    _write(config, (text + f"masterauth {password}\n").encode(), secret=True)
    sentinel = directory / "sentinel.conf"
    listener = tls_listener(directory, SENTINEL_PORT, key_copy)
    _write(sentinel, sentinel_config(password, ("redis", port), listener, hostnames=True).encode(), secret=True)
    if owner is not None:
        for path in (key_copy, config, sentinel):
            os.chown(path, owner, -1)
    return config


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m weir_server.devcerts", description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", type=Path, help="where the PEM files go (kept when they exist)")
    parser.add_argument("--name", action="append", default=[], help="a host name or address the services answer on")
    parser.add_argument("--owner", type=int, help="give the files to this user id (run as root in a container)")
    parser.add_argument(
        "--admin-auth",
        action="store_true",
        help=f"also {AUTH_FILE} with two users: admin ({ADMIN_TOKEN}), prometheus ({PROMETHEUS_TOKEN}, metrics)",
    )
    parser.add_argument(
        "--prometheus-owner", type=int, help=f"give {PROMETHEUS_TOKEN} to this user id (the Prometheus image's user)"
    )
    parser.add_argument(
        "--redis-owner",
        type=int,
        help=f"also {REDIS_PASSWORD}, redis.conf, sentinel.conf and redis-key.pem for a TLS metadata Redis "
        "and its sentinels run as this user id",
    )
    args = parser.parse_args(argv)
    make_dev_certificates(args.directory, args.name)
    if args.admin_auth:
        make_admin_auth(args.directory)
    if args.redis_owner is not None:
        make_redis_files(args.directory, args.redis_owner)
    if args.owner is not None:
        made = [args.directory / name for name in (SERVICE_TOKEN, ADMIN_TOKEN, AUTH_FILE, REDIS_PASSWORD)]
        pems = [path for path in args.directory.glob("*.pem") if path.name != "redis-key.pem"]  # Redis's own
        for path in [*pems, *(path for path in made if path.exists())]:
            os.chown(path, args.owner, -1)
    if args.prometheus_owner is not None and (args.directory / PROMETHEUS_TOKEN).exists():
        os.chown(args.directory / PROMETHEUS_TOKEN, args.prometheus_owner, -1)
    print(f"development CA and certificates in {args.directory}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
