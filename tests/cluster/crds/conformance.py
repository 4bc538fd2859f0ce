"""Replays the CRD conformance scenarios (requests and recorded answers) for these tests."""

from __future__ import annotations

import copy
import json
from collections import Counter
from typing import Any

import yaml

from setpoint.machinery.errors import Cause
from tests.conftest import SHARED

CORPUS = SHARED / "conformance"
NS = "ns1"
GROUP = f"{NS}.example.com"


def _subst(value: Any, variables: dict[str, str]) -> Any:
    if isinstance(value, str):
        for k, v in variables.items():
            value = value.replace("${" + k + "}", v)
        return value
    if isinstance(value, list):
        return [_subst(v, variables) for v in value]
    if isinstance(value, dict):
        return {_subst(k, variables): _subst(v, variables) for k, v in value.items()}
    return value


def _normalize(value: Any) -> Any:
    """Golden answers write the namespace as ``${ns}``."""
    return _subst(value, {"ns": NS})


def scenario(name: str) -> tuple[list[dict[str, Any]], dict[int, dict[str, Any]]]:
    """The scenario's steps (variables substituted) and the golden steps by index."""
    raw = yaml.safe_load((CORPUS / "scenarios" / f"{name}.yaml").read_text())
    steps = _subst(raw["steps"], {"ns": NS, "group": GROUP})
    golden = json.loads((CORPUS / "golden" / f"{name}.json").read_text())
    return steps, {s["i"]: _normalize(s) for s in golden["steps"]}


def causes_of(golden_step: dict[str, Any]) -> Counter[tuple[str, str]]:
    body = golden_step["response"]["body"]
    return Counter((c["reason"], c.get("field", "")) for c in body["details"].get("causes", []))


def multiset(causes: list[Cause]) -> Counter[tuple[str, str]]:
    return Counter((c.reason, c.field) for c in causes)


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    out = dict(target) if isinstance(target, dict) else {}
    for k, v in patch.items():
        if v is None:
            out.pop(k, None)
        else:
            out[k] = merge_patch(out.get(k), v)
    return out
