"""``kubectl get --sort-by``: kubectl asks for a Table with ``includeObject=Object`` and sorts
the rows by decoding each row's object, which must name its own kind and apiVersion.

kube-apiserver converts each row's object to the requested version (``asTable`` in
k8s.io/apiserver/pkg/endpoints/handlers/response.go: ``scope.Convertor.ConvertToVersion``
for ``metav1.IncludeObject``), which sets the object's apiVersion and kind even when the list
it came from carries them only on the list. Without them kubectl 1.27-1.33 print an empty
``NAME AGE`` table.
"""

from __future__ import annotations

import pytest
import yaml

from tests.e2e.conftest import Kubectl, unique

# the rows of what the tests create: no pod need be scheduled, no Deployment rolled out
WORKLOADS = False

POD = {"apiVersion": "v1", "kind": "Pod",
       "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}]}}
DEPLOYMENT = {"apiVersion": "apps/v1", "kind": "Deployment",
              "spec": {"selector": {"matchLabels": {"app": "x"}},
                       "template": {"metadata": {"labels": {"app": "x"}},
                                    "spec": {"containers": [{"name": "c",
                                                             "image": "busybox:1.36"}]}}}}
CONFIGMAP = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"}}
EVENT = {"apiVersion": "v1", "kind": "Event", "reason": "Testing"}
NODE = {"apiVersion": "v1", "kind": "Node"}


@pytest.mark.parametrize(("resource", "manifest"), [
    ("pods", POD), ("deployments", DEPLOYMENT), ("cm", CONFIGMAP), ("events", EVENT),
    ("nodes", NODE)])
def test_get_sort_by_name_prints_every_row(any_kubectl: Kubectl, namespace: str,
                                           resource: str, manifest: dict[str, object]) -> None:
    base = unique("sort")
    names = [f"{base}-b", f"{base}-c", f"{base}-a"]
    scope = [] if resource == "nodes" else ["-n", namespace]
    if resource == "events":
        manifest = {**manifest, "involvedObject": {
            "apiVersion": "v1", "kind": "ConfigMap", "name": "x", "namespace": namespace}}
    for name in names:
        # an Event's table has no NAME column: its rows are told apart by their message
        any_kubectl.run("apply", *scope, "-f", "-", stdin=yaml.safe_dump(
            {**manifest, "metadata": {"name": name}, "message": name} if resource == "events"
            else {**manifest, "metadata": {"name": name}}))
    try:
        out = any_kubectl.run("get", resource, *scope, "--sort-by=.metadata.name").stdout
        rows = [line.split() for line in out.strip().splitlines()]
        column = -1 if resource == "events" else 0
        listed = [row[column] for row in rows[1:] if row[column].startswith(base)]
        assert listed == sorted(names), out
        assert rows[0] != ["NAME", "AGE"], out
    finally:
        if resource == "nodes":
            any_kubectl.run("delete", "nodes", *names, "--wait=false", ok=None)
