"""The README's examples work as written."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from operators.memcached.operator import manager
from operators.memcached.resource import Memcached
from setpoint.client import Client
from setpoint.resources import generate_manifests
from setpoint.runtime import manager_permissions
from setpoint.testing import SetpointCluster, present

README = Path(__file__).parents[1] / "README.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), re.S)


async def test_the_readme_memcached_is_accepted_as_written(
        setpoint_cluster: SetpointCluster, k8s: Client) -> None:
    await setpoint_cluster.install(Memcached)
    (example,) = blocks("yaml")

    created = await k8s.create(yaml.safe_load(example))
    mc = Memcached.model_validate(created)
    assert (mc.spec.replicas, mc.spec.replicas_per_shard, mc.spec.shard_count()) == (4, 2, 2)
    assert present(mc.spec.tolerations)[0].key == "dedicated"


def test_the_generated_manifests_grant_only_what_the_controller_declares() -> None:
    documents = generate_manifests("memcached-operator", "example/memcached-operator:0.1",
                                   "memcached-operator", manager_permissions(manager),
                                   run="operators.memcached.operator:manager")

    (role,) = [d for d in documents if d["kind"] == "ClusterRole"]
    granted = {(group, resource): set(rule["verbs"]) for rule in role["rules"]
               for group in rule["apiGroups"] for resource in rule["resources"]}
    assert granted[("", "pods")] == {"get", "list", "watch"}
    assert "delete" in granted[("", "configmaps")]
    # the primary kind as kubebuilder's scaffold grants it: every call of the Context
    assert granted[("cache.setpoint.dev", "memcacheds")] == {
        "get", "list", "watch", "create", "update", "patch", "delete"}
    assert granted[("cache.setpoint.dev", "memcacheds/finalizers")] == {"update"}
    assert "patch" in granted[("cache.setpoint.dev", "memcacheds/status")]
    assert all("*" not in verbs for verbs in granted.values())
    (deployment,) = [d for d in documents if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["command"] == ["setpoint", "run", "operators.memcached.operator:manager",
                                    "--http-address", "0.0.0.0:8081"]
    assert any(r["kind"] == "Role" and r["metadata"]["name"].endswith("leader-election")
               for r in documents)
