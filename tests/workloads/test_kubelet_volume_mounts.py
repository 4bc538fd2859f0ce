"""The simulated kubelet starts a pod's containers only once its volumes can be set up, as
the 1.32 kubelet's volume manager decides, seen from the API.

Sources (kubernetes/kubernetes v1.32): pkg/volume/configmap/configmap.go and
pkg/volume/secret/secret.go (``SetUpAt``: the object's NotFound unless ``optional``;
``MakePayload``: "configmap references non-existent config key: K", "references
non-existent secret key: K"); pkg/volume/projected/projected.go (``collectData``: the
sources' errors aggregated); pkg/volume/util/operationexecutor/operation_generator.go
(``MountVolume.SetUp failed for volume "V" : <error>``, a ``FailedMount`` warning per
failed attempt); pkg/volume/util/nestedpendingoperations (retries from 500 ms doubling);
pkg/kubelet/volumemanager/populator/desired_state_of_world_populator.go (a claim not Bound
holds the pod without an event); pkg/kubelet/kubelet.go ``SyncPod`` (containers only after
``WaitForAttachAndMount``; its own timeout draws no event)."""

from __future__ import annotations

from typing import Any

from setpoint.client import Kind
from tests.waiting import quiet_period, wait_for
from tests.workloads.test_kubelet_support import kubelet_env, pod, ready

Obj = dict[str, Any]
CORE_EVENT = Kind("v1", "Event")


def waiting_reason(live: Obj) -> str | None:
    statuses = (live.get("status") or {}).get("containerStatuses") or ()
    return next(iter(s["state"].get("waiting", {}).get("reason") for s in statuses), None)


async def failed_mounts(client: Any, name: str) -> list[str]:
    items = (await client.list(CORE_EVENT, namespace="default")).items
    return [e["message"] for e in items
            if e["involvedObject"]["name"] == name and e["reason"] == "FailedMount"]


async def test_a_missing_configmap_holds_the_pod_until_it_is_made() -> None:
    async with kubelet_env() as env:
        await env.run(pod("web", volumes=[{"name": "config",
                                           "configMap": {"name": "app-config"}}]))
        live = await env.until("web", lambda p: waiting_reason(p) == "ContainerCreating")
        assert live["status"]["phase"] == "Pending"
        message = 'MountVolume.SetUp failed for volume "config" : configmap "app-config" ' \
                  "not found"
        events = await env_wait(env, "web", message)
        assert events[0]["type"] == "Warning" and events[0]["source"]["component"] == "kubelet"
        await env.client.create({"apiVersion": "v1", "kind": "ConfigMap",
                                 "metadata": {"name": "app-config", "namespace": "default"},
                                 "data": {"k": "v"}})
        await env.until("web", ready)


async def test_an_optional_configmap_and_secret_need_not_exist() -> None:
    async with kubelet_env() as env:
        await env.run(pod("web", volumes=[
            {"name": "config", "configMap": {"name": "absent", "optional": True}},
            {"name": "creds", "secret": {"secretName": "absent", "optional": True}}]))
        await env.until("web", ready)


async def test_missing_keys_and_projected_sources_are_the_plugins_errors() -> None:
    async with kubelet_env() as env:
        await env.client.create({"apiVersion": "v1", "kind": "ConfigMap",
                                 "metadata": {"name": "cm", "namespace": "default"},
                                 "data": {"present": "1"}})
        await env.run(pod("web", volumes=[
            {"name": "one", "configMap": {"name": "cm", "items": [
                {"key": "absent", "path": "a"}]}},
            {"name": "both", "projected": {"sources": [
                {"configMap": {"name": "gone"}}, {"secret": {"name": "hidden"}}]}},
            {"name": "token", "secret": {"secretName": "db"}}]))
        await env_wait(env, "web", 'MountVolume.SetUp failed for volume "one" : configmap '
                       "references non-existent config key: absent")
        await env_wait(env, "web", 'MountVolume.SetUp failed for volume "both" : '
                       '[configmap "gone" not found, secret "hidden" not found]')
        await env_wait(env, "web", 'MountVolume.SetUp failed for volume "token" : '
                       'secret "db" not found')
        assert waiting_reason(await env.get("web")) == "ContainerCreating"


async def test_an_unbound_claim_holds_the_pod_without_an_event() -> None:
    async with kubelet_env() as env:
        await env.client.create({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "none",
                     "resources": {"requests": {"storage": "1Gi"}}}})
        await env.run(pod("web", volumes=[{"name": "data",
                                           "persistentVolumeClaim": {"claimName": "data"}}]))
        await env.until("web", lambda p: waiting_reason(p) == "ContainerCreating")
        await quiet_period(1.5)  # three mount attempts' worth: still waiting, silently
        assert waiting_reason(await env.get("web")) == "ContainerCreating"
        assert await failed_mounts(env.client, "web") == []


async def env_wait(env: Any, name: str, message: str) -> list[Obj]:
    """The FailedMount events of ``name`` once one says ``message``."""
    async def found() -> list[Obj]:
        items = (await env.client.list(CORE_EVENT, namespace="default")).items
        return [e for e in items if e["involvedObject"]["name"] == name
                and e["reason"] == "FailedMount" and e["message"] == message]

    result: list[Obj] = await wait_for(found)
    return result
