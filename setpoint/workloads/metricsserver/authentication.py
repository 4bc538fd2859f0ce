"""Delegated authentication: who a request to the metrics API comes from.

As an aggregated API server built on k8s.io/apiserver (metrics-server's
``DelegatingAuthenticationOptions``, pkg/server/options/authentication.go), configured from
the ConfigMap kube-system/extension-apiserver-authentication the API server publishes:

* request headers (pkg/authentication/request/headerrequest/requestheader.go): a client
  certificate signed by ``requestheader-client-ca-file`` whose CN is in
  ``requestheader-allowed-names`` (any CN when empty) vouches for the user named in
  ``X-Remote-User``, its groups in ``X-Remote-Group`` and extras in ``X-Remote-Extra-*``:
  the aggregator's front-proxy client;
* client certificates (pkg/authentication/request/x509/x509.go): one signed by
  ``client-ca-file`` is the user of its CN, in the groups of its O;
* a bearer token the API server's TokenReview authenticates
  (pkg/authentication/authenticatorfactory/delegating.go, the webhook token authenticator
  with its 10 s cache);
* anonymous otherwise (``Anonymous.Enabled`` is the delegating default), unless one of the
  above failed (a certificate of an allowed CA but a CN not allowed), which is a 401
  (pkg/authentication/request/union/unionauth.go ``NewFailOnError``).

Authenticated users get ``system:authenticated`` (pkg/authentication/group). The TLS layer
asks for a client certificate and accepts only one from these CAs; which CA signed it is
decided here, as the Go verifier does after the handshake.
"""

from __future__ import annotations

import datetime
import hashlib
import json
import logging
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.serialization import Encoding
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from setpoint.client import Client, Kind, NotFoundError

__all__ = ["AUTHENTICATION_CONFIGMAP", "AuthenticationFailed", "RequestAuthenticator",
           "UserInfo"]

log = logging.getLogger("setpoint.workloads.metricsserver")

CONFIGMAP = Kind("v1", "ConfigMap")
AUTHENTICATION_CONFIGMAP = ("kube-system", "extension-apiserver-authentication")
ANONYMOUS = "system:anonymous"
UNAUTHENTICATED = "system:unauthenticated"
TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
TOKEN_CACHE_TTL = 10.0
AUTHENTICATED = "system:authenticated"


@dataclass(frozen=True)
class UserInfo:
    name: str
    groups: tuple[str, ...] = ()
    extra: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    uid: str = ""


class AuthenticationFailed(Exception):
    """A credential was presented and rejected: 401 Unauthorized."""


def _certificates(pem: str | None) -> list[x509.Certificate]:
    if not pem:
        return []
    try:
        return x509.load_pem_x509_certificates(pem.encode())
    except ValueError:
        log.warning("metrics_server_bad_ca_bundle")
        return []


def _string_list(raw: str | None, default: tuple[str, ...]) -> tuple[str, ...]:
    """A ConfigMap value holding a JSON array of strings (as the API server writes them)."""
    if raw is None:
        return default
    try:
        value = json.loads(raw)
    except ValueError:
        return default
    return tuple(str(v) for v in value) if isinstance(value, list) else default


def _lower(values: tuple[str, ...]) -> tuple[str, ...]:
    """Header names as compared: HTTP header names are case-insensitive."""
    return tuple(v.lower() for v in values)


def _verified_by(cert: x509.Certificate, cas: list[x509.Certificate]) -> bool:
    """Whether ``cert`` is a client certificate, valid now, signed by one of ``cas``
    (x509.Verify with ExtKeyUsageClientAuth, leaf issued directly by a root)."""
    now = datetime.datetime.now(datetime.UTC)
    if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
        return False
    try:
        usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        if ExtendedKeyUsageOID.CLIENT_AUTH not in usage and \
                ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE not in usage:
            return False
    except x509.ExtensionNotFound:
        pass
    for ca in cas:
        try:
            cert.verify_directly_issued_by(ca)
        except (InvalidSignature, ValueError, TypeError):
            continue
        return True
    return False


def _names(cert: x509.Certificate, oid: x509.ObjectIdentifier) -> list[str]:
    return [str(a.value) for a in cert.subject.get_attributes_for_oid(oid)]


class RequestAuthenticator:
    """Authenticates requests from the CAs and header names of the authentication
    ConfigMap; :meth:`read` reads it again and :meth:`configure` takes a new version (the
    API server may publish it after the workloads start, or rotate it)."""

    def __init__(self, context: ssl.SSLContext, client: Client | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.context = context
        self.client = client
        self.clock = clock
        self._tokens: dict[str, tuple[float, UserInfo | None]] = {}
        self.requestheader_cas: list[x509.Certificate] = []
        self.client_cas: list[x509.Certificate] = []
        self.allowed_names: tuple[str, ...] = ()
        self.username_headers: tuple[str, ...] = ("x-remote-user",)
        self.group_headers: tuple[str, ...] = ("x-remote-group",)
        self.extra_prefixes: tuple[str, ...] = ("x-remote-extra-",)
        self._trusted: set[bytes] = set()
        self._seen: Any = None

    def __repr__(self) -> str:
        return (f"RequestAuthenticator(requestheader_cas={len(self.requestheader_cas)}, "
                f"allowed_names={list(self.allowed_names)})")

    async def refresh(self, client: Client) -> bool:
        """Read the ConfigMap again; returns whether it exists."""
        return await self.read(client) is not None

    async def read(self, client: Client) -> dict[str, Any] | None:
        """Read the ConfigMap and take its configuration; the ConfigMap, None when it
        does not exist."""
        namespace, name = AUTHENTICATION_CONFIGMAP
        try:
            found = await client.get(CONFIGMAP, name, namespace=namespace)
        except NotFoundError:
            return None
        self.configure(dict(found.get("data") or {}))
        return dict(found)

    def configure(self, data: Mapping[str, str]) -> None:
        if data == self._seen:
            return
        self._seen = dict(data)
        self.requestheader_cas = _certificates(data.get("requestheader-client-ca-file"))
        self.client_cas = _certificates(data.get("client-ca-file"))
        self.allowed_names = _string_list(data.get("requestheader-allowed-names"), ())
        self.username_headers = _lower(_string_list(
            data.get("requestheader-username-headers"), ("x-remote-user",)))
        self.group_headers = _lower(_string_list(
            data.get("requestheader-group-headers"), ("x-remote-group",)))
        self.extra_prefixes = _lower(_string_list(
            data.get("requestheader-extra-headers-prefix"), ("x-remote-extra-",)))
        # the TLS layer must accept certificates of every CA named here; ssl's store only
        # grows, and a CA dropped from the ConfigMap is refused below, by _verified_by
        for ca in self.requestheader_cas + self.client_cas:
            der = ca.public_bytes(Encoding.DER)
            if der not in self._trusted:
                self.context.load_verify_locations(cadata=der)
                self._trusted.add(der)
        log.info("metrics_server_authentication_configured requestheader_cas=%d "
                 "client_cas=%d", len(self.requestheader_cas), len(self.client_cas))

    async def authenticate(self, peer_der: bytes | None,
                           headers: Mapping[str, str], header_values: Any) -> UserInfo:
        """The user of a request: ``peer_der`` is its client certificate (DER) if any,
        ``header_values(name)`` all values of a header. Raises
        :class:`AuthenticationFailed` for a credential rejected."""
        cert = x509.load_der_x509_certificate(peer_der) if peer_der else None
        failures: list[str] = []
        if cert is not None and self.requestheader_cas:
            user = self._request_header(cert, headers, header_values, failures)
            if user is not None:
                return _with_authenticated(user)
        if cert is not None and self.client_cas:
            if _verified_by(cert, self.client_cas):
                cn = _names(cert, NameOID.COMMON_NAME)
                return _with_authenticated(UserInfo(
                    cn[0] if cn else "", tuple(_names(cert, NameOID.ORGANIZATION_NAME))))
            failures.append("x509: certificate signed by unknown authority")
        scheme, _, token = (headers.get("Authorization") or "").partition(" ")
        if scheme.lower() == "bearer" and token.strip() and self.client is not None:
            user = await self._token_review(token.strip())
            if user is not None:
                return _with_authenticated(user)
            failures.append("invalid bearer token")
        if failures:
            raise AuthenticationFailed("; ".join(failures))
        return UserInfo(ANONYMOUS, (UNAUTHENTICATED,))

    async def _token_review(self, token: str) -> UserInfo | None:
        """The user the API server's TokenReview says ``token`` is, cached 10 s
        (``DelegatingAuthenticationOptions.CacheTTL``)."""
        assert self.client is not None
        key = hashlib.sha256(token.encode()).hexdigest()  # never keep the token itself
        now = self.clock()
        cached = self._tokens.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        review = await self.client.request("POST", TOKEN_REVIEWS, body={
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": {"token": token}})
        status = (review or {}).get("status") or {}
        found = status.get("user") or {}
        user = (UserInfo(str(found.get("username") or ""),
                         tuple(found.get("groups") or ()),
                         {k: tuple(v) for k, v in (found.get("extra") or {}).items()},
                         str(found.get("uid") or ""))
                if status.get("authenticated") else None)
        if len(self._tokens) > 4096:
            self._tokens = {k: v for k, v in self._tokens.items() if v[0] > now}
        self._tokens[key] = (now + TOKEN_CACHE_TTL, user)
        return user

    def _request_header(self, cert: x509.Certificate, headers: Mapping[str, str],
                        header_values: Any, failures: list[str]) -> UserInfo | None:
        if not _verified_by(cert, self.requestheader_cas):
            failures.append("x509: certificate signed by unknown authority")
            return None
        cn = (_names(cert, NameOID.COMMON_NAME) or [""])[0]
        if self.allowed_names and cn not in self.allowed_names:
            failures.append(f"x509: subject with cn={cn} is not in the allowed list")
            return None
        name = next((v for h in self.username_headers for v in header_values(h) if v), "")
        if not name:
            return None  # not a proxied request: the other authenticators may know it
        groups = tuple(v for h in self.group_headers for v in header_values(h))
        extra: dict[str, list[str]] = {}
        for key in headers:
            low = key.lower()
            for prefix in self.extra_prefixes:
                if low.startswith(prefix):
                    extra.setdefault(unquote(low[len(prefix):]), []).extend(
                        header_values(key))
        return UserInfo(name, groups, {k: tuple(v) for k, v in extra.items()})


def _with_authenticated(user: UserInfo) -> UserInfo:
    """pkg/authentication/group/authenticated_group_adder.go."""
    if AUTHENTICATED in user.groups or user.name == ANONYMOUS:
        return user
    return UserInfo(user.name, (*user.groups, AUTHENTICATED), user.extra, user.uid)

