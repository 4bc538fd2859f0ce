"""Client-side rate limiting against the embedded server: client-go's token bucket.

The rules come from client-go: ``rest.RESTClientFor`` (rest/config.go) builds
``flowcontrol.NewTokenBucketRateLimiter(qps, burst)`` when ``qps > 0``, takes
``DefaultQPS``/``DefaultBurst`` (5, 10) for zeros and no limiter for a negative qps;
``Request.request`` (rest/request.go) throttles every attempt with ``tryThrottle``, and
``withRetry.Before`` (rest/with_retry.go) each retry too. controller-runtime's
``GetConfigWithContext`` (pkg/client/config/config.go) sets ``QPS = -1`` when unset:
off by default. The bucket is golang.org/x/time/rate's ``Limiter``: full at start, one
token every ``1/qps`` seconds, a waiter reserving the next token.

Time here is a clock the test moves, so what is asserted is how many requests the
server answered before the bucket had refilled, never how long anything took.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from setpoint.client import (
    Client,
    Clock,
    ClusterConfig,
    ConfigError,
    RequestRecord,
    TokenBucketRateLimiter,
    load_kubeconfig,
)
from setpoint.cluster import RunningCluster, serve
from tests.client.conftest import Recorder
from tests.client.fakeapi import FakeApi, Fault
from tests.waiting import wait_for

# raw requests: a typed read would first ask discovery, which takes tokens too
NAMESPACES = "/api/v1/namespaces"
DEFAULT = f"{NAMESPACES}/default"


class ManualClock:
    """Time that moves only when the test says; sleepers wake when it passes their due."""

    def __init__(self) -> None:
        self.time = 0.0
        self.sleepers: list[tuple[float, asyncio.Future[None]]] = []

    def now(self) -> float:
        return self.time

    async def sleep(self, seconds: float) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.sleepers.append((self.time + seconds, future))
        await future

    def advance(self, seconds: float) -> None:
        self.time += seconds
        for due, future in self.sleepers:
            if due <= self.time and not future.done():
                future.set_result(None)
        self.sleepers = [(d, f) for d, f in self.sleepers if not f.done()]

    @property
    def waiting(self) -> int:
        return len(self.sleepers)


@pytest.fixture
async def cluster() -> AsyncIterator[RunningCluster]:
    async with serve() as running:
        yield running


async def test_a_burst_beyond_the_bucket_is_spread_at_qps(cluster: RunningCluster) -> None:
    """qps 2, burst 3: of 8 requests sent at once, 3 are answered at once; each half
    second of the clock lets exactly one more through; once idle, the bucket refills to
    its burst and no further."""
    clock = ManualClock()
    answered: list[RequestRecord] = []
    limiter = TokenBucketRateLimiter(2, 3, clock=Clock(clock.now, clock.sleep))
    async with Client(load_kubeconfig(cluster.kubeconfig), rate_limiter=limiter,
                      on_request=answered.append) as client:
        await_all = [asyncio.create_task(client.request("GET", DEFAULT)) for _ in range(8)]
        await wait_for(lambda: len(answered) == 3 and clock.waiting == 5)
        assert all(r.code == 200 for r in answered)

        clock.advance(0.5)
        await wait_for(lambda: len(answered) == 4 and clock.waiting == 4)
        clock.advance(1.0)  # two more tokens
        await wait_for(lambda: len(answered) == 6 and clock.waiting == 2)
        clock.advance(1.0)
        await asyncio.gather(*await_all)
        assert len(answered) == 8 and clock.waiting == 0

        clock.advance(60.0)  # a minute idle: the bucket holds its burst, not 120 tokens
        more = [asyncio.create_task(client.request("GET", DEFAULT)) for _ in range(5)]
        await wait_for(lambda: len(answered) == 11 and clock.waiting == 2)
        clock.advance(1.0)
        await asyncio.gather(*more)
        assert len(answered) == 13


async def test_the_loop_runs_while_a_request_waits_for_its_token(
        cluster: RunningCluster) -> None:
    """A throttled request waits asynchronously: another client's request on the same
    loop is answered meanwhile."""
    clock = ManualClock()
    limiter = TokenBucketRateLimiter(1, 1, clock=Clock(clock.now, clock.sleep))
    config = load_kubeconfig(cluster.kubeconfig)
    async with Client(config, rate_limiter=limiter) as throttled, Client(config) as free:
        await throttled.request("GET", DEFAULT)
        waiting = asyncio.create_task(throttled.request("GET", f"{NAMESPACES}/kube-system"))
        await wait_for(lambda: clock.waiting == 1)
        public = await free.request("GET", f"{NAMESPACES}/kube-public")
        assert public["metadata"]["name"] == "kube-public"
        assert not waiting.done()
        clock.advance(1.0)
        assert (await waiting)["metadata"]["name"] == "kube-system"


async def test_a_cancelled_waiter_gives_its_token_back(cluster: RunningCluster) -> None:
    """x/time/rate: a Reservation cancelled before it is due returns its token, so an
    abandoned request does not delay the next one."""
    clock = ManualClock()
    answered: list[RequestRecord] = []
    limiter = TokenBucketRateLimiter(1, 1, clock=Clock(clock.now, clock.sleep))
    async with Client(load_kubeconfig(cluster.kubeconfig), rate_limiter=limiter,
                      on_request=answered.append) as client:
        await client.request("GET", DEFAULT)
        abandoned = asyncio.create_task(client.request("GET", DEFAULT))
        await wait_for(lambda: clock.waiting == 1)
        abandoned.cancel()
        with pytest.raises(asyncio.CancelledError):
            await abandoned
        clock.advance(1.0)  # one token: the abandoned one's, given back
        await client.request("GET", DEFAULT)
        assert len(answered) == 2 and clock.waiting == 0


async def test_a_retry_after_429_waits_for_a_token_too(
        api: FakeApi, kubeconfig: Path, recorder: Recorder) -> None:
    """The server's Retry-After is honoured (the backoff sleep), and the retry is then
    throttled like the first attempt (with_retry.go ``Before``: "This request should also
    be throttled with the client-internal rate limiter")."""
    api.put("configmaps", {"metadata": {"name": "a", "namespace": "team-a"}})
    item = "/api/v1/namespaces/team-a/configmaps/a"
    api.faults.append(Fault("GET", item, code=429, times=1, retry_after=3))
    clock = ManualClock()
    limiter = TokenBucketRateLimiter(1, 1, clock=Clock(clock.now, clock.sleep))
    async with Client.from_kubeconfig(kubeconfig, rate_limiter=limiter,
                                      on_request=recorder) as client:
        client.transport.sleep = recorder.sleep
        answer = asyncio.create_task(client.request("GET", item))
        await wait_for(lambda: clock.waiting == 1)
        assert len(api.requests_to("GET", item)) == 1 and recorder.waits[0] >= 3
        clock.advance(1.0)
        assert (await answer)["metadata"]["name"] == "a"
        assert [r.code for r in recorder.records] == [429, 200]


def test_the_limiter_follows_client_gos_defaults_and_controller_runtimes_off() -> None:
    """rest.RESTClientFor: zeros take DefaultQPS 5 and DefaultBurst 10, a negative qps no
    limiter; controller-runtime's GetConfig leaves it off (QPS -1)."""
    def limiter(**options: float) -> TokenBucketRateLimiter | None:
        client = Client(ClusterConfig(server="https://127.0.0.1:6443"), **options)  # type: ignore[arg-type]
        found = client.transport.rate_limiter
        assert found is None or isinstance(found, TokenBucketRateLimiter)
        return found

    assert limiter() is None
    assert limiter(qps=-1, burst=50) is None
    default = limiter(qps=0)
    assert default is not None and (default.qps, default.burst) == (5.0, 10)
    chosen = limiter(qps=20, burst=30)
    assert chosen is not None and (chosen.qps, chosen.burst) == (20.0, 30)
    with_default_burst = limiter(qps=50)
    assert with_default_burst is not None and with_default_burst.burst == 10


@pytest.mark.parametrize(("options", "message"), [
    ({"qps": float("nan")}, "qps: nan is not a number: pass requests a second, or qps=-1 "
                            "for no client-side limit"),
    ({"qps": float("inf")}, "qps: inf is not a positive number of requests a second: pass "
                            "qps > 0, or qps=-1 for no client-side limit"),
    ({"qps": 5, "burst": -1}, "burst: -1 is not a whole number of requests >= 0: pass "
                              "burst >= 1 (0 takes the default, 10)"),
])
def test_a_bad_rate_names_the_option_and_the_fix(options: dict[str, float],
                                                 message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        Client(ClusterConfig(server="https://127.0.0.1:6443"), **options)  # type: ignore[arg-type]
    assert str(raised.value) == message


def test_a_manager_limits_the_client_it_makes_as_its_settings_say() -> None:
    """ManagerSettings.client_qps/client_burst are rest.Config's QPS and Burst of the
    manager's own client (`setpoint run --kube-api-qps/--kube-api-burst`); off unless set,
    as controller-runtime's manager on GetConfig's config."""
    from setpoint.runtime import Manager, ManagerSettings

    config = ClusterConfig(server="https://127.0.0.1:6443")
    assert Manager(config=config).client.transport.rate_limiter is None
    limited = Manager(config=config, settings=ManagerSettings(client_qps=20, client_burst=30))
    found = limited.client.transport.rate_limiter
    assert isinstance(found, TokenBucketRateLimiter) and (found.qps, found.burst) == (20, 30)
