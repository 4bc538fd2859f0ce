"""Everyday kubectl 1.32 workflows against the embedded server, each step's output and exit
status as a kube-apiserver 1.32 cluster gives them (one server for the module; each test
writes objects of its own names and deletes them)."""

from __future__ import annotations

import pytest

from tests.cluster.conftest import API
from tests.cluster.fidelity.conftest import Kubectl

pytestmark = pytest.mark.asyncio(loop_scope="module")

# kubectl's can-i --list table for any authenticated user: what the bootstrap ClusterRoles
# system:basic-user, system:discovery and system:public-info-viewer grant
# (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go), sorted by kubectl
# (staging/src/k8s.io/kubectl/pkg/cmd/auth/cani.go printStatus: BreakdownRule,
# CompactRules, SortableRuleSlice); the non-resource URLs two roles share are listed twice.
AUTHENTICATED_RULES = """\
selfsubjectreviews.authentication.k8s.io        []                  []               [create]
selfsubjectaccessreviews.authorization.k8s.io   []                  []               [create]
selfsubjectrulesreviews.authorization.k8s.io    []                  []               [create]
                                                [/api/*]            []               [get]
                                                [/api]              []               [get]
                                                [/apis/*]           []               [get]
                                                [/apis]             []               [get]
                                                [/healthz]          []               [get]
                                                [/healthz]          []               [get]
                                                [/livez]            []               [get]
                                                [/livez]            []               [get]
                                                [/openapi/*]        []               [get]
                                                [/openapi]          []               [get]
                                                [/readyz]           []               [get]
                                                [/readyz]           []               [get]
                                                [/version/]         []               [get]
                                                [/version/]         []               [get]
                                                [/version]          []               [get]
                                                [/version]          []               [get]
"""
HEADER = ("Resources                                       Non-Resource URLs   Resource Names"
          "   Verbs\n")


async def test_can_i_list_of_an_administrator_is_rbacs_rules(
        module_api: API, module_kubectl: Kubectl) -> None:
    """``kubectl auth can-i --list`` as a ``system:masters`` user: the privileged-group
    authorizer allows everything but resolves no rules (pkg/kubeapiserver/authorizer/
    reload.go appends it to the authorizers only; k8s.io/apiserver pkg/authorization/
    authorizerfactory/builtin.go gives it no RulesFor), so the SelfSubjectRulesReview is RBAC's
    RulesFor (plugin/pkg/auth/authorizer/rbac/rbac.go): cluster-admin's ``*`` rules through the
    cluster-admin binding to system:masters, beside the rules every authenticated user holds."""
    code, out, err = await module_kubectl("auth", "can-i", "--list")
    assert (code, err) == (0, "")
    assert out == (HEADER
                   + "*.*                                             []                  []"
                     "               [*]\n"
                   + "                                                [*]                 []"
                     "               [*]\n"
                   + AUTHENTICATED_RULES)
    code, out, err = await module_kubectl("auth", "can-i", "--list", "--as", "audit-bob")
    assert (code, err, out) == (0, "", HEADER + AUTHENTICATED_RULES)
