"""The bootstrap RBAC policy: the cluster roles (and bindings) every cluster starts with.

Those the embedded cluster needs: ``cluster-admin`` for ``system:masters``; discovery, the
self-reviews and public information for everyone; and the user-facing roles ``admin``,
``edit`` and ``view`` (``kubectl create rolebinding --clusterrole=view``), which are
aggregated, as in kube-apiserver, from the ``system:aggregate-to-*`` roles and from any
ClusterRole an operator labels ``rbac.authorization.k8s.io/aggregate-to-<role>: "true"``.
The rules are the apiserver's bootstrap policy (``plugin/pkg/auth/authorizer/rbac/
bootstrappolicy``), as data.
"""

from __future__ import annotations

from setpoint.machinery.objects import Obj

MASTERS = "system:masters"
AUTHENTICATED = "system:authenticated"
UNAUTHENTICATED = "system:unauthenticated"
AGGREGATE = "rbac.authorization.k8s.io/aggregate-to-"

READ = ["get", "list", "watch"]
WRITE = ["create", "delete", "deletecollection", "patch", "update"]
READ_WRITE = ["create", "delete", "deletecollection", "get", "list", "patch", "update",
              "watch"]


def _rule(groups: list[str], resources: list[str], verbs: list[str]) -> Obj:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


def _urls(urls: list[str]) -> Obj:
    return {"nonResourceURLs": urls, "verbs": ["get"]}


VIEW_RULES = [
    _rule([""], ["configmaps", "endpoints", "persistentvolumeclaims",
                 "persistentvolumeclaims/status", "pods", "replicationcontrollers",
                 "replicationcontrollers/scale", "serviceaccounts", "services",
                 "services/status"], READ),
    _rule([""], ["bindings", "events", "limitranges", "namespaces/status", "pods/log",
                 "pods/status", "replicationcontrollers/status", "resourcequotas",
                 "resourcequotas/status"], READ),
    _rule([""], ["namespaces"], READ),
    _rule(["discovery.k8s.io"], ["endpointslices"], READ),
    _rule(["apps"], ["controllerrevisions", "daemonsets", "daemonsets/status", "deployments",
                     "deployments/scale", "deployments/status", "replicasets",
                     "replicasets/scale", "replicasets/status", "statefulsets",
                     "statefulsets/scale", "statefulsets/status"], READ),
    _rule(["autoscaling"], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"],
          READ),
    _rule(["batch"], ["cronjobs", "cronjobs/status", "jobs", "jobs/status"], READ),
    _rule(["extensions"], ["daemonsets", "daemonsets/status", "deployments",
                           "deployments/scale", "deployments/status", "ingresses",
                           "ingresses/status", "networkpolicies", "replicasets",
                           "replicasets/scale", "replicasets/status",
                           "replicationcontrollers/scale"], READ),
    _rule(["policy"], ["poddisruptionbudgets", "poddisruptionbudgets/status"], READ),
    _rule(["networking.k8s.io"], ["ingresses", "ingresses/status", "networkpolicies"], READ),
]

EDIT_RULES = [
    _rule([""], ["pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets",
                 "services/proxy"], READ),
    _rule([""], ["serviceaccounts"], ["impersonate"]),
    _rule([""], ["pods", "pods/attach", "pods/exec", "pods/portforward", "pods/proxy"], WRITE),
    _rule([""], ["pods/eviction"], ["create"]),
    _rule([""], ["configmaps", "events", "persistentvolumeclaims", "replicationcontrollers",
                 "replicationcontrollers/scale", "secrets", "serviceaccounts", "services",
                 "services/proxy"], WRITE),
    _rule([""], ["serviceaccounts/token"], ["create"]),
    _rule(["apps"], ["daemonsets", "deployments", "deployments/rollback", "deployments/scale",
                     "replicasets", "replicasets/scale", "statefulsets",
                     "statefulsets/scale"], WRITE),
    _rule(["autoscaling"], ["horizontalpodautoscalers"], WRITE),
    _rule(["batch"], ["cronjobs", "jobs"], WRITE),
    _rule(["extensions"], ["daemonsets", "deployments", "deployments/rollback",
                           "deployments/scale", "ingresses", "networkpolicies", "replicasets",
                           "replicasets/scale", "replicationcontrollers/scale"], WRITE),
    _rule(["policy"], ["poddisruptionbudgets"], WRITE),
    _rule(["networking.k8s.io"], ["ingresses", "networkpolicies"], WRITE),
    _rule(["coordination.k8s.io"], ["leases"], READ_WRITE),
]

ADMIN_RULES = [
    _rule(["authorization.k8s.io"], ["localsubjectaccessreviews"], ["create"]),
    _rule(["rbac.authorization.k8s.io"], ["rolebindings", "roles"], READ_WRITE),
]


def cluster_roles() -> list[Obj]:
    """The bootstrap ClusterRoles, as objects to create."""
    roles: list[tuple[str, list[Obj] | None, dict[str, str], str | None]] = [
        ("cluster-admin", [_rule(["*"], ["*"], ["*"]),
                           {"nonResourceURLs": ["*"], "verbs": ["*"]}], {}, None),
        ("system:discovery", [_urls(["/api", "/api/*", "/apis", "/apis/*", "/healthz",
                                     "/livez", "/openapi", "/openapi/*", "/readyz",
                                     "/version", "/version/"])], {}, None),
        ("system:public-info-viewer", [_urls(["/healthz", "/livez", "/readyz", "/version",
                                              "/version/"])], {}, None),
        ("system:monitoring", [_urls([
            "/healthz", "/healthz/*", "/livez", "/livez/*", "/metrics", "/metrics/slis",
            "/readyz", "/readyz/*"])], {}, None),
        ("system:service-account-issuer-discovery", [_urls([
            "/.well-known/openid-configuration", "/.well-known/openid-configuration/",
            "/openid/v1/jwks", "/openid/v1/jwks/"])], {}, None),
        ("system:basic-user", [
            _rule(["authorization.k8s.io"], ["selfsubjectaccessreviews",
                                             "selfsubjectrulesreviews"], ["create"]),
            _rule(["authentication.k8s.io"], ["selfsubjectreviews"], ["create"])], {}, None),
        ("system:aggregate-to-view", VIEW_RULES, {f"{AGGREGATE}view": "true"}, None),
        ("system:aggregate-to-edit", EDIT_RULES, {f"{AGGREGATE}edit": "true"}, None),
        ("system:aggregate-to-admin", ADMIN_RULES, {f"{AGGREGATE}admin": "true"}, None),
        ("view", None, {f"{AGGREGATE}edit": "true"}, "view"),
        ("edit", None, {f"{AGGREGATE}admin": "true"}, "edit"),
        ("admin", None, {}, "admin"),
    ]
    out: list[Obj] = []
    for name, rules, labels, aggregates in roles:
        role: Obj = {
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name,
                         "labels": {"kubernetes.io/bootstrapping": "rbac-defaults", **labels},
                         "annotations": {"rbac.authorization.kubernetes.io/autoupdate":
                                         "true"}}}
        if aggregates is not None:
            role["aggregationRule"] = {"clusterRoleSelectors": [
                {"matchLabels": {f"{AGGREGATE}{aggregates}": "true"}}]}
        else:
            role["rules"] = rules
        out.append(role)
    return out


BINDINGS: dict[str, list[str]] = {
    "cluster-admin": [MASTERS],
    "system:discovery": [AUTHENTICATED],
    "system:basic-user": [AUTHENTICATED],
    "system:public-info-viewer": [AUTHENTICATED, UNAUTHENTICATED],
    "system:service-account-issuer-discovery": ["system:serviceaccounts"],
    "system:monitoring": ["system:monitoring"],
}
"""ClusterRoleBindings of the bootstrap roles: role name -> groups."""
