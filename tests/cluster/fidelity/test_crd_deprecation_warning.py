"""The text of a CRD version's deprecationWarning.

kube-apiserver 1.32: apiextensions-apiserver v0.32 pkg/apis/apiextensions/validation/
validation.go (validateDeprecationWarning: every problem is reported, lengths and indexes
are UTF-8 bytes, non-printable runes are refused by unicode.IsPrint).
"""

from __future__ import annotations

from typing import Any

from tests.cluster.conftest import API

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
FIELD = "spec.versions[1].deprecationWarning"


def _crd(warning: str) -> dict[str, Any]:
    schema = {"openAPIV3Schema": {"type": "object"}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "notes.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"plural": "notes", "kind": "Note"},
                     "versions": [
                         {"name": "v1", "served": True, "storage": True, "schema": schema},
                         {"name": "v2", "served": True, "storage": False, "schema": schema,
                          "deprecated": True, "deprecationWarning": warning}]}}


async def _messages(api: API, warning: str) -> list[str]:
    status, body = await api.post(CRDS, _crd(warning))
    assert status == 422, body
    assert {c["field"] for c in body["details"]["causes"]} == {FIELD}
    return [c["message"] for c in body["details"]["causes"]]


async def test_non_printable_characters_are_refused_at_their_byte_index(api: API) -> None:
    assert await _messages(api, "café\tnote") == [
        'Invalid value: "café\\tnote": must only contain printable UTF-8 characters; '
        "non-printable character found at index 5"]


async def test_a_long_warning_with_a_line_break_gets_both_errors(api: API) -> None:
    # 255 characters, but 257 bytes: the limit counts bytes
    warning = "é" * 2 + "\n" + "x" * 252
    messages = await _messages(api, warning)
    assert [m.split(": ", 2)[2] for m in messages] == [
        "must be <= 256 characters long",
        "must only contain printable UTF-8 characters; non-printable character found at "
        "index 4"]


async def test_a_printable_warning_is_accepted(api: API) -> None:
    status, body = await api.post(CRDS, _crd("v2 is going away — use v1"))
    assert status == 201, body
