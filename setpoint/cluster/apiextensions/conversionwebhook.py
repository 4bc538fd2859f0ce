"""Webhook conversion of custom resources (``spec.conversion.strategy: Webhook``).

A ConversionReview (apiextensions.k8s.io/v1) carries the objects and the desired
apiVersion; the answer must convert every object, in order, to that apiVersion and the same
kind. As the apiextensions-apiserver does, only labels and annotations of the metadata may
change: the rest is taken from the object sent. Objects already at the desired version are
not sent.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from setpoint.cluster.webhook import client as webhookclient
from setpoint.machinery.errors import Cause, StatusError
from setpoint.machinery.fielderrors import aggregate_text
from setpoint.machinery.gofmt import go_type
from setpoint.machinery.names import validate_annotations, validate_labels
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry.admissionpoints import ConversionPoint
    from setpoint.cluster.webhook.client import WebhookClient

REVIEW_VERSION = "apiextensions.k8s.io/v1"
TIMEOUT_S = 30  # what the apiserver allows a conversion webhook


class ConversionFailed(Exception):
    """The webhook could not convert; ``str()`` says why. ``returned``: its answer was
    usable but converted wrongly (Go words these "returned ...", not "failed: ...")."""

    def __init__(self, reason: str, *, returned: bool = False) -> None:
        super().__init__(reason)
        self.returned = returned


def _gvk(api_version: str, kind: str) -> str:
    group, _, version = api_version.rpartition("/")
    return f"{group}/{version}, Kind={kind}"


async def convert(client: WebhookClient, point: ConversionPoint) -> list[Obj]:
    """``point.objects`` at ``point.api_version``, or a 500 naming the webhook's failure."""
    pending = [i for i, o in enumerate(point.objects) if o.get("apiVersion") != point.api_version]
    if not pending:
        return list(point.objects)
    webhook = point.rt.conversion_webhook or {}
    sent = [point.objects[i] for i in pending]
    try:
        converted = await _call(client, webhook, sent, point.api_version, point.single)
    except ConversionFailed as exc:
        told = str(exc) if exc.returned else f"failed: {exc}"
        # Go names ``in.GetObjectKind()``: a single object's own version (the one converted
        # from), a list's the version asked for
        source = sent[0] if point.single else {}
        gvk = _gvk(_text(source.get("apiVersion")) or point.api_version,
                   _text(source.get("kind")) or point.rt.kind)
        message = f"conversion webhook for {gvk} {told}"
        raise StatusError(500, "InternalError", f"Internal error occurred: {message}",
                          causes=[Cause("", message, "")]) from None
    out = list(point.objects)
    for i, obj in zip(pending, converted, strict=True):
        out[i] = obj
    return out


async def _call(client: WebhookClient, webhook: Obj, objects: list[Obj],
                api_version: str, single: bool) -> list[Obj]:
    uid = str(uuid.uuid4())
    review = {"kind": "ConversionReview", "apiVersion": REVIEW_VERSION,
              "request": {"uid": uid, "desiredAPIVersion": api_version, "objects": objects}}
    try:
        answer = await client.post(webhook.get("clientConfig") or {}, review,
                                               TIMEOUT_S)
    except webhookclient.CallError as exc:
        raise ConversionFailed(str(exc)) from None
    if (answer.get("kind"), answer.get("apiVersion")) != ("ConversionReview", REVIEW_VERSION):
        raise ConversionFailed(f"expected webhook response of {REVIEW_VERSION}, "
                               f"Kind=ConversionReview, got {answer.get('apiVersion', '')}, "
                               f"Kind={answer.get('kind', '')}")
    response = answer.get("response")
    if not isinstance(response, dict):
        raise ConversionFailed("no response provided")
    if response.get("uid") != uid:
        raise ConversionFailed(f'expected response.uid="{uid}", got "{response.get("uid")}"')
    result = response.get("result") or {}
    if result.get("status") != "Success":
        raise ConversionFailed(f"conversion webhook returned failure: "
                               f"{result.get('message') or 'no explanation'}")
    converted = response.get("convertedObjects")
    if not isinstance(converted, list) or len(converted) != len(objects):
        count = len(converted) if isinstance(converted, list) else 0
        raise ConversionFailed(f"returned {count} objects, expected {len(objects)}",
                               returned=True)
    return [_checked(i, original, new, api_version, single)
            for i, (original, new) in enumerate(zip(objects, converted, strict=True))]


def _checked(index: int, original: Obj, converted: Any, api_version: str,
             single: bool) -> Obj:
    """A converted object checked as webhook_converter.go ``Convert`` checks it, in its
    words for a list's items or, when ``single``, for one object, with the original's
    metadata but for the labels and annotations."""
    if not isinstance(converted, dict):
        raise ConversionFailed(f"invalid converted object at index {index}: not an object")
    if single:  # Go's words for one object (its type checks say "at index 0" still)
        typed = "returned invalid object at index 0"
        checked = "returned invalid object"
        restored = "returned invalid metadata"
    else:
        typed = checked = f"returned invalid converted object at index {index}"
        restored = f"returned invalid metadata in object at index {index}"
    if converted.get("apiVersion") != api_version:
        raise ConversionFailed(f"{typed}: invalid groupVersion (expected {api_version}, "
                               f"received {_group_version(converted.get('apiVersion'))})",
                               returned=True)
    if converted.get("kind") != original.get("kind"):
        raise ConversionFailed(f"{typed}: invalid kind (expected {original.get('kind', '')}, "
                               f"received {_text(converted.get('kind'))})", returned=True)
    mismatch = _identity_mismatch(original, converted)
    if mismatch:
        raise ConversionFailed(f"{checked}: {mismatch}", returned=True)
    try:
        return {**converted, "metadata": _restored_metadata(original, converted)}
    except ValueError as exc:
        raise ConversionFailed(f"{restored}: {exc}", returned=True) from None


def _text(value: Any) -> str:
    """``unstructured.NestedString``'s answer: the string, or "" for anything else."""
    return value if isinstance(value, str) else ""


def _group_version(api_version: Any) -> str:
    """``schema.ParseGroupVersion(...).String()`` of what the webhook answered."""
    text = _text(api_version)
    return text if text.count("/") <= 1 else ""


def _identity_mismatch(original: Obj, converted: Obj) -> str:
    """``validateConvertedObject``: the same name, namespace and UID as the object sent."""
    before = original.get("metadata") or {}
    after = converted.get("metadata")
    after = after if isinstance(after, dict) else {}
    for key, shown in (("name", "name"), ("namespace", "namespace"), ("uid", "UID")):
        if _text(before.get(key)) != _text(after.get(key)):
            return f"must have the same {shown}: {_text(before.get(key))} != " \
                   f"{_text(after.get(key))}"
    return ""


def _restored_metadata(original: Obj, converted: Obj) -> Obj:
    """``restoreObjectMeta``: the original's metadata with the webhook's labels and
    annotations, string maps that ``ValidateLabels``/``ValidateAnnotations`` accept when they
    changed (Go's path for annotations is ``metadata.annotation``); ValueError says why not."""
    if "metadata" not in converted:
        raise ValueError("missing metadata in converted object")
    answered = converted["metadata"]
    if not isinstance(answered, dict):
        raise ValueError(f"invalid metadata of type {go_type(answered)} in converted object")
    meta = dict(original.get("metadata") or {})
    for key, path, validate in (("labels", "metadata.labels", validate_labels),
                                ("annotations", "metadata.annotation", validate_annotations)):
        given = answered.get(key)
        if given is None:
            meta.pop(key, None)
            continue
        if not isinstance(given, dict):
            raise ValueError(f"invalid metadata.{key} of type {go_type(given)} in converted "
                             "object")
        for name, value in given.items():
            if not isinstance(value, str):
                raise ValueError(f"metadata.{key}[{name}] must be a string, but is "
                                 f"{go_type(value)} in converted object")
        if given != (meta.get(key) or {}):
            causes = validate(given, path)
            if causes:
                raise ValueError(aggregate_text(causes))
        meta[key] = given
    return meta
