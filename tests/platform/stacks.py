"""Objects for the platform tests, and the graph of what a cluster holds."""

from __future__ import annotations

from typing import Any

from setpoint.client import Client, Kind
from setpoint.platform import ObjectRef, Stack, StackGraph, load_cache
from setpoint.resources import (
    AnnotationRelationship,
    CustomResource,
    LabelRelationship,
    Model,
    SpecPropertyRelationship,
    generate_crds,
)

CRD = Kind("apiextensions.k8s.io/v1", "CustomResourceDefinition")


def obj(api_version: str, kind: str, name: str, namespace: str | None = "default",
        **body: Any) -> dict[str, Any]:
    metadata: dict[str, Any] = {"name": name}
    if namespace:
        metadata["namespace"] = namespace
    metadata.update(body.pop("metadata", {}))
    return {"apiVersion": api_version, "kind": kind, "metadata": metadata, **body}


def pod(name: str, labels: dict[str, str] | None = None, namespace: str = "default",
        **spec: Any) -> dict[str, Any]:
    return obj("v1", "Pod", name, namespace, metadata={"labels": labels or {}},
               spec={"containers": [{"name": "app", "image": "nginx"}], **spec})


def names(stack: Stack) -> set[str]:
    return {str(ref) for ref in stack.objects}


def edges(stack: Stack) -> set[tuple[str, str, str]]:
    return {(str(e.source), e.relation, str(e.target)) for e in stack.edges}


async def graph_of(client: Client) -> StackGraph:
    return StackGraph(await load_cache(client))


async def stack_of(client: Client, group: str, kind: str, name: str,
                   namespace: str = "default") -> Stack:
    graph = await graph_of(client)
    return graph.stack(ObjectRef(group, kind, namespace, name))


# -- custom kinds declaring KubePlus's relationships through the SDK ------------------------

class IssuerSpec(Model):
    acme: str = ""


class ClusterIssuer(CustomResource, group="cert-manager.io", version="v1", scope="Cluster",
                    relationships=[AnnotationRelationship(
                        "Ingress", "cert-manager.io/cluster-issuer", "metadata.name")]):
    spec: IssuerSpec = IssuerSpec()


class DatacenterSpec(Model):
    size: int = 1


class Datacenter(CustomResource, group="db.example.com", version="v1",
                 composition=["StatefulSet", "Service"], usage="datacenter-usage",
                 relationships=[
                     AnnotationRelationship("Secret", "db.example.com/watched-by",
                                            "metadata.name", contains=True),
                     LabelRelationship("PersistentVolumeClaim", "metadata.name",
                                       key="db.example.com/datacenter")]):
    spec: DatacenterSpec = DatacenterSpec()


class SelectorSpec(Model):
    selector: dict[str, str] = {}


class Backup(CustomResource, group="backup.example.com", version="v1",
             relationships=[LabelRelationship("Deployment", "spec.selector")]):
    spec: SelectorSpec = SelectorSpec()


class MoodleSpec(Model):
    mySQLServiceName: str = ""
    mysqlCluster: str = ""


class MysqlCluster(CustomResource, group="mysql.example.com", version="v1"):
    spec: DatacenterSpec = DatacenterSpec()


class Moodle(CustomResource, group="moodle.example.com", version="v1",
             relationships=[
                 SpecPropertyRelationship("spec.mySQLServiceName", "Service.spec.metadata.name"),
                 SpecPropertyRelationship("spec.mysqlCluster", "MysqlCluster.metadata.name")]):
    spec: MoodleSpec = MoodleSpec()


CUSTOM_KINDS = [ClusterIssuer, Datacenter, Backup, MysqlCluster, Moodle]


async def install_crds(client: Client) -> None:
    for crd in generate_crds(CUSTOM_KINDS):
        await client.create(crd)
    for crd in generate_crds(CUSTOM_KINDS):
        name = crd["metadata"]["name"]
        async for _, event in client.watch(CRD, name=name):
            conditions = (event.get("status") or {}).get("conditions") or []
            if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
                break
