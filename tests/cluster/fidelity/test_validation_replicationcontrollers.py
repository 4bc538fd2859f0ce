"""ReplicationController validation over HTTP, with kube-apiserver 1.32's causes.

Sources: pkg/apis/core/validation/validation.go (ValidateReplicationController,
ValidateReplicationControllerSpec, ValidatePodTemplateSpecForRC, ValidateNonEmptySelector,
ValidateNonnegativeField), pkg/apis/core/v1/defaults.go (SetDefaults_ReplicationController: an
empty selector is the template's labels).
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import MERGE, Kube

RCS = "/api/v1/namespaces/default/replicationcontrollers"
INV, REQ, UNSUP, FORB = ("FieldValueInvalid", "FieldValueRequired", "FieldValueNotSupported",
                         "FieldValueForbidden")
TEMPLATE = {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "i"}]}}


def _rc(name: str, **spec: Any) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": spec}


CASES: list[tuple[str, dict[str, Any], dict[tuple[str, str], int]]] = [
    ("empty", _rc("empty"), {("spec.selector", REQ): 1, ("spec.template", REQ): 1}),
    ("mismatch", _rc("mismatch", selector={"app": "db"}, template=TEMPLATE),
     {("spec.template.metadata.labels", INV): 1}),
    ("negative", _rc("negative", replicas=-1, minReadySeconds=-1, template=TEMPLATE),
     {("spec.replicas", INV): 1, ("spec.minReadySeconds", INV): 1}),
    ("pod-rules", _rc("pod-rules", template={
        "metadata": {"labels": {"app": "web"}},
        "spec": {"restartPolicy": "OnFailure", "activeDeadlineSeconds": 5,
                 "containers": [{"name": "c", "image": "i"}]}}),
     {("spec.template.spec.restartPolicy", UNSUP): 1,
      ("spec.template.spec.activeDeadlineSeconds", FORB): 1}),
    # the template is validated as any pod template
    ("template-spec", _rc("template-spec", template={"metadata": {"labels": {"app": "web"}},
                                                     "spec": {"containers": []}}),
     {("spec.template.spec.containers", REQ): 1}),
]


@pytest.mark.parametrize(("case", "body", "expected"), CASES, ids=[c[0] for c in CASES])
def test_replication_controller_is_validated(kube: Kube, case: str, body: dict[str, Any],
                                             expected: dict[tuple[str, str], int]) -> None:
    assert kube.reject("POST", RCS, body) == Counter(expected)


def test_selector_mismatch_message_and_update(kube: Kube) -> None:
    assert kube.messages("POST", RCS, _rc("words", selector={"app": "db"},
                                          template=TEMPLATE)) == {
        "spec.template.metadata.labels": ['Invalid value: map[string]string{"app":"web"}: '
                                          '`selector` does not match template `labels`']}
    status, body = kube.call("POST", RCS, _rc("web", template=TEMPLATE))
    assert (status, body["spec"]["selector"]) == (201, {"app": "web"})
    assert kube.reject("PATCH", f"{RCS}/web", {"spec": {"selector": {"app": "db"}}},
                       MERGE) == Counter({("spec.template.metadata.labels", INV): 1})
