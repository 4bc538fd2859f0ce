"""The built-in admission plugins are handed only what they use, and learn who asks from the
admission attributes (k8s.io/apiserver/pkg/admission/attributes.go: ``GetUserInfo``), not
from the request context: each is built here from a bare store, without a server.

The escalation rule is the RBAC storage's (plugin/pkg/auth/authorizer/rbac and
pkg/registry/rbac/role/policybased/storage.go): a user may create a Role only with
permissions they hold; the server's own writes carry no user and are exempt.
"""

from __future__ import annotations

import pytest

from setpoint.cluster.admission.lifecycle import NamespaceLifecycle
from setpoint.cluster.admission.rbacescalation import EscalationCheck
from setpoint.cluster.authorization.rbac import Authorizer
from setpoint.cluster.registry import Registry
from setpoint.cluster.registry.admissionpoints import Attributes
from setpoint.cluster.storage import Store
from setpoint.machinery.errors import StatusError

ROLE = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "pod-reader", "namespace": "team"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}


def test_the_escalation_check_judges_the_user_the_attributes_carry() -> None:
    store = Store(None)
    roles = Registry().require("rbac.authorization.k8s.io", "v1", "roles")
    check = EscalationCheck(Authorizer(store))
    alice = {"username": "alice", "groups": ["system:authenticated"]}
    with pytest.raises(StatusError) as refused:
        check(Attributes("CREATE", roles, ROLE, None, alice))
    assert refused.value.code == 403
    assert "attempting to grant RBAC permissions not currently held" in str(refused.value)
    check(Attributes("CREATE", roles, ROLE, None, None))  # the server's own write
    check(Attributes("CREATE", roles, ROLE, None, {"username": "admin",
                                                   "groups": ["system:masters"]}))


def test_namespace_lifecycle_reads_only_the_store_it_is_given() -> None:
    store = Store(None)
    pods = Registry().require("", "v1", "pods")
    pod = {"metadata": {"name": "p", "namespace": "missing"}, "spec": {}}
    with pytest.raises(StatusError) as refused:
        NamespaceLifecycle(store)(Attributes("CREATE", pods, pod, None))
    assert refused.value.code == 404
    store.put("/namespaces", {"metadata": {"name": "missing"}})
    NamespaceLifecycle(store)(Attributes("CREATE", pods, pod, None))


def test_namespace_lifecycle_sees_each_new_version_of_a_namespace() -> None:
    """The plugin remembers what it read of a namespace (decoding it was a few percent of a
    create) only while that stored version lasts: a namespace that starts terminating, is
    deleted or comes back is judged anew (plugin/pkg/admission/namespace/lifecycle)."""
    store = Store(None)
    pods = Registry().require("", "v1", "pods")
    pod = {"metadata": {"name": "p", "namespace": "team"}, "spec": {}}
    check = NamespaceLifecycle(store)
    store.put("/namespaces", {"metadata": {"name": "team"}, "status": {"phase": "Active"}})
    check(Attributes("CREATE", pods, pod, None))
    store.put("/namespaces", {"metadata": {"name": "team"}, "status": {"phase": "Terminating"}})
    with pytest.raises(StatusError) as refused:
        check(Attributes("CREATE", pods, pod, None))
    assert refused.value.code == 403
    check(Attributes("UPDATE", pods, pod, pod))  # updates go on while it terminates
    store.delete("/namespaces", "", "team")
    with pytest.raises(StatusError) as missing:
        check(Attributes("CREATE", pods, pod, None))
    assert missing.value.code == 404
    store.put("/namespaces", {"metadata": {"name": "team"}, "status": {"phase": "Active"}})
    check(Attributes("CREATE", pods, pod, None))
