"""Request authentication: who sends a request to the embedded API server.

As kube-apiserver's union authenticator (pkg/authentication/request/union) orders them: the
client certificate (x509), then the bearer token (the server's own token, else a service
account token for the API server's audiences). Without a token configured, and on the public
paths, every request is the admin; a request nobody vouches for is a 401."""

from __future__ import annotations

import hmac
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from setpoint.cluster.authentication.bearertoken import bearer_token
from setpoint.cluster.authentication.tokens import DEFAULT_AUDIENCES, audience_error
from setpoint.cluster.authentication.x509 import user_of_certificate
from setpoint.cluster.authorization import reviews
from setpoint.cluster.endpoints.http import Request
from setpoint.machinery import errors

if TYPE_CHECKING:
    from setpoint.cluster.authentication.tokens import Identity

ANONYMOUS_USER = {"username": "system:anonymous", "groups": ["system:unauthenticated"]}
PUBLIC_PATHS = {"/healthz", "/livez", "/readyz", "/version"}


def audited_user(token: bytes | None, request: Request) -> dict[str, Any] | None:
    """Who the audit event names: the authenticated user; for a public path asked
    without credentials (served here without authenticating), the anonymous user
    kube-apiserver's anonymous authenticator would have made it."""
    if request.path in PUBLIC_PATHS and token is not None \
            and "authorization" not in request.headers \
            and request.client_certificate is None:
        return ANONYMOUS_USER
    return request.user


def authenticate(service_account_identity: Callable[[str], Identity | None],
                 token: bytes | None, request: Request) -> None:
    """Who sends the request (``request.user``: what authorization judges, auditing
    records and admission webhooks are told), or 401. Whom it impersonates is decided
    after the audit event is begun (``Handler._serve``, server.py), as the apiserver's filters are
    ordered."""
    if token is None or request.path in PUBLIC_PATHS:
        request.user = reviews.ADMIN_USER
        request.user_fixed = True
        return
    # kube-apiserver's union authenticator asks the x509 one before the token ones
    certificate = request.client_certificate
    if certificate is not None:
        request.user = user_of_certificate(certificate)
        request.authenticated = request.user_fixed = request.user is not None
    presented = bearer_token(request.headers.get("authorization", "")).token
    if request.user is None and presented:
        if hmac.compare_digest(presented.encode(), token):
            request.user = reviews.ADMIN_USER
            request.authenticated = request.user_fixed = True
        else:
            identity = service_account_identity(presented) \
                if presented.count(".") == 2 else None
            if identity is not None and audience_error(identity, DEFAULT_AUDIENCES) is None:
                request.user = identity.user_info()
                request.authenticated = True
    if request.user is None:
        raise errors.unauthorized()
