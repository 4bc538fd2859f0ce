"""Delegated authorization: may this user do this, asked of the API server.

As k8s.io/apiserver's ``DelegatingAuthorizationOptions`` (pkg/server/options/
authorization.go), which metrics-server uses: health paths and ``system:masters`` are
always allowed; everything else is a SubjectAccessReview posted to the API server
(plugin/pkg/authorizer/webhook/webhook.go), whose answer is cached for ten seconds, allowed
or denied, so that a burst of requests costs one review.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from setpoint.client import Client
from setpoint.workloads.metricsserver.authentication import UserInfo

__all__ = ["ALWAYS_ALLOW_GROUPS", "ALWAYS_ALLOW_PATHS", "Attributes", "Decision",
           "DelegatingAuthorizer", "forbidden_message"]

ALWAYS_ALLOW_PATHS = ("/healthz", "/readyz", "/livez")
ALWAYS_ALLOW_GROUPS = ("system:masters",)
ALLOW_TTL = DENY_TTL = 10.0
SUBJECT_ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


@dataclass(frozen=True)
class Attributes:
    """What a request does (k8s.io/apiserver pkg/authorization/authorizer.Attributes)."""

    verb: str
    path: str
    resource_request: bool = False
    group: str = ""
    version: str = ""
    resource: str = ""
    namespace: str = ""
    name: str = ""


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str = ""


def _review_spec(user: UserInfo, attrs: Attributes) -> dict[str, Any]:
    spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups)}
    if user.uid:
        spec["uid"] = user.uid
    if user.extra:
        spec["extra"] = {k: list(v) for k, v in user.extra.items()}
    if attrs.resource_request:
        spec["resourceAttributes"] = {k: v for k, v in (
            ("namespace", attrs.namespace), ("verb", attrs.verb), ("group", attrs.group),
            ("version", attrs.version), ("resource", attrs.resource), ("name", attrs.name))
            if v}
    else:
        spec["nonResourceAttributes"] = {"path": attrs.path, "verb": attrs.verb}
    return spec


class DelegatingAuthorizer:
    """Allows a request when the API server's SubjectAccessReview does."""

    def __init__(self, client: Client, clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.clock = clock
        self._cache: dict[str, tuple[float, Decision]] = {}
        self.reviews = 0
        """SubjectAccessReviews posted (tests count them)."""

    def __repr__(self) -> str:
        return f"DelegatingAuthorizer(cached={len(self._cache)}, reviews={self.reviews})"

    async def authorize(self, user: UserInfo, attrs: Attributes) -> Decision:
        if not attrs.resource_request and attrs.path in ALWAYS_ALLOW_PATHS:
            return Decision(True)
        if any(g in ALWAYS_ALLOW_GROUPS for g in user.groups):
            return Decision(True)
        spec = _review_spec(user, attrs)
        key = json.dumps(spec, sort_keys=True)
        now = self.clock()
        cached = self._cache.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        self.reviews += 1
        review = await self.client.request("POST", SUBJECT_ACCESS_REVIEWS, body={
            "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": spec})
        status = (review or {}).get("status") or {}
        decision = Decision(bool(status.get("allowed")) and not status.get("denied"),
                            str(status.get("reason") or ""))
        if len(self._cache) > 4096:  # k8s caps its LRU too: drop what expired
            self._cache = {k: v for k, v in self._cache.items() if v[0] > now}
        self._cache[key] = (now + (ALLOW_TTL if decision.allowed else DENY_TTL), decision)
        return decision


def forbidden_message(user: UserInfo, attrs: Attributes, reason: str) -> str:
    """k8s.io/apiserver pkg/endpoints/handlers/responsewriters/errors.go
    ``ForbiddenStatusError``, as apierrors.NewForbidden words it."""
    if not attrs.resource_request:
        text = f"User {json.dumps(user.name)} cannot {attrs.verb} path {json.dumps(attrs.path)}"
    elif attrs.namespace:
        text = (f"User {json.dumps(user.name)} cannot {attrs.verb} resource "
                f"{json.dumps(attrs.resource)} in API group {json.dumps(attrs.group)} in the "
                f"namespace {json.dumps(attrs.namespace)}")
    else:
        text = (f"User {json.dumps(user.name)} cannot {attrs.verb} resource "
                f"{json.dumps(attrs.resource)} in API group {json.dumps(attrs.group)} at the "
                "cluster scope")
    if reason:
        text = f"{text}: {reason}"
    if not attrs.resource_request:
        return f"forbidden: {text}"
    qualified = f"{attrs.resource}.{attrs.group}" if attrs.group else attrs.resource
    if attrs.name:
        return f"{qualified} {json.dumps(attrs.name)} is forbidden: {text}"
    return f"{qualified} is forbidden: {text}"
