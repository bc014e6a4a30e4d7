"""A container's health check: `python -m weir_server.healthcheck PORT` asks grpc.health.v1 on
127.0.0.1:PORT and exits 0 when the server answers SERVING, else 1. It connects the way the
service itself is configured: TLS with the service's own CA and certificate when its
WEIR_<SERVICE>_TLS_* variables are set (127.0.0.1 is in the development certificates' names),
plaintext otherwise."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from grpc_health.v1 import health_pb2, health_pb2_grpc
from weir import tls


def security_from_environment() -> tls.ChannelSecurity | None:
    """The first service's TLS files found in the environment (WEIR_*_TLS_CA_FILE, ...)."""
    for name, value in sorted(os.environ.items()):
        if name.startswith("WEIR_") and name.endswith("_TLS_CA_FILE") and value:
            prefix = name.removesuffix("TLS_CA_FILE")
            cert, key = os.environ.get(f"{prefix}TLS_CERT_FILE"), os.environ.get(f"{prefix}TLS_KEY_FILE")
            return tls.ChannelSecurity(
                ca_file=Path(value),
                cert_file=Path(cert) if cert and key else None,
                key_file=Path(key) if cert and key else None,
            )
    return None


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or not args[0].isdigit():
        print("usage: python -m weir_server.healthcheck PORT", file=sys.stderr)
        return 2
    with tls.sync_channel(f"127.0.0.1:{args[0]}", security=security_from_environment()) as channel:
        try:
            answer = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=2)
        except Exception as error:  # any failure is "not healthy", said on one line
            print(f"not healthy: {error}", file=sys.stderr)
            return 1
    return 0 if answer.status == health_pb2.HealthCheckResponse.SERVING else 1


if __name__ == "__main__":
    sys.exit(main())
