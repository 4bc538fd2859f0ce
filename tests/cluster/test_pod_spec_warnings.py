"""The ``Warning`` headers a pod spec draws, on pods and on the kinds that carry a pod template.

Sources (kubernetes v1.32): pkg/api/pod/warnings.go (``GetWarningsForPod``,
``GetWarningsForPodTemplate``, ``warningsForPodSpecAndMeta``), pkg/api/node/util.go
(``deprecatedNodeLabels``, ``GetWarningsForNodeSelectorTerm``),
pkg/api/persistentvolumeclaim/util.go (``GetWarningsForPersistentVolumeClaimSpec``),
pkg/api/job/warnings.go (``WarningsForJobSpec``) and each kind's strategy.go
``WarningsOnCreate``/``WarningsOnUpdate``: pkg/registry/core/pod, apps/deployment,
apps/replicaset, apps/statefulset, apps/daemonset, batch/job, batch/cronjob,
core/replicationcontroller, core/podtemplate. The expected texts are Go's ``fmt.Sprintf``
output, byte for byte; the server sends each as ``299 - "<text>"`` (strconv.Quote).
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import orjson
import pytest
import pytest_asyncio

from setpoint.cluster import serve
from tests.cluster.conftest import API
from tests.conftest import kubectl_path

pytestmark = pytest.mark.asyncio(loop_scope="module")

Obj = dict[str, Any]
NS = "/api/v1/namespaces/default"
APPS = "/apis/apps/v1/namespaces/default"
BATCH = "/apis/batch/v1/namespaces/default"
OS_LABEL = ('deprecated since v1.14; use "kubernetes.io/os" instead')


class Env:
    def __init__(self, api: API, workdir: Path) -> None:
        self.api = api
        self.workdir = workdir


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def env(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Env]:
    workdir = tmp_path_factory.mktemp("pod-warnings")
    async with serve(kubeconfig=workdir / "kubeconfig") as cluster:
        headers = {"Authorization": f"Bearer {cluster.token}"}
        async with aiohttp.ClientSession(headers=headers) as session:
            yield Env(API(cluster, session), workdir)


async def write(api: API, method: str, path: str, body: Obj,
                expect: int = 201) -> list[str]:
    """The request's warnings, each as its text (the header's quoted string decoded)."""
    async with api.session.request(
            method, api.cluster.url + path, data=orjson.dumps(body), ssl=api.ssl,
            headers={"Content-Type": "application/json"}) as resp:
        payload = await resp.read()
        assert resp.status == expect, payload
        headers = resp.headers.getall("Warning", [])
    texts = []
    for header in headers:
        assert header.startswith('299 - "'), header
        texts.append(json.loads(header[len("299 - "):]))
    return texts


def pod_spec(**extra: Any) -> Obj:
    return {"containers": [{"name": "c", "image": "nginx"}], **extra}


def template(spec: Obj | None = None, labels: Obj | None = None) -> Obj:
    return {"metadata": {"labels": labels or {"app": "w"}},
            "spec": spec or pod_spec(nodeSelector={"beta.kubernetes.io/os": "linux"})}


async def test_a_pod_draws_every_spec_warning_in_gos_order(env: Env) -> None:
    """warningsForPodSpecAndMeta's checks, in its order: node labels in nodeSelector, node
    affinity and topology spread (and a null spread selector), deprecated volume plugins and
    an ephemeral claim's fractional storage, a projected path a token also writes (v1.32's
    warningsForOverlappingVirtualPaths, #121968), duplicate
    host alias IPs and pull secrets, an empty pull secret name, a container seccomp
    annotation without its field, fractional memory, a hidden env var, a hostIP without
    hostPort and a port defined twice, a negative grace period, a null pod affinity
    selector."""
    spec = {
        "nodeSelector": {"failure-domain.beta.kubernetes.io/zone": "a"},
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "beta.kubernetes.io/arch",
                                           "operator": "In", "values": ["amd64"]}]}]},
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": 1, "preference": {"matchExpressions": [
                        {"key": "node-role.kubernetes.io/master", "operator": "Exists"}]}}]},
            "podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
                {"topologyKey": "kubernetes.io/hostname"}]}},
        "topologySpreadConstraints": [{"maxSkew": 1, "whenUnsatisfiable": "DoNotSchedule",
                                       "topologyKey": "beta.kubernetes.io/instance-type"}],
        "volumes": [
            {"name": "repo", "gitRepo": {"repository": "https://example.com/r.git"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1500m"}}}}}},
            {"name": "token", "projected": {"sources": [
                {"serviceAccountToken": {"path": "token"}},
                {"configMap": {"name": "cm", "items": [{"key": "k", "path": "token"}]}}]}}],
        "hostAliases": [{"ip": "127.0.0.1", "hostnames": ["a"]},
                        {"ip": "127.0.0.1", "hostnames": ["b"]}],
        "imagePullSecrets": [{"name": "pull"}, {"name": "pull"}, {"name": ""}],
        "terminationGracePeriodSeconds": -5,
        "containers": [
            {"name": "c", "image": "nginx",
             "resources": {"requests": {"memory": "1.5"}, "limits": {"memory": "1.5"}},
             "env": [{"name": "X", "value": "a"}, {"name": "X", "value": "$(X)b"},
                     {"name": "X", "value": "c"}],
             "ports": [{"containerPort": 80, "hostIP": "127.0.0.1"}]},
            {"name": "d", "image": "nginx", "ports": [{"containerPort": 80}]}],
    }
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
        "name": "all-warnings",
        "annotations": {"container.seccomp.security.alpha.kubernetes.io/c": "runtime/default"}},
        "spec": spec}
    warnings = await write(env.api, "POST", f"{NS}/pods", pod)
    assert warnings == [
        'spec.nodeSelector[failure-domain.beta.kubernetes.io/zone]: deprecated since v1.17; '
        'use "topology.kubernetes.io/zone" instead',
        "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
        ".nodeSelectorTerms[0].matchExpressions[0].key: beta.kubernetes.io/arch is deprecated "
        'since v1.14; use "kubernetes.io/arch" instead',
        "spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
        ".preference.matchExpressions[0].key: node-role.kubernetes.io/master is use "
        '"node-role.kubernetes.io/control-plane" instead',
        "spec.topologySpreadConstraints[0].topologyKey: beta.kubernetes.io/instance-type is "
        'deprecated since v1.17; use "node.kubernetes.io/instance-type" instead',
        "spec.topologySpreadConstraints[0].labelSelector: a null labelSelector results in "
        "matching no pod",
        "spec.volumes[0].gitRepo: deprecated in v1.11",
        'spec.volumes[1].ephemeral.volumeClaimTemplate.spec.resources.requests[storage]: '
        'fractional byte value "1500m" is invalid, must be an integer',
        'volume "token" (Projected ConfigMap "cm"): overlapping paths: "token" with "token"',
        'spec.hostAliases[1].ip: duplicate ip "127.0.0.1"',
        'spec.imagePullSecrets[1].name: duplicate name "pull"',
        'spec.imagePullSecrets[2].name: invalid empty name ""',
        "metadata.annotations[container.seccomp.security.alpha.kubernetes.io/c]: "
        'non-functional in v1.27+; use the "seccompProfile" field instead',
        'spec.containers[0].resources.limits[memory]: fractional byte value "1500m" is '
        "invalid, must be an integer",
        'spec.containers[0].resources.requests[memory]: fractional byte value "1500m" is '
        "invalid, must be an integer",
        'spec.containers[0].env[2]: hides previous definition of "X", which may be dropped '
        "when using apply",
        "spec.containers[0].ports[0]: hostIP set without hostPort: {Name: HostPort:0 "
        "ContainerPort:80 Protocol:TCP HostIP:127.0.0.1}",
        "spec.containers[1].ports[0]: overlapping port definition with "
        "spec.containers[0].ports[0]",
        "spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and "
        "will be treated as 1",
        "spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]"
        ".labelSelector: a null labelSelector results in matching no pod",
    ]


async def test_ports_defined_twice_are_duplicate_or_ambiguous(env: Env) -> None:
    """The same containerPort/protocol twice: exactly equal (hostIP and hostPort) is a
    duplicate; the same hostPort with a hostIP on one side only is dangerously ambiguous;
    another protocol is no clash."""
    spec = pod_spec(containers=[
        {"name": "a", "image": "nginx", "ports": [
            {"containerPort": 53, "protocol": "UDP"},
            {"containerPort": 53, "protocol": "TCP"},
            {"containerPort": 8080, "hostPort": 8080, "hostIP": "127.0.0.1"}]},
        {"name": "b", "image": "nginx", "ports": [
            {"containerPort": 53, "protocol": "UDP"},
            {"containerPort": 8080, "hostPort": 8080}]}])
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "ports"}, "spec": spec}
    assert await write(env.api, "POST", f"{NS}/pods", pod) == [
        "spec.containers[1].ports[0]: duplicate port definition with "
        "spec.containers[0].ports[0]",
        "spec.containers[1].ports[1]: dangerously ambiguous port definition with "
        "spec.containers[0].ports[2]",
    ]


async def test_a_pod_without_problems_draws_no_warning(env: Env) -> None:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "clean"}, "spec": pod_spec(
        nodeSelector={"kubernetes.io/os": "linux"},
        containers=[{"name": "c", "image": "nginx", "resources": {
            "requests": {"memory": "64Mi", "ephemeral-storage": "1Gi"}},
            "env": [{"name": "X", "value": "a"}, {"name": "X", "value": "$(X)b"}]}])}
    assert await write(env.api, "POST", f"{NS}/pods", pod) == []


def workload(kind: str, name: str) -> tuple[str, Obj]:
    """A valid object of ``kind`` whose pod template selects a deprecated node label."""
    selector = {"matchLabels": {"app": "w"}}
    if kind == "PodTemplate":
        return f"{NS}/podtemplates", {"apiVersion": "v1", "kind": kind,
                                      "metadata": {"name": name}, "template": template()}
    if kind == "ReplicationController":
        return f"{NS}/replicationcontrollers", {
            "apiVersion": "v1", "kind": kind, "metadata": {"name": name},
            "spec": {"selector": {"app": "w"}, "template": template()}}
    if kind in ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"):
        spec: Obj = {"selector": selector, "template": template()}
        if kind == "StatefulSet":
            spec["serviceName"] = "w"
        return f"{APPS}/{kind.lower()}s", {"apiVersion": "apps/v1", "kind": kind,
                                           "metadata": {"name": name}, "spec": spec}
    job_template = template(pod_spec(restartPolicy="Never",
                                     nodeSelector={"beta.kubernetes.io/os": "linux"}))
    if kind == "Job":
        return f"{BATCH}/jobs", {"apiVersion": "batch/v1", "kind": kind,
                                 "metadata": {"name": name},
                                 "spec": {"template": job_template}}
    return f"{BATCH}/cronjobs", {"apiVersion": "batch/v1", "kind": kind,
                                 "metadata": {"name": name},
                                 "spec": {"schedule": "*/5 * * * *",
                                          "jobTemplate": {"spec": {"template": job_template}}}}


NAME_WARNING = ("metadata.name: this is used in Pod names and hostnames, which can result in "
                "surprising behavior; a DNS label is recommended: [must not contain dots]")


@pytest.mark.parametrize(("kind", "template_path", "checks_name"), [
    ("Deployment", "spec.template", True),
    ("ReplicaSet", "spec.template", True),
    ("ReplicationController", "spec.template", True),
    ("StatefulSet", "spec.template", False),
    ("DaemonSet", "spec.template", False),
    ("Job", "spec.template", True),
    ("CronJob", "spec.jobTemplate.spec.template", True),
    ("PodTemplate", "template", False),
])
async def test_a_workload_warns_about_its_pod_template_at_the_templates_path(
        env: Env, kind: str, template_path: str, checks_name: bool) -> None:
    """WarningsOnCreate: the name warning where the kind's pods are named after it, then
    GetWarningsForPodTemplate with the template's path."""
    # (a StatefulSet's name must be a DNS label, apps validation.go ValidateStatefulSetName:
    # it alone gets no dot, and no name warning is expected of it anyway)
    dotted = "" if kind == "StatefulSet" else ".v1"
    path, obj = workload(kind, f"w{uuid.uuid4().hex[:6]}{dotted}")
    expected = [NAME_WARNING] if checks_name else []
    expected.append(f"{template_path}.spec.nodeSelector[beta.kubernetes.io/os]: {OS_LABEL}")
    assert await write(env.api, "POST", path, obj) == expected


async def test_an_update_warns_only_when_it_changes_the_spec(env: Env) -> None:
    """deployment/strategy.go WarningsOnUpdate: the template's warnings when the generation
    moved; a metadata-only update draws none."""
    path, obj = workload("Deployment", "upd")
    await write(env.api, "POST", path, obj)
    _, stored = await env.api.get(f"{path}/upd")
    relabelled = copy.deepcopy(stored)
    relabelled["metadata"]["labels"] = {"tier": "web"}
    assert await write(env.api, "PUT", f"{path}/upd", relabelled, expect=200) == []
    _, stored = await env.api.get(f"{path}/upd")
    stored["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] = -1
    assert await write(env.api, "PUT", f"{path}/upd", stored, expect=200) == [
        f"spec.template.spec.nodeSelector[beta.kubernetes.io/os]: {OS_LABEL}",
        "spec.template.spec.terminationGracePeriodSeconds: must be >= 0; negative values are "
        "invalid and will be treated as 1",
    ]


async def test_a_replication_controller_update_warns_about_the_template_it_replaces(
        env: Env) -> None:
    """replicationcontroller/strategy.go WarningsOnUpdate passes the stored template as the
    one to check (GetWarningsForPodTemplate(..., oldRc.Spec.Template,
    newRc.Spec.Template)): fixing the template still warns about the old one, once."""
    path, obj = workload("ReplicationController", "rc")
    await write(env.api, "POST", path, obj)
    _, stored = await env.api.get(f"{path}/rc")
    stored["spec"]["template"]["spec"]["nodeSelector"] = {"kubernetes.io/os": "linux"}
    assert await write(env.api, "PUT", f"{path}/rc", stored, expect=200) == [
        f"spec.template.spec.nodeSelector[beta.kubernetes.io/os]: {OS_LABEL}"]
    _, stored = await env.api.get(f"{path}/rc")
    assert stored["metadata"]["generation"] == 2
    stored["spec"]["replicas"] = 3
    assert await write(env.api, "PUT", f"{path}/rc", stored, expect=200) == []


async def test_an_indexed_job_past_the_soft_limits_warns(env: Env) -> None:
    """pkg/api/job/warnings.go: Indexed, completions > 10^5 and parallelism > 10^4."""
    path, obj = workload("Job", "indexed")
    obj["spec"].update(completionMode="Indexed", completions=100_001, parallelism=10_001)
    obj["spec"]["template"]["spec"].pop("nodeSelector")
    assert await write(env.api, "POST", path, obj) == [
        "spec: In Indexed Jobs with a number of completions higher than 10^5 and a "
        "parallelism higher than 10^4, Kubernetes might not be able to track "
        "completedIndexes when a big number of indexes fail"]


async def test_kubectl_apply_prints_the_template_warnings(env: Env) -> None:
    """kubectl 1.32 prints each Warning header on stderr as ``Warning: <text>``."""
    _, obj = workload("Deployment", "kubectl.web")
    manifest = env.workdir / "deployment.json"
    manifest.write_bytes(orjson.dumps(obj))
    home = env.workdir / "home"
    home.mkdir(exist_ok=True)
    proc = await asyncio.create_subprocess_exec(
        kubectl_path(), "--kubeconfig", str(env.workdir / "kubeconfig"), "--cache-dir",
        str(env.workdir / f"cache-{uuid.uuid4().hex[:8]}"), "-n", "default", "apply", "-f",
        str(manifest), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)})
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert "deployment.apps/kubectl.web created" in out.decode()
    warnings = [line for line in err.decode().splitlines() if line.startswith("Warning: ")]
    assert warnings == [
        f"Warning: {NAME_WARNING}",
        f"Warning: spec.template.spec.nodeSelector[beta.kubernetes.io/os]: {OS_LABEL}",
    ]


async def test_a_pod_template_counts_generations_and_warns_on_a_template_change(
        env: Env) -> None:
    """podtemplate/strategy.go: PrepareForCreate sets generation 1, PrepareForUpdate moves
    it when the template changes, and WarningsOnUpdate checks the template then only."""
    path, obj = workload("PodTemplate", "tpl")
    await write(env.api, "POST", path, obj)
    _, stored = await env.api.get(f"{path}/tpl")
    assert stored["metadata"]["generation"] == 1
    stored["metadata"]["labels"] = {"tier": "web"}
    assert await write(env.api, "PUT", f"{path}/tpl", stored, expect=200) == []
    _, stored = await env.api.get(f"{path}/tpl")
    assert stored["metadata"]["generation"] == 1
    stored["template"]["spec"]["imagePullSecrets"] = [{"name": ""}]
    assert await write(env.api, "PUT", f"{path}/tpl", stored, expect=200) == [
        f"template.spec.nodeSelector[beta.kubernetes.io/os]: {OS_LABEL}",
        'template.spec.imagePullSecrets[0].name: invalid empty name ""']
    _, stored = await env.api.get(f"{path}/tpl")
    assert stored["metadata"]["generation"] == 2


async def test_a_cronjob_update_with_tz_in_its_schedule_warns(env: Env) -> None:
    """cronjob/strategy.go WarningsOnUpdate: a schedule naming TZ draws the timeZone warning
    (its path printed as Go builds it, spec.spec.schedule) on every update, after the
    template's warnings (none here: the spec did not change)."""
    path, obj = workload("CronJob", "tz")
    obj["spec"]["jobTemplate"]["spec"]["template"]["spec"].pop("nodeSelector")
    await write(env.api, "POST", path, obj)
    # 1.32 refuses TZ in a new schedule (ValidateCronJobCreate): such a cronjob comes from
    # an older server, so it is planted in storage as one would have stored it
    store = env.api.cluster.api.store
    _, stored = await env.api.get(f"{path}/tz")
    key = next(k for k in store.resources() if k.endswith("cronjobs"))
    stored["spec"]["schedule"] = "CRON_TZ=UTC 0 * * * *"
    store.put(key, stored)
    _, stored = await env.api.get(f"{path}/tz")
    stored["metadata"]["labels"] = {"tier": "batch"}
    assert await write(env.api, "PUT", f"{path}/tz", stored, expect=200) == [
        "cannot use TZ or CRON_TZ in spec.spec.schedule, use timeZone instead, see "
        "https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details"]


async def test_volume_items_that_overlap_are_named_as_go_names_them(env: Env) -> None:
    """warningsForOverlappingVirtualPaths (v1.32, #121968) and checkForOverlap: the same
    path twice, a path inside another ("a" and "a/b"), and Go's bare prefix test ("key" and
    "key2" overlap); in a projected volume each source alone, then with the sources before
    it (sorted), so an overlap inside one source is found twice (the header once: the
    recorder keeps each text once) and the token source names the secret's overlap again;
    trailing slashes trimmed."""
    volumes = [
        {"name": "cm", "configMap": {"name": "conf", "items": [
            {"key": "a", "path": "a"}, {"key": "b", "path": "a/b/"},
            {"key": "c", "path": "key"}, {"key": "d", "path": "key2"}]}},
        {"name": "sec", "secret": {"secretName": "s", "items": [
            {"key": "a", "path": "x"}, {"key": "b", "path": "x"}]}},
        {"name": "down", "downwardAPI": {"items": [
            {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
            {"path": "labels/", "fieldRef": {"fieldPath": "metadata.name"}}]}},
        {"name": "proj", "projected": {"sources": [
            {"secret": {"name": "s", "items": [{"key": "a", "path": "d"},
                                               {"key": "b", "path": "d/e"}]}},
            {"serviceAccountToken": {"path": "d/f"}}]}},
    ]
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "overlaps"},
           "spec": pod_spec(volumes=volumes)}
    assert await write(env.api, "POST", f"{NS}/pods", pod) == [
        'volume "cm" (ConfigMap "conf"): overlapping paths: "a/b" with "a"',
        'volume "cm" (ConfigMap "conf"): overlapping paths: "key2" with "key"',
        'volume "sec" (Secret "s"): overlapping paths: "x" with "x"',
        'volume "down" (DownwardAPI): overlapping paths: "labels" with "labels"',
        'volume "proj" (Projected Secret "s"): overlapping paths: "d/e" with "d"',
        'volume "proj" (Projected ServiceAccountToken): overlapping paths: "d/e" with "d"',
        'volume "proj" (Projected ServiceAccountToken): overlapping paths: "d/f" with "d"',
    ]


async def test_a_daemonset_update_warns_only_when_its_template_changes(env: Env) -> None:
    """daemonset/strategy.go WarningsOnUpdate checks the template when
    Spec.TemplateGeneration moved, which PrepareForUpdate does only for a template change:
    a minReadySeconds change (a new generation) draws nothing."""
    path, obj = workload("DaemonSet", "ds")
    await write(env.api, "POST", path, obj)
    _, stored = await env.api.get(f"{path}/ds")
    stored["spec"]["minReadySeconds"] = 5
    assert await write(env.api, "PUT", f"{path}/ds", stored, expect=200) == []
    _, stored = await env.api.get(f"{path}/ds")
    assert stored["metadata"]["generation"] == 2
    stored["spec"]["template"]["metadata"]["labels"]["tier"] = "node"
    assert await write(env.api, "PUT", f"{path}/ds", stored, expect=200) == [
        f"spec.template.spec.nodeSelector[beta.kubernetes.io/os]: {OS_LABEL}"]
