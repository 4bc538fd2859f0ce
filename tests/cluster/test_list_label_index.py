"""A LIST with an equality label selector costs what it returns, and answers the same.

kube-apiserver filters a LIST by its selectors after reading the range
(k8s.io/apiserver/pkg/storage/etcd3/store.go GetList: ``pred.Matches`` on each object read at
the list's revision; a continued list reads at the revision of its first page). The store's
label index (``setpoint/cluster/storage/labelindex.py``) only narrows which keys are read:
these tests check that the answer, continued pages at an older revision included, is what
reading every key would give, while the keys read are the labelled ones.
"""

from __future__ import annotations

from typing import Any

from setpoint.cluster import RunningCluster
from tests.cluster.conftest import API

Obj = dict[str, Any]
PATH = "/api/v1/namespaces/default/configmaps"


async def _create(api: API, name: str, labels: dict[str, str]) -> None:
    status, body = await api.post(PATH, {"metadata": {"name": name, "labels": labels}})
    assert status == 201, body


def _names(listed: Obj) -> list[str]:
    return [i["metadata"]["name"] for i in listed["items"]]


async def test_an_equality_selector_reads_only_the_objects_that_carry_the_label(
        cluster: RunningCluster, api: API) -> None:
    for i in range(60):
        await _create(api, f"cm-{i:03d}", {"app": "web" if i % 20 == 0 else "db",
                                           "tier": str(i % 2)})
    store = cluster.api.store
    for selector, want in (("app=web", ["cm-000", "cm-020", "cm-040"]),
                           ("app==web,tier=0", ["cm-000", "cm-020", "cm-040"]),
                           ("app in (web)", ["cm-000", "cm-020", "cm-040"]),
                           ("app=web,tier=1", []),
                           ("app=nothing", [])):
        before = store.keys_scanned
        status, listed = await api.get(f"{PATH}?labelSelector={selector}")
        assert status == 200, listed
        assert _names(listed) == want, selector
        assert store.keys_scanned - before == len(want), selector
    # terms the index cannot look up are checked on each candidate, as before
    status, listed = await api.get(f"{PATH}?labelSelector=app=web,tier!=0")
    assert status == 200 and _names(listed) == []
    status, listed = await api.get("/api/v1/configmaps?labelSelector=tier%3D1")
    assert status == 200
    assert _names(listed) == [f"cm-{i:03d}" for i in range(1, 60, 2)]

    # writes keep the index: a label changed, removed, an object deleted and one created
    status, body = await api.patch(f"{PATH}/cm-001", {"metadata": {"labels": {"app": "web"}}},
                                   "application/merge-patch+json")
    assert status == 200, body
    status, body = await api.patch(f"{PATH}/cm-020", {"metadata": {"labels": {"app": None}}},
                                   "application/merge-patch+json")
    assert status == 200, body
    assert (await api.delete(f"{PATH}/cm-040"))[0] == 200
    await _create(api, "cm-100", {"app": "web"})
    status, listed = await api.get(f"{PATH}?labelSelector=app=web")
    assert status == 200
    assert _names(listed) == ["cm-000", "cm-001", "cm-100"]


async def test_a_continued_page_selects_by_the_labels_of_its_first_pages_revision(
        api: API) -> None:
    """A continue token reads at its first page's revision (etcd3/store.go GetList with
    ``withRev``): objects relabelled, deleted or created since are selected as they were."""
    for i in range(6):
        await _create(api, f"cm-{i}", {"app": "web" if i % 2 == 0 else "db"})
    status, first = await api.get(f"{PATH}?labelSelector=app=web&limit=1")
    assert status == 200 and _names(first) == ["cm-0"]
    token = first["metadata"]["continue"]
    # after the first page: cm-2 leaves the selection, cm-3 joins it, cm-4 goes, cm-9 comes
    for name, app in (("cm-2", "db"), ("cm-3", "web")):
        status, body = await api.patch(f"{PATH}/{name}", {"metadata": {"labels": {"app": app}}},
                                       "application/merge-patch+json")
        assert status == 200, body
    assert (await api.delete(f"{PATH}/cm-4"))[0] == 200
    await _create(api, "cm-9", {"app": "web"})
    status, rest = await api.get(f"{PATH}?labelSelector=app=web&continue={token}")
    assert status == 200, rest
    assert _names(rest) == ["cm-2", "cm-4"]
    assert [i["metadata"]["labels"]["app"] for i in rest["items"]] == ["web", "web"]
    assert rest["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    status, now = await api.get(f"{PATH}?labelSelector=app=web")
    assert status == 200 and _names(now) == ["cm-0", "cm-3", "cm-9"]
