"""LIST and WATCH answers checked against kube-apiserver 1.32's source, one rule a test.

All tests share one server (``module_api``) and a namespace of their own, deleted at the end.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import orjson
import pytest
import pytest_asyncio

from tests.cluster.conftest import API
from tests.cluster.fidelity.writes import create_configmap, failure

pytestmark = pytest.mark.asyncio(loop_scope="module")

NAMESPACE = "watch-list-audit"
NS = f"/api/v1/namespaces/{NAMESPACE}"
LEGACY_WATCH = f"/api/v1/watch/namespaces/{NAMESPACE}"


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def namespace(module_api: API) -> AsyncIterator[str]:
    status, out = await module_api.post("/api/v1/namespaces",
                                        {"metadata": {"name": NAMESPACE}})
    assert status == 201, out
    yield NAMESPACE
    status, out = await module_api.delete(f"/api/v1/namespaces/{NAMESPACE}")
    assert status == 200, out


def _events(status: int, body: Any) -> tuple[int, list[tuple[str, str | None]]]:
    """A finished watch's status and its events as (type, object name)."""
    lines = body.splitlines() if isinstance(body, str) else [orjson.dumps(body)]
    events = [orjson.loads(line) for line in lines if line]
    return status, [(e["type"], e["object"].get("metadata", {}).get("name")) for e in events]


async def test_a_named_watch_takes_only_a_selector_of_its_own_name(
        module_api: API, namespace: str) -> None:
    """Rule: a watch of one object (the deprecated ``/watch/.../NAME`` path) treats the name
    as a ``metadata.name`` selector; a field selector given beside it must pin that same name
    (``RequiresExactMatch("metadata.name")``), else the request is a 400, checked after the
    kind's field label conversion (whose own 400 comes first).
    Source: k8s.io/apiserver v0.32.0 pkg/endpoints/handlers/get.go (ListResource: "fieldSelector
    metadata.name doesn't match requested name"), pkg/endpoints/installer.go (the "WATCH"
    action: restfulListResource with forceWatch)."""
    for name in ("named-a", "named-b"):
        await create_configmap(module_api, name, NS)
    path = f"{LEGACY_WATCH}/configmaps/named-a?timeoutSeconds=1"
    mismatch = failure(400, "BadRequest",
                       "fieldSelector metadata.name doesn't match requested name")
    assert await module_api.get(f"{path}&fieldSelector=metadata.name%3Dnamed-b") == (
        400, mismatch)
    assert await module_api.get(f"{path}&fieldSelector=metadata.namespace%3D{namespace}") == (
        400, mismatch)
    assert await module_api.get(f"{path}&fieldSelector=data.a%3D1") == (400, failure(
        400, "BadRequest",
        '"data.a" is not a known field selector: only "metadata.name", "metadata.namespace"'))
    assert _events(*await module_api.get(f"{path}&fieldSelector=metadata.name%3Dnamed-a")) == (
        200, [("ADDED", "named-a")])
    assert _events(*await module_api.get(path)) == (200, [("ADDED", "named-a")])
