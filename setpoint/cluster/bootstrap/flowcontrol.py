"""The API Priority and Fairness configuration a fresh kube-apiserver holds.

The objects are k8s.io/apiserver v0.32 pkg/apis/flowcontrol/bootstrap/default.go's mandatory
and suggested FlowSchemas and PriorityLevelConfigurations, which the apiserver's
``priority-and-fairness-config-producer`` post-start hook creates (pkg/registry/flowcontrol/
ensurer), each annotated ``apf.kubernetes.io/autoupdate-spec: "true"``. Their status is the
APF config controller's (``controllers/flowschemastatus.py``).
"""

from __future__ import annotations

from typing import Any

from setpoint.machinery.objects import Obj

GROUP = "flowcontrol.apiserver.k8s.io"
AUTOUPDATE_ANNOTATION = "apf.kubernetes.io/autoupdate-spec"
# pkg/registry/flowcontrol/ensurer: the field manager of the objects it creates
PRODUCER_FIELD_MANAGER = "api-priority-and-fairness-config-producer-v1"

# k8s.io/apiserver pkg/authentication/user and serviceaccount
MASTERS = "system:masters"
UNAUTHENTICATED = "system:unauthenticated"
AUTHENTICATED = "system:authenticated"
NODES = "system:nodes"
SERVICE_ACCOUNTS = "system:serviceaccounts"
KUBE_CONTROLLER_MANAGER = "system:kube-controller-manager"
KUBE_SCHEDULER = "system:kube-scheduler"


def _meta(name: str) -> Obj:
    return {"name": name, "annotations": {AUTOUPDATE_ANNOTATION: "true"}}


def _limited(shares: int, lendable: int, queues: int = 0, hand: int = 0,
             length: int = 0) -> Obj:
    response: Obj = ({"type": "Queue", "queuing": {"queues": queues, "handSize": hand,
                                                  "queueLengthLimit": length}}
                     if queues else {"type": "Reject"})
    return {"type": "Limited", "limited": {"nominalConcurrencyShares": shares,
                                           "limitResponse": response,
                                           "lendablePercent": lendable}}


# (name, spec), default.go's MandatoryPriorityLevelConfigurations then Suggested ones
_LEVELS: list[tuple[str, Obj]] = [
    ("catch-all", _limited(5, 0)),
    ("exempt", {"type": "Exempt", "exempt": {"nominalConcurrencyShares": 0,
                                             "lendablePercent": 0}}),
    ("system", _limited(30, 33, 64, 6, 50)),
    ("node-high", _limited(40, 25, 64, 6, 50)),
    ("leader-election", _limited(10, 0, 16, 4, 50)),
    ("workload-high", _limited(40, 50, 128, 6, 50)),
    ("workload-low", _limited(100, 90, 128, 6, 50)),
    ("global-default", _limited(20, 50, 128, 6, 50)),
]


def _groups(*names: str) -> list[Obj]:
    return [{"kind": "Group", "group": {"name": n}} for n in names]


def _users(*names: str) -> list[Obj]:
    return [{"kind": "User", "user": {"name": n}} for n in names]


def _kube_system_accounts(*names: str) -> list[Obj]:
    return [{"kind": "ServiceAccount", "serviceAccount": {"name": n,
                                                          "namespace": "kube-system"}}
            for n in names]


def _resources(verbs: list[str], groups: list[str], resources: list[str],
               cluster_scope: bool) -> Obj:
    rule: Obj = {"verbs": verbs, "apiGroups": groups, "resources": resources}
    if cluster_scope:
        rule["clusterScope"] = True
    rule["namespaces"] = ["*"]
    return rule


_ALL_RESOURCES = [_resources(["*"], ["*"], ["*"], True)]
_ALL_NON_RESOURCES = [{"verbs": ["*"], "nonResourceURLs": ["*"]}]
_LEASES = _resources(["get", "create", "update"], ["coordination.k8s.io"], ["leases"], False)


def _everything(subjects: list[Obj]) -> Obj:
    return {"subjects": subjects, "resourceRules": _ALL_RESOURCES,
            "nonResourceRules": _ALL_NON_RESOURCES}


# (name, priority level, matching precedence, distinguisher method, rule)
_SCHEMAS: list[tuple[str, str, int, str, Obj]] = [
    ("exempt", "exempt", 1, "", _everything(_groups(MASTERS))),
    ("catch-all", "catch-all", 10000, "ByUser",
     _everything(_groups(UNAUTHENTICATED, AUTHENTICATED))),
    ("system-nodes", "system", 500, "ByUser", _everything(_groups(NODES))),
    ("system-node-high", "node-high", 400, "ByUser", {
        "subjects": _groups(NODES),
        "resourceRules": [_resources(["*"], [""], ["nodes", "nodes/status"], True),
                          _resources(["*"], ["coordination.k8s.io"], ["leases"], False)]}),
    ("probes", "exempt", 2, "", {
        "subjects": _groups(UNAUTHENTICATED, AUTHENTICATED),
        "nonResourceRules": [{"verbs": ["get"],
                              "nonResourceURLs": ["/healthz", "/readyz", "/livez"]}]}),
    ("system-leader-election", "leader-election", 100, "ByUser", {
        "subjects": _users(KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER)
        + _kube_system_accounts("*"),
        "resourceRules": [_LEASES]}),
    ("workload-leader-election", "leader-election", 200, "ByUser", {
        "subjects": _kube_system_accounts("*"),
        "resourceRules": [_resources(["get", "create", "update"], [""],
                                     ["endpoints", "configmaps"], False), _LEASES]}),
    ("endpoint-controller", "workload-high", 150, "ByUser", {
        "subjects": _users(KUBE_CONTROLLER_MANAGER)
        + _kube_system_accounts("endpoint-controller", "endpointslicemirroring-controller"),
        "resourceRules": [_resources(["get", "create", "update"], [""], ["endpoints"],
                                     False)]}),
    ("kube-controller-manager", "workload-high", 800, "ByNamespace",
     _everything(_users(KUBE_CONTROLLER_MANAGER))),
    ("kube-scheduler", "workload-high", 800, "ByNamespace",
     _everything(_users(KUBE_SCHEDULER))),
    ("kube-system-service-accounts", "workload-high", 900, "ByNamespace",
     _everything(_kube_system_accounts("*"))),
    ("service-accounts", "workload-low", 9000, "ByUser",
     _everything(_groups(SERVICE_ACCOUNTS))),
    ("global-default", "global-default", 9900, "ByUser",
     _everything(_groups(UNAUTHENTICATED, AUTHENTICATED))),
]


def priority_level_configurations() -> list[Obj]:
    """The mandatory and suggested PriorityLevelConfigurations, as objects to create."""
    return [{"apiVersion": f"{GROUP}/v1", "kind": "PriorityLevelConfiguration",
             "metadata": _meta(name), "spec": _copy(spec)} for name, spec in _LEVELS]


def flow_schemas() -> list[Obj]:
    """The mandatory and suggested FlowSchemas, as objects to create."""
    out: list[Obj] = []
    for name, level, precedence, method, rule in _SCHEMAS:
        spec: Obj = {"priorityLevelConfiguration": {"name": level},
                     "matchingPrecedence": precedence}
        if method:
            spec["distinguisherMethod"] = {"type": method}
        spec["rules"] = [_copy(rule)]
        out.append({"apiVersion": f"{GROUP}/v1", "kind": "FlowSchema",
                    "metadata": _meta(name), "spec": spec})
    return out


def _copy(value: Any) -> Any:
    """A deep copy of plain JSON data (the tables above are shared)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value
