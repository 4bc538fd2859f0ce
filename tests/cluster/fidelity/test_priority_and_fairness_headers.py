"""The API Priority and Fairness match of each request, in the X-Kubernetes-PF-FlowSchema-UID
and X-Kubernetes-PF-PriorityLevel-UID response headers (k8s.io/apiserver v0.32
pkg/server/filters/priority-and-fairness.go; matching by pkg/util/flowcontrol/rule.go over
the bootstrap configuration of pkg/apis/flowcontrol/bootstrap/default.go). The filter runs
after authentication and impersonation and before authorization: a 403 carries the
headers, a 401 does not; long-running requests other than watches are not classified."""

from __future__ import annotations

from typing import Any

import pytest

from setpoint.cluster.authorization.rbac import Attributes
from setpoint.cluster.bootstrap import flowcontrol as bootstrap_flowcontrol
from setpoint.cluster.endpoints.priorityandfairness import (
    FLOW_SCHEMA_HEADER,
    FLOW_SCHEMAS,
    PRIORITY_LEVEL_HEADER,
    PRIORITY_LEVELS,
    FlowClassifier,
)
from setpoint.cluster.storage import Store
from tests.cluster.conftest import API

pytestmark = pytest.mark.asyncio(loop_scope="module")

FC = "/apis/flowcontrol.apiserver.k8s.io/v1"


async def _uid(api: API, kind: str, name: str) -> str:
    status, out = await api.get(f"{FC}/{kind}/{name}")
    assert status == 200, out
    return str(out["metadata"]["uid"])


async def _match(api: API, method: str, path: str, **headers: str) -> tuple[int, str, str]:
    """(status, FlowSchema UID, PriorityLevel UID) of a request, "" for an absent header."""
    async with api.session.request(method, api.cluster.url + path, ssl=api.ssl,
                                   headers=headers) as resp:
        await resp.read()
        return (resp.status, resp.headers.get("X-Kubernetes-PF-FlowSchema-UID", ""),
                resp.headers.get("X-Kubernetes-PF-PriorityLevel-UID", ""))


async def _expected(api: API, schema: str, level: str) -> tuple[str, str]:
    return (await _uid(api, "flowschemas", schema),
            await _uid(api, "prioritylevelconfigurations", level))


@pytest.mark.parametrize(("method", "path", "headers", "schema", "level"), [
    # system:masters: the exempt schema, for resource and non-resource requests
    ("GET", "/api/v1/namespaces/default/configmaps", {}, "exempt", "exempt"),
    ("GET", "/version", {}, "exempt", "exempt"),
    # an ordinary user: global-default (9900) before catch-all (10000)
    ("GET", "/api/v1/namespaces/default/configmaps", {"Impersonate-User": "jane"},
     "global-default", "global-default"),
    # nodes: their own objects and leases at node-high, the rest at system
    ("GET", "/api/v1/nodes/n1", {"Impersonate-User": "system:node:n1",
                                 "Impersonate-Group": "system:nodes"},
     "system-node-high", "node-high"),
    ("GET", "/api/v1/namespaces/default/pods", {"Impersonate-User": "system:node:n1",
                                                "Impersonate-Group": "system:nodes"},
     "system-nodes", "system"),
    # service accounts: kube-system's at workload-high, leader election first
    ("GET", "/api/v1/namespaces/default/pods",
     {"Impersonate-User": "system:serviceaccount:kube-system:default"},
     "kube-system-service-accounts", "workload-high"),
    ("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x",
     {"Impersonate-User": "system:serviceaccount:kube-system:default"},
     "system-leader-election", "leader-election"),
    ("GET", "/api/v1/namespaces/default/pods",
     {"Impersonate-User": "system:serviceaccount:default:default"},
     "service-accounts", "workload-low"),
])
async def test_requests_report_their_match(module_api: API, method: str, path: str,
                                           headers: dict[str, str], schema: str,
                                           level: str) -> None:
    """rule.go: the first FlowSchema by precedence whose subjects and rules match. The
    impersonated requests are refused by RBAC (403) and still carry the headers."""
    _, fs_uid, pl_uid = await _match(module_api, method, path, **headers)
    assert (fs_uid, pl_uid) == await _expected(module_api, schema, level)


async def test_unauthenticated_and_long_running_requests_are_not_classified(
        module_api: API) -> None:
    """A 401 is answered before the filter; an exec (long-running, not a watch) is not
    classified; a watch is."""
    status, fs_uid, pl_uid = await _match(module_api, "GET", "/api/v1/namespaces",
                                          Authorization="Bearer not-a-token")
    assert (status, fs_uid, pl_uid) == (401, "", "")
    _, fs_uid, _ = await _match(module_api, "POST",
                                "/api/v1/namespaces/default/pods/nope/exec?command=ls")
    assert fs_uid == ""
    exempt = await _expected(module_api, "exempt", "exempt")
    status, fs_uid, pl_uid = await _match(
        module_api, "GET", "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1")
    assert (status, fs_uid, pl_uid) == (200, *exempt)


async def test_a_new_flow_schema_takes_the_requests_it_matches(module_api: API) -> None:
    """The configuration is read again after a FlowSchema is created and after it is
    deleted: a schema of lower precedence for user ``joan`` wins over global-default while
    it exists. (Its own user: the module's other tests classify ``jane``, in any order.)"""
    path, joan = "/api/v1/namespaces/default/configmaps", {"Impersonate-User": "joan"}
    default = await _expected(module_api, "global-default", "global-default")
    assert (await _match(module_api, "GET", path, **joan))[1:] == default
    schema = {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
              "metadata": {"name": "joan-first"},
              "spec": {"priorityLevelConfiguration": {"name": "workload-low"},
                       "matchingPrecedence": 50,
                       "rules": [{"subjects": [{"kind": "User", "user": {"name": "joan"}}],
                                  "resourceRules": [{"verbs": ["list"], "apiGroups": [""],
                                                     "resources": ["configmaps"],
                                                     "namespaces": ["default"]}]}]}}
    status, out = await module_api.post(f"{FC}/flowschemas", schema)
    assert status == 201, out
    try:
        _, fs_uid, pl_uid = await _match(module_api, "GET", path, **joan)
        assert (fs_uid, pl_uid) == (out["metadata"]["uid"],
                                    await _uid(module_api, "prioritylevelconfigurations",
                                               "workload-low"))
    finally:
        status, _ = await module_api.delete(f"{FC}/flowschemas/joan-first")
        assert status == 200
    assert (await _match(module_api, "GET", path, **joan))[1:] == default


async def test_remembered_matches_are_the_matches_of_the_rules() -> None:
    """The classifier remembers a match per user and attributes (all the rules of rule.go
    read: username, groups, verb, group, resource, subresource, namespace, and the path of a
    non-resource request; never the name). Over the bootstrap configuration, each request
    asked twice, under other names, answers what matching the rules anew answers; a write to
    a FlowSchema forgets them all."""
    store = Store(None)
    for level in bootstrap_flowcontrol.priority_level_configurations():
        level["metadata"]["uid"] = f"uid-{level['metadata']['name']}"
        store.put(PRIORITY_LEVELS, level)
    for schema in bootstrap_flowcontrol.flow_schemas():
        schema["metadata"]["uid"] = f"uid-{schema['metadata']['name']}"
        store.put(FLOW_SCHEMAS, schema)
    classifier = FlowClassifier(store)
    users: list[dict[str, Any]] = [
        {"username": "admin", "groups": ["system:masters", "system:authenticated"]},
        {"username": "jane", "groups": ["system:authenticated"]},
        {"username": "system:node:n1", "groups": ["system:nodes"]},
        {"username": "system:serviceaccount:kube-system:default",
         "groups": ["system:serviceaccounts"]},
        {"username": "system:serviceaccount:default:default"}, {}]
    requests = [Attributes("get", resource="pods", namespace="default", version="v1"),
                Attributes("list", resource="nodes", version="v1"),
                Attributes("get", resource="nodes", version="v1"),
                Attributes("update", resource="leases", group="coordination.k8s.io",
                           namespace="kube-system", version="v1"),
                Attributes("get", resource="pods", subresource="status",
                           namespace="kube-system", version="v1"),
                Attributes("get", path="/healthz"), Attributes("get", path="/version"),
                Attributes("post", path="/apis")]
    for user in users:
        for attrs in requests:
            expected = classifier._match(user, attrs)
            for name in ("", "a", "b"):
                assert classifier.headers(user, attrs._replace(name=name)) == expected
    assert classifier._matches  # (remembered)
    jane = users[1]
    pods = requests[0]
    store.put(FLOW_SCHEMAS, {
        "apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
        "metadata": {"name": "jane-first", "uid": "uid-jane-first"},
        "spec": {"priorityLevelConfiguration": {"name": "workload-low"},
                 "matchingPrecedence": 50,
                 "rules": [{"subjects": [{"kind": "User", "user": {"name": "jane"}}],
                            "resourceRules": [{"verbs": ["get"], "apiGroups": [""],
                                               "resources": ["pods"],
                                               "namespaces": ["default"]}]}]}})
    assert classifier.headers(jane, pods) == [
        (FLOW_SCHEMA_HEADER, "uid-jane-first"), (PRIORITY_LEVEL_HEADER, "uid-workload-low")]
