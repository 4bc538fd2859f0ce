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
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry.admissionpoints import ConversionPoint
    from setpoint.cluster.webhook.client import WebhookClient

REVIEW_VERSION = "apiextensions.k8s.io/v1"
TIMEOUT_S = 30  # what the apiserver allows a conversion webhook


class ConversionFailed(Exception):
    """The webhook could not convert; ``str()`` says why."""


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
        converted = await _call(client, webhook, sent, point.api_version)
    except ConversionFailed as exc:
        message = f"conversion webhook for {_gvk(point.api_version, point.rt.kind)} " \
                  f"failed: {exc}"
        raise StatusError(500, "InternalError", f"Internal error occurred: {message}",
                          causes=[Cause("", message, "")]) from None
    out = list(point.objects)
    for i, obj in zip(pending, converted, strict=True):
        out[i] = obj
    return out


async def _call(client: WebhookClient, webhook: Obj, objects: list[Obj],
                api_version: str) -> list[Obj]:
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
        raise ConversionFailed(f"returned {count} objects, expected {len(objects)}")
    return [_checked(i, original, new, api_version)
            for i, (original, new) in enumerate(zip(objects, converted, strict=True))]


def _checked(index: int, original: Obj, converted: Any, api_version: str) -> Obj:
    if not isinstance(converted, dict):
        raise ConversionFailed(f"invalid converted object at index {index}: not an object")
    if converted.get("apiVersion") != api_version:
        raise ConversionFailed(f"invalid converted object at index {index}: invalid "
                               f"apiVersion {converted.get('apiVersion', '')!r}, expected "
                               f"{api_version!r}")
    if converted.get("kind") != original.get("kind"):
        raise ConversionFailed(f"invalid converted object at index {index}: invalid kind "
                               f"{converted.get('kind', '')!r}, expected "
                               f"{original.get('kind', '')!r}")
    meta = dict(original.get("metadata") or {})
    new_meta = converted.get("metadata") or {}
    for key in ("labels", "annotations"):
        if new_meta.get(key):
            meta[key] = new_meta[key]
        else:
            meta.pop(key, None)
    return {**converted, "metadata": meta}
