"""Pod admission: ServiceAccount token volume, priority, default tolerations."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from setpoint.cluster.admission.pods import add_default_tolerations, mount_service_account_token
from setpoint.cluster.apiserver import APIServer
from setpoint.cluster.registry.options import DeleteOptions, WriteOptions
from setpoint.cluster.serializer.decode import Decoded
from setpoint.machinery.errors import StatusError
from tests.conftest import SHARED

USER = WriteOptions(field_manager="tests")
GOLDEN = SHARED / "conformance" / "golden" / "field-selectors-pods.json"
MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"


@pytest.fixture
async def server() -> AsyncIterator[APIServer]:
    api = APIServer(None, ca_pem=b"CA")
    api.start()
    yield api
    await api.stop()


def create(api: APIServer, resource: str, body: dict[str, Any], ns: str | None = "default",
           group: str = "", version: str = "v1") -> dict[str, Any]:
    return api.rest.create(api.resource(group, version, resource), ns, Decoded(body), USER).obj


def pod(name: str = "p", **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox:1.36"}], **spec}}


def without_random_suffix(value: Any) -> Any:
    return json.loads(re.sub(r"kube-api-access-[a-z0-9]{5}", "kube-api-access-<gen>",
                             json.dumps(value)))


async def test_admitted_pod_spec_is_what_the_real_server_returns(server: APIServer) -> None:
    if not GOLDEN.exists():
        pytest.skip("shared conformance corpus not present")
    want = json.loads(GOLDEN.read_text())["steps"][0]["response"]["body"]
    created = create(server, "pods", {"metadata": {"name": "p1", "labels": {"app": "x"}},
                                      "spec": {"containers": [{"name": "c",
                                                               "image": "busybox:1.36"}]}})
    assert without_random_suffix(created["spec"]) == want["spec"]
    assert list(created["spec"]) == list(want["spec"])
    assert created["status"] == want["status"]


async def test_every_container_and_init_container_mounts_one_token_volume(
        server: APIServer) -> None:
    created = create(server, "pods", pod(initContainers=[{"name": "i", "image": "busybox"}]))
    spec = created["spec"]
    [volume] = spec["volumes"]
    assert re.fullmatch(r"kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}", volume["name"])
    for container in (*spec["initContainers"], *spec["containers"]):
        assert container["volumeMounts"] == [
            {"name": volume["name"], "readOnly": True, "mountPath": MOUNT}]


def test_a_container_with_its_own_mount_at_the_path_is_left_alone() -> None:
    spec: dict[str, Any] = {
        "volumes": [{"name": "mine", "emptyDir": {}}],
        "containers": [{"name": "a", "volumeMounts": [{"name": "mine", "mountPath": MOUNT}]},
                       {"name": "b"}]}
    mount_service_account_token(spec)
    assert spec["containers"][0]["volumeMounts"] == [{"name": "mine", "mountPath": MOUNT}]
    token = spec["containers"][1]["volumeMounts"][0]["name"]
    assert [v["name"] for v in spec["volumes"]] == ["mine", token]


def test_an_existing_kube_api_access_volume_is_reused() -> None:
    spec: dict[str, Any] = {"volumes": [{"name": "kube-api-access-abcde", "emptyDir": {}}],
                            "containers": [{"name": "a"}]}
    mount_service_account_token(spec)
    assert len(spec["volumes"]) == 1
    assert spec["containers"][0]["volumeMounts"][0]["name"] == "kube-api-access-abcde"


@pytest.mark.parametrize(("pod_says", "account_says", "mounted"), [
    (None, False, False), (True, False, True), (False, None, False), (None, None, True)])
async def test_automount_preference_of_pod_wins_over_the_account(
        server: APIServer, pod_says: bool | None, account_says: bool | None,
        mounted: bool) -> None:
    account: dict[str, Any] = {"metadata": {"name": "robot"}}
    if account_says is not None:
        account["automountServiceAccountToken"] = account_says
    create(server, "serviceaccounts", account)
    spec: dict[str, Any] = {"serviceAccountName": "robot"}
    if pod_says is not None:
        spec["automountServiceAccountToken"] = pod_says
    created = create(server, "pods", pod(**spec))
    assert ("volumes" in created["spec"]) is mounted
    assert created["spec"]["serviceAccount"] == "robot"


async def test_a_missing_service_account_is_forbidden(server: APIServer) -> None:
    with pytest.raises(StatusError) as caught:
        create(server, "pods", pod(serviceAccountName="nobody"))
    assert caught.value.code == 403
    assert caught.value.message == (
        'pods "p" is forbidden: error looking up service account default/nobody: '
        'serviceaccount "nobody" not found')


async def test_the_deprecated_service_account_field_names_the_account(
        server: APIServer) -> None:
    create(server, "serviceaccounts", {"metadata": {"name": "robot"}})
    created = create(server, "pods", pod(serviceAccount="robot"))
    assert created["spec"]["serviceAccountName"] == "robot"


async def test_the_accounts_image_pull_secrets_are_copied_to_a_pod_without_any(
        server: APIServer) -> None:
    create(server, "serviceaccounts", {"metadata": {"name": "robot"},
                                       "imagePullSecrets": [{"name": "registry"}]})
    created = create(server, "pods", pod(serviceAccountName="robot"))
    assert created["spec"]["imagePullSecrets"] == [{"name": "registry"}]
    own = create(server, "pods", pod("q", serviceAccountName="robot",
                                     imagePullSecrets=[{"name": "mine"}]))
    assert own["spec"]["imagePullSecrets"] == [{"name": "mine"}]


async def test_mirror_pods_are_not_given_an_account(server: APIServer) -> None:
    # (a mirror pod is bound: ValidatePodSpecificAnnotations requires its nodeName)
    mirror = pod(nodeName="node-1")
    mirror["metadata"]["annotations"] = {"kubernetes.io/config.mirror": "x"}
    created = create(server, "pods", mirror)
    assert "serviceAccountName" not in created["spec"] and "volumes" not in created["spec"]
    mirror["spec"]["serviceAccountName"] = "default"
    mirror["metadata"]["name"] = "q"
    with pytest.raises(StatusError) as caught:
        create(server, "pods", mirror)
    assert caught.value.message == (
        'pods "q" is forbidden: a mirror pod may not reference service accounts')


async def test_priority_comes_from_the_named_priority_class(server: APIServer) -> None:
    create(server, "priorityclasses", {"metadata": {"name": "high"}, "value": 1000,
                                       "preemptionPolicy": "Never"}, None, "scheduling.k8s.io")
    created = create(server, "pods", pod(priorityClassName="high"))
    assert (created["spec"]["priority"], created["spec"]["preemptionPolicy"]) == (1000, "Never")
    system = create(server, "pods", pod("s", priorityClassName="system-node-critical"))
    assert system["spec"]["priority"] == 2000001000


async def test_the_global_default_priority_class_follows_its_writes(server: APIServer) -> None:
    """plugin/pkg/admission/priority/admission.go ``admitPod``: a pod without a class gets
    the global default's name and value (``getDefaultPriority``), 0 without one. The default
    is kept between pods (the plugin's lister), so each PriorityClass write, including one
    that takes the default away, must show in the next pod."""
    scheduling = "scheduling.k8s.io"
    assert create(server, "pods", pod("a"))["spec"]["priority"] == 0
    create(server, "priorityclasses", {"metadata": {"name": "low"}, "value": 7,
                                       "globalDefault": True}, None, scheduling)
    b = create(server, "pods", pod("b"))["spec"]
    assert (b["priorityClassName"], b["priority"]) == ("low", 7)
    rt = server.resource(scheduling, "v1", "priorityclasses")
    low = server.rest.get(rt, None, "low")
    server.rest.update(rt, None, "low", Decoded({**low, "globalDefault": False}), USER)
    c = create(server, "pods", pod("c"))["spec"]
    assert ("priorityClassName" not in c, c["priority"]) == (True, 0)
    create(server, "priorityclasses", {"metadata": {"name": "other"}, "value": 9,
                                       "globalDefault": True}, None, scheduling)
    assert create(server, "pods", pod("d"))["spec"]["priority"] == 9
    server.rest.delete(rt, None, "other", DeleteOptions())
    assert create(server, "pods", pod("e"))["spec"]["priority"] == 0


async def test_unknown_or_contradicted_priority_class_is_forbidden(server: APIServer) -> None:
    with pytest.raises(StatusError) as caught:
        create(server, "pods", pod(priorityClassName="nope"))
    assert caught.value.message == (
        'pods "p" is forbidden: no PriorityClass with name nope was found')
    create(server, "priorityclasses", {"metadata": {"name": "high"}, "value": 1000}, None,
           "scheduling.k8s.io")
    with pytest.raises(StatusError) as caught:
        create(server, "pods", pod(priorityClassName="high", priority=5))
    assert caught.value.message == (
        'pods "p" is forbidden: the integer value of priority (5) must not be provided in pod '
        "spec; priority admission controller computed 1000 from the given PriorityClass name")


def test_default_tolerations_are_added_unless_already_tolerated() -> None:
    spec: dict[str, Any] = {"tolerations": [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 10}]}
    add_default_tolerations(spec)
    assert spec["tolerations"][1:] == [
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
         "tolerationSeconds": 300}]
    everything: dict[str, Any] = {"tolerations": [{"operator": "Exists"}]}
    add_default_tolerations(everything)
    assert everything["tolerations"] == [{"operator": "Exists"}]
    no_schedule: dict[str, Any] = {"tolerations": [{"operator": "Exists",
                                                     "effect": "NoSchedule"}]}
    add_default_tolerations(no_schedule)
    assert len(no_schedule["tolerations"]) == 3
