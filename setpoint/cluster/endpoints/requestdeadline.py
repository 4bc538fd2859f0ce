"""The request timeout: a request that is not long-running must be answered by its deadline.

As k8s.io/apiserver: ``WithRequestDeadline`` (pkg/endpoints/filters/request_deadline.go) sets
the deadline from the ``timeout`` query parameter (Go's ``time.ParseDuration``; one that does
not parse is a 400; zero, negative or longer than the server's ``--request-timeout`` is the
server's), counted from when the request came; ``WithTimeoutForNonLongRunningRequests``
(pkg/server/filters/timeout.go) answers a handler that has not answered by then with a 504
``Timeout`` Status, written without its kind (``json.NewEncoder`` of the bare ``ErrStatus``)
and without a Content-Type, so Go's sniffing names it ``text/plain``. Both filters sit
outside authentication, and skip what ``BasicLongRunningRequestCheck`` calls long-running:
watches and proxies, and the attach, exec, proxy, log and portforward subresources.

The handler is cancelled at the deadline (Go cancels its context): a write stops at its next
admission point, before it has stored anything.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Generator
from typing import Any

import orjson

from setpoint.cluster.endpoints.filters import is_resource_path
from setpoint.cluster.endpoints.http import Request, Response
from setpoint.cluster.endpoints.requestinfo import ResourcePath
from setpoint.machinery import errors
from setpoint.machinery.gotime import parse_duration

# kube-apiserver's LongRunningFunc (BasicLongRunningRequestCheck with these)
LONG_RUNNING_VERBS = frozenset({"watch", "proxy"})
LONG_RUNNING_SUBRESOURCES = frozenset({"attach", "exec", "proxy", "log", "portforward"})

INVALID_TIMEOUT_IN_URL = "invalid timeout specified in the request URL"

# timeout.go: apierrors.NewTimeoutError("request did not complete within the allotted
# timeout", 0), its ErrStatus encoded as it is (no TypeMeta; RetryAfterSeconds 0 omitted)
TIMEOUT_STATUS = {"metadata": {}, "status": "Failure",
                  "message": "Timeout: request did not complete within the allotted timeout",
                  "reason": "Timeout", "details": {}, "code": 504}


def long_running(request: Request, segments: list[str], rp: ResourcePath | None) -> bool:
    """``BasicLongRunningRequestCheck`` on the request's RequestInfo (requestinfo.go):
    ``segments`` of its path and the resource they name (``resource_path_of``)."""
    if not is_resource_path(segments):
        return request.path.startswith("/debug/pprof/")
    verb_at = 2 if segments[0] == "api" else 3  # (is_resource_path: a segment is there)
    if segments[verb_at] == "proxy":  # the special verb prefix, as /watch/ is
        return True
    if rp is None:
        return False
    if rp.legacy_watch:
        return True
    if request.method == "GET" and rp.name is None:
        # a list is a watch when its ListOptions say so: a bool parameter is true unless
        # its first value is "false" or "0" (Convert_Slice_string_To_bool)
        watch = request.query_values("watch")
        if watch and watch[0].lower() not in ("false", "0"):
            return True
    return rp.subresource in LONG_RUNNING_SUBRESOURCES


def request_deadline(request: Request, segments: list[str],
                     rp: ResourcePath | None) -> float | None:
    """The loop time by which the handler must answer (None: long-running): the request's
    ``deadline`` (the server's timeout), shortened to a positive ``timeout`` parameter
    counted from when the request came; a 400 for one that does not parse."""
    if long_running(request, segments, rp) or request.deadline is None:
        return None
    raw = request.query_values("timeout")
    if raw and raw[0]:
        try:
            timeout = parse_duration(raw[0])
        except ValueError as exc:
            raise errors.bad_request(f"{INVALID_TIMEOUT_IN_URL} - {exc}") from None
        if timeout > 0:
            request.deadline = min(request.deadline, request.received + timeout)
    return request.deadline


def timeout_response() -> Response:
    return Response(orjson.dumps(TIMEOUT_STATUS) + b"\n", 504, "text/plain; charset=utf-8")


async def answered_by(deadline: float, answer: Coroutine[Any, Any, Response]) -> Response:
    """``answer``, or the 504 Timeout when it is not ready by ``deadline`` (loop time).

    Most answers (a GET served from memory) never wait: run up to its first wait, the
    coroutine is done, and nothing could have interrupted it (the deadline cancels only at
    a wait), so it is returned without arming a timer. An answer that waits goes on under
    ``asyncio.timeout_at``, resumed from where it stopped."""
    try:
        waiting_on = answer.send(None)
    except StopIteration as done:
        answered: Response = done.value  # (typing.cast would be a call on every request)
        return answered
    try:
        async with asyncio.timeout_at(deadline) as scope:
            return await _Resumed(answer, waiting_on)
    except TimeoutError:
        if not scope.expired():
            raise
        return timeout_response()


class _Resumed:
    """A coroutine that already ran up to its first wait, awaited from there: what it waits
    on goes to the task first, then the task's wake-ups (a value, or an exception such as
    the timeout's cancellation) are passed on to it, as ``await`` would (PEP 380)."""

    __slots__ = ("coroutine", "waiting_on")

    def __init__(self, coroutine: Coroutine[Any, Any, Response], waiting_on: Any) -> None:
        self.coroutine = coroutine
        self.waiting_on = waiting_on

    def __await__(self) -> Generator[Any, Any, Response]:
        coroutine, waiting_on = self.coroutine, self.waiting_on
        while True:
            try:
                sent = yield waiting_on
            except GeneratorExit:
                coroutine.close()
                raise
            except BaseException as exc:  # (thrown in by the task, a cancellation too)
                try:
                    waiting_on = coroutine.throw(exc)
                except StopIteration as done:
                    return done.value  # type: ignore[no-any-return]
            else:
                try:
                    waiting_on = coroutine.send(sent)
                except StopIteration as done:
                    return done.value  # type: ignore[no-any-return]
