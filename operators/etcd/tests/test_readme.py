"""The README's example is accepted as written, and its lifecycle diagram names exactly the
phases the code can set (operators/etcd/health.py's ``phase``)."""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any

import yaml

from operators.etcd.operator import manager
from operators.etcd.resource import EtcdCluster, Phase
from setpoint.client import Client
from setpoint.resources import generate_manifests
from setpoint.runtime import manager_permissions
from setpoint.testing import SetpointCluster

README = Path(__file__).parents[1] / "README.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), re.S)


async def test_the_readme_cluster_is_accepted_as_written(
        setpoint_cluster: SetpointCluster, k8s: Client) -> None:
    await setpoint_cluster.install(EtcdCluster)
    (example,) = blocks("yaml")
    created: dict[str, Any] = await k8s.create(yaml.safe_load(example))
    assert (created["spec"]["size"], created["spec"]["version"]) == (3, "3.5.1")


def test_the_state_diagram_has_every_phase_and_no_other() -> None:
    (diagram,) = blocks("mermaid")
    states = set(re.findall(r"(\w+) -->", diagram)) | set(re.findall(r"--> (\w+)", diagram))
    assert states - {"[*]"} == set(typing.get_args(Phase))


def test_the_generated_manifests_grant_what_member_management_needs() -> None:
    """Members are pods and claims the operator creates and deletes itself (no
    StatefulSet); backups only read the clusters and their pods."""
    documents = generate_manifests("etcd-operator", "example/etcd-operator:0.1",
                                   "etcd-operator", manager_permissions(manager),
                                   run="operators.etcd.operator:manager")
    (role,) = [d for d in documents if d["kind"] == "ClusterRole"]
    granted = {(group, resource): set(rule["verbs"]) for rule in role["rules"]
               for group in rule["apiGroups"] for resource in rule["resources"]}
    for resource in ("pods", "persistentvolumeclaims", "services"):
        assert {"create", "delete", "patch"} <= granted[("", resource)], resource
    assert "patch" in granted[("etcd.setpoint.dev", "etcdclusters/status")]
    assert "patch" in granted[("etcd.setpoint.dev", "etcdbackups/status")]
    assert all("*" not in verbs for verbs in granted.values())
