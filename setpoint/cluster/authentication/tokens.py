"""Service account tokens: what ``serviceaccounts/<name>/token`` issues and the server accepts.

Tokens are ES256-signed JWTs with the claims the kube-apiserver puts in bound service account
tokens (issuer, subject ``system:serviceaccount:<ns>:<name>``, audiences, expiry, and the
``kubernetes.io`` claim naming the namespace and service account). The signing key is kept
with the cluster's CA, so tokens stay valid across restarts of a ``--data`` cluster.
"""

from __future__ import annotations

import base64
import hashlib
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import (
    decode_dss_signature,
    encode_dss_signature,
)

from setpoint.cluster.authentication.boundobjects import Lookup, bound_claims
from setpoint.cluster.storage.privatefiles import read_private, write_private
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import x509encode

ISSUER = "https://kubernetes.default.svc.cluster.local"
LEGACY_ISSUER = "kubernetes/serviceaccount"
LEGACY_PREFIX = "kubernetes.io/serviceaccount/"
DEFAULT_AUDIENCES = [ISSUER]
DEFAULT_EXPIRATION = 3600
MIN_EXPIRATION = 600
# pkg/serviceaccount/claims.go: the kubelet's request, and how long such a token lives
WARN_ONLY_BOUND_TOKEN_EXPIRATION = 3607
EXPIRATION_EXTENSION = 365 * 24 * 60 * 60
EXTRA_PREFIX = "authentication.kubernetes.io/"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass(frozen=True)
class Identity:
    """Who a token speaks for."""

    username: str
    uid: str
    groups: tuple[str, ...]
    # user.Info's extra: what pkg/serviceaccount/util.go UserInfo adds for a token's jti and
    # bound pod and node
    extra: tuple[tuple[str, str], ...] = ()
    # the token's ``aud``: the API accepts it only for an audience of its own
    audiences: tuple[str, ...] = ()

    def user_info(self) -> dict[str, Any]:
        """The ``UserInfo`` a review shows (``extra`` only when there is some)."""
        info: dict[str, Any] = {"username": self.username, "uid": self.uid,
                                "groups": list(self.groups)}
        if self.extra:
            info["extra"] = {key: [value] for key, value in self.extra}
        return info


class TokenIssuer:
    """Signs and verifies service account tokens with one EC P-256 key."""

    def __init__(self, key: ec.EllipticCurvePrivateKey) -> None:
        self._key = key
        self._public = key.public_key()
        # pkg/serviceaccount/jwt.go keyIDFromPublicKey: the unpadded base64url SHA-256 of
        # the public key's PKIX DER; tokens name it in their header, the JWKS lists it
        # (encoded by x509encode: cryptography's serialization formats stay off the start)
        der = x509encode.public_key_der(self._public)
        self.key_id = _b64(hashlib.sha256(der).digest())

    def public_jwk(self) -> dict[str, str]:
        """The verification key as go-jose marshals a public ``JSONWebKey`` (its field
        order: use, kty, kid, crv, alg, x, y; coordinates padded to the curve's size)."""
        numbers = self._public.public_numbers()
        return {"use": "sig", "kty": "EC", "kid": self.key_id, "crv": "P-256", "alg": "ES256",
                "x": _b64(numbers.x.to_bytes(32, "big")),
                "y": _b64(numbers.y.to_bytes(32, "big"))}

    @classmethod
    def load_or_create(cls, directory: Path) -> TokenIssuer:
        path = directory / "sa.key"
        if path.exists():
            from cryptography.hazmat.primitives import serialization

            key = serialization.load_pem_private_key(read_private(path), password=None)
            assert isinstance(key, ec.EllipticCurvePrivateKey)
            return cls(key)
        key = x509encode.new_key()
        write_private(path, x509encode.private_key_pem(key))
        return cls(key)

    def issue(self, namespace: str, name: str, uid: str, *, audiences: list[str],
              expiration_seconds: int, now: float | None = None,
              bound: dict[str, Any] | None = None,
              warn_after: int | None = None) -> tuple[str, int]:
        """A signed token and its expiry (Unix seconds). ``bound`` names the object the
        token is bound to (``pod``, ``secret``, ``node``: its name and uid); ``warn_after``
        (seconds) is when an extended token would have expired."""
        issued = int(now if now is not None else time.time())
        expires = issued + expiration_seconds
        if warn_after is not None:
            bound = {**(bound or {}), "warnafter": issued + warn_after}
        claims = {
            "aud": audiences, "exp": expires, "iat": issued, "nbf": issued, "iss": ISSUER,
            # pkg/serviceaccount/claims.go: a unique id per token (ServiceAccountTokenJTI,
            # on by default since 1.30)
            "jti": str(uuid.uuid4()),
            "sub": f"system:serviceaccount:{namespace}:{name}",
            "kubernetes.io": {"namespace": namespace,
                              "serviceaccount": {"name": name, "uid": uid}, **(bound or {})},
        }
        return self.sign(claims), expires

    def issue_legacy(self, namespace: str, name: str, uid: str, secret_name: str) -> str:
        """A legacy, secret-based token (pkg/serviceaccount/legacy.go LegacyClaims): no
        audience or expiry; it counts while its Secret holds it."""
        return self.sign({
            "iss": LEGACY_ISSUER,
            f"{LEGACY_PREFIX}namespace": namespace,
            f"{LEGACY_PREFIX}secret.name": secret_name,
            f"{LEGACY_PREFIX}service-account.name": name,
            f"{LEGACY_PREFIX}service-account.uid": uid,
            "sub": service_account_username(namespace, name),
        })

    def sign(self, claims: dict[str, Any]) -> str:
        # go-jose's signer writes the algorithm and the signing key's id, nothing else
        header = _b64(orjson.dumps({"alg": "ES256", "kid": self.key_id}))
        # go-jose merges the claim sets into one map, so the payload's keys come sorted
        payload = _b64(orjson.dumps(claims, option=orjson.OPT_SORT_KEYS))
        r, s = decode_dss_signature(self._key.sign(f"{header}.{payload}".encode(),
                                                   ec.ECDSA(hashes.SHA256())))
        return f"{header}.{payload}.{_b64(r.to_bytes(32, 'big') + s.to_bytes(32, 'big'))}"

    def verify(self, token: str, now: float | None = None) -> dict[str, Any] | None:
        """The claims of a valid, unexpired token we issued; None otherwise."""
        parts = token.split(".")
        if len(parts) != 3:
            return None
        try:
            raw_sig = _unb64(parts[2])
            if len(raw_sig) != 64:
                return None
            signature = encode_dss_signature(int.from_bytes(raw_sig[:32], "big"),
                                             int.from_bytes(raw_sig[32:], "big"))
            self._public.verify(signature, f"{parts[0]}.{parts[1]}".encode(),
                                ec.ECDSA(hashes.SHA256()))
            claims = orjson.loads(_unb64(parts[1]))
        except (InvalidSignature, ValueError, orjson.JSONDecodeError):
            return None
        moment = now if now is not None else time.time()
        if not isinstance(claims, dict):
            return None
        if claims.get("iss") == LEGACY_ISSUER and "exp" not in claims:
            return claims  # a legacy token: valid while its Secret holds it (the caller's)
        if claims.get("exp", 0) <= moment:
            return None
        return claims


def service_account_username(namespace: str, name: str) -> str:
    """The user name a service account authenticates as."""
    return f"system:serviceaccount:{namespace}:{name}"


def service_account_groups(namespace: str) -> tuple[str, str]:
    """The groups every service account of ``namespace`` is in (besides
    ``system:authenticated``)."""
    return ("system:serviceaccounts", f"system:serviceaccounts:{namespace}")


def legacy_reference(claims: dict[str, Any]) -> tuple[str, str] | None:
    """(namespace, secret name) of a legacy token's Secret; None for a bound token."""
    if claims.get("iss") != LEGACY_ISSUER:
        return None
    return (str(claims.get(f"{LEGACY_PREFIX}namespace", "")),
            str(claims.get(f"{LEGACY_PREFIX}secret.name", "")))


def identity_of(claims: dict[str, Any]) -> Identity:
    if claims.get("iss") == LEGACY_ISSUER:
        namespace = str(claims.get(f"{LEGACY_PREFIX}namespace", ""))
        return Identity(
            username=service_account_username(
                namespace, str(claims.get(f"{LEGACY_PREFIX}service-account.name", ""))),
            uid=str(claims.get(f"{LEGACY_PREFIX}service-account.uid", "")),
            groups=(*service_account_groups(namespace), "system:authenticated"),
            # legacy tokens name no audience: they are accepted for the API's own
            audiences=tuple(DEFAULT_AUDIENCES))
    info = claims.get("kubernetes.io") or {}
    sa = info.get("serviceaccount") or {}
    namespace = info.get("namespace", "")
    extra: list[tuple[str, str]] = []
    pod, node = info.get("pod") or {}, info.get("node") or {}
    if pod.get("name") and pod.get("uid"):
        extra += [(f"{EXTRA_PREFIX}pod-name", pod["name"]), (f"{EXTRA_PREFIX}pod-uid", pod["uid"])]
    if claims.get("jti"):
        extra.append((f"{EXTRA_PREFIX}credential-id", f'JTI={claims["jti"]}'))
    if node.get("name"):
        extra.append((f"{EXTRA_PREFIX}node-name", node["name"]))
        if node.get("uid"):
            extra.append((f"{EXTRA_PREFIX}node-uid", node["uid"]))
    return Identity(
        username=service_account_username(namespace, sa.get("name", "")),
        uid=sa.get("uid", ""),
        groups=(*service_account_groups(namespace), "system:authenticated"),
        extra=tuple(extra),
        audiences=tuple(a for a in claims.get("aud") or () if isinstance(a, str)),
    )


def audience_error(identity: Identity, requested: list[str]) -> str | None:
    """Why the JWT authenticator refuses a token for ``requested`` audiences (None when
    they share one), as pkg/serviceaccount/jwt.go words it."""
    if set(identity.audiences) & set(requested):
        return None
    quoted = " ".join(fe.go_quote(a) for a in identity.audiences)
    wanted = " ".join(fe.go_quote(a) for a in requested)
    return f"token audiences [{quoted}] is invalid for the target audiences [{wanted}]"


def token_request(issuer: TokenIssuer, service_account: dict[str, Any] | None, namespace: str,
                  name: str, body: Any, lookup: Lookup | None = None) -> dict[str, Any]:
    """Answer ``POST serviceaccounts/<name>/token`` (a TokenRequest) as the apiserver does."""
    from datetime import UTC, datetime

    from setpoint.machinery import errors

    if service_account is None:
        raise errors.not_found("serviceaccounts", name)
    if not isinstance(body, dict):
        raise errors.bad_request("the body of a token request must be a TokenRequest object")
    meta = body.get("metadata") or {}
    if meta.get("namespace") and meta["namespace"] != namespace:
        # the create handler's EnsureObjectNamespaceMatchesRequestNamespace, before token.go
        raise errors.bad_request("the namespace of the provided object does not match the "
                                 "namespace sent on the request")
    if meta.get("name") and meta["name"] != name:
        # token.go: a name in the body must be the service account's
        raise errors.invalid("TokenRequest", name, [fe.invalid(
            "metadata.name", meta["name"], "must match the service account name if specified")],
            group="authentication.k8s.io")
    spec = body.get("spec") or {}
    audiences = spec.get("audiences") or DEFAULT_AUDIENCES
    seconds = spec.get("expirationSeconds", DEFAULT_EXPIRATION)
    if not isinstance(seconds, int) or isinstance(seconds, bool):
        raise errors.bad_request("spec.expirationSeconds must be an integer")
    # pkg/apis/authentication/validation/validation.go, ValidateTokenRequest
    causes = [fe.invalid("spec.expirationSeconds", seconds, message)
              for message, failed in (
                  ("may not specify a duration less than 10 minutes", seconds < MIN_EXPIRATION),
                  ("may not specify a duration larger than 2^32 seconds", seconds > 2**32))
              if failed]
    if causes:
        raise errors.invalid("TokenRequest", "", causes, group="authentication.k8s.io")
    bound = bound_claims(spec.get("boundObjectRef"), namespace, name,
                         lookup or (lambda _ns, _resource, _name: None))
    now = time.time()
    # token.go: a pod-bound token asked for with the kubelet's 3607 s for the API's own
    # audiences lives a year, and says when it should have been refreshed (warnafter)
    extended = ("pod" in bound and seconds == WARN_ONLY_BOUND_TOKEN_EXPIRATION
                and set(audiences) <= set(DEFAULT_AUDIENCES))
    token, _ = issuer.issue(namespace, name, service_account["metadata"].get("uid", ""),
                            audiences=list(audiences),
                            expiration_seconds=EXPIRATION_EXTENSION if extended else seconds,
                            bound=bound, now=now, warn_after=seconds if extended else None)
    stamp = datetime.fromtimestamp(int(now) + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    # the request is stamped with the time the token was made
    created = datetime.fromtimestamp(int(now), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    meta = {**meta, "name": name, "namespace": namespace, "creationTimestamp": created}
    return {"kind": "TokenRequest", "apiVersion": "authentication.k8s.io/v1", "metadata": meta,
            "spec": {**spec, "audiences": list(audiences), "expirationSeconds": seconds,
                     "boundObjectRef": spec.get("boundObjectRef")},
            "status": {"token": token, "expirationTimestamp": stamp}}
