"""The naming controller: which of a CRD's names are accepted, and when that is reconsidered.

kube-apiserver 1.32: apiextensions-apiserver v0.32 pkg/controller/status/naming_controller.go
(getAcceptedNamesForGroup lists every CRD of the group, the one being synced included;
sync requeues the group's other CRDs when a CRD is deleted or its accepted names change).
"""

from __future__ import annotations

from typing import Any

from tests.cluster.conftest import API
from tests.waiting import wait_for

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _crd(plural: str, kind: str, short: list[str]) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": plural, "kind": kind, "shortNames": short},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object"}}}]}}


async def _condition(api: API, name: str, ctype: str) -> dict[str, Any] | None:
    status, body = await api.get(f"{CRDS}/{name}")
    assert status == 200, body
    return next((c for c in (body.get("status") or {}).get("conditions") or []
                 if c["type"] == ctype), None)


async def _wait_condition(api: API, name: str, ctype: str, value: str) -> dict[str, Any]:
    async def reached() -> bool:
        cond = await _condition(api, name, ctype)
        return bool(cond and cond["status"] == value)

    await wait_for(reached)
    cond = await _condition(api, name, ctype)
    assert cond is not None
    return cond


async def test_names_freed_by_a_deleted_crd_are_granted_to_the_waiting_one(api: API) -> None:
    status, body = await api.post(CRDS, _crd("alphas", "Alpha", ["al"]))
    assert status == 201, body
    await _wait_condition(api, "alphas.example.com", "Established", "True")
    status, body = await api.post(CRDS, _crd("betas", "Alpha", ["al", "be"]))
    assert status == 201, body
    cond = await _wait_condition(api, "betas.example.com", "NamesAccepted", "False")
    assert (cond["reason"], cond["message"]) == ("ListKindConflict",
                                                 '"AlphaList" is already in use')
    assert (await api.get("/apis/example.com/v1/namespaces/default/betas"))[0] == 404

    status, body = await api.delete(f"{CRDS}/alphas.example.com")
    assert status == 200, body
    await _wait_condition(api, "betas.example.com", "Established", "True")
    status, body = await api.get(f"{CRDS}/betas.example.com")
    assert body["status"]["acceptedNames"] == {
        "plural": "betas", "singular": "alpha", "shortNames": ["al", "be"], "kind": "Alpha",
        "listKind": "AlphaList"}

    async def served() -> bool:
        return (await api.get("/apis/example.com/v1/namespaces/default/betas"))[0] == 200

    await wait_for(served)


async def test_a_name_the_crd_holds_itself_under_another_role_is_in_use(api: API) -> None:
    status, body = await api.post(CRDS, _crd("gammas", "Gamma", ["gm"]))
    assert status == 201, body
    await _wait_condition(api, "gammas.example.com", "Established", "True")
    status, body = await api.patch(f"{CRDS}/gammas.example.com",
                                   {"spec": {"names": {"singular": "gm"}}},
                                   "application/merge-patch+json")
    assert status == 200, body
    cond = await _wait_condition(api, "gammas.example.com", "NamesAccepted", "False")
    assert (cond["reason"], cond["message"]) == ("SingularConflict", '"gm" is already in use')
    # it was established before, and stays so
    assert (await _condition(api, "gammas.example.com", "Established") or {})["status"] == "True"


async def test_conditions_rewritten_through_status_are_left_alone(api: API) -> None:
    # sync returns early once spec.names equal status.acceptedNames, and the resource is
    # served only while NamesAccepted or Established is True (customresource_handler.go)
    status, body = await api.post(CRDS, _crd("deltas", "Delta", []))
    assert status == 201, body
    await _wait_condition(api, "deltas.example.com", "Established", "True")
    custom = {"type": "Custom", "status": "True", "reason": "Mine", "message": "m",
              "lastTransitionTime": "2024-01-01T00:00:00Z"}
    status, body = await api.patch(f"{CRDS}/deltas.example.com/status",
                                   {"status": {"conditions": [custom]}},
                                   "application/merge-patch+json")
    assert status == 200, body

    async def unserved() -> bool:
        return (await api.get("/apis/example.com/v1/namespaces/default/deltas"))[0] == 404

    await wait_for(unserved)
    status, body = await api.get(f"{CRDS}/deltas.example.com")
    assert body["status"]["conditions"] == [custom]
