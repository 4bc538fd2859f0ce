"""kubectl 1.32's day-to-day workload workflows (rollout, scale, events, ...) against the
server as users run it, with its simulated nodes, kubelets and kube-controller-manager's
controllers: each step's output and exit status as on a kube-apiserver 1.32 cluster.

One server for the module, one namespace per test; kubectl gets a kubeconfig the test wrote
and a cache of its own.
"""

from __future__ import annotations

import functools
import shutil
from pathlib import Path

import pytest

from tests.conftest import kubectl_path
from tests.e2e.conftest import Kubectl, unique, wait_until
from tests.support import ServerProcess


@pytest.fixture
def kubectl(server_process: ServerProcess, tmp_path: Path) -> Kubectl:
    """kubectl 1.32 with a copy of the server's kubeconfig (0600) written by the test."""
    kubeconfig = tmp_path / "kubeconfig"
    shutil.copyfile(server_process.kubeconfig, kubeconfig)
    kubeconfig.chmod(0o600)
    return Kubectl(kubectl_path(), kubeconfig, tmp_path)


def _daemonset(name: str, image: str) -> str:
    return (f"apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {{name: {name}}}\nspec:\n"
            f"  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n"
            f"    metadata: {{labels: {{app: {name}}}}}\n"
            f"    spec: {{containers: [{{name: c, image: '{image}'}}]}}\n")


def _statefulset(name: str, image: str) -> str:
    return (f"apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{name: {name}}}\nspec:\n"
            f"  serviceName: {name}\n  replicas: 1\n"
            f"  selector: {{matchLabels: {{app: {name}}}}}\n  template:\n"
            f"    metadata: {{labels: {{app: {name}}}}}\n"
            f"    spec: {{containers: [{{name: c, image: '{image}'}}]}}\n")


def test_rollout_undo_to_the_current_revision_is_skipped(kubectl: Kubectl,
                                                         namespace: str) -> None:
    """A ControllerRevision's ``data`` is what Go's ``json.Marshal`` of a
    ``map[string]interface{}`` writes, every object's keys sorted
    (pkg/controller/daemon/update.go and pkg/controller/statefulset/stateful_set_utils.go
    ``getPatch``), and the server serves a RawExtension's bytes as written. ``kubectl rollout
    undo`` compares those bytes with its own marshalling of the owner
    (staging/src/k8s.io/kubectl/pkg/polymorphichelpers/rollback.go ``daemonSetMatch``,
    ``statefulsetMatch``), so an undo to the revision already running is skipped, not
    patched; an undo to an older one rolls back and renumbers it."""
    ns = namespace
    ds, sts = unique("ds"), unique("sts")
    kubectl.run("-n", ns, "apply", "-f", "-",
                stdin=_daemonset(ds, "busybox:1") + "---\n" + _statefulset(sts, "redis:7"))
    for kind, name in (("daemonset", ds), ("statefulset", sts)):
        kubectl.run("-n", ns, "rollout", "status", f"{kind}/{name}", "--timeout=30s")
        done = kubectl.run("-n", ns, "rollout", "undo", f"{kind}/{name}", "--to-revision=1")
        assert (done.stdout, done.stderr) == (
            f"{kind}.apps/{name} skipped rollback (current template already matches "
            "revision 1)\n", "")
    revisions = kubectl.json("-n", ns, "get", "controllerrevisions")["items"]
    assert sorted(r["revision"] for r in revisions) == [1, 1]
    # a second template, then back to the first: revision 1 becomes revision 3
    kubectl.run("-n", ns, "set", "image", f"daemonset/{ds}", "c=busybox:2")
    kubectl.run("-n", ns, "rollout", "status", f"daemonset/{ds}", "--timeout=30s")
    done = kubectl.run("-n", ns, "rollout", "undo", f"daemonset/{ds}")
    assert done.stdout == f"daemonset.apps/{ds} rolled back\n"
    kubectl.run("-n", ns, "rollout", "status", f"daemonset/{ds}", "--timeout=30s")
    history = kubectl.run("-n", ns, "rollout", "history", f"daemonset/{ds}").stdout
    assert history == (f"daemonset.apps/{ds} \nREVISION  CHANGE-CAUSE\n2         <none>\n"
                       "3         <none>\n\n")
    done = kubectl.run("-n", ns, "rollout", "undo", f"daemonset/{ds}", "--to-revision=3")
    assert done.stdout == (f"daemonset.apps/{ds} skipped rollback (current template already "
                           "matches revision 3)\n")


def test_rollout_undo_to_the_current_revision_with_html_characters_is_skipped(
        kubectl: Kubectl, namespace: str) -> None:
    """kubectl marshals the owner's template with encoding/json, which writes ``&``, ``<``
    and ``>`` as ``\\u0026``, ``\\u003c``, ``\\u003e`` (encoding/json/encode.go
    ``appendString``, ``escapeHTML`` on by default), and compares that with the
    ControllerRevision's ``data`` bytes as the server serves them (rollback.go
    ``daemonSetMatch``, ``statefulsetMatch``): the server writes them as encoding/json does,
    so a template whose command holds ``&&`` is recognised as the current one."""
    ns = namespace
    ds, sts = unique("ds"), unique("sts")

    def with_command(manifest: str, script: str) -> str:
        # the manifest's last line ends its one container: "...image: 'x'}]}\n"
        return manifest[:-4] + f", command: [sh, -c, '{script}']}}]}}\n"

    kubectl.run("-n", ns, "apply", "-f", "-", stdin=(
        with_command(_daemonset(ds, "busybox:1"), "true && sleep 1000 > /dev/null")
        + "---\n" + with_command(_statefulset(sts, "busybox:1"), "[ 1 < 2 ] && sleep 1000")))
    for kind, name in (("daemonset", ds), ("statefulset", sts)):
        kubectl.run("-n", ns, "rollout", "status", f"{kind}/{name}", "--timeout=30s")
        done = kubectl.run("-n", ns, "rollout", "undo", f"{kind}/{name}", "--to-revision=1")
        assert (done.stdout, done.stderr) == (
            f"{kind}.apps/{name} skipped rollback (current template already matches "
            "revision 1)\n", "")
    raw = kubectl.run("-n", ns, "get", "--raw",
                      f"/apis/apps/v1/namespaces/{ns}/controllerrevisions").stdout
    assert raw.count("\\u0026\\u0026") == 2 and "\\u003c" in raw
    assert "&" not in raw and "<" not in raw and ">" not in raw


def test_scale_replication_controller_runs_its_pods(kubectl: Kubectl, namespace: str) -> None:
    """kube-controller-manager's replicationcontroller controller
    (pkg/controller/replication/replication_controller.go: the ReplicaSet controller's
    NewBaseController over ReplicationControllers, ``replication-controller`` events,
    conversion.go's map selector as matchLabels) keeps ``spec.replicas`` pods controlled by
    the RC: ``kubectl scale rc`` (its ``scale`` subresource) grows and shrinks them and
    ``kubectl expose rc`` finds them behind the Service."""
    ns, rc = namespace, unique("rc")
    kubectl.run("-n", ns, "apply", "-f", "-", stdin=(
        f"apiVersion: v1\nkind: ReplicationController\nmetadata: {{name: {rc}}}\nspec:\n"
        f"  replicas: 1\n  selector: {{app: {rc}}}\n  template:\n"
        f"    metadata: {{labels: {{app: {rc}}}}}\n"
        "    spec: {containers: [{name: c, image: nginx}]}\n"))
    done = kubectl.run("-n", ns, "scale", f"rc/{rc}", "--replicas=2", "--current-replicas=1")
    assert done.stdout == f"replicationcontroller/{rc} scaled\n"
    kubectl.run("-n", ns, "wait", "--for=jsonpath={.status.readyReplicas}=2", f"rc/{rc}",
                "--timeout=30s")
    status = kubectl.json("-n", ns, "get", f"rc/{rc}")["status"]
    assert {k: status[k] for k in ("replicas", "fullyLabeledReplicas", "readyReplicas")} == {
        "replicas": 2, "fullyLabeledReplicas": 2, "readyReplicas": 2}
    pods = kubectl.json("-n", ns, "get", "pods", "-l", f"app={rc}")["items"]
    uid = kubectl.json("-n", ns, "get", f"rc/{rc}")["metadata"]["uid"]
    assert [p["metadata"]["ownerReferences"] for p in pods] == [[{
        "apiVersion": "v1", "kind": "ReplicationController", "name": rc, "uid": uid,
        "controller": True, "blockOwnerDeletion": True}]] * 2
    events = kubectl.json("-n", ns, "events", "--for", f"rc/{rc}")["items"]
    assert sorted((e["source"].get("component"), e["reason"]) for e in events) == [
        ("replication-controller", "SuccessfulCreate")] * 2
    kubectl.run("-n", ns, "expose", f"rc/{rc}", "--port=80")
    kubectl.run("-n", ns, "wait", "--for=jsonpath={.subsets[0].addresses[1].ip}",
                f"endpoints/{rc}", "--timeout=30s")
    kubectl.run("-n", ns, "scale", f"rc/{rc}", "--replicas=0")
    kubectl.run("-n", ns, "wait", "--for=delete", "pods", "-l", f"app={rc}", "--timeout=30s")


def test_cronjob_controller_runs_scheduled_and_manual_jobs(kubectl: Kubectl,
                                                           namespace: str) -> None:
    """kube-controller-manager's CronJob controller (pkg/controller/cronjob/
    cronjob_controllerv2.go ``syncCronJob``, utils.go ``getJobFromTemplate2``): at a
    schedule time it creates ``<name>-<unix minutes>`` (controlled by the CronJob, annotated
    ``batch.kubernetes.io/cronjob-scheduled-timestamp``, the CronJobsScheduledAnnotation gate
    being GA in 1.32), lists it in ``status.active`` and ``lastScheduleTime`` until it
    finishes (``SuccessfulCreate``, ``SawCompletedJob``); a Job made by ``kubectl create job
    --from=cronjob/...`` is controlled by the CronJob too but was not started by it:
    ``UnexpectedJob`` while it runs, and its success moves ``lastSuccessfulTime``."""
    ns, cj = namespace, unique("cj")
    kubectl.run("-n", ns, "create", "cronjob", cj, "--image=busybox", "--schedule=@every 2s",
                "--", "true")
    kubectl.run("-n", ns, "create", "job", f"{cj}-manual", f"--from=cronjob/{cj}")
    kubectl.run("-n", ns, "wait", "--for=jsonpath={.status.lastScheduleTime}", f"cronjob/{cj}",
                "--timeout=30s")
    kubectl.run("-n", ns, "wait", "--for=jsonpath={.status.lastSuccessfulTime}",
                f"cronjob/{cj}", "--timeout=30s")
    uid = kubectl.json("-n", ns, "get", f"cronjob/{cj}")["metadata"]["uid"]
    jobs = kubectl.json("-n", ns, "get", "jobs")["items"]
    scheduled = [j for j in jobs if j["metadata"]["name"] != f"{cj}-manual"]
    assert scheduled, jobs
    job = scheduled[0]
    stamp = job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
    minutes = int(job["metadata"]["name"].rsplit("-", 1)[1])
    assert stamp.endswith("Z") and minutes > 0, job["metadata"]
    assert job["metadata"]["ownerReferences"] == [{
        "apiVersion": "batch/v1", "kind": "CronJob", "name": cj, "uid": uid,
        "controller": True, "blockOwnerDeletion": True}]
    kubectl.run("-n", ns, "wait", "--for=condition=complete", f"job/{job['metadata']['name']}",
                "--timeout=30s")

    def reasons() -> set[str]:
        events = kubectl.json("-n", ns, "events", "--for", f"cronjob/{cj}")["items"]
        return {e["reason"] for e in events if e["source"].get("component") ==
                "cronjob-controller"}

    assert wait_until(lambda: {"SuccessfulCreate", "SawCompletedJob"} <= reasons(),
                      timeout=30), reasons()
    events = kubectl.json("-n", ns, "events", "--for", f"cronjob/{cj}")["items"]
    messages = {e["message"] for e in events}
    assert f"Created job {job['metadata']['name']}" in messages, messages
    assert f"Saw completed job: {job['metadata']['name']}, condition: Complete" in messages


def test_orphaned_history_is_adopted_by_the_recreated_set(kubectl: Kubectl,
                                                          namespace: str) -> None:
    """``kubectl delete --cascade=orphan`` then creating the set again (the usual way to
    change an immutable field): the new StatefulSet adopts the orphaned ControllerRevisions
    its selector matches (pkg/controller/statefulset/stateful_set.go
    ``adoptOrphanRevisions``), as the new DaemonSet does (pkg/controller/daemon/update.go
    ``controlledHistories``, ``ClaimControllerRevisions``), so ``kubectl rollout
    history`` still lists them and ``kubectl get controllerrevisions`` names the set."""
    ns, ds, sts = namespace, unique("ds"), unique("sts")
    manifests = _daemonset(ds, "busybox:1") + "---\n" + _statefulset(sts, "redis:7")
    kubectl.run("-n", ns, "apply", "-f", "-", stdin=manifests)
    for kind, name in (("daemonset", ds), ("statefulset", sts)):
        kubectl.run("-n", ns, "rollout", "status", f"{kind}/{name}", "--timeout=60s")
        done = kubectl.run("-n", ns, "delete", f"{kind}/{name}", "--cascade=orphan")
        assert done.stdout == f'{kind}.apps "{name}" deleted\n'
    kubectl.run("-n", ns, "apply", "-f", "-", stdin=manifests)
    for kind, name in (("daemonset", ds), ("statefulset", sts)):
        kubectl.run("-n", ns, "rollout", "status", f"{kind}/{name}", "--timeout=60s")
        uid = kubectl.json("-n", ns, "get", f"{kind}/{name}")["metadata"]["uid"]
        refs = wait_until(functools.partial(_adopted, kubectl, ns, name), timeout=30)
        assert refs is not None and [[ref["uid"] for ref in r] for r in refs] == [[uid]], refs
        history = kubectl.run("-n", ns, "rollout", "history", f"{kind}/{name}").stdout
        assert history == f"{kind}.apps/{name} \nREVISION  CHANGE-CAUSE\n1         <none>\n\n"



def test_finished_job_is_deleted_after_its_ttl(kubectl: Kubectl, namespace: str) -> None:
    """kube-controller-manager's TTL-after-finished controller
    (pkg/controller/ttlafterfinished/ttlafterfinished_controller.go ``processJob``): a Job
    with ``ttlSecondsAfterFinished`` is deleted (foreground, its uid as precondition) that
    long after its ``Complete`` condition's lastTransitionTime, so ``kubectl wait
    --for=delete`` returns and its pods are gone; a Job without the field stays."""
    ns, job, kept = namespace, unique("ttl"), unique("kept")
    manifest = ("apiVersion: batch/v1\nkind: Job\nmetadata: {{name: {name}}}\nspec:\n{ttl}"
                "  template:\n    spec:\n      restartPolicy: Never\n"
                "      containers: [{{name: c, image: busybox, command: ['true']}}]\n")
    kubectl.run("-n", ns, "apply", "-f", "-", stdin=(
        manifest.format(name=job, ttl="  ttlSecondsAfterFinished: 1\n") + "---\n"
        + manifest.format(name=kept, ttl="")))
    kubectl.run("-n", ns, "wait", "--for=condition=complete", f"job/{kept}", "--timeout=30s")
    done = kubectl.run("-n", ns, "wait", "--for=delete", f"job/{job}", "--timeout=30s")
    assert done.stdout in ("", f"job.batch/{job} condition met\n"), done.stdout
    kubectl.run("-n", ns, "wait", "--for=delete", "pods", "-l", f"job-name={job}",
                "--timeout=30s")
    assert kubectl.json("-n", ns, "get", f"job/{kept}")["status"]["succeeded"] == 1


def _adopted(kubectl: Kubectl, ns: str, app: str) -> list[list[dict[str, str]]] | None:
    """The ownerReferences of the revisions labelled ``app``, once every one has some."""
    owners = [r["metadata"].get("ownerReferences") for r in kubectl.json(
        "-n", ns, "get", "controllerrevisions", "-l", f"app={app}")["items"]]
    return owners if owners and all(owners) else None
