"""The health endpoints' named checks, kube-apiserver 1.32's.

Sources: k8s.io/apiserver pkg/server/healthz/healthz.go (``handleRootHealth``: the verbose
lines, ``reason withheld``, ``exclude``; ``adaptCheckToHandler`` for ``/readyz/<name>``);
pkg/controlplane/apiserver/aggregator.go (``makeAPIServiceAvailableHealthCheck``: the
``autoregister-completion`` boot-sequence check, failing with ``missing APIService: [...]``
until every APIService registered on start has been seen Available); kube-aggregator
pkg/apiserver/apiserver.go (the post-start hooks' order).
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import pytest

from setpoint.cluster import serve
from setpoint.cluster.controllers.autoregister import AutoRegister
from tests.cluster.conftest import API
from tests.waiting import wait_for


async def _get(api: API, path: str) -> tuple[int, str]:
    async with api.session.get(api.cluster.url + path, ssl=api.ssl) as resp:
        return resp.status, await resp.text()


async def test_readyz_waits_for_autoregister_completion(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Until the ``kube-apiserver-autoregistration`` hook has run and its APIServices are
    Available, /healthz, /livez and /readyz fail with every check listed; the check itself
    names the missing APIServices. (The hook is held back here to observe that window.)"""
    release = asyncio.Event()
    start = AutoRegister.start

    def held(self: AutoRegister) -> None:
        async def later() -> None:
            await release.wait()
            start(self)
        asyncio.get_running_loop().create_task(later())

    monkeypatch.setattr(AutoRegister, "start", held)
    async with serve(state_dir=tmp_path / "state") as cluster:
        headers = {"Authorization": f"Bearer {cluster.token}"}
        async with aiohttp.ClientSession(headers=headers) as session:
            api = API(cluster, session)
            status, body = await _get(api, "/readyz")
            assert status == 500
            assert body.endswith("readyz check failed\n")  # http.Error's newline
            lines = body.splitlines()
            assert lines[:3] == ["[+]ping ok", "[+]log ok", "[+]etcd ok"]
            assert "[-]poststarthook/kube-apiserver-autoregistration failed: reason withheld" \
                in lines
            assert lines[-5:] == [
                "[-]autoregister-completion failed: reason withheld",
                "[+]poststarthook/apiservice-openapi-controller ok",
                "[+]poststarthook/apiservice-openapiv3-controller ok",
                "[+]shutdown ok", "readyz check failed"]
            for endpoint in ("/healthz", "/livez"):
                status, body = await _get(api, endpoint)
                assert (status, body.splitlines()[-1]) == (
                    500, f"{endpoint[1:]} check failed"), body
            status, body = await _get(api, "/readyz/autoregister-completion")
            assert status == 500
            assert body.startswith("internal server error: missing APIService: [v1. "
                                   "v1.admissionregistration.k8s.io v1.apiextensions.k8s.io ")
            assert "v1.apps" in body and "v1.apiregistration.k8s.io" not in body
            status, body = await _get(api, "/readyz?exclude=autoregister-completion"
                                           "&exclude=poststarthook/kube-apiserver-"
                                           "autoregistration&exclude=nope")
            assert status == 200 and body == "ok"
            release.set()
            await wait_for(lambda: _ready(api))
            status, body = await _get(api, "/readyz?verbose")
            assert status == 200
            assert body.endswith("[+]poststarthook/kube-apiserver-autoregistration ok\n"
                                 "[+]autoregister-completion ok\n"
                                 "[+]poststarthook/apiservice-openapi-controller ok\n"
                                 "[+]poststarthook/apiservice-openapiv3-controller ok\n"
                                 "[+]shutdown ok\nreadyz check passed\n"), body
            assert await _get(api, "/readyz/autoregister-completion") == (200, "ok")
            assert await _get(api, "/livez/etcd") == (200, "ok")
            assert await _get(api, "/readyz/no-such-check") == (404, "404 page not found\n")
            status, body = await _get(api, "/healthz?verbose&exclude=ping&exclude=nope")
            assert status == 200
            assert body.startswith("[+]ping excluded: ok\n[+]log ok\n")
            assert body.endswith('warn: some health checks cannot be excluded: no matches '
                                 'for "nope"\nhealthz check passed\n'), body


async def _ready(api: API) -> bool:
    return (await _get(api, "/readyz"))[0] == 200
