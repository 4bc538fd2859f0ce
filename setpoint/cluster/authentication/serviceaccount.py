"""Service account tokens as the apiserver verifies and issues them: the JWT authenticator
with its validators (kubernetes pkg/serviceaccount jwt.go, claims.go, legacy.go) and the
TokenRequest of ``serviceaccounts/<name>/token`` (pkg/registry/core/serviceaccount/storage
token.go)."""

from __future__ import annotations

import base64
from typing import Any

from setpoint.cluster.authentication.boundobjects import bound_objects_exist
from setpoint.cluster.authentication.tokens import (
    Identity,
    TokenIssuer,
    identity_of,
    legacy_reference,
    token_request,
)
from setpoint.cluster.storage.interfaces import Reader
from setpoint.machinery.objects import Obj


class ServiceAccountTokens:
    """The tokens ``issuer`` signs, checked against what ``store`` holds now."""

    def __init__(self, issuer: TokenIssuer, store: Reader) -> None:
        self._issuer = issuer
        self._store = store

    def __repr__(self) -> str:
        return "ServiceAccountTokens()"

    def identity(self, token: str) -> Identity | None:
        """The identity of a service account token we issued, while its account exists."""
        claims = self._issuer.verify(token)
        if claims is None:
            return None
        identity = identity_of(claims)
        # the username is system:serviceaccount:<namespace>:<name>, whichever kind of token
        _, _, namespace, name = [*identity.username.split(":", 3), "", "", "", ""][:4]
        sa = self._store.get("/serviceaccounts", namespace, name)
        if sa is None or sa["metadata"].get("uid") != identity.uid:
            return None
        if not bound_objects_exist(claims, self._get):
            return None
        legacy = legacy_reference(claims)
        if legacy is not None:
            # pkg/serviceaccount/legacy.go validator: the Secret exists, is not being
            # deleted, and still holds this very token
            secret = self._store.get("/secrets", *legacy)
            if secret is None or secret["metadata"].get("deletionTimestamp"):
                return None
            held = (secret.get("data") or {}).get("token", "")
            if held != base64.b64encode(token.encode()).decode():
                return None
        return identity

    def request(self, namespace: str, name: str, body: Any) -> Obj:
        """The TokenRequest posted to the service account ``namespace/name``, answered."""
        return token_request(self._issuer, self._store.get("/serviceaccounts", namespace, name),
                             namespace, name, body, self._get)

    def _get(self, namespace: str, resource: str, name: str) -> Obj | None:
        return self._store.get(resource, namespace, name)
