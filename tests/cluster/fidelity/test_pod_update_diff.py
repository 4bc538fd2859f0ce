"""The diff a refused pod update quotes, as kube-apiserver 1.32 prints it.

kubernetes/kubernetes pkg/apis/core/validation/validation.go ValidatePodUpdate: when the
munged spec differs from the old one, ``field.Forbidden(specPath, fmt.Sprintf("pod updates
may not change fields other than %s\\n%v", ..., cmp.Diff(oldPod.Spec, mungedPodSpec)))``,
over the internal ``core.PodSpec`` (pkg/apis/core/types.go: its field order, no
``DeprecatedServiceAccount``, a projected token's ``ExpirationSeconds`` an int64).

github.com/google/go-cmp v0.6.0 lays the report out (cmp/report_compare.go,
report_reflect.go, report_text.go): the root type ``core.PodSpec{``; per struct, changed
fields and two identical fields of context on each side of a change (none before the first
or after the last run), the rest counted as ``... // N identical fields``; a leaf change as a
``-`` and a ``+`` line, the type printed for a composite value (``[]string{...}``) but not for
nil; identical values at verbosity 1 (at most four non-zero fields or elements a level, then
``...``); keys aligned within runs of one-line records; inserted slice elements found by the
edit script of cmp/internal/diff.

go-cmp varies its output from one process to the next on purpose (report_text.go and
internal/diff/diff.go ``randBool``, seeded with the start time): the two columns before each
line are ``"  "``, ``"- "``, ``"+ "`` with U+0020 spaces, or with U+00A0 no-break spaces in
half of the processes, and the slice edit search starts forward or backward. The server here
prints the form ``flags.Deterministic`` selects, plain spaces and a forward search, which is
what half of all kube-apiserver processes print: stable for tests, and a client that matches
these messages should treat U+00A0 as a space anyway.
"""

from __future__ import annotations

from typing import Any

from tests.cluster.fidelity.builtin_server import MERGE, Kube

PODS = "/api/v1/namespaces/default/pods"
STRATEGIC = "application/strategic-merge-patch+json"
HEAD = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)\n")


def _create(kube: Kube, name: str) -> str:
    """A pod with one container and one port; the name of the token volume the
    ServiceAccount admission gave it."""
    status, body = kube.call("POST", PODS, {"metadata": {"name": name}, "spec": {
        "containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}]}})
    assert status == 201, body
    volume: str = body["spec"]["volumes"][0]["name"]
    return volume


def _refused(kube: Kube, name: str, patch: dict[str, Any], content_type: str) -> str:
    status, body = kube.call("PATCH", f"{PODS}/{name}", patch, content_type)
    assert status == 422, body
    [cause] = body["details"]["causes"]
    assert cause["field"] == "spec"
    message: str = cause["message"]
    return message


def _volumes(volume: str) -> str:
    """The identical Volumes field at verbosity 1 (each level shows up to four non-zero
    fields, so the whole projected token volume shows)."""
    return (
        f'  \tVolumes:        {{{{Name: "{volume}", VolumeSource: {{Projected: &{{Sources: '
        '{{ServiceAccountToken: &{ExpirationSeconds: 3607, Path: "token"}}, {ConfigMap: '
        '&{LocalObjectReference: {Name: "kube-root-ca.crt"}, Items: {{Key: "ca.crt", Path: '
        '"ca.crt"}}}}, {DownwardAPI: &{Items: {{Path: "namespace", FieldRef: &{APIVersion: '
        '"v1", FieldPath: "metadata.namespace"}}}}}}, DefaultMode: &420}}}},\n')


def test_a_changed_scalar_field(kube: Kube) -> None:
    """RestartPolicy (the fifth field): the four before it are one identical run, of which
    the last two show; the two after it show; 27 of the remaining 29 are counted. The
    identical Containers value stops after four non-zero fields."""
    volume = _create(kube, "scalar")
    message = _refused(kube, "scalar", {"spec": {"restartPolicy": "Never"}}, MERGE)
    assert message == HEAD + (
        "  core.PodSpec{\n"
        "  \t... // 2 identical fields\n"
        '  \tContainers:                    {{Name: "c", Image: "i", Ports: {{ContainerPort: '
        f'80, Protocol: "TCP"}}}}, VolumeMounts: {{{{Name: "{volume}", ReadOnly: true, '
        'MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}}, ...}},\n'
        "  \tEphemeralContainers:           nil,\n"
        '- \tRestartPolicy:                 "Always",\n'
        '+ \tRestartPolicy:                 "Never",\n'
        "  \tTerminationGracePeriodSeconds: &30,\n"
        "  \tActiveDeadlineSeconds:         nil,\n"
        "  \t... // 27 identical fields\n"
        "  }\n"), message


def test_a_changed_container_field(kube: Kube) -> None:
    """WorkingDir of the one container: the diff descends into []core.Container and the
    element; Volumes and InitContainers, the whole first run, show before Containers."""
    volume = _create(kube, "container")
    message = _refused(kube, "container",
                       {"spec": {"containers": [{"name": "c", "workingDir": "/w"}]}},
                       STRATEGIC)
    assert message == HEAD + (
        "  core.PodSpec{\n" + _volumes(volume) +
        "  \tInitContainers: nil,\n"
        "  \tContainers: []core.Container{\n"
        "  \t\t{\n"
        "  \t\t\t... // 2 identical fields\n"
        "  \t\t\tCommand:    nil,\n"
        "  \t\t\tArgs:       nil,\n"
        '- \t\t\tWorkingDir: "",\n'
        '+ \t\t\tWorkingDir: "/w",\n'
        '  \t\t\tPorts:      {{ContainerPort: 80, Protocol: "TCP"}},\n'
        "  \t\t\tEnvFrom:    nil,\n"
        "  \t\t\t... // 17 identical fields\n"
        "  \t\t},\n"
        "  \t},\n"
        "  \tEphemeralContainers: nil,\n"
        '  \tRestartPolicy:       "Always",\n'
        "  \t... // 29 identical fields\n"
        "  }\n"), message


def test_a_longer_list(kube: Kube) -> None:
    """A second port: the edit script keeps the first element (shown as context) and
    inserts the second, printed whole on a ``+`` line without its type."""
    volume = _create(kube, "ports")
    message = _refused(kube, "ports", {"spec": {"containers": [
        {"name": "c", "ports": [{"containerPort": 80}, {"containerPort": 81}]}]}}, STRATEGIC)
    assert message == HEAD + (
        "  core.PodSpec{\n" + _volumes(volume) +
        "  \tInitContainers: nil,\n"
        "  \tContainers: []core.Container{\n"
        "  \t\t{\n"
        "  \t\t\t... // 3 identical fields\n"
        "  \t\t\tArgs:       nil,\n"
        '  \t\t\tWorkingDir: "",\n'
        "  \t\t\tPorts: []core.ContainerPort{\n"
        '  \t\t\t\t{ContainerPort: 80, Protocol: "TCP"},\n'
        '+ \t\t\t\t{ContainerPort: 81, Protocol: "TCP"},\n'
        "  \t\t\t},\n"
        "  \t\t\tEnvFrom: nil,\n"
        "  \t\t\tEnv:     nil,\n"
        "  \t\t\t... // 16 identical fields\n"
        "  \t\t},\n"
        "  \t},\n"
        "  \tEphemeralContainers: nil,\n"
        '  \tRestartPolicy:       "Always",\n'
        "  \t... // 29 identical fields\n"
        "  }\n"), message


def test_a_changed_pointer_and_a_new_list(kube: Kube) -> None:
    """A pointer leaf prints behind ``&``; a nil list that gains elements prints ``nil``
    then the new list with its type (a leaf: one side is nil, cmp/compare.go
    compareSlice reports it whole)."""
    _create(kube, "pointer")
    message = _refused(kube, "pointer", {"spec": {
        "enableServiceLinks": False,
        "containers": [{"name": "c", "args": ["a", "b"]}]}}, STRATEGIC)
    assert "- \t\t\tArgs:       nil,\n+ \t\t\tArgs:       []string{\"a\", \"b\"},\n" in message
    assert "- \tEnableServiceLinks:        &true,\n" \
           "+ \tEnableServiceLinks:        &false,\n" in message, message
