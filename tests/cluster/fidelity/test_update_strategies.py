"""Updates as each kind's strategy allows them: a PUT that creates (AllowCreateOnUpdate), an
update without a resourceVersion (AllowUnconditionalUpdate).

Each test is one rule of kube-apiserver 1.32, read from the source it cites; all share one
server (``module_api``) and write objects of their own names.
"""

from __future__ import annotations

from typing import Any

import pytest
import pytest_asyncio

from tests.cluster.conftest import API
from tests.cluster.fidelity.writes import MERGE, create_widget_crd, widget

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "/api/v1/namespaces/default"
LEASES = "/apis/coordination.k8s.io/v1/namespaces/default/leases"
ROLES = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles"
WIDGETS = "/apis/fidelity.example.com/v1/namespaces/default/widgets"


def _rv_required(resource: str, group: str, name: str) -> dict[str, Any]:
    """store.go's Invalid for an update without a resourceVersion: its GroupKind carries the
    resource, not the kind."""
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'{resource}.{group} "{name}" is invalid: metadata.resourceVersion: '
                       "Invalid value: 0x0: must be specified for an update",
            "reason": "Invalid",
            "details": {"name": name, "group": group, "kind": resource, "causes": [{
                "reason": "FieldValueInvalid",
                "message": "Invalid value: 0x0: must be specified for an update",
                "field": "metadata.resourceVersion"}]},
            "code": 422}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def widgets(module_api: API) -> API:
    await create_widget_crd(module_api)
    return module_api


@pytest.mark.parametrize(("path", "body"), [
    (f"{LEASES}/put-created", {"metadata": {"name": "put-created", "resourceVersion": "12345"},
                               "spec": {"holderIdentity": "a"}}),
    (f"{ROLES}/put-created", {"metadata": {"name": "put-created"}, "rules": [
        {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]}),
])
async def test_a_put_creates_what_the_strategy_allows_to(module_api: API, path: str,
                                                         body: dict[str, Any]) -> None:
    """Rule: Leases and RBAC roles and bindings take a PUT of a missing object as its create
    (201; a resourceVersion in the body is dropped with the rest of the system metadata),
    where a ConfigMap's PUT is a 404.
    Source: pkg/registry/coordination/lease/strategy.go and pkg/registry/rbac/role/
    strategy.go (AllowCreateOnUpdate: true), k8s.io/apiserver pkg/registry/generic/registry/
    store.go (Update: "if !e.UpdateStrategy.AllowCreateOnUpdate() ... NewNotFound")."""
    status, out = await module_api.put(path, body)
    assert (status, out["metadata"]["name"]) == (201, "put-created"), out
    status, out = await module_api.put(f"{NS}/configmaps/put-created",
                                       {"metadata": {"name": "put-created"}})
    assert (status, out["reason"]) == (404, "NotFound")


async def test_a_lease_update_must_name_a_resource_version(module_api: API) -> None:
    """Rule: the Lease strategy refuses unconditional updates: a PUT without a
    resourceVersion, or a patch whose result has none, is store.go's Invalid.
    Source: pkg/registry/coordination/lease/strategy.go (AllowUnconditionalUpdate: false),
    k8s.io/apiserver pkg/registry/generic/registry/store.go (Update: "must be specified for
    an update", qualifiedKind := schema.GroupKind{Group, Kind: qualifiedResource.Resource})."""
    status, out = await module_api.post(LEASES, {"metadata": {"name": "conditional"}})
    assert status == 201, out
    expected = (422, _rv_required("leases", "coordination.k8s.io", "conditional"))
    assert await module_api.put(f"{LEASES}/conditional", {
        "metadata": {"name": "conditional"}, "spec": {"holderIdentity": "b"}}) == expected
    assert await module_api.patch(f"{LEASES}/conditional", {
        "metadata": {"resourceVersion": None}, "spec": {"holderIdentity": "b"}},
        MERGE) == expected
    # a ConfigMap's strategy allows them: the stored version is taken
    await module_api.post(f"{NS}/configmaps", {"metadata": {"name": "unconditional"}})
    status, out = await module_api.put(f"{NS}/configmaps/unconditional", {
        "metadata": {"name": "unconditional"}, "data": {"a": "1"}})
    assert (status, out["data"]) == (200, {"a": "1"})


async def test_a_custom_resource_update_names_the_resource_when_it_lacks_a_version(
        widgets: API) -> None:
    """Rule: custom resources refuse unconditional updates, and the Invalid's kind is the
    resource (widgets), as for every kind.
    Source: k8s.io/apiextensions-apiserver pkg/registry/customresource/strategy.go
    (AllowUnconditionalUpdate: false), k8s.io/apiserver pkg/registry/generic/registry/
    store.go (Update)."""
    status, out = await widgets.post(WIDGETS, widget("no-version"))
    assert status == 201, out
    assert await widgets.put(f"{WIDGETS}/no-version", widget("no-version", spec={
        "size": 2})) == (422, _rv_required("widgets", "fidelity.example.com", "no-version"))


async def test_a_zero_resource_version_is_no_version_at_all(module_api: API) -> None:
    """Rule: "0" parses to the version 0, which store.go treats as none: a Lease's PUT with
    it is the Invalid of an unconditional update, a ConfigMap's is taken unconditionally.
    Source: k8s.io/apiserver pkg/registry/generic/registry/store.go (Update:
    "newResourceVersion, err := e.Storage.Versioner().ObjectResourceVersion(obj)" then
    "if newResourceVersion == 0 { ... must be specified for an update"), pkg/storage/
    api_object_versioner.go (ObjectResourceVersion: strconv.ParseUint)."""
    status, out = await module_api.post(LEASES, {"metadata": {"name": "zero-version"}})
    assert status == 201, out
    assert await module_api.put(f"{LEASES}/zero-version", {
        "metadata": {"name": "zero-version", "resourceVersion": "0"},
        "spec": {"holderIdentity": "b"}}) == (
        422, _rv_required("leases", "coordination.k8s.io", "zero-version"))
    await module_api.post(f"{NS}/configmaps", {"metadata": {"name": "zero-version"}})
    status, out = await module_api.put(f"{NS}/configmaps/zero-version", {
        "metadata": {"name": "zero-version", "resourceVersion": "0"}, "data": {"a": "1"}})
    assert (status, out["data"]) == (200, {"a": "1"}), out
