"""A namespaced ``widgets`` CustomResourceDefinition for the CRD fidelity tests: its
definition in a group of the test's choosing, created and waited on until served."""

from __future__ import annotations

from typing import Any

from tests.cluster.conftest import API
from tests.waiting import wait_for

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def widget_crd(group: str, spec_schema: dict[str, Any], **version: Any) -> dict[str, Any]:
    """A namespaced ``widgets`` CRD of ``group`` with one version, ``v1``."""
    schema = {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec_schema}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"widgets.{group}"},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": schema, **version}]}}


def widgets_path(crd: dict[str, Any]) -> str:
    return f"/apis/{crd['spec']['group']}/v1/namespaces/default/widgets"


def widget(crd: dict[str, Any], name: str, spec: Any) -> dict[str, Any]:
    return {"apiVersion": f"{crd['spec']['group']}/v1", "kind": "Widget",
            "metadata": {"name": name}, "spec": spec}


async def create_served(api: API, crd: dict[str, Any]) -> str:
    """Create ``crd`` and wait until its resource answers; its collection path."""
    status, body = await api.post(CRDS, crd)
    assert status == 201, body
    path = widgets_path(crd)

    async def served() -> bool:
        return (await api.get(path))[0] == 200

    await wait_for(served)
    return path
