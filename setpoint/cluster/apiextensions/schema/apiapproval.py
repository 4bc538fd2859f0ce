"""The API approval policy for CRDs in the community's groups (*.k8s.io, *.kubernetes.io).

apihelpers/helpers.go (IsProtectedCommunityGroup, GetAPIApprovalState) decides the state of
the ``api-approved.kubernetes.io`` annotation; validation reads it on create and update, and
the apiapproval controller reports it as the KubernetesAPIApprovalPolicyConformant condition.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Literal

from setpoint.machinery.gofmt import go_quote

API_APPROVAL_ANNOTATION = "api-approved.kubernetes.io"
APPROVAL_CONDITION = "KubernetesAPIApprovalPolicyConformant"

ApprovalState = Literal["missing", "bypassed", "approved", "invalid"]

# url.ParseRequestURI then len(url.Host) > 0 && len(url.Scheme) > 0: an absolute URL with a
# scheme and a host (Go refuses spaces in a host and control characters anywhere)
_APPROVED_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*://([^/?#\s@]*@)?[^/?#\s@]+"
                           r"([/?#][^\x00-\x1f\x7f]*)?")

_MISSING = (f'protected groups must have approval annotation "{API_APPROVAL_ANNOTATION}", '
            "see https://github.com/kubernetes/enhancements/pull/1111")
_INVALID = (f'protected groups must have approval annotation "{API_APPROVAL_ANNOTATION}" with '
            'either a URL or a reason starting with "unapproved", '
            "see https://github.com/kubernetes/enhancements/pull/1111")


def is_protected_community_group(group: str) -> bool:
    return group in ("k8s.io", "kubernetes.io") or group.endswith((".k8s.io", ".kubernetes.io"))


def approval_state(crd: Mapping[str, Any]) -> tuple[ApprovalState, str]:
    """GetAPIApprovalState: the annotation's state and the reason Go gives for it."""
    annotations = ((crd.get("metadata") or {}).get("annotations")) or {}
    value = str(annotations.get(API_APPROVAL_ANNOTATION) or "")
    if not value:
        return "missing", _MISSING
    if value.startswith("unapproved"):
        return "bypassed", f"not approved: {go_quote(value)}"
    if _APPROVED_URL.fullmatch(value):
        return "approved", f"approved in {value}"
    return "invalid", _INVALID


def approval_condition(crd: Mapping[str, Any]) -> tuple[str, str, str] | None:
    """apiapproval_controller.go calculateCondition: (status, reason, message), or None
    outside the protected groups (no condition at all)."""
    group = str(((crd.get("spec") or {}).get("group")) or "")
    if not is_protected_community_group(group):
        return None
    state, reason = approval_state(crd)
    status, why = {"invalid": ("False", "InvalidAnnotation"),
                   "missing": ("False", "MissingAnnotation"),
                   "approved": ("True", "ApprovedAnnotation"),
                   "bypassed": ("False", "UnapprovedAnnotation")}[state]
    return status, why, reason

