"""``setpoint cluster up``'s node health flags, named as the Kubernetes components name them:
kube-controller-manager's ``--node-monitor-grace-period``, ``--node-monitor-period`` and
``--node-startup-grace-period``
(cmd/kube-controller-manager/app/options/nodelifecyclecontroller.go, Go durations), the
kubelet's ``--node-lease-duration-seconds`` (KubeletConfiguration nodeLeaseDurationSeconds,
renewed every quarter of it: pkg/kubelet/kubelet.go nodeLeaseRenewIntervalFraction), and
kube-apiserver's ``--default-not-ready-toleration-seconds`` and
``--default-unreachable-toleration-seconds`` (plugin/pkg/admission/defaulttolerationseconds/
admission.go)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from setpoint.cli.main import cli
from setpoint.client import Client, Kind, PatchType, load_kubeconfig
from tests.support import ServerProcess
from tests.waiting import wait_for

NODE = Kind("v1", "Node")
LEASE = Kind("coordination.k8s.io/v1", "Lease")
POD = Kind("v1", "Pod")


@pytest.mark.parametrize(("args", "message"), [
    (["--node-monitor-grace-period", "40"],
     "Invalid value for '--node-monitor-grace-period': time: missing unit in duration "
     '"40": write a duration as kube-controller-manager takes it, such as 40s, 2m or 1m30s'),
    (["--node-monitor-grace-period", "10s"],
     "Invalid value for '--node-monitor-grace-period': 10s is not longer than the 10s in "
     "which the kubelets renew their node Leases (a quarter of --node-lease-duration-seconds), "
     "so every node would turn Unknown between two renewals: pass more than 10s (the default "
     "is 40s)"),
    # the grace period is weighed against the lease given, whichever flag comes first
    (["--node-monitor-grace-period", "3s", "--node-lease-duration-seconds", "12"],
     "Invalid value for '--node-monitor-grace-period': 3s is not longer than the 3s in "
     "which the kubelets renew their node Leases (a quarter of --node-lease-duration-seconds), "
     "so every node would turn Unknown between two renewals: pass more than 3s (the default "
     "is 40s)"),
    (["--node-lease-duration-seconds", "0"],
     "Invalid value for '--node-lease-duration-seconds': 0 is not in the range x>=1."),
    (["--node-monitor-period", "-5s"],
     "Invalid value for '--node-monitor-period': -5s is not a positive duration: pass one "
     "such as 5s"),
    (["--node-startup-grace-period", "0s"],
     "Invalid value for '--node-startup-grace-period': 0s is not a positive duration: pass "
     "one such as 1m0s"),
    (["--node-startup-grace-period", "1 minute"],
     "Invalid value for '--node-startup-grace-period': time: unknown unit \" minute\" in duration "
     "\"1 minute\": "
     "write a duration as kube-controller-manager takes it, such as 40s, 2m or 1m30s"),
    (["--default-unreachable-toleration-seconds", "-1"],
     "Invalid value for '--default-unreachable-toleration-seconds': -1 is not in the range "
     "x>=0."),
    (["--default-not-ready-toleration-seconds", "5m"],
     "Invalid value for '--default-not-ready-toleration-seconds': '5m' is not a valid "
     "integer range."),
])
def test_a_bad_value_is_one_line_naming_the_flag_and_the_fix(
        args: list[str], message: str) -> None:
    result = CliRunner().invoke(cli, ["cluster", "up", "--memory", "--port", "0", *args])
    assert result.exit_code == 2
    assert result.output.strip().splitlines()[-1] == f"Error: {message}"


def tolerations(pod: dict[str, Any]) -> dict[str, int]:
    return {t["key"]: t["tolerationSeconds"] for t in pod["spec"]["tolerations"]
            if t.get("effect") == "NoExecute"}


def ready_status(node: dict[str, Any]) -> str:
    return str(next(c["status"] for c in node["status"]["conditions"] if c["type"] == "Ready"))


async def test_the_flags_reach_the_node_lifecycle_and_the_pods_tolerations(
        tmp_path: Path) -> None:
    """A pod gets the toleration seconds given; the kubelet's node Lease has the duration
    given; a node whose kubelet stops is marked Unknown after the grace period given
    (node_lifecycle_controller.go ``tryUpdateNodeHealth``), and taint-based eviction (the
    taint eviction controller) then deletes the pod once its unreachable toleration ran out.
    With the default 40 s grace, the node could not be Unknown within the wait below (30 s
    from the kubelet's stop), so the flag is what made it so; a grace of 3 s is allowed by
    the 1 s renewals of a 4 s Lease (with the default 10 s the node would flap)."""
    with ServerProcess(tmp_path, "--nodes", "1", "--node-monitor-grace-period", "3s",
                       "--node-lease-duration-seconds", "4", "--node-monitor-period", "1s",
                       "--default-not-ready-toleration-seconds", "9",
                       "--default-unreachable-toleration-seconds", "2"):
        async with Client(load_kubeconfig(tmp_path / "kubeconfig")) as client:
            pod = await client.create({
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "p", "namespace": "default"},
                "spec": {"containers": [{"name": "c", "image": "example/app:1"}]}})
            assert tolerations(pod) == {"node.kubernetes.io/not-ready": 9,
                                        "node.kubernetes.io/unreachable": 2}

            async def bound() -> bool:
                found = await client.get(POD, "p", namespace="default")
                return bool(found["spec"].get("nodeName"))

            await wait_for(bound)
            lease = await client.get(LEASE, "node-1", namespace="kube-node-lease")
            # the kubelet renews it every second (a quarter of it), which is what keeps the
            # node Ready under a 3 s grace until its kubelet stops
            assert lease["spec"]["leaseDurationSeconds"] == 4
            assert ready_status(await client.get(NODE, "node-1")) == "True"
            await client.patch(NODE, "node-1", {"metadata": {"annotations": {
                "sim.setpoint.dev/node-ready": "unknown"}}}, patch_type=PatchType.MERGE)

            async def node_unknown() -> bool:
                return ready_status(await client.get(NODE, "node-1")) == "Unknown"

            await wait_for(node_unknown, timeout=30.0)

            async def pod_evicted() -> bool:
                # deleted gracefully: with its kubelet gone it stays Terminating, as on a
                # real cluster, until the node is back or removed
                found = await client.get(POD, "p", namespace="default")
                return "deletionTimestamp" in found["metadata"]

            await wait_for(pod_evicted)
