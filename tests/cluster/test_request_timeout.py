"""The request timeout of requests that are not long-running, and the ``timeout`` parameter.

Sources (k8s.io/apiserver v0.32): pkg/endpoints/filters/request_deadline.go
(``withRequestDeadline``, ``parseTimeout``: the parameter parsed by ``time.ParseDuration``,
a 400 "invalid timeout specified in the request URL - ..." when it does not parse, a
positive one shorter than ``--request-timeout`` (60 s) taken as the deadline);
pkg/server/filters/timeout.go (``WithTimeoutForNonLongRunningRequests``: at the deadline the
504 ``NewTimeoutError("request did not complete within the allotted timeout", 0)``, its
bare ErrStatus JSON-encoded, Content-Type sniffed); pkg/server/config.go
(``DefaultBuildHandlerChain``: both filters outside authentication);
pkg/admission/plugin/webhook/mutating/dispatcher.go (a webhook is called with the request's
context, narrowed by its own ``timeoutSeconds``: the earlier deadline wins).
"""

from __future__ import annotations

import asyncio
from typing import Any

import orjson
import pytest

from setpoint.cluster.endpoints.http import Response
from setpoint.cluster.endpoints.requestdeadline import answered_by
from tests.cluster.conftest import API
from tests.cluster.test_admission_webhooks import CMS, cm, configure, webhook
from tests.hookserver import Hooks

Obj = dict[str, Any]



async def test_a_handler_that_has_not_answered_by_the_timeout_parameter_is_a_504(
        api: API, hooks: Hooks) -> None:
    """Rule: a create whose mutating webhook (timeoutSeconds 10, failurePolicy Fail) has
    not answered when the request's ``?timeout=1s`` passes is answered by the timeout
    filter: 504, the Timeout Status without kind or apiVersion, as text/plain; the request
    deadline, earlier than the webhook's own, wins, and nothing is stored."""
    released = asyncio.Event()

    async def slow(request: Obj) -> Obj:
        await released.wait()
        return {"allowed": True}

    hooks.on("/mutate", slow)
    await configure(api, "Mutating", "m", webhook(
        "m.example.com", {"url": hooks.url("/mutate"), "caBundle": hooks.ca_bundle},
        timeoutSeconds=10, failurePolicy="Fail"))
    try:
        async with api.session.post(f"{api.cluster.url}{CMS}?timeout=1s",
                                    data=orjson.dumps(cm("late")), ssl=api.ssl,
                                    headers={"Content-Type": "application/json"}) as resp:
            body = await resp.read()
            assert resp.status == 504, body
            assert resp.headers["Content-Type"] == "text/plain; charset=utf-8"
        assert orjson.loads(body) == {
            "metadata": {}, "status": "Failure",
            "message": "Timeout: request did not complete within the allotted timeout",
            "reason": "Timeout", "details": {}, "code": 504}
        assert len(hooks.calls["/mutate"]) == 1
    finally:
        released.set()
    assert (await api.get(f"{CMS}/late"))[0] == 404


async def test_a_timeout_parameter_that_does_not_parse_is_a_400_before_authentication(
        api: API) -> None:
    """Rule: ``timeout`` is parsed as a Go duration; one that does not parse is a 400
    BadRequest quoting time.ParseDuration's error, even for a request without credentials
    (the deadline filter is outside authentication); a long-running request (a watch) does
    not read it."""
    expected = {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": 'invalid timeout specified in the request URL - time: missing '
                           'unit in duration "1"', "reason": "BadRequest", "code": 400}
    assert await api.get(f"{CMS}?timeout=1") == (400, expected)
    async with api.session.get(f"{api.cluster.url}{CMS}?timeout=1", ssl=api.ssl,
                               headers={"Authorization": "Bearer wrong"}) as resp:
        assert (resp.status, orjson.loads(await resp.read())) == (400, expected)
    async with api.session.get(f"{api.cluster.url}{CMS}?watch=true&timeout=fast",
                               ssl=api.ssl) as resp:
        assert resp.status == 200  # (the stream begins; closed unread)


async def test_a_get_that_waits_for_a_fresher_cache_is_answered_by_the_timeout_parameter(
        api: API) -> None:
    """Rule: a GET of one object at a resourceVersion the store has not reached waits for
    the watch cache (up to 3 s: cacher.go ``waitUntilFreshAndBlock`` with the request's
    context); a ``?timeout=1s`` ends first, and the timeout filter answers its 504
    (timeout.go). The same GET without a resourceVersion answers at once, its timeout
    never reached. (The server answers a GET that does not wait without arming a timer:
    this is the path that waits, resumed under the deadline.)"""
    status, created = await api.post(CMS, cm("fresher"))
    assert status == 201, created
    ahead = int(created["metadata"]["resourceVersion"]) + 1000
    async with api.session.get(
            f"{api.cluster.url}{CMS}/fresher?resourceVersion={ahead}&timeout=1s",
            ssl=api.ssl) as resp:
        body = await resp.read()
        assert resp.status == 504, body
        assert resp.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert orjson.loads(body)["reason"] == "Timeout"
    status, got = await api.get(f"{CMS}/fresher?timeout=1s")
    assert (status, got["metadata"]["name"]) == (200, "fresher")


async def test_the_deadline_interrupts_an_answer_only_where_it_waits() -> None:
    """Rule: as Go's timeout filter, which cancels the handler's context, the deadline
    stops a handler at a wait: one that answers without waiting is answered (even past its
    deadline: nothing could interrupt it), one that waits past it is cancelled there (its
    clean-up runs) and the answer is the 504, one that waits and then fails raises its own
    error, and a TimeoutError of the handler's own is not taken for the deadline's."""
    loop = asyncio.get_running_loop()
    cleaned: list[str] = []

    async def at_once() -> Response:
        return Response(b"now")

    async def after(wait: float, then: BaseException | None = None) -> Response:
        try:
            await asyncio.sleep(wait)
            if then is not None:
                raise then
            return Response(b"later")
        finally:
            cleaned.append(f"{wait}")

    assert (await answered_by(loop.time() - 1, at_once())).body == b"now"
    assert (await answered_by(loop.time() + 5, after(0.01))).body == b"later"
    late = await answered_by(loop.time() + 0.05, after(30))
    assert (late.status, orjson.loads(late.body)["reason"]) == (504, "Timeout")
    assert cleaned == ["0.01", "30"]
    with pytest.raises(ValueError, match="its own"):
        await answered_by(loop.time() + 5, after(0, ValueError("its own")))
    with pytest.raises(TimeoutError):
        await answered_by(loop.time() + 5, after(0, TimeoutError()))
