"""JSON merge patch (RFC 7386, ``application/merge-patch+json``) as the kube-apiserver applies it.

The apiserver uses ``evanphx/json-patch`` v4's ``MergePatch``, which differs from the RFC's
pseudo-code in one visible way: a value that lands where the document had nothing (or a
non-object) has its nulls pruned at every depth, also inside the objects of arrays.

The result's members come in the order of the JSON text ``MergePatch`` writes, which is the
order the apiserver's strict decoder meets unknown fields in (and warns about them): every
object the patch merges into, and every object of a value it prunes, is a ``partialDoc`` (a
Go map, marshaled with sorted keys); the objects it does not reach keep their order.
"""

from __future__ import annotations

from typing import Any

import orjson

from setpoint.machinery.errors import bad_request, invalid
from setpoint.machinery.fielderrors import invalid as invalid_value


def merge_patch(doc: dict[str, Any], patch: Any) -> dict[str, Any]:
    """Apply a JSON merge patch to ``doc`` and return the patched object.

    ``null`` removes a member, objects merge recursively, anything else (arrays included)
    replaces. Raises ``StatusError``: 400 ``Invalid JSON Patch`` for a ``null`` or scalar
    body, and 422 for an array body (the apiserver cannot decode the array it produces into
    an object). ``doc`` and ``patch`` are never modified; the result shares untouched
    subtrees with ``doc``.
    """
    if isinstance(patch, dict):
        return _merge_object(doc, patch)
    if isinstance(patch, list):
        patched = _prune(patch)
        text = orjson.dumps(patched).decode()
        raise invalid("", "", [invalid_value(
            "patch", text,
            "couldn't get version/kind; json parse error: json: cannot unmarshal array into "
            "Go value of type struct { APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; "
            "Kind string \"json:\\\"kind,omitempty\\\"\" }",
        )])
    raise bad_request("Invalid JSON Patch")


def _merge_object(doc: dict[str, Any], patch: dict[str, Any]) -> dict[str, Any]:
    out = dict(doc)  # (mergeDocs on the document's partialDoc: re-marshaled sorted below)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
            continue
        current = out.get(key)
        if current is None or not isinstance(current, dict):
            out[key] = _prune(value)
        elif isinstance(value, dict):
            out[key] = _merge_object(current, value)
        else:
            # an object replaced by an array or a scalar: taken as sent, nulls and all
            out[key] = value
    return dict(sorted(out.items()))


def _prune(value: Any) -> Any:
    """A copy of ``value`` without null object members at any depth (array nulls stay),
    its objects sorted as ``pruneNulls`` leaves them (each turned into a ``partialDoc``)."""
    if isinstance(value, dict):
        return {k: _prune(v) for k, v in sorted(value.items()) if v is not None}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value
