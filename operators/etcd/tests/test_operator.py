"""The etcd operator on the simulated runtime: the pods it makes never run etcd, so the
cluster stays at its founding member; what is checked here is what the operator writes
before etcd answers (the real thing is in test_real.py, on the process runtime)."""

from __future__ import annotations

from operators.etcd import objects
from operators.etcd.resource import EtcdCluster, EtcdClusterSpec
from setpoint.client import Client
from setpoint.resources.models.core_v1 import PersistentVolumeClaim, Pod, Service
from setpoint.testing import OperatorRunner, present
from setpoint.testing.plugin import Waiter

TIMEOUT = 30.0


async def test_a_new_cluster_starts_its_founding_member_only(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=3, version="3.4.23")))

    cluster = await wait_for(EtcdCluster, "e", lambda c: c.status.phase == "Creating"
                             and c.status.is_true("Progressing"), timeout=TIMEOUT)
    assert not cluster.status.is_true("Available")
    pod = await k8s.get(Pod, "e-0")
    spec = present(pod.spec)
    (container,) = present(spec.containers)
    args = present(container.args)
    assert container.image == "quay.io/coreos/etcd:v3.4.23"
    ns = k8s.namespace
    assert f"--initial-cluster=e-0=http://e-0.e.{ns}.svc.cluster.local:2380" in args
    assert "--initial-cluster-state=new" in args
    assert (spec.hostname, spec.subdomain) == ("e-0", "e")
    claim = await k8s.get(PersistentVolumeClaim, "e-0")
    assert present(claim.metadata.annotations)[objects.MEMBER_ID] == "bootstrap"
    assert present(present(spec.volumes)[0].persistent_volume_claim).claim_name == "e-0"
    peers = present((await k8s.get(Service, "e")).spec)
    assert (peers.cluster_ip, peers.publish_not_ready_addresses) == ("None", True)
    assert present(present((await k8s.get(Service, "e-client")).spec).ports)[0].port == 2379
    # no second member is added before the founder answers
    pods = (await k8s.list(Pod, label_selector=objects.selector_string(cluster))).items
    assert [p.metadata.name for p in pods] == ["e-0"]


async def test_a_deleted_founder_pod_is_made_again_on_its_claim(
        k8s: Client, operator: OperatorRunner, wait_for: Waiter) -> None:
    await k8s.create(EtcdCluster(name="e", spec=EtcdClusterSpec(size=1)))
    first = await wait_for(Pod, "e-0", lambda p: True, timeout=TIMEOUT)
    await k8s.delete(Pod, "e-0", grace_period_seconds=0)
    again = await wait_for(Pod, "e-0", lambda p: p.metadata.uid != first.metadata.uid,
                           timeout=TIMEOUT)
    assert again.spec.volumes[0].persistent_volume_claim.claim_name == "e-0"
