"""The ``default/kubernetes`` Service and its endpoints, through which in-cluster clients
find the API: as kube-apiserver's kubernetesservice controller and endpoint reconciler keep
them (pkg/controlplane/controller/kubernetesservice, pkg/controlplane/reconcilers), written
at start with the advertise address and port."""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from setpoint.cluster.registry.ensurer import Ensurer

NAME = "kubernetes"


def publish_kubernetes_service(ensurer: Ensurer, cluster_ip: str, address: str,
                               port: int) -> None:
    """The Service at ``cluster_ip`` (kept once created) and its Endpoints and EndpointSlice
    at ``address:port`` (brought up to date: a restart may change them)."""
    labels = {"component": "apiserver", "provider": "kubernetes"}
    ensurer.ensure("", "v1", "services", "default", {
        "metadata": {"name": NAME, "namespace": "default", "labels": labels},
        "spec": {"type": "ClusterIP", "clusterIP": cluster_ip, "clusterIPs": [cluster_ip],
                 "sessionAffinity": "None",
                 "ports": [{"name": "https", "protocol": "TCP", "port": 443,
                            "targetPort": port}]}})
    endpoints = {
        "metadata": {"name": NAME, "namespace": "default",
                     "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
        "subsets": [{"addresses": [{"ip": address}],
                     "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]}
    ensurer.replace("", "v1", "endpoints", "default", endpoints)
    # the slice's addressType is the advertise address's family (the reconciler's
    # EndpointsAdapter, pkg/controlplane/reconcilers/endpointsadapter.go); addressType is
    # immutable, so a slice of the other family (a restart on another --host) goes
    address_type = "IPv6" if ipaddress.ip_address(address).version == 6 else "IPv4"
    ensurer.delete_unless("discovery.k8s.io", "v1", "endpointslices", "default", NAME,
                          lambda live: live.get("addressType") == address_type)
    ensurer.replace("discovery.k8s.io", "v1", "endpointslices", "default", {
        "metadata": {"name": NAME, "namespace": "default", "labels": {
            "kubernetes.io/service-name": NAME}},
        "addressType": address_type,
        "endpoints": [{"addresses": [address], "conditions": {"ready": True}}],
        "ports": [{"name": "https", "port": port, "protocol": "TCP"}]})
