"""Retries: 429 with Retry-After, 5xx, dropped and refused connections, and what is never
retried."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from setpoint.client import (
    Client,
    ClusterConfig,
    InternalServerError,
    InvalidError,
    Kind,
    RetryPolicy,
    TokenFileAuth,
    TooManyRequestsError,
    TransportError,
)
from tests.client.conftest import Recorder
from tests.client.fakeapi import FakeApi, Fault

CM = Kind("v1", "ConfigMap")
ITEM = "/api/v1/namespaces/team-a/configmaps/a"
COLLECTION = "/api/v1/namespaces/team-a/configmaps"


def new_cm() -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "new"}}


@pytest.fixture
def stored(api: FakeApi) -> None:
    api.put("configmaps", {"metadata": {"name": "a", "namespace": "team-a"}})


@pytest.mark.usefixtures("stored")
async def test_429_is_retried_after_the_servers_retry_after(
    client: Client, api: FakeApi, recorder: Recorder,
) -> None:
    api.faults.append(Fault("GET", ITEM, code=429, times=2, retry_after=7))
    assert (await client.get(CM, "a"))["metadata"]["name"] == "a"
    assert len(api.requests_to("GET", ITEM)) == 3
    assert len(recorder.waits) == 2 and all(w >= 7 for w in recorder.waits)
    assert [r.code for r in recorder.records if r.path == ITEM] == [429, 429, 200]
    assert [r.attempt for r in recorder.records if r.path == ITEM] == [0, 1, 2]


async def test_429_is_retried_even_for_create(client: Client, api: FakeApi) -> None:
    api.faults.append(Fault("POST", COLLECTION, code=429, times=1, retry_after=1))
    await client.create(new_cm())
    assert len(api.requests_to("POST", COLLECTION)) == 2


@pytest.mark.usefixtures("stored")
async def test_500_then_200_succeeds_for_a_get(
    client: Client, api: FakeApi, recorder: Recorder,
) -> None:
    api.faults.append(Fault("GET", ITEM, code=500))
    await client.get(CM, "a")
    assert [r.code for r in recorder.records if r.path == ITEM] == [500, 200]
    assert recorder.waits[0] <= client.transport.retry.backoff_initial


async def test_500_on_create_is_not_retried(client: Client, api: FakeApi) -> None:
    api.faults.append(Fault("POST", COLLECTION, code=500))
    with pytest.raises(InternalServerError):
        await client.create(new_cm())
    assert len(api.requests_to("POST", COLLECTION)) == 1


async def test_503_with_retry_after_is_retried_for_create(client: Client, api: FakeApi) -> None:
    api.faults.append(Fault("POST", COLLECTION, code=503, retry_after=1))
    await client.create(new_cm())
    assert len(api.requests_to("POST", COLLECTION)) == 2


@pytest.mark.usefixtures("stored")
async def test_retries_give_up_after_max_retries_with_the_last_error(
    client: Client, api: FakeApi,
) -> None:
    api.faults.append(Fault("GET", ITEM, code=429, times=10, retry_after=1))
    with pytest.raises(TooManyRequestsError) as info:
        await client.get(CM, "a")
    assert info.value.retry_after == 1
    assert len(api.requests_to("GET", ITEM)) == 4  # the first try and three retries


@pytest.mark.usefixtures("stored")
async def test_client_mistakes_are_never_retried(client: Client, api: FakeApi) -> None:
    api.faults.append(Fault("PUT", ITEM, code=422))
    with pytest.raises(InvalidError):
        await client.update({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "a"}})
    assert len(api.requests_to("PUT", ITEM)) == 1


@pytest.mark.usefixtures("stored")
async def test_a_dropped_connection_is_retried_for_idempotent_requests(
    client: Client, api: FakeApi, recorder: Recorder,
) -> None:
    # aiohttp itself resends once on a reused keep-alive connection; drop that one too.
    api.faults.append(Fault("GET", ITEM, drop=True, times=2))
    await client.get(CM, "a")
    codes = [r.code for r in recorder.records if r.path == ITEM]
    assert codes == [None, 200]
    assert len(api.requests_to("GET", ITEM)) == 3


async def test_a_dropped_connection_is_not_retried_for_create(
    client: Client, api: FakeApi,
) -> None:
    api.faults.append(Fault("POST", COLLECTION, drop=True))
    with pytest.raises(TransportError):
        await client.create(new_cm())
    assert len(api.requests_to("POST", COLLECTION)) == 1


async def test_a_refused_connection_is_retried_even_for_create(recorder: Recorder) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens
    config = ClusterConfig(server=f"http://127.0.0.1:{port}")
    async with Client(config, on_request=recorder, retry=RetryPolicy(max_retries=2)) as client:
        client.transport.sleep = recorder.sleep
        with pytest.raises(TransportError):
            await client.create(new_cm(), namespace="x")
    assert [r.code for r in recorder.records] == [None, None, None]
    assert all(r.error == "ClientConnectorError" for r in recorder.records)


async def test_a_refused_connection_is_not_retried_when_the_policy_says_so(
        recorder: Recorder) -> None:
    """The platform commands' policy: kubectl gives up on a refused connection at once
    (client-go rest/request.go ``Request.request`` retries a GET only on a reset
    connection, an unexpected EOF or a lost HTTP/2 connection)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens
    config = ClusterConfig(server=f"http://127.0.0.1:{port}")
    policy = RetryPolicy(max_retries=2, refused_connections=False)
    async with Client(config, on_request=recorder, retry=policy) as client:
        client.transport.sleep = recorder.sleep
        with pytest.raises(TransportError):
            await client.get(CM, "a", namespace="x")
    assert [r.code for r in recorder.records] == [None]
    assert recorder.records[0].error == "ClientConnectorError"


async def test_a_refused_https_connection_is_told_in_words_not_python_reprs() -> None:
    """aiohttp's own text shows ``ssl:<ssl.SSLContext object at 0x...>`` and asyncio's the
    address as a tuple; people read the OS's words."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again when the block ends: nothing listens
    config = ClusterConfig(server=f"https://127.0.0.1:{port}")
    async with Client(config, retry=RetryPolicy(max_retries=0)) as client:
        with pytest.raises(TransportError) as info:
            await client.get(CM, "a", namespace="x")
    # kubectl's text for a refused connection (k8s.io/kubectl/pkg/cmd/util/helpers.go
    # standardErrorMessage): it names the address and the likely mistake
    assert str(info.value).endswith(
        f"to 127.0.0.1:{port} failed: the connection to the server 127.0.0.1:{port} was "
        "refused - did you specify the right host or port?")


@pytest.mark.usefixtures("stored")
async def test_a_401_rereads_a_rotated_token_file_and_retries_once(
    client: Client, api: FakeApi, tmp_path: Path,
) -> None:
    token = tmp_path / "token"
    token.write_text("old")
    client.config.auth = TokenFileAuth(token, refresh_interval=3600)
    api.tokens = {"old"}
    await client.get(CM, "a")
    token.write_text("rotated")
    api.tokens = {"rotated"}
    await client.get(CM, "a")
    auths = [r.headers["Authorization"] for r in api.requests_to("GET", ITEM)]
    assert auths == ["Bearer old", "Bearer old", "Bearer rotated"]


def test_backoff_grows_exponentially_with_full_jitter_and_a_ceiling() -> None:
    policy = RetryPolicy(backoff_initial=1.0, backoff_factor=2.0, backoff_max=5.0)
    for retry, ceiling in [(0, 1.0), (1, 2.0), (2, 4.0), (3, 5.0), (10, 5.0)]:
        waits = [policy.delay(retry) for _ in range(200)]
        assert all(0 <= w <= ceiling for w in waits)
        assert max(waits) > ceiling / 2  # jitter spreads over the whole range
    assert policy.delay(0, retry_after=3) >= 3
    assert RetryPolicy(max_retry_after=10).delay(0, retry_after=3600) <= 10
