"""Server-side apply and managed fields, audited against kube-apiserver 1.32.

Each test is one rule read from the source it cites; all share one server (``module_api``)
and write objects of their own names, deleted at the end.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.conftest import API

pytestmark = pytest.mark.asyncio(loop_scope="module")

CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
MERGE = "application/merge-patch+json"
APPLY = "application/apply-patch+yaml"


def _managers(obj: dict[str, Any]) -> list[str]:
    return [e["manager"] for e in obj["metadata"].get("managedFields") or []]


@pytest.mark.parametrize("how", ["put", "merge-patch"])
async def test_an_empty_managed_fields_list_in_an_update_clears_them(
        module_api: API, how: str) -> None:
    """Rule: an update whose object carries ``managedFields: []`` (non-nil, empty) resets the
    tracking: the entries are dropped, the object is written (a new resourceVersion) and,
    the live object now being untracked, later updates record nothing until an apply.
    Source: k8s.io/apimachinery pkg/util/managedfields/internal/fieldmanager.go
    (decodeLiveOrNew, isResetManagedFields: "the list is non-nil but empty") and
    skipnonapplied.go (an update of an object without managed fields is not tracked)."""
    name = f"reset-{how}"
    status, created = await module_api.post(f"{CONFIGMAPS}?fieldManager=creator", {
        "metadata": {"name": name}, "data": {"k": "v"}})
    assert status == 201, created
    try:
        if how == "put":
            status, out = await module_api.put(
                f"{CONFIGMAPS}/{name}?fieldManager=upd",
                {"metadata": {"name": name, "managedFields": []}, "data": {"k": "v"}})
        else:
            status, out = await module_api.patch(f"{CONFIGMAPS}/{name}?fieldManager=upd",
                                                 {"metadata": {"managedFields": []}}, MERGE)
        assert status == 200, out
        assert "managedFields" not in out["metadata"]
        assert out["metadata"]["resourceVersion"] != created["metadata"]["resourceVersion"]
        status, out = await module_api.patch(f"{CONFIGMAPS}/{name}?fieldManager=later",
                                             {"data": {"n": "1"}}, MERGE)
        assert status == 200, out
        assert "managedFields" not in out["metadata"]
    finally:
        await module_api.delete(f"{CONFIGMAPS}/{name}")
