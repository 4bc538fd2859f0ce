"""Type errors name JSON (or Go) types, as kube-apiserver's decoder words them, never Python's.

encoding/json's UnmarshalTypeError names the JSON value ("cannot unmarshal string into Go
struct field ConfigMap.metadata of type v1.ObjectMeta"; k8s.io/apimachinery's json serializer
passes it through in ``... cannot be handled as a ...``).
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.cluster.conftest import API


@pytest.mark.parametrize(("metadata", "json_kind"), [
    ("x", "string"), (1, "number"), ([1], "array"), (True, "bool")])
async def test_metadata_of_the_wrong_type_names_its_json_type(api: API, metadata: Any,
                                                              json_kind: str) -> None:
    code, body = await api.post(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
         "metadata": metadata})
    assert code == 400
    assert body["message"] == (
        'CustomResourceDefinition in version "v1" cannot be handled as a '
        f"CustomResourceDefinition: json: cannot unmarshal {json_kind} into Go struct field "
        "CustomResourceDefinition.metadata of type v1.ObjectMeta")
