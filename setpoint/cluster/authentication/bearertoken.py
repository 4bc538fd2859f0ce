"""The bearer token of a request's ``Authorization`` header, read as kube-apiserver reads it
(k8s.io/apiserver pkg/authentication/request/bearertoken/bearertoken.go
``AuthenticateRequest``): the header trimmed, split on single spaces into at most three
parts, the scheme compared without case, the token the second part. ``bearer x`` counts;
``Bearer  x`` (two spaces) names an empty token, so none, and is warned about; whatever
follows the token after a space is ignored."""

from __future__ import annotations

from typing import NamedTuple

EXTRA_SPACE_WARNING = ("the provided Authorization header contains extra space before the "
                       "bearer token, and is ignored")


class BearerToken(NamedTuple):
    token: str  # "" when the header carries none
    warning: str  # what the request is warned of, or ""


def bearer_token(header: str) -> BearerToken:
    parts = header.strip().split(" ", 2)
    if len(parts) < 2 or parts[0].lower() != "bearer":
        return BearerToken("", "")
    if not parts[1]:
        return BearerToken("", EXTRA_SPACE_WARNING if len(parts) == 3 else "")
    return BearerToken(parts[1], "")
