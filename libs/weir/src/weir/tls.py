"""How the SDK's channels are secured: TLS with a CA to trust and, for mutual TLS, a client
certificate.

A `ChannelSecurity` names PEM files; they are read each time a channel is made, so a rotated file
is used by the next connection without a restart. Every client takes one (`Client(routers,
tls=...)`, `NodeClient(address, tls=...)`); without one, the process default applies: the one a
service set with `set_default` (its own settings), else the environment:

| variable | meaning |
|---|---|
| `WEIR_TLS_CA_FILE` | PEM of the CA certificates to trust (set: TLS on) |
| `WEIR_TLS_CERT_FILE`, `WEIR_TLS_KEY_FILE` | this client's certificate chain and key (mutual TLS) |
| `WEIR_TLS_SERVER_NAME` | the name to check in the server's certificate instead of the dialled host |
| `WEIR_TOKEN`, `WEIR_TOKEN_FILE` | a bearer token (or the file holding it) for a cluster with an auth file |

With none of them, channels are plaintext, which every Weir server refuses unless it was started
with its explicit plaintext setting (local development).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc

from weir.errors import InvalidArgumentError

ENV_CA_FILE = "WEIR_TLS_CA_FILE"
ENV_CERT_FILE = "WEIR_TLS_CERT_FILE"
ENV_KEY_FILE = "WEIR_TLS_KEY_FILE"
ENV_SERVER_NAME = "WEIR_TLS_SERVER_NAME"
ENV_TOKEN = "WEIR_TOKEN"
ENV_TOKEN_FILE = "WEIR_TOKEN_FILE"


def _read(path: Path, what: str) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise InvalidArgumentError(f"{what} {str(path)!r} cannot be read: {error.strerror}") from None


@dataclass(frozen=True, slots=True)
class ChannelSecurity:
    """TLS for client channels: `ca_file` (None = the system's roots), and `cert_file` with
    `key_file` to present a client certificate (both or neither). `server_name`: check this name in
    the server's certificate instead of the host dialled. `token` (or `token_file`, read each time a
    channel is made): a bearer token sent with every call (`authorization: Bearer ...`), for a
    cluster with an auth file; gRPC sends it over TLS only. Never shown in repr."""

    ca_file: Path | None = None
    cert_file: Path | None = None
    key_file: Path | None = None
    server_name: str = ""
    token: str = field(default="", repr=False)
    token_file: Path | None = None

    def __post_init__(self) -> None:
        if (self.cert_file is None) != (self.key_file is None):
            raise InvalidArgumentError("a client certificate needs both its file and its key file")
        if self.token and self.token_file is not None:
            raise InvalidArgumentError("give a token or a token file, not both")

    def bearer_token(self) -> str:
        """The token to send ("" = none). Errors: InvalidArgumentError when the token file cannot be
        read or is empty."""
        if self.token_file is None:
            return self.token.strip()
        token = _read(self.token_file, "token file").decode(errors="replace").strip()
        if not token:
            raise InvalidArgumentError(f"token file {str(self.token_file)!r} is empty")
        return token

    def transport_credentials(self) -> grpc.ChannelCredentials:
        """grpc TLS channel credentials from the files as they are now (no token). Errors:
        InvalidArgumentError naming a file that cannot be read."""
        roots = _read(self.ca_file, "TLS CA file") if self.ca_file else None
        key = _read(self.key_file, "TLS key file") if self.key_file else None
        chain = _read(self.cert_file, "TLS certificate file") if self.cert_file else None
        return grpc.ssl_channel_credentials(root_certificates=roots, private_key=key, certificate_chain=chain)

    def credentials(self) -> grpc.ChannelCredentials:
        """`transport_credentials` with the bearer token as gRPC call credentials (which gRPC sends
        over TLS only). Errors: InvalidArgumentError naming a file that cannot be read."""
        credentials = self.transport_credentials()
        token = self.bearer_token()
        if not token:
            return credentials
        return grpc.composite_channel_credentials(credentials, grpc.access_token_call_credentials(token))

    def options(self) -> list[tuple[str, Any]]:
        """The channel options these settings need: the name to check in the server's certificate when
        `server_name` is set."""
        return [("grpc.ssl_target_name_override", self.server_name)] if self.server_name else []

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> ChannelSecurity | None:
        """The WEIR_TLS_* variables (see the module docstring); None when none is set."""
        environ = os.environ if environ is None else environ
        ca, cert, key = (environ.get(name, "") for name in (ENV_CA_FILE, ENV_CERT_FILE, ENV_KEY_FILE))
        server_name = environ.get(ENV_SERVER_NAME, "")
        token, token_file = environ.get(ENV_TOKEN, ""), environ.get(ENV_TOKEN_FILE, "")
        if not (ca or cert or key or server_name or token or token_file):
            return None
        return cls(
            ca_file=Path(ca) if ca else None,
            cert_file=Path(cert) if cert else None,
            key_file=Path(key) if key else None,
            server_name=server_name,
            token=token,
            token_file=Path(token_file) if token_file else None,
        )

    def to_environment(self) -> dict[str, str]:
        """The WEIR_TLS_* variables that stand for this (for child processes)."""
        values = {
            ENV_CA_FILE: str(self.ca_file or ""),
            ENV_CERT_FILE: str(self.cert_file or ""),
            ENV_KEY_FILE: str(self.key_file or ""),
            ENV_SERVER_NAME: self.server_name,
            ENV_TOKEN: self.token,
            ENV_TOKEN_FILE: str(self.token_file or ""),
        }
        return {name: value for name, value in values.items() if value}


class _Unset:
    pass


_UNSET = _Unset()
PROCESS_DEFAULT: Any = _UNSET  # a client's `tls` when it should use the process default


class _Default:
    """The process default's holder (set once by a service, else read from the environment)."""

    value: ChannelSecurity | _Unset | None = _UNSET


def set_default(security: ChannelSecurity | None) -> None:
    """The security of every channel this process makes without one of its own (a service sets it
    from its settings at start: its CA, and its own certificate for the cluster's mutual TLS)."""
    _Default.value = security


def default() -> ChannelSecurity | None:
    """The process default: what `set_default` set, else the environment (read once)."""
    if isinstance(_Default.value, _Unset):
        _Default.value = ChannelSecurity.from_environment()
    return _Default.value


Security = ChannelSecurity | _Unset | None


def resolve(security: Security) -> ChannelSecurity | None:
    return default() if isinstance(security, _Unset) else security


class _BearerToken:
    """Adds `authorization: Bearer <token>` to every call of a TLS channel. gRPC's call credentials
    do the same through a Python plugin that runs on a thread for every call: on a grpc.aio unary
    call that doubled the client's CPU and cost a third of the calls per second
    (bench.security_bench); this adds one entry to the call's metadata. grpc.aio files each
    interceptor under the first call kind it implements, so there is one subclass per kind."""

    def __init__(self, token: str) -> None:
        self.entry = ("authorization", f"Bearer {token}")

    def details(self, details: Any) -> Any:
        return details._replace(metadata=grpc.aio.Metadata(*(details.metadata or ()), self.entry))


class _UnaryUnaryBearer(_BearerToken, grpc.aio.UnaryUnaryClientInterceptor):  # type: ignore[misc]
    async def intercept_unary_unary(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        return await continuation(self.details(client_call_details), request)


class _UnaryStreamBearer(_BearerToken, grpc.aio.UnaryStreamClientInterceptor):  # type: ignore[misc]
    async def intercept_unary_stream(self, continuation: Any, client_call_details: Any, request: Any) -> Any:
        return await continuation(self.details(client_call_details), request)


class _StreamUnaryBearer(_BearerToken, grpc.aio.StreamUnaryClientInterceptor):  # type: ignore[misc]
    async def intercept_stream_unary(self, continuation: Any, client_call_details: Any, requests: Any) -> Any:
        return await continuation(self.details(client_call_details), requests)


class _StreamStreamBearer(_BearerToken, grpc.aio.StreamStreamClientInterceptor):  # type: ignore[misc]
    async def intercept_stream_stream(self, continuation: Any, client_call_details: Any, requests: Any) -> Any:
        return await continuation(self.details(client_call_details), requests)


def _bearer_interceptors(token: str, streams: bool) -> list[Any] | None:
    if not token:
        return None
    kinds = [_UnaryUnaryBearer, _UnaryStreamBearer, _StreamUnaryBearer] + ([_StreamStreamBearer] if streams else [])
    return [kind(token) for kind in kinds]


def aio_channel(
    address: str,
    options: Sequence[tuple[str, Any]] = (),
    security: Security = _UNSET,
    *,
    intercept_stream_streams: bool = True,
) -> grpc.aio.Channel:
    """A grpc.aio channel to `address`: TLS per `security` (default: the process default), with its
    bearer token on every call, else plaintext. `intercept_stream_streams=False`: bidirectional calls
    get no token from the channel; the caller sends `call_metadata(security)` with each. grpc.aio
    runs an intercepted bidirectional call written with `write()` through a request queue whose task
    it never ends when the call is cancelled: the SDK's lockstep streams, cancelled when a client
    closes, left "Task was destroyed but it is pending!" on stderr."""
    chosen = resolve(security)
    if chosen is None:
        return grpc.aio.insecure_channel(address, options=list(options))
    return grpc.aio.secure_channel(
        address,
        chosen.transport_credentials(),
        options=[*options, *chosen.options()],
        interceptors=_bearer_interceptors(chosen.bearer_token(), intercept_stream_streams),
    )


def call_metadata(security: Security = _UNSET) -> tuple[tuple[str, str], ...]:
    """The metadata a call sends itself on a channel made with `intercept_stream_streams=False`:
    its bearer token over TLS, nothing otherwise."""
    chosen = resolve(security)
    token = chosen.bearer_token() if chosen is not None else ""
    return (("authorization", f"Bearer {token}"),) if token else ()


def sync_channel(address: str, options: Sequence[tuple[str, Any]] = (), security: Security = _UNSET) -> grpc.Channel:
    """A blocking grpc channel, as `aio_channel`."""
    chosen = resolve(security)
    if chosen is None:
        return grpc.insecure_channel(address, options=list(options))
    return grpc.secure_channel(address, chosen.credentials(), options=[*options, *chosen.options()])
