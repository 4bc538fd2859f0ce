"""Reading the recorded answers of the real kube-apiserver (shared/conformance/golden)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.conftest import SHARED

GOLDEN = SHARED / "conformance" / "golden"


def golden_steps(scenario: str) -> dict[str, Any]:
    """The recorded steps of ``scenario`` by name (skips when the corpus is absent)."""
    path = GOLDEN / f"{scenario}.json"
    if not path.exists():
        pytest.skip(f"conformance corpus not found at {GOLDEN}")
    return {step["name"]: step for step in json.loads(path.read_text())["steps"]}


def golden_body(scenario: str, step: str) -> Any:
    return golden_steps(scenario)[step]["response"]["body"]


def crd_resource_type(crd: dict[str, Any], version: str = "v1") -> Any:
    """The ResourceType a CRD version is served as (what the CRD registry builds)."""
    from setpoint.cluster.registry import ResourceType, ScalePaths
    from setpoint.cluster.registry.strategy import Strategy

    spec = crd["spec"]
    names = spec["names"]
    served = next(v for v in spec["versions"] if v["name"] == version)
    subs = served.get("subresources") or {}
    scale = subs.get("scale")
    return ResourceType(
        group=spec["group"], version=version, resource=names["plural"], kind=names["kind"],
        namespaced=spec.get("scope", "Namespaced") == "Namespaced",
        singular=names.get("singular", ""), short_names=tuple(names.get("shortNames") or ()),
        categories=tuple(names.get("categories") or ()),
        subresources=tuple(s for s in ("status", "scale") if s in subs),
        scale=ScalePaths(scale["specReplicasPath"], scale["statusReplicasPath"],
                         scale.get("labelSelectorPath")) if scale else None,
        crd=crd, storage_version=bool(served.get("storage")), strategy=Strategy())
