"""A custom resource's field selectors: its version's ``selectableFields`` (GA and locked on
in 1.32: apiextensions-apiserver v0.32 pkg/features/kube_features.go
CustomResourceFieldSelectors).

- pkg/apis/apiextensions/validation/validation.go ValidateCustomResourceSelectableFields:
  each jsonPath through pkg/apiserver/schema/cel/validation.go ValidFieldPath without array
  notation ("is an invalid path: <why>"), not into metadata, to a string, boolean or integer,
  no duplicates, at most 8.
- pkg/apiserver/conversion/converter.go crConverter.ConvertFieldLabel: metadata.name,
  metadata.namespace when namespaced, then the requested version's selectable fields (a
  leading dot trimmed); anything else "field label not supported: <label>", a 400 BadRequest
  on a LIST as on a WATCH (k8s.io/apiserver handlers/get.go).
- pkg/registry/customresource/strategy.go selectableFields: the value by jsonpath as
  ``fmt.Sprint`` writes it (booleans "true"/"false"), "" when the field is unset.
"""

from __future__ import annotations

from typing import Any

import pytest
import pytest_asyncio

from tests.cluster.conftest import API
from tests.cluster.fidelity.conftest import Kubectl, names_selected
from tests.cluster.fidelity.writes import failure
from tests.waiting import wait_for

pytestmark = pytest.mark.asyncio(loop_scope="module")

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
GADGETS = "/apis/example.com/{version}/namespaces/default/gadgets"
SPEC = {"type": "object", "properties": {
    "color": {"type": "string"}, "size": {"type": "integer"}, "enabled": {"type": "boolean"},
    "shape": {"type": "string"}, "dims": {"type": "object", "properties": {}},
    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    "sizes": {"type": "array", "items": {"type": "integer"}}}}


def _crd(name: str, selectable: list[str], versions: tuple[str, ...] = ("v1",)
         ) -> dict[str, Any]:
    plural = name.split(".")[0]
    schema = {"openAPIV3Schema": {"type": "object", "properties": {"spec": SPEC}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": name},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": plural, "singular": plural[:-1],
                               "kind": plural[:-1].capitalize()},
                     "versions": [
                         {"name": v, "served": True, "storage": i == 0, "schema": schema,
                          **({"selectableFields": [{"jsonPath": p} for p in selectable]}
                             if i == 0 else {})}
                         for i, v in enumerate(versions)]}}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def gadgets(module_api: API) -> None:
    """gadgets.example.com: v1 (stored) selects by color, size and enabled; v2 by nothing."""
    status, out = await module_api.post(CRDS, _crd(
        "gadgets.example.com", [".spec.color", ".spec.size", ".spec.enabled",
                                ".spec.labels.team"], ("v1", "v2")))
    assert status == 201, out

    async def served() -> bool:
        return (await module_api.get(GADGETS.format(version="v2")))[0] == 200

    await wait_for(served)
    for name, spec in (("a", {"color": "red", "size": 3, "enabled": True,
                              "labels": {"team": "x"}}),
                       ("b", {"color": "blue", "enabled": False}),
                       ("c", {})):
        status, out = await module_api.post(GADGETS.format(version="v1"), {
            "apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": name},
            "spec": spec})
        assert status == 201, out


async def test_selectable_field_paths_are_validated(module_api: API) -> None:
    """Rule: ValidateCustomResourceSelectableFields, causes in the order of the fields."""
    paths = [".spec.color", ".spec.sizes[0]", ".spec.nope", ".spec.dims", ".spec.color",
             "spec.shape", ".spec.", ".spec.color.x", ".spec.labels.team", ".spec.shape"]
    status, out = await module_api.post(CRDS, _crd("widgets.example.com", paths))
    base = "spec.versions[0].selectableFields"
    invalid = {1: "is an invalid path: array notation is not allowed",
               2: "is an invalid path: does not refer to a valid field",
               3: "must point to a field of type string, boolean or integer. Enum string "
                  "fields and strings with formats are allowed.",
               5: "is an invalid path: expected [ or . but got: spec",
               6: "is an invalid path: unexpected end of JSON path",
               7: "is an invalid path: does not refer to a valid field"}
    causes = []
    for i, path in enumerate(paths):
        field = f"{base}[{i}].jsonPath"
        if i in invalid:
            causes.append({"reason": "FieldValueInvalid",
                           "message": f'Invalid value: "{path}": {invalid[i]}',
                           "field": field})
        elif i == 4:
            causes.append({"reason": "FieldValueDuplicate",
                           "message": f'Duplicate value: "{path}"', "field": field})
    listed = ", ".join(f"{c['field']}: {c['message']}" for c in causes)
    assert (status, out) == (422, failure(
        422, "Invalid", 'CustomResourceDefinition.apiextensions.k8s.io "widgets.example.com" '
                        f"is invalid: [{listed}]",
        {"name": "widgets.example.com", "group": "apiextensions.k8s.io",
         "kind": "CustomResourceDefinition", "causes": causes}))


async def test_custom_resources_are_selected_by_their_selectable_fields(
        module_api: API, gadgets: None) -> None:
    """Rule: strategy.go selectableFields: strings as they are, integers and booleans as
    fmt.Sprint writes them, a map's key by its dotted path, "" for an unset field."""
    v1 = GADGETS.format(version="v1")
    for selector, names in (("spec.color%3Dred", ["a"]),
                            ("spec.color!%3Dred", ["b", "c"]),
                            ("spec.size%3D3", ["a"]),
                            ("spec.size%3D", ["b", "c"]),
                            ("spec.enabled%3Dtrue", ["a"]),
                            ("spec.enabled%3Dfalse", ["b"]),
                            ("spec.labels.team%3Dx", ["a"]),
                            ("metadata.namespace%3Ddefault%2Cspec.color%3Dblue", ["b"])):
        assert await names_selected(module_api, v1, selector) == (200, names), selector


@pytest.mark.parametrize("watch", ["", "&watch=true"])
async def test_a_field_no_version_selects_is_refused(module_api: API, gadgets: None,
                                                     watch: str) -> None:
    """Rule: crConverter.ConvertFieldLabel looks up the requested version's fields: v2 has
    none, so spec.color is refused there as an unlisted field is on v1."""
    for version, label in (("v1", "spec.shape"), ("v2", "spec.color"), ("v1", ".spec.color")):
        path = f"{GADGETS.format(version=version)}?fieldSelector={label}%3Dred{watch}"
        assert await module_api.get(path) == (400, failure(
            400, "BadRequest", f"field label not supported: {label}")), (version, label)


async def test_kubectl_selects_custom_resources(gadgets: None,
                                               module_kubectl: Kubectl) -> None:
    """Rule: kubectl get --field-selector sends fieldSelector as is; a refusal comes back
    through kubectl's resource builder (k8s.io/cli-runtime pkg/resource/selector.go) as
    "Unable to find ... that match label selector ..., field selector ...: <message>"."""
    assert await module_kubectl("get", "gadgets.v1.example.com", "--field-selector",
                                "spec.enabled=false", "-o", "name") == (
        0, "gadget.example.com/b\n", "")
    code, _, err = await module_kubectl("get", "gadgets.v1.example.com", "--field-selector",
                                        "spec.shape=round")
    assert (code, err) == (1, 'Error from server (BadRequest): Unable to find '
                              '"example.com/v1, Resource=gadgets" that match label selector "", '
                              'field selector "spec.shape=round": field label not supported: '
                              'spec.shape\n')
