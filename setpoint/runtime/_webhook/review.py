"""``AdmissionReview``: what the API server sends an admission webhook, and the answer.

The wire format is ``admission.k8s.io/v1`` (``v1beta1`` has the same shape and is answered
in kind). A request the server cannot even read as a review (empty or non-JSON body, wrong
content type, unknown ``apiVersion``, no ``request``) raises :class:`ReviewError`, which the
HTTP layer answers with 400; everything after that is answered inside a review, with
``allowed: false`` and a Status (the response's ``status`` field) when it is refused.

A mutating answer carries a JSON Patch (RFC 6902) from the object as the API server sent it
to the object as the webhook left it, base64-encoded with ``patchType: JSONPatch``.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import jsonpatch
import orjson

from setpoint.machinery.objects import Obj

ADMISSION_VERSIONS = ("admission.k8s.io/v1", "admission.k8s.io/v1beta1")
OPERATIONS = ("CREATE", "UPDATE", "DELETE", "CONNECT")
JSON_MEDIA_TYPE = "application/json"


class ReviewError(ValueError):
    """The body is not a review this webhook can read (answered with HTTP 400)."""


@dataclass(frozen=True)
class UserInfo:
    """Who made the request (``request.userInfo``)."""

    username: str = ""
    uid: str = ""
    groups: tuple[str, ...] = ()
    extra: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Any) -> UserInfo:
        data = data if isinstance(data, dict) else {}
        extra = data.get("extra") if isinstance(data.get("extra"), dict) else {}
        return cls(username=str(data.get("username") or ""), uid=str(data.get("uid") or ""),
                   groups=tuple(str(g) for g in data.get("groups") or ()),
                   extra={str(k): [str(x) for x in v or ()] for k, v in extra.items()})


@dataclass(frozen=True)
class AdmissionRequest:
    """``request`` of an AdmissionReview; ``raw`` is the request as it came.

    ``kind`` is ``{group, version, kind}`` of ``object``; ``resource`` is
    ``{group, version, resource}``; ``object`` and ``old_object`` are the JSON objects
    (``old_object`` on UPDATE and DELETE, ``object`` on CREATE and UPDATE).
    """

    uid: str
    operation: str
    kind: dict[str, str]
    resource: dict[str, str]
    name: str = ""
    namespace: str = ""
    sub_resource: str = ""
    user_info: UserInfo = field(default_factory=UserInfo)
    object: Obj | None = None
    old_object: Obj | None = None
    dry_run: bool = False
    options: Obj | None = None
    raw: Obj = field(default_factory=dict, repr=False)

    @classmethod
    def from_dict(cls, data: Obj) -> AdmissionRequest:
        """Read ``request``; a malformed field raises :class:`ReviewError`."""
        for key in ("object", "oldObject", "options"):
            if data.get(key) is not None and not isinstance(data[key], dict):
                raise ReviewError(f"request.{key} must be a JSON object")
        return cls(
            uid=str(data.get("uid") or ""),
            operation=str(data.get("operation") or ""),
            kind=_gvk(data.get("kind")),
            resource=_gvk(data.get("resource")),
            name=str(data.get("name") or ""),
            namespace=str(data.get("namespace") or ""),
            sub_resource=str(data.get("subResource") or ""),
            user_info=UserInfo.from_dict(data.get("userInfo")),
            object=data.get("object"),
            old_object=data.get("oldObject"),
            dry_run=bool(data.get("dryRun")),
            options=data.get("options"),
            raw=data,
        )


def _gvk(value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ReviewError("request.kind and request.resource must be JSON objects")
    return {str(k): str(v) for k, v in value.items()}


@dataclass
class AdmissionResponse:
    """``response`` of an AdmissionReview.

    ``result`` is a ``metav1.Status`` (without kind/apiVersion), sent as ``status`` as Go's
    ``Result`` field is; ``patch`` the JSON Patch operations, sent base64-encoded with
    ``patchType: JSONPatch`` when not empty.
    """

    uid: str
    allowed: bool
    result: Obj | None = None
    patch: list[Obj] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    audit_annotations: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> Obj:
        out: Obj = {"uid": self.uid, "allowed": self.allowed}
        if self.audit_annotations:
            out["auditAnnotations"] = dict(self.audit_annotations)
        if self.result is not None:
            out["status"] = self.result  # Go's Result field is "status" on the wire
        if self.patch:
            out["patch"] = base64.b64encode(orjson.dumps(self.patch)).decode("ascii")
            out["patchType"] = "JSONPatch"
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


def status_result(code: int, *, message: str = "", reason: str = "",
                  failure: bool = False) -> Obj:
    """A ``metav1.Status`` as a review response's ``status`` (Go always writes
    ``metadata``)."""
    out: Obj = {"metadata": {}}
    if failure:
        out["status"] = "Failure"
    if message:
        out["message"] = message
    if reason:
        out["reason"] = reason
    out["code"] = code
    return out


def allowed(uid: str, *, warnings: list[str] | None = None) -> AdmissionResponse:
    """Admit as it is (``result.code`` 200, as controller-runtime answers)."""
    return AdmissionResponse(uid, True, status_result(200), warnings=list(warnings or ()))


def patched(uid: str, original: Obj, mutated: Obj, *,
            warnings: list[str] | None = None) -> AdmissionResponse:
    """Admit with the JSON Patch that turns ``original`` into ``mutated``."""
    response = allowed(uid, warnings=warnings)
    response.patch = json_patch(original, mutated)
    return response


def refused(uid: str, status: Obj, *, warnings: list[str] | None = None) -> AdmissionResponse:
    """Refuse with the given ``metav1.Status`` (its kind/apiVersion dropped)."""
    result = {k: v for k, v in status.items() if k not in ("kind", "apiVersion")}
    result.setdefault("metadata", {})
    return AdmissionResponse(uid, False, result, warnings=list(warnings or ()))


def errored(uid: str, code: int, message: str) -> AdmissionResponse:
    """Refuse because the webhook could not decide (controller-runtime's ``Errored``):
    the Status holds only the code and the message."""
    return AdmissionResponse(uid, False, status_result(code, message=message))


def json_patch(original: Obj, mutated: Obj) -> list[Obj]:
    """The RFC 6902 operations from ``original`` to ``mutated``."""
    ops: list[Obj] = jsonpatch.make_patch(original, mutated).patch
    return ops


def read_review(body: bytes, content_type: str, kind: str, versions: tuple[str, ...],
                missing_request: str) -> tuple[str, Obj]:
    """The ``apiVersion`` and ``request`` of a review of ``kind`` in one of ``versions``, or
    :class:`ReviewError` saying why the body is not one (``missing_request`` when it lacks
    the request)."""
    if not body:
        raise ReviewError("request body is empty")
    if content_type != JSON_MEDIA_TYPE:
        raise ReviewError(f"contentType={content_type}, expected {JSON_MEDIA_TYPE}")
    try:
        review = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ReviewError(f"couldn't decode the {kind}: {exc}") from None
    if not isinstance(review, dict):
        raise ReviewError(f"couldn't decode the {kind}: not a JSON object")
    api_version, got = review.get("apiVersion"), review.get("kind")
    if got != kind or api_version not in versions:
        article = "an" if kind[0] in "AEIOU" else "a"
        raise ReviewError(
            f"no kind \"{got or ''}\" is registered for version \"{api_version or ''}\": "
            f"expected {article} {kind} of {' or '.join(versions)}")
    request = review.get("request")
    if not isinstance(request, dict):
        raise ReviewError(missing_request)
    return str(api_version), request


def decode_review(body: bytes, content_type: str) -> tuple[str, AdmissionRequest]:
    """The review's ``apiVersion`` and request, or :class:`ReviewError` saying why not."""
    api_version, request = read_review(body, content_type, "AdmissionReview",
                                       ADMISSION_VERSIONS,
                                       "got an empty AdmissionReview request")
    return api_version, AdmissionRequest.from_dict(request)


def encode_review(api_version: str, response: AdmissionResponse) -> Obj:
    """The AdmissionReview that carries ``response``, in the request's version."""
    return {"kind": "AdmissionReview", "apiVersion": api_version,
            "response": response.to_dict()}


def review_error(message: str) -> Obj:
    """The body of a 400 answer: a review whose response says what was wrong."""
    return encode_review(ADMISSION_VERSIONS[0], errored("", 400, message))
