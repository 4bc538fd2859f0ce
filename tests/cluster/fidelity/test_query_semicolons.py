"""Query parameters as kube-apiserver 1.32 reads them: Go's net/url ``parseQuery``.

Every handler reads its parameters through ``req.URL.Query()`` (net/url url.go ``Query``,
which drops ``ParseQuery``'s error). Since Go 1.17 ``parseQuery`` splits at "&" only and
drops a pair holding ";" whole ("invalid semicolon separator in query"; net/http only logs
it), and drops a pair whose key or value has a "%" not followed by two hex digits
(``QueryUnescape``'s EscapeError); the rest of the query still counts. So
``?limit=1;x=2`` lists everything, ``?pretty=true;x`` leaves isPrettyPrint to the
User-Agent (apiserver handlers/negotiation/negotiate.go), ``?dryRun=All;x`` writes for real.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import pytest_asyncio
from yarl import URL

from tests.cluster.conftest import API

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "/api/v1/namespaces/default/configmaps"


async def _raw(api: API, path: str, headers: dict[str, str] | None = None,
               method: str = "GET", body: Any = None) -> tuple[int, bytes]:
    """(status, body) of ``path`` sent as written (aiohttp would escape a stray "%")."""
    data = None if body is None else json.dumps(body).encode()
    url = URL(api.cluster.url + path, encoded=True)
    async with api.session.request(method, url, data=data, ssl=api.ssl,
                                   headers={"Content-Type": "application/json",
                                            **(headers or {})}) as resp:
        return resp.status, await resp.read()


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def three(module_api: API) -> None:
    for name in ("semi-a", "semi-b", "semi-c"):
        status, _ = await _raw(module_api, NS, method="POST",
                               body={"metadata": {"name": name, "labels": {"semi": "y"}}})
        assert status == 201


def _names(body: bytes) -> list[str]:
    return [item["metadata"]["name"] for item in json.loads(body)["items"]]


async def test_a_pair_with_a_semicolon_is_dropped(module_api: API, three: None) -> None:
    status, body = await _raw(module_api, f"{NS}?labelSelector=semi%3Dy&limit=1;x=2")
    assert status == 200
    assert _names(body) == ["semi-a", "semi-b", "semi-c"]
    assert "continue" not in json.loads(body)["metadata"]


async def test_the_rest_of_the_query_counts(module_api: API, three: None) -> None:
    status, body = await _raw(module_api, f"{NS}?x;y&labelSelector=semi%3Dy&limit=1&a=b;c")
    assert status == 200
    assert _names(body) == ["semi-a"] and json.loads(body)["metadata"]["continue"]


async def test_a_bad_escape_drops_its_pair(module_api: API, three: None) -> None:
    """``limit=%zz`` is not a limit Go refuses: the pair is gone before ListOptions."""
    status, body = await _raw(module_api, f"{NS}?labelSelector=semi%3Dy&limit=%zz")
    assert status == 200 and _names(body) == ["semi-a", "semi-b", "semi-c"]
    status, body = await _raw(module_api, f"{NS}?labelSelector=semi%3Dy&limit=%31")
    assert status == 200 and _names(body) == ["semi-a"]


@pytest.mark.parametrize(("agent", "indented"), [("curl/8.5.0", True),
                                                 ("setpoint-tests/1.0", False)])
async def test_pretty_with_a_semicolon_leaves_it_to_the_user_agent(
        module_api: API, three: None, agent: str, indented: bool) -> None:
    status, body = await _raw(module_api, f"{NS}/semi-a?pretty=true;x",
                              {"User-Agent": agent})
    assert status == 200
    assert body.startswith(b'{\n  "kind"') is indented


async def test_watch_with_a_semicolon_is_a_list(module_api: API, three: None) -> None:
    status, body = await _raw(module_api, f"{NS}?labelSelector=semi%3Dy&watch=true;x")
    assert status == 200 and json.loads(body)["kind"] == "ConfigMapList"


async def test_dry_run_with_a_semicolon_writes(module_api: API) -> None:
    status, _ = await _raw(module_api, f"{NS}?dryRun=All;x", method="POST",
                           body={"metadata": {"name": "semi-written"}})
    assert status == 201
    status, _ = await _raw(module_api, f"{NS}/semi-written")
    assert status == 200
    status, _ = await _raw(module_api, f"{NS}?dryRun=All", method="POST",
                           body={"metadata": {"name": "semi-dry"}})
    assert status == 201
    status, _ = await _raw(module_api, f"{NS}/semi-dry")
    assert status == 404
