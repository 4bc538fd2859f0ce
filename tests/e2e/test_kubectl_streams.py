"""``kubectl logs|exec|attach|port-forward`` of pods the simulated runtime runs.

kube-apiserver proxies these to the kubelet of the pod's node (k8s.io/kubernetes
pkg/registry/core/pod/rest/log.go and subresources.go, locations from
pkg/registry/core/pod/strategy.go). The simulated kubelets run no containers, so the server
answers as a real one whose node's kubelet cannot be reached (the process runtime's pods
are served: tests/workloads/process/test_kubectl_streams.py): a 500 Status with Go's dial
error (``Get "<url>": dial tcp ...`` for logs; ``error dialing backend: dial tcp ...`` from
apimachinery's upgradeaware proxy for the upgraded streams), saying why. Checks the apiserver
makes itself come first: the container (strategy.go validateContainer), the pod's node.
"""

from __future__ import annotations

import yaml

from tests.e2e.conftest import Kubectl, unique
from tests.support import ServerProcess

WHY = ('dial tcp {ip}:10250: the kubelet of node "{node}" is simulated and runs no '
       "containers, so it serves no logs, exec, attach or port-forward")


def _pod(kubectl: Kubectl, namespace: str, name: str, **spec: object) -> None:
    kubectl.run("apply", "-n", namespace, "-f", "-", stdin=yaml.safe_dump({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}], **spec}}))


def test_streams_of_a_running_pod_answer_as_an_unreachable_kubelet(
        kubectl: Kubectl, namespace: str, server_process: ServerProcess) -> None:
    name = unique("web")
    _pod(kubectl, namespace, name)
    kubectl.run("wait", "--for=condition=Ready", f"pod/{name}", "-n", namespace,
                "--timeout=60s")
    node = kubectl.json("get", "pod", name, "-n", namespace)["spec"]["nodeName"]
    # the node's InternalIP first: kubeadm's --kubelet-preferred-address-types
    ip = next(a["address"] for a in kubectl.json("get", "node", node)["status"]["addresses"]
              if a["type"] == "InternalIP")
    why = WHY.format(ip=ip, node=node)
    ns = ["-n", namespace]
    logs = kubectl.run("logs", name, *ns, ok=False)
    assert logs.stderr.strip() == (f'Error from server: Get "https://{ip}:10250/'
                                   f'containerLogs/{namespace}/{name}/web": {why}')
    for args in (["exec", name, *ns, "--", "ls"], ["attach", name, *ns]):
        out = kubectl.run(*args, ok=False)
        assert out.stderr.strip().splitlines()[-1] == \
            f"Error from server: error dialing backend: {why}", out.stderr
    forward = kubectl.run("port-forward", f"pod/{name}", *ns, "0:80", ok=False)
    assert forward.stderr.strip().splitlines()[-1] == \
        f"error: error upgrading connection: error dialing backend: {why}", forward.stderr
    log = (server_process.workdir / "server.log").read_text()
    assert "uvicorn" not in log and "Unsupported upgrade" not in log, log


def test_the_apiserver_checks_come_before_the_kubelet(kubectl: Kubectl,
                                                      namespace: str) -> None:
    name = unique("pending")
    _pod(kubectl, namespace, name, nodeSelector={"no": "such-node"},
         initContainers=[{"name": "init", "image": "busybox:1.36"}],
         containers=[{"name": "a", "image": "nginx:1.27"}, {"name": "b", "image": "x"}])
    ns = ["-n", namespace]
    out = kubectl.run("exec", name, *ns, "-c", "a", "--", "ls", ok=False)
    assert out.stderr.strip() == \
        f"Error from server (BadRequest): pod {name} does not have a host assigned"
    # a log of a pod on no node is empty (LocationStreamer without a location)
    assert kubectl.run("logs", name, *ns, "-c", "a").stdout == ""
    out = kubectl.run("get", "--raw", f"/api/v1/namespaces/{namespace}/pods/{name}/log",
                      ok=False)
    assert out.stderr.strip() == (
        f"Error from server (BadRequest): a container name must be specified for pod {name}, "
        "choose one of: [a b] or one of the init containers: [init]")
