"""The simulated kubelet's parts on their own: durations, images, phases, addresses,
the simulated runtime, usage."""

from __future__ import annotations

import ipaddress
from typing import Any

import pytest

from setpoint.workloads.kubelet.addresses import AddressAllocator, AddressesExhausted
from setpoint.workloads.kubelet.annotations import parse_duration
from setpoint.workloads.kubelet.options import KubeletOptions
from setpoint.workloads.kubelet.podstatus import phase_of
from setpoint.workloads.kubelet.runtime import (
    Behaviour,
    ContainerConfig,
    ContainerState,
    SandboxConfig,
    SimulatedRuntime,
    normalize_image,
)
from setpoint.workloads.kubelet.usage import container_usage

Obj = dict[str, Any]


@pytest.mark.parametrize(("text", "seconds"), [
    ("2s", 2.0), ("250ms", 0.25), ("1m30s", 90.0), ("1.5h", 5400.0), ("3", 3.0), ("0", 0.0)])
def test_durations_parse_like_go(text: str, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["", "2x", "s", "-1s", "1s2"])
def test_bad_durations_are_rejected(text: str) -> None:
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize(("image", "full"), [
    ("nginx", "docker.io/library/nginx:latest"),
    ("nginx:1.27", "docker.io/library/nginx:1.27"),
    ("bitnami/redis", "docker.io/bitnami/redis:latest"),
    ("registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10"),
    ("localhost:5000/app", "localhost:5000/app:latest"),
    ("quay.io/x/y@sha256:abc", "quay.io/x/y@sha256:abc"),
])
def test_images_are_reported_fully_qualified(image: str, full: str) -> None:
    assert normalize_image(image) == full


def _running() -> Obj:
    return {"state": {"running": {"startedAt": "t"}}}


def _exited(code: int) -> Obj:
    return {"state": {"terminated": {"exitCode": code}}}


def _spec(policy: str = "Always", init: int = 0) -> Obj:
    return {"restartPolicy": policy, "containers": [{"name": "a"}, {"name": "b"}],
            "initContainers": [{"name": f"i{n}"} for n in range(init)]}


@pytest.mark.parametrize(("policy", "statuses", "terminal", "phase"), [
    ("Always", {"a": _running(), "b": _running()}, False, "Running"),
    ("Always", {"a": _running(), "b": {"state": {"waiting": {}}}}, False, "Pending"),
    ("Always", {"a": _exited(1), "b": _exited(0)}, False, "Running"),  # restarting
    ("Always", {"a": _exited(0), "b": _exited(0)}, True, "Succeeded"),  # deleted, all 0
    ("Always", {"a": _exited(137), "b": _exited(0)}, True, "Failed"),
    ("Never", {"a": _exited(0), "b": _exited(0)}, False, "Succeeded"),
    ("Never", {"a": _exited(0), "b": _exited(2)}, False, "Failed"),
    ("OnFailure", {"a": _exited(0), "b": _exited(2)}, False, "Running"),
    ("Never", {"a": _running()}, False, "Pending"),  # b unknown
])
def test_phase_follows_the_kubelets_get_phase(policy: str, statuses: dict[str, Obj],
                                               terminal: bool, phase: str) -> None:
    by_name = {name: {"name": name, **st} for name, st in statuses.items()}
    assert phase_of(_spec(policy), by_name, terminal) == phase


def test_phase_is_pending_while_init_containers_run_and_failed_when_one_fails() -> None:
    spec = _spec("Never", init=1)
    waiting = {"state": {"waiting": {"reason": "PodInitializing"}}}
    running_init = {"i0": {"name": "i0", **_running()}, "a": waiting, "b": waiting}
    assert phase_of(spec, running_init, False) == "Pending"
    failed_init = {"i0": {"name": "i0", **_exited(1)}, "a": waiting, "b": waiting}
    assert phase_of(spec, failed_init, False) == "Failed"


def test_addresses_come_from_a_block_per_node_and_are_not_reused_at_once() -> None:
    alloc = AddressAllocator()
    a1 = alloc.allocate("a", "p1")
    a2 = alloc.allocate("a", "p2")
    b1 = alloc.allocate("b", "p3")
    assert a1 == "127.16.0.2" and a2 == "127.16.0.3" and b1 == "127.16.1.2"
    assert alloc.allocate("a", "p1") == a1  # the same pod asks again
    alloc.release("p1")
    assert alloc.allocate("a", "p4") == "127.16.0.4"  # next-fit, not the freed one
    assert alloc.bridge_address("b") == "127.16.1.1"


def test_addresses_honour_the_nodes_pod_cidr_and_run_out() -> None:
    alloc = AddressAllocator()
    got = {alloc.allocate("n", f"p{i}", "10.244.3.0/29") for i in range(5)}
    assert all(ipaddress.ip_address(ip) in ipaddress.ip_network("10.244.3.0/29") for ip in got)
    assert "10.244.3.1" not in got and len(got) == 5
    with pytest.raises(AddressesExhausted, match="no IP addresses available"):
        alloc.allocate("n", "p9", "10.244.3.0/29")


def test_reserved_addresses_claim_their_block_for_the_node() -> None:
    alloc = AddressAllocator()
    alloc.reserve("b", "old", "127.16.5.7")
    assert alloc.allocate("b", "new") == "127.16.5.8"
    assert alloc.allocate("a", "other") == "127.16.0.2"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def _container(runtime: SimulatedRuntime, behaviour: Behaviour) -> str:
    sandbox = await runtime.run_pod_sandbox(SandboxConfig("uid", "ns", "p", "n", "127.16.0.2"))
    cid = await runtime.create_container(sandbox, ContainerConfig("c", "nginx",
                                                                   behaviour=behaviour))
    await runtime.start_container(cid)
    return cid


async def test_simulated_containers_exit_when_their_behaviour_says() -> None:
    clock = Clock()
    runtime = SimulatedRuntime(clock)
    exits: list[str] = []
    runtime.on_exit(exits.append)
    cid = await _container(runtime, Behaviour(run_for=2.0, exit_code=3))
    assert (await runtime.container_status(cid)).state is ContainerState.RUNNING  # type: ignore[union-attr]
    clock.now += 2.0
    status = await runtime.container_status(cid)
    assert status is not None and status.state is ContainerState.EXITED
    assert (status.exit_code, status.reason, status.finished_at) == (3, "Error", 1002.0)


async def test_stopping_waits_for_the_container_or_kills_it_at_the_timeout() -> None:
    clock = Clock()
    runtime = SimulatedRuntime(clock)
    drains = await _container(runtime, Behaviour())
    quick = await _container(runtime, Behaviour(stop_after=1.0))
    stubborn = await _container(runtime, Behaviour(stop_after=60.0))
    for cid in (drains, quick, stubborn):
        await runtime.stop_container(cid, timeout=5.0)
    clock.now += 1.0
    states = [await runtime.container_status(c) for c in (drains, quick, stubborn)]
    assert [s.state for s in states if s] == [ContainerState.RUNNING, ContainerState.EXITED,
                                              ContainerState.RUNNING]
    clock.now += 4.0
    states = [await runtime.container_status(c) for c in (drains, quick, stubborn)]
    assert [(s.exit_code, s.reason) for s in states if s] == [
        (0, "Completed"), (0, "Completed"), (137, "Error")]


async def test_killed_containers_exit_137_at_once() -> None:
    runtime = SimulatedRuntime(Clock())
    cid = await _container(runtime, Behaviour())
    await runtime.kill_container(cid)
    status = await runtime.container_status(cid)
    assert status is not None and (status.state, status.exit_code) == (ContainerState.EXITED,
                                                                       137)


def _pod(*containers: Obj, **annotations: str) -> Obj:
    return {"metadata": {"annotations": annotations}, "spec": {"containers": list(containers)}}


def test_usage_defaults_to_a_fraction_of_requests_and_splits_pod_totals() -> None:
    opts = KubeletOptions()
    big = {"name": "big", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
    small = {"name": "small", "resources": {"limits": {"cpu": "200m", "memory": "100Mi"}}}
    bare = {"name": "bare"}
    usage = dict(container_usage(_pod(big, small, bare), ["big", "small", "bare"], opts))
    assert usage["big"].as_resource_list() == {"cpu": "100000000n", "memory": "524288Ki"}
    assert usage["small"].as_resource_list() == {"cpu": "20000000n", "memory": "51200Ki"}
    assert usage["bare"].as_resource_list() == {"cpu": "1000000n", "memory": "4096Ki"}
    wanted = _pod(big, small, **{"sim.setpoint.dev/usage-cpu": "600m"})
    split = dict(container_usage(wanted, ["big", "small"], opts))
    assert split["big"].cpu_nanos == 500_000_000 and split["small"].cpu_nanos == 100_000_000


def test_options_come_from_workload_settings_extra() -> None:
    opts = KubeletOptions.from_extra({"kubelet.grace-cap": "500ms", "kubelet.metrics": "false"})
    assert opts.grace_cap == 0.5 and opts.metrics is False
    assert opts.probe_delay_cap == KubeletOptions().probe_delay_cap


def test_each_process_runtime_cluster_claims_its_own_loopback_network() -> None:
    """Two clusters on one machine get disjoint pod, Service and DNS addresses; a claim
    ends with its holder (setpoint/workloads/loopbacknet.py)."""
    from setpoint.workloads.loopbacknet import claim_loopback_network

    with claim_loopback_network() as first, claim_loopback_network() as second:
        assert first.index != second.index
        assert not first.pods.overlaps(second.pods)
        assert not ipaddress.ip_network(first.services).overlaps(
            ipaddress.ip_network(second.services))
        assert first.cluster_dns != second.cluster_dns
        for network in (first, second):
            # apart from each other's and from the simulated runtime's pod addresses
            assert not network.pods.overlaps(ipaddress.ip_network("127.16.0.0/12"))
            assert not network.pods.overlaps(ipaddress.ip_network(network.services))
        held = first.index
    with claim_loopback_network() as again:
        assert again.index == held  # given back when its holder let go


def test_a_process_runtime_cluster_gives_pods_addresses_of_its_own_network() -> None:
    from setpoint.workloads.loopbacknet import LoopbackNetwork

    network = LoopbackNetwork(3)
    alloc = AddressAllocator(network.pods)
    assert alloc.allocate("a", "p1") == "127.35.0.2"
    assert alloc.allocate("b", "p2") == "127.35.1.2"


def test_a_mount_point_another_namespace_still_uses_is_seen(tmp_path: Any) -> None:
    """A pod's removal keeps a mount point it created while another container's mount
    namespace has a mount there (proc(5) mountinfo: the mount point is field 5)."""
    from pathlib import Path

    from setpoint.workloads.kubelet.process.spawn import mounted_anywhere

    for pid, point in (("10", "/etc/mc\\040router"), ("11", "/var/lib/data")):
        (tmp_path / pid / "ns").mkdir(parents=True)
        (tmp_path / pid / "ns" / "mnt").write_text(pid)
        (tmp_path / pid / "mountinfo").write_text(
            f"36 35 98:0 /vol {point} rw,noatime master:1 - ext3 /dev/root rw\n")
    assert mounted_anywhere(Path("/etc/mc router"), tmp_path)
    assert mounted_anywhere(Path("/var/lib"), tmp_path)  # a mount under it
    assert not mounted_anywhere(Path("/etc/mcrouter"), tmp_path)
