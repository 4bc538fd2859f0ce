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
