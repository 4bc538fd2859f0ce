"""``pods/log``, ``pods/exec``, ``pods/attach`` and ``pods/portforward``: the kubelet's streams.

kube-apiserver answers these by proxying to the kubelet of the pod's node
(k8s.io/kubernetes pkg/registry/core/pod/rest/log.go and subresources.go, with the locations
of pkg/registry/core/pod/strategy.go). It checks what it can itself first: the pod exists,
the container is one of its own (or the pod has exactly one), the pod is on a node, the node
exists and has an address. Then it dials ``https://<node address>:<kubelet port>``.

No process runtime serves these streams yet: the simulated kubelets run no containers. So
the answer is the one a real cluster gives when the node's kubelet cannot be reached: a 500
Status whose message is Go's dial error (``Get "<url>": dial tcp ...`` for logs, through
genericrest.LocationStreamer; ``error dialing backend: dial tcp ...`` for the upgraded
streams, from apimachinery's upgradeaware proxy), with the reason spelled out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from setpoint.cluster.registry.types import ResourceType
from setpoint.machinery import errors
from setpoint.machinery.errors import StatusError
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry import Registry
    from setpoint.cluster.storage import Reader

# subresource -> (the kubelet's path, whether it names a container, the methods it serves)
STREAMS: dict[str, tuple[str, bool, tuple[str, ...]]] = {
    "log": ("containerLogs", True, ("GET",)),
    "exec": ("exec", True, ("GET", "POST")),
    "attach": ("attach", True, ("GET", "POST")),
    "portforward": ("portForward", False, ("GET", "POST")),
}
# kube-apiserver's --kubelet-preferred-address-types default, and the kubelet's port
PREFERRED_ADDRESS_TYPES = ("Hostname", "InternalDNS", "InternalIP", "ExternalDNS",
                           "ExternalIP")
DEFAULT_KUBELET_PORT = 10250
UNREACHABLE = ("the kubelet of node {node} is simulated and runs no containers, so it serves "
               "no logs, exec, attach or port-forward")


def connect(store: Reader, registry: Registry, rt: ResourceType, ns: str, name: str,
            subresource: str, method: str, query: Mapping[str, str]) -> bytes:
    """The answer to a stream request, or the StatusError kube-apiserver would give.

    Only a log of a pod not yet on a node has an answer: empty, as the apiserver's
    LocationStreamer without a location gives it."""
    path, has_container, methods = STREAMS[subresource]
    if method not in methods:
        verb = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
        raise errors.method_not_supported(f"{rt.resource}/{subresource}",
                                          verb.get(method, method.lower()), rt.group)
    pod = store.get(rt.storage_key, ns, name)
    if pod is None:
        raise errors.not_found(rt.resource, name, rt.group)
    spec = pod.get("spec") or {}
    container = _container(pod, name, query.get("container", "")) if has_container else ""
    node = spec.get("nodeName") or ""
    if not node:
        if subresource == "log":
            return b""
        raise errors.bad_request(f"pod {name} does not have a host assigned")
    host, port = _kubelet_address(store, registry, node)
    target = f"{host}:{port}"
    why = f"dial tcp {target}: " + UNREACHABLE.format(node=f'"{node}"')
    if subresource == "log":
        url = f"https://{target}/{path}/{ns}/{name}/{container}"
        raise StatusError(500, "", f'Get "{url}": {why}')
    raise StatusError(500, "", f"error dialing backend: {why}")


def _container(pod: Obj, name: str, container: str) -> str:
    """strategy.go's validateContainer: the container named, or the pod's only one."""
    spec = pod.get("spec") or {}
    containers: list[str] = [c.get("name", "") for c in spec.get("containers") or ()]
    init: list[str] = [c.get("name", "") for c in spec.get("initContainers") or ()]
    ephemeral: list[str] = [c.get("name", "") for c in spec.get("ephemeralContainers") or ()]
    # (the message lists containers and init containers only, as strategy.go's does)
    if not container:
        if len(containers) == 1:
            return containers[0]
        if not containers:
            raise errors.bad_request(f"a container name must be specified for pod {name}")
        message = (f"a container name must be specified for pod {name}, choose one of: "
                   f"[{' '.join(containers)}]")
        if init:
            message += f" or one of the init containers: [{' '.join(init)}]"
        raise errors.bad_request(message)
    if container not in (*containers, *init, *ephemeral):
        raise errors.bad_request(f"container {container} is not valid for pod {name}")
    return container


def _kubelet_address(store: Reader, registry: Registry, node_name: str) -> tuple[str, int]:
    """pkg/kubelet/client's NodeConnectionInfoGetter: the node's preferred address and
    its kubelet's port."""
    nodes = registry.get("", "v1", "nodes")
    node = store.get(nodes.storage_key, "", node_name) if nodes is not None else None
    if node is None:
        raise errors.not_found("nodes", node_name)
    status = node.get("status") or {}
    addresses = status.get("addresses") or []
    for kind in PREFERRED_ADDRESS_TYPES:
        for address in addresses:
            if address.get("type") == kind and address.get("address"):
                port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}
                        ).get("Port") or DEFAULT_KUBELET_PORT
                return address["address"], int(port)
    known = " ".join(f"{{{a.get('type', '')} {a.get('address', '')}}}" for a in addresses)
    raise StatusError(500, "", f"no preferred addresses found; known addresses: [{known}]")
