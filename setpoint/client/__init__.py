"""``setpoint.client``: an asyncio client for any Kubernetes API server.

    async with Client() as client:                      # kubeconfig or in-cluster
        cm = await client.get(Kind("v1", "ConfigMap"), "settings", namespace="default")
        async for event_type, obj in client.watch(Kind("v1", "ConfigMap"), namespace="default"):
            ...

Errors are exceptions named after the Status reason (``NotFoundError``, ``ConflictError``,
``GoneError`` …), all subclasses of :class:`ApiError`.
"""

from setpoint.client.answers import UnreadableAnswerError
from setpoint.client.auth import (
    Authenticator,
    BasicAuth,
    Credentials,
    ExecAuth,
    TokenAuth,
    TokenFileAuth,
)
from setpoint.client.client import Client
from setpoint.client.config import (
    ClusterConfig,
    load_config,
    load_incluster,
    load_kubeconfig,
    local_cluster_kubeconfig,
)
from setpoint.client.echoes import Echo, WriteAnswers
from setpoint.client.errors import (
    AlreadyExistsError,
    ApiError,
    AuthError,
    BadRequestError,
    ClientError,
    ConfigError,
    ConflictError,
    ExpiredError,
    ForbiddenError,
    GatewayTimeoutError,
    GoneError,
    InternalServerError,
    InvalidError,
    MalformedAnswerError,
    MethodNotAllowedError,
    NotAcceptableError,
    NotFoundError,
    RequestEntityTooLargeError,
    ServerTimeoutError,
    ServiceUnavailableError,
    TooManyRequestsError,
    TransportError,
    UnauthorizedError,
    UnknownResourceError,
    UnsupportedMediaTypeError,
)
from setpoint.client.flowcontrol import (
    Clock,
    RateLimiter,
    TokenBucketRateLimiter,
)
from setpoint.client.options import ObjectList, PatchType, PropagationPolicy
from setpoint.client.resources import GVR, Discovery, Kind, ResourceInfo, ResourceRef
from setpoint.client.transport import RequestRecord, RetryPolicy
from setpoint.client.typed import TypedResource
from setpoint.client.watch import Watch, WatchEvent

__all__ = [
    "GVR",
    "AlreadyExistsError",
    "ApiError",
    "AuthError",
    "Authenticator",
    "BadRequestError",
    "BasicAuth",
    "Client",
    "ClientError",
    "Clock",
    "ClusterConfig",
    "ConfigError",
    "ConflictError",
    "Credentials",
    "Discovery",
    "Echo",
    "ExecAuth",
    "ExpiredError",
    "ForbiddenError",
    "GatewayTimeoutError",
    "GoneError",
    "InternalServerError",
    "InvalidError",
    "Kind",
    "MalformedAnswerError",
    "MethodNotAllowedError",
    "NotAcceptableError",
    "NotFoundError",
    "ObjectList",
    "PatchType",
    "PropagationPolicy",
    "RateLimiter",
    "RequestEntityTooLargeError",
    "RequestRecord",
    "ResourceInfo",
    "ResourceRef",
    "RetryPolicy",
    "ServerTimeoutError",
    "ServiceUnavailableError",
    "TokenAuth",
    "TokenBucketRateLimiter",
    "TokenFileAuth",
    "TooManyRequestsError",
    "TransportError",
    "TypedResource",
    "UnauthorizedError",
    "UnknownResourceError",
    "UnreadableAnswerError",
    "UnsupportedMediaTypeError",
    "Watch",
    "WatchEvent",
    "WriteAnswers",
    "load_config",
    "load_incluster",
    "load_kubeconfig",
    "local_cluster_kubeconfig",
]
