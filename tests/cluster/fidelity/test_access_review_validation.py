"""Access reviews: the validation a (Self/Local)SubjectAccessReview gets before it is answered.

Sources (kubernetes/kubernetes, release 1.32): pkg/apis/authorization/validation/validation.go
(ValidateSubjectAccessReviewSpec, ValidateSelfSubjectAccessReviewSpec,
ValidateLocalSubjectAccessReview); pkg/registry/authorization/*/rest.go, which report the
errors with the Kind of the decoded internal object (left empty by the conversion to the
internal version: apimachinery runtime/scheme.go setTargetKind), hence
`.authorization.k8s.io "" is invalid`.
"""

from __future__ import annotations

from tests.cluster.fidelity.builtin_server import Kube

AUTHZ = "/apis/authorization.k8s.io/v1"
EXACTLY_ONE = ('spec.resourceAttributes: Invalid value: "null": exactly one of '
               "nonResourceAttributes or resourceAttributes must be specified")


def test_self_review_needs_exactly_one_attribute_set(kube: Kube) -> None:
    status, answer = kube.call("POST", f"{AUTHZ}/selfsubjectaccessreviews", {"spec": {}})
    assert (status, answer["message"]) == (422, f'.authorization.k8s.io "" is invalid: '
                                                f"{EXACTLY_ONE}")
    assert answer["details"]["causes"] == [{
        "reason": "FieldValueInvalid", "field": "spec.resourceAttributes",
        "message": 'Invalid value: "null": exactly one of nonResourceAttributes or '
                   "resourceAttributes must be specified"}]
    status, answer = kube.call("POST", f"{AUTHZ}/selfsubjectaccessreviews", {"spec": {
        "resourceAttributes": {"verb": "get"},
        "nonResourceAttributes": {"path": "/x", "verb": "get"}}})
    assert (status, answer["message"]) == (422, (
        '.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: Invalid value: '
        'authorization.NonResourceAttributes{Path:"/x", Verb:"get"}: cannot be specified in '
        "combination with resourceAttributes"))


def test_subject_review_needs_a_subject(kube: Kube) -> None:
    status, answer = kube.call("POST", f"{AUTHZ}/subjectaccessreviews", {"spec": {}})
    assert (status, answer["message"]) == (422, (
        f'.authorization.k8s.io "" is invalid: [{EXACTLY_ONE}, spec.user: Invalid value: "": '
        "at least one of user or group must be specified]"))
    status, answer = kube.call("POST", f"{AUTHZ}/subjectaccessreviews", {"spec": {
        "groups": ["system:authenticated"],
        "nonResourceAttributes": {"path": "/version", "verb": "get"}}})
    assert (status, answer["status"]["allowed"]) == (201, True)


def test_local_review_stays_in_its_namespace(kube: Kube) -> None:
    path = f"{AUTHZ}/namespaces/default/localsubjectaccessreviews"
    status, answer = kube.call("POST", path, {"spec": {
        "user": "bob", "resourceAttributes": {"verb": "get", "namespace": "other"}}})
    assert (status, answer["message"]) == (422, (
        '.authorization.k8s.io "" is invalid: spec.resourceAttributes.namespace: Invalid '
        'value: "other": must match metadata.namespace'))
    status, answer = kube.call("POST", path, {"spec": {
        "user": "bob", "nonResourceAttributes": {"path": "/x", "verb": "get"}}})
    assert (status, answer["message"]) == (422, (
        '.authorization.k8s.io "" is invalid: spec.nonResourceAttributes: Invalid value: '
        'authorization.NonResourceAttributes{Path:"/x", Verb:"get"}: disallowed on this kind '
        "of request"))
    status, answer = kube.call("POST", path, {"spec": {
        "user": "bob", "resourceAttributes": {"verb": "get", "namespace": "default"}}})
    assert (status, answer["status"]["allowed"]) == (201, False)
