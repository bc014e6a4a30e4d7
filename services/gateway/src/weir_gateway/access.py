"""Who may use the gateway's front doors, with an auth file (`WEIR_GATEWAY_AUTH_FILE`, the same file
the routers and nodes read): the gateway authenticates each call as the routers do and checks what
it needs of the caller's grants (`weir_server.access.AuthInterceptor` with each protocol's
credentials and permission table), then acts on the cluster with its own (services') token.

- kafka-pixy (which defines no authentication): `authorization: Bearer <token>` call metadata, a
  Weir user's token (weir_gateway.kafka_pixy.permissions).
- waymaker.streams (the streams seed, which defines no authentication): a bearer token as for
  kafka-pixy (weir_gateway.waymaker_streams.permissions).
- RocketMQ v1: RocketMQ's own signature (weir_gateway.rocketmq_v1.signature) with the access key
  and secret key of a user's `"rocketmq"` entry, or a Weir bearer token
  (weir_gateway.rocketmq_v1.permissions).
- RocketMQ v2 (on the same port): the same credentials as v1 (RocketMQ 5's clients sign the same
  way), its own table (weir_gateway.rocketmq_v2.permissions).

Unknown callers get UNAUTHENTICATED, known ones without the grant PERMISSION_DENIED, callers past
their request rate RESOURCE_EXHAUSTED; each before the call runs. Server reflection needs a known
caller (the door's own credentials, any user); health stays open.
"""

from __future__ import annotations

import time
from typing import Any

import grpc
from weir_server.access import AuthInterceptor, Metadata, identify_by_bearer_token
from weir_server.auth import Authenticator, Principal
from weir_server.permissions import Requirement
from weir_server.ratelimit import RequestBuckets

from weir_gateway.kafka_pixy import permissions as kafka_pixy_permissions
from weir_gateway.rocketmq_v1 import signature
from weir_gateway.rocketmq_v1.handles import Signer
from weir_gateway.rocketmq_v1.permissions import SERVICE as ROCKETMQ_SERVICE
from weir_gateway.rocketmq_v1.permissions import RocketMQPermissions
from weir_gateway.rocketmq_v2.permissions import SERVICE as ROCKETMQ_V2_SERVICE
from weir_gateway.rocketmq_v2.permissions import RocketMQV2Permissions
from weir_gateway.waymaker_streams import permissions as waymaker_streams_permissions


def identify_rocketmq_caller(authenticator: Authenticator, metadata: Metadata) -> tuple[Principal | None, str]:
    """The caller of a RocketMQ call: by its MQv2-HMAC-SHA1 signature, else by a bearer token."""
    text = {key.lower(): value for key, value in metadata if isinstance(value, str)}
    call = signature.signed_call(text)
    if call is None:
        found, reason = identify_by_bearer_token(authenticator, metadata)
        if found is None and not text.get(signature.AUTHORIZATION):
            reason = f"it sent no credentials (RocketMQ's {signature.ALGORITHM} signature, or a Bearer token)"
        return found, reason
    holder = authenticator.rocketmq_user(call.access_key)
    if holder is None:
        return None, f"no user holds the access key {call.access_key!r}"
    principal, secret_key = holder
    wrong = signature.problem(call, secret_key, time.time())
    return (None, wrong) if wrong else (principal, "")


Interceptors = list[grpc.aio.ServerInterceptor]


def front_door_interceptors(
    authenticator: Authenticator, signer: Signer
) -> tuple[Interceptors, Interceptors, Interceptors]:
    """The auth interceptors of the kafka-pixy, RocketMQ v1 and waymaker.streams ports (one request
    rate per user across them)."""
    buckets = RequestBuckets()
    kafka_pixy = AuthInterceptor(
        authenticator,
        buckets,
        requirement=kafka_pixy_permissions.requirement,
        prefixes=(f"/{kafka_pixy_permissions.SERVICE}/",),
    )
    v1_permissions, v2_permissions = RocketMQPermissions(signer), RocketMQV2Permissions(signer)

    def rocketmq_requirement(method: str, request: Any) -> Requirement | None:
        if method.startswith(f"/{ROCKETMQ_V2_SERVICE}/"):
            return v2_permissions.requirement(method, request)
        return v1_permissions.requirement(method, request)

    rocketmq = AuthInterceptor(
        authenticator,
        buckets,
        identify=identify_rocketmq_caller,
        requirement=rocketmq_requirement,
        prefixes=(f"/{ROCKETMQ_SERVICE}/", f"/{ROCKETMQ_V2_SERVICE}/"),
    )
    waymaker_streams = AuthInterceptor(
        authenticator,
        buckets,
        requirement=waymaker_streams_permissions.requirement,
        first_item_names_it=waymaker_streams_permissions.first_item_names_it,
        prefixes=(f"/{waymaker_streams_permissions.SERVICE}/",),
    )
    return [kafka_pixy], [rocketmq], [waymaker_streams]
