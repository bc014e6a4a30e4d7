"""Deployment discovery: `GET {url}/discover` and the endpoint manifest it answers.

Source: the service protocol's "Endpoint discovery" section (the SDKs serve `/discover`; the text
says `/discovery`) and the endpoint manifest schema v1 the SDKs send (`protocolMode`,
`minProtocolVersion`, `maxProtocolVersion`, `services[].name/ty/handlers[].name/ty`). A deployment
must speak protocol V2 (this invoker's only version): the manifest's range has to include 2.

Errors: DiscoveryFailedError, with a message that says what the URL answered.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from typing import Any

from weir.errors import DiscoveryFailedError
from weir.v1 import invoker_pb2

from weir_invoker.http1 import Http1Connection
from weir_invoker.http2 import Connection, DeploymentUnreachable, Endpoint
from weir_invoker.protocol import PROTOCOL_VERSION, ProtocolViolation

MANIFEST_CONTENT_TYPE = "application/vnd.restate.endpointmanifest.v1+json"
HTTP2, HTTP1 = "HTTP/2", "HTTP/1.1"
MAX_MANIFEST_BYTES = 4 * 1024 * 1024
DISCOVERY_TIMEOUT_S = 10.0
SERVICE_KINDS = ("SERVICE", "VIRTUAL_OBJECT", "WORKFLOW")
HANDLER_KINDS = ("", "EXCLUSIVE", "SHARED", "WORKFLOW")
PROTOCOL_MODES = ("BIDI_STREAM", "REQUEST_RESPONSE")


def deployment_id(url: str) -> str:
    """dp_<16 hex>: the same URL is the same deployment (pure)."""
    return "dp_" + hashlib.sha256(url.strip().rstrip("/").encode()).hexdigest()[:16]


def parse_manifest(url: str, body: bytes, server: str = "") -> invoker_pb2.Deployment:
    """The deployment a manifest describes (pure). Errors: DiscoveryFailedError (not JSON, a missing
    or wrong field, no protocol version 2, no services)."""
    try:
        manifest = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as error:
        raise DiscoveryFailedError(f"{url}/discover answered something that is not JSON: {error}", url=url) from None
    if not isinstance(manifest, dict):
        raise DiscoveryFailedError(f"{url}/discover answered a JSON {type(manifest).__name__}, not an object", url=url)
    mode = _field(manifest, "protocolMode", str, url, default="BIDI_STREAM")
    if mode not in PROTOCOL_MODES:
        raise DiscoveryFailedError(f"{url}: protocolMode {mode!r} is not one of {', '.join(PROTOCOL_MODES)}", url=url)
    low = _field(manifest, "minProtocolVersion", int, url)
    high = _field(manifest, "maxProtocolVersion", int, url)
    if not low <= PROTOCOL_VERSION <= high:
        raise DiscoveryFailedError(
            f"{url} speaks service protocol versions {low}..{high}; this invoker speaks V{PROTOCOL_VERSION} only "
            "(restate-sdk 0.3.x-0.5.x for Python)",
            url=url,
        )
    deployment = invoker_pb2.Deployment(
        id=deployment_id(url),
        url=url.strip().rstrip("/"),
        protocol_mode=mode,
        min_protocol_version=low,
        max_protocol_version=high,
        registered_at_ms=int(time.time() * 1000),
        server=server,
    )
    services = _field(manifest, "services", list, url)
    if not services:
        raise DiscoveryFailedError(f"{url} serves no services", url=url)
    for service in services:
        deployment.services.append(_service(service, url))
    return deployment


def _service(service: Any, url: str) -> invoker_pb2.DeployedService:
    if not isinstance(service, dict):
        raise DiscoveryFailedError(f"{url}: a service entry is not an object", url=url)
    name = _field(service, "name", str, url)
    kind = _field(service, "ty", str, url)
    if not name or kind not in SERVICE_KINDS:
        raise DiscoveryFailedError(f"{url}: service {name!r} has kind {kind!r}, not one of {SERVICE_KINDS}", url=url)
    deployed = invoker_pb2.DeployedService(name=name, kind=kind)
    for handler in _field(service, "handlers", list, url):
        if not isinstance(handler, dict):
            raise DiscoveryFailedError(f"{url}: a handler of {name} is not an object", url=url)
        handler_name = _field(handler, "name", str, url)
        handler_kind = _field(handler, "ty", str, url, default="")
        if not handler_name or handler_kind not in HANDLER_KINDS:
            raise DiscoveryFailedError(f"{url}: handler {name}/{handler_name} has kind {handler_kind!r}", url=url)
        if kind == "VIRTUAL_OBJECT" and not handler_kind:
            handler_kind = "EXCLUSIVE"  # the manifest schema's default for objects
        deployed.handlers.append(invoker_pb2.DeployedHandler(name=handler_name, kind=handler_kind))
    return deployed


def _field(data: dict[str, Any], name: str, kind: type, url: str, default: Any = None) -> Any:
    value = data.get(name, default)
    if value is None or not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise DiscoveryFailedError(f"{url}: the manifest's {name!r} is missing or not a {kind.__name__}", url=url)
    return value


async def discover(url: str) -> invoker_pb2.Deployment:
    """Ask `url` for its manifest (over HTTP/2, else HTTP/1.1), within DISCOVERY_TIMEOUT_S.
    Errors: DiscoveryFailedError, for a malformed URL too (the servicer refuses those first, as
    INVALID_ARGUMENT)."""
    try:
        endpoint = Endpoint.parse(url)
    except ValueError as error:
        raise DiscoveryFailedError(str(error), url=url) from None
    try:
        return await asyncio.wait_for(_discover(url, endpoint), DISCOVERY_TIMEOUT_S)
    except TimeoutError:
        raise DiscoveryFailedError(f"{url}/discover did not answer within {DISCOVERY_TIMEOUT_S:g} s", url=url) from None
    except DeploymentUnreachable as error:
        raise DiscoveryFailedError(f"{url}: {error}", url=url) from None
    except ProtocolViolation as error:
        raise DiscoveryFailedError(f"{url}/discover: {error}", url=url) from None


async def _discover(url: str, endpoint: Endpoint) -> invoker_pb2.Deployment:
    """Over HTTP/2 first; a deployment that does not speak it is asked over HTTP/1.1, and then has
    to be a REQUEST_RESPONSE one."""
    try:
        status, headers, body = await _get_over_http2(endpoint)
        version = HTTP2
    except DeploymentUnreachable as http2_error:
        http1 = Http1Connection(endpoint)
        try:
            status, headers, body = await http1.get_body(
                "/discover", [("accept", MANIFEST_CONTENT_TYPE)], MAX_MANIFEST_BYTES
            )
        except DeploymentUnreachable:
            raise http2_error from None  # nothing answered either way: say what HTTP/2 met
        finally:
            await http1.aclose()
        version = HTTP1
    if status == 404:
        raise DiscoveryFailedError(f"{url}/discover answered 404: is this a Restate SDK endpoint?", url=url)
    if status == 415:
        raise DiscoveryFailedError(
            f"{url}/discover answered 415: the deployment does not offer the manifest {MANIFEST_CONTENT_TYPE}", url=url
        )
    if status != 200:
        raise DiscoveryFailedError(f"{url}/discover answered HTTP {status}: {body[:200]!r}", url=url)
    deployment = parse_manifest(url, body, server=headers.get("x-restate-server", ""))
    deployment.http_version = version
    if version == HTTP1 and deployment.protocol_mode != "REQUEST_RESPONSE":
        raise DiscoveryFailedError(
            f"{url} speaks HTTP/1.1 only, and its manifest says {deployment.protocol_mode}: full duplex needs HTTP/2",
            url=url,
        )
    return deployment


async def _get_over_http2(endpoint: Endpoint) -> tuple[int, dict[str, str], bytes]:
    connection = await Connection.open(endpoint)
    try:
        stream = await connection.request("GET", "/discover", [("accept", MANIFEST_CONTENT_TYPE)], end_stream=True)
        headers = await stream.response_headers()
        body = await stream.read_body(MAX_MANIFEST_BYTES)
        stream.close()
    finally:
        connection.close()
    try:
        status = int(headers.get(":status", "0"))
    except ValueError:
        status = 0
    return status, headers, body
