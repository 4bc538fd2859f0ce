"""RBAC roles and bindings: the validation beyond metadata.

Source (kubernetes/kubernetes, release 1.32): pkg/apis/rbac/validation/validation.go
(validatePolicyRule, ValidateClusterRole's aggregationRule, ValidateRoleBinding,
ValidateClusterRoleBinding, validateRoleBindingSubject, the *Update functions' "cannot
change roleRef"); pkg/apis/rbac/v1/defaults.go (roleRef and subject apiGroup defaults).
"""

from __future__ import annotations

from tests.cluster.fidelity.builtin_server import MERGE, Kube

RBAC = "/apis/rbac.authorization.k8s.io/v1"
ROLES = f"{RBAC}/namespaces/default/roles"
BINDINGS = f"{RBAC}/namespaces/default/rolebindings"
VIEW = {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}


def test_policy_rules(kube: Kube) -> None:
    """validatePolicyRule: verbs always; resource rules need groups and resources; a
    namespaced rule never names non-resource URLs, and no rule names both."""
    body = {"metadata": {"name": "rules"}, "rules": [
        {"verbs": []},
        {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"],
         "nonResourceURLs": ["/x"]},
        {"verbs": ["get"], "apiGroups": [""], "resources": ["pods", "secrets"],
         "resourceNames": ["a"]},
    ]}
    assert kube.messages("POST", ROLES, body) == {
        "rules[0].verbs": ["Required value: verbs must contain at least one value"],
        "rules[0].apiGroups": [
            "Required value: resource rules must supply at least one api group"],
        "rules[0].resources": [
            "Required value: resource rules must supply at least one resource"],
        "rules[1].nonResourceURLs": [
            'Invalid value: []string{"/x"}: namespaced rules cannot apply to non-resource URLs',
            'Invalid value: []string{"/x"}: rules cannot apply to both regular resources and '
            "non-resource URLs"],
        "rules[2].resourceNames": [
            "Required value: resource names cannot apply to multiple resources"],
    }
    # a ClusterRole may name non-resource URLs
    status, _ = kube.call("POST", f"{RBAC}/clusterroles", {
        "metadata": {"name": "audit-nonresource"},
        "rules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}]})
    assert status == 201


def test_aggregation_rule(kube: Kube) -> None:
    """ValidateClusterRole: an aggregationRule needs a selector, and each must be valid."""
    path = f"{RBAC}/clusterroles"
    assert kube.messages("POST", path, {
        "metadata": {"name": "agg-empty"}, "aggregationRule": {}}) == {
        "aggregationRule.clusterRoleSelectors": [
            "Required value: at least one clusterRoleSelector required if aggregationRule "
            "is non-nil"]}
    assert kube.messages("POST", path, {
        "metadata": {"name": "agg-bad"}, "aggregationRule": {"clusterRoleSelectors": [
            {"matchExpressions": [{"key": "a", "operator": "Bad"}]}]}}) == {
        "aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator": [
            'Invalid value: "Bad": not a valid selector operator'],
        "aggregationRule.clusterRoleSelectors[0]": [
            'Invalid value: "null": invalid label selector.']}


def test_binding_role_ref_and_subjects(kube: Kube) -> None:
    """ValidateRoleBinding / validateRoleBindingSubject: the roleRef's group and kind are
    closed sets; each subject kind has its own rules (a User or Group gets the RBAC group
    by default, so only an explicit other group is refused)."""
    body = {"metadata": {"name": "bad"},
            "roleRef": {"apiGroup": "x", "kind": "Pod", "name": ""},
            "subjects": [{"kind": "User"},
                         {"kind": "ServiceAccount", "name": "a",
                          "apiGroup": "rbac.authorization.k8s.io"},
                         {"kind": "Group", "name": "g", "apiGroup": "x"},
                         {"kind": "Robot", "name": "r"},
                         {"kind": "ServiceAccount", "name": "Not_DNS"}]}
    messages = kube.messages("POST", BINDINGS, body)
    assert messages["roleRef.apiGroup"] == [
        'Unsupported value: "x": supported values: "rbac.authorization.k8s.io"']
    assert messages["roleRef.kind"] == [
        'Unsupported value: "Pod": supported values: "Role", "ClusterRole"']
    assert messages["roleRef.name"] == ["Required value"]
    assert messages["subjects[0].name"] == [
        "Required value", 'Invalid value: "": user name cannot be empty']
    assert messages["subjects[1].apiGroup"] == [
        'Unsupported value: "rbac.authorization.k8s.io": supported values: ""']
    assert messages["subjects[2].apiGroup"] == [
        'Unsupported value: "x": supported values: "rbac.authorization.k8s.io"']
    assert messages["subjects[3].kind"] == [
        'Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"']
    assert messages["subjects[4].name"][0].startswith(
        'Invalid value: "Not_DNS": a lowercase RFC 1123 subdomain')


def test_cluster_role_binding_rules(kube: Kube) -> None:
    """ValidateClusterRoleBinding: only a ClusterRole, and a service account subject
    names its namespace."""
    assert kube.messages("POST", f"{RBAC}/clusterrolebindings", {
        "metadata": {"name": "crb-bad"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "sa"}]}) == {
        "roleRef.kind": ['Unsupported value: "Role": supported values: "ClusterRole"'],
        "subjects[0].namespace": ["Required value"]}


def test_role_ref_cannot_change(kube: Kube) -> None:
    """ValidateRoleBindingUpdate: the roleRef is fixed once the binding exists."""
    status, _ = kube.call("POST", BINDINGS, {
        "metadata": {"name": "fixed"}, "roleRef": VIEW,
        "subjects": [{"kind": "ServiceAccount", "name": "sa"}]})
    assert status == 201
    status, answer = kube.call("PATCH", f"{BINDINGS}/fixed",
                               {"roleRef": {**VIEW, "name": "edit"}}, MERGE)
    assert status == 422, answer
    assert answer["message"] == (
        'RoleBinding.rbac.authorization.k8s.io "fixed" is invalid: roleRef: Invalid value: '
        'rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", '
        'Name:"edit"}: cannot change roleRef')
    # subjects may change
    status, _ = kube.call("PATCH", f"{BINDINGS}/fixed",
                          {"subjects": [{"kind": "User", "name": "u"}]}, MERGE)
    assert status == 200
