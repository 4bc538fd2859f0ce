"""Fault injection: rules a test sets on the proxy between an operator and its API server.

    faults.fail(verb="create", resource="configmaps", status=500, times=2)
    faults.throttle(resource="widgets/status", retry_after=1, times=3)
    faults.latency(0.2, verb="GET")
    faults.drop_watches(resource="configmaps")

A rule matches requests by verb (a Kubernetes verb in lower case, such as ``create``,
``list`` or ``watch``, or an HTTP method in upper case, such as ``POST``, or ``GET`` for
get, list and watch alike), resource (``plural`` or
``plural/subresource``; a bare plural never matches its subresources), namespace and name;
an omitted filter matches anything. ``times`` bounds how many requests a rule affects
(None: every matching request until the rule is removed). Errors are answered the way the
apiserver answers them: a ``metav1.Status`` body with the code's reason, and for 429 and
504 a ``Retry-After`` header.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

import orjson
from aiohttp import web

from setpoint.machinery.errors import StatusError
from setpoint.testing.requestinfo import RequestInfo

_REASONS = {
    400: "BadRequest", 401: "Unauthorized", 403: "Forbidden", 404: "NotFound",
    405: "MethodNotAllowed", 409: "Conflict", 410: "Expired", 413: "RequestEntityTooLarge",
    415: "UnsupportedMediaType", 422: "Invalid", 429: "TooManyRequests",
    500: "InternalError", 503: "ServiceUnavailable", 504: "Timeout",
}


@dataclass
class Rule:
    """One fault: what it matches, what it does, how often it has struck."""

    action: str
    """``fail``, ``throttle`` or ``latency``."""
    verb: str | None = None
    resource: str | None = None
    namespace: str | None = None
    name: str | None = None
    times: int | None = None
    status: int = 500
    message: str = ""
    retry_after: int | None = None
    delay: float = 0.0
    hits: int = 0
    """How many requests this rule has affected."""
    _owner: Faults | None = field(default=None, repr=False, compare=False)

    def matches(self, info: RequestInfo) -> bool:
        if self.verb is not None and not _verb_matches(self.verb, info):
            return False
        if self.resource is not None and self.resource != info.full_resource:
            return False
        if self.namespace is not None and self.namespace != info.namespace:
            return False
        return self.name is None or self.name == info.name

    @property
    def exhausted(self) -> bool:
        return self.times is not None and self.hits >= self.times

    def remove(self) -> None:
        """Stop this rule from affecting further requests."""
        if self._owner is not None:
            self._owner.remove(self)


def _verb_matches(verb: str, info: RequestInfo) -> bool:
    # upper case is an HTTP method (GET: get, list and watch), lower case a Kubernetes verb
    return info.method == verb if verb.isupper() else info.verb == verb


WatchDropper = Callable[[Callable[[RequestInfo], bool]], int]


class Faults:
    """The rules in force on one proxy (see the module docstring)."""

    def __init__(self) -> None:
        self.rules: list[Rule] = []
        self._dropper: WatchDropper | None = None

    def __repr__(self) -> str:
        return f"Faults(rules={self.rules!r})"

    # -- setting faults --------------------------------------------------------------------

    def fail(self, *, verb: str | None = None, resource: str | None = None,
             namespace: str | None = None, name: str | None = None, status: int = 500,
             message: str | None = None, times: int | None = 1) -> Rule:
        """Answer matching requests with ``status`` and a Status body, without forwarding
        them (so a failed write changes nothing on the server)."""
        if not 400 <= status <= 599:
            raise ValueError(f"status {status} is not an error code")
        return self._add(Rule("fail", verb, resource, namespace, name, times, status,
                              message or f"injected fault ({status})"))

    def throttle(self, *, verb: str | None = None, resource: str | None = None,
                 namespace: str | None = None, name: str | None = None,
                 retry_after: int = 1, times: int | None = 1) -> Rule:
        """Answer matching requests with 429 TooManyRequests and ``Retry-After`` seconds,
        as the apiserver's max-in-flight and priority-and-fairness filters do."""
        return self._add(Rule("throttle", verb, resource, namespace, name, times, 429,
                              "Too many requests, please try again later.", retry_after))

    def latency(self, seconds: float, *, verb: str | None = None,
                resource: str | None = None, namespace: str | None = None,
                name: str | None = None, times: int | None = None) -> Rule:
        """Delay matching requests by ``seconds`` before forwarding them."""
        if seconds < 0:
            raise ValueError("latency must not be negative")
        return self._add(Rule("latency", verb, resource, namespace, name, times,
                              delay=seconds))

    def drop_watches(self, *, resource: str | None = None,
                     namespace: str | None = None) -> int:
        """Cut the connections of the watches open now (matching ``resource`` and
        ``namespace``), as a load balancer or a restarting apiserver would; returns how
        many were cut. Clients are expected to watch again."""
        if self._dropper is None:
            return 0
        probe = Rule("drop", None, resource, namespace)
        return self._dropper(probe.matches)

    def remove(self, rule: Rule) -> None:
        if rule in self.rules:
            self.rules.remove(rule)

    def clear(self) -> None:
        """Remove every rule."""
        self.rules.clear()

    def _add(self, rule: Rule) -> Rule:
        rule._owner = self
        self.rules.append(rule)
        return rule

    # -- applying them (the proxy's side) --------------------------------------------------

    def attach(self, dropper: WatchDropper) -> None:
        """Called by the proxy: how to cut its open watches."""
        self._dropper = dropper

    async def intercept(self, info: RequestInfo) -> web.Response | None:
        """Apply the rules to one request: wait out latencies, then return the injected
        answer of the first matching fail/throttle rule, or None to forward it."""
        delay = 0.0
        answer: web.Response | None = None
        for rule in list(self.rules):
            if rule.exhausted or not rule.matches(info):
                continue
            if rule.action == "latency":
                rule.hits += 1
                delay = max(delay, rule.delay)
            elif answer is None:
                rule.hits += 1
                answer = _error_response(rule, info)
        if delay:
            await asyncio.sleep(delay)
        return answer


def _error_response(rule: Rule, info: RequestInfo) -> web.Response:
    retry_after = rule.retry_after
    if retry_after is None and rule.status == 504:
        retry_after = 1
    error = StatusError(rule.status, _REASONS.get(rule.status, ""), rule.message,
                        name=info.name, retry_after=retry_after)
    headers = {"Content-Type": "application/json"}
    if retry_after is not None:
        headers["Retry-After"] = str(retry_after)
    return web.Response(status=rule.status, body=orjson.dumps(error.to_status()),
                        headers=headers)
