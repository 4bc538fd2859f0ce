"""Service account issuer discovery: ``/.well-known/openid-configuration`` and
``/openid/v1/jwks`` (kubernetes pkg/routes/openidmetadata.go over
pkg/serviceaccount/openidmetadata.go).

The two documents are rendered once, from the issuer URL, the server's external address
(``jwks_uri`` is ``https://<address>/openid/v1/jwks`` when ``--service-account-jwks-uri``
is not given) and the token signing key. Both are go-restful GET routes, answered with
``Cache-Control: public, max-age=3600`` in place of the chain's ``no-cache, private``;
who may read them is RBAC's ``system:service-account-issuer-discovery`` role.
"""

from __future__ import annotations

from functools import cached_property

import orjson

from setpoint.cluster.authentication.tokens import ISSUER, TokenIssuer
from setpoint.cluster.endpoints.http import Response

OPENID_CONFIG_PATH = "/.well-known/openid-configuration"
JWKS_PATH = "/openid/v1/jwks"
_CACHE_CONTROL = "public, max-age=3600"


class OpenIDMetadata:
    """The issuer's discovery document and key set, as served."""

    def __init__(self, tokens: TokenIssuer, external_address: str) -> None:
        self._tokens = tokens
        self._external_address = external_address

    @cached_property
    def _keyset(self) -> bytes:
        return orjson.dumps({"keys": [self._tokens.public_jwk()]})

    @cached_property
    def _config(self) -> bytes:
        algs = sorted({key["alg"] for key in orjson.loads(self._keyset)["keys"]})
        return orjson.dumps({
            "issuer": ISSUER,
            "jwks_uri": f"https://{self._external_address}{JWKS_PATH}",
            "response_types_supported": ["id_token"],
            "subject_types_supported": ["public"],
            "id_token_signing_alg_values_supported": algs,
        })

    def answer(self, path: str) -> Response | None:
        """The answer to a GET of ``path`` (go-restful also routes the path with a trailing
        slash), or None when ``path`` is neither document."""
        trimmed = path[:-1] if path.endswith("/") else path
        if trimmed == OPENID_CONFIG_PATH:
            return Response(self._config, 200, "application/json",
                            {"Cache-Control": _CACHE_CONTROL})
        if trimmed == JWKS_PATH:
            return Response(self._keyset, 200, "application/jwk-set+json",
                            {"Cache-Control": _CACHE_CONTROL})
        return None
