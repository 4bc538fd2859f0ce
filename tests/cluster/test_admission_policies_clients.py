"""ValidatingAdmissionPolicy as clients see it: real kubectl (a kubeconfig this test wrote, a
fresh cache) prints the Deny and Warn texts, the audit log carries the Audit action's and
the auditAnnotations' annotations, and the official Python client reads the denial.

Sources (k8s.io/apiserver v0.32.0): pkg/admission/plugin/policy/validating/dispatcher.go
``Dispatch`` (the denial, ``warning.AddWarning``'s text, publishValidationFailureAnnotation's
``validation.policy.admission.k8s.io/validation_failure`` value, auditAnnotationCollector's
``<policy>/<key>`` annotations, values of several bindings joined by ", "),
validating/validator.go (an auditAnnotation's valueExpression: a string, or null to leave it
out)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
import yaml

from setpoint.cluster import serve
from setpoint.cluster.audit.logbackend import LogBackend
from setpoint.cluster.audit.policy import policy_from_document
from tests.cluster.conftest import API
from tests.cluster.test_admission_policies import binding, cm, install, policy
from tests.cluster.test_audit import Audited
from tests.cluster.test_audit import policy as audit_policy


def _yaml(obj: dict[str, Any]) -> str:
    return yaml.safe_dump(obj)


@pytest.fixture
def audited(tmp_path: Path
            ) -> Callable[[dict[str, Any]], AbstractAsyncContextManager[Audited]]:
    """A server auditing by the policy given into a log file; kubectl against it."""

    @asynccontextmanager
    async def running(document: dict[str, Any]) -> AsyncIterator[Audited]:
        log = tmp_path / "logs" / "audit.log"
        async with serve(audit_policy=policy_from_document(document),
                         audit_log=LogBackend(str(log))) as cluster:
            yield Audited(cluster, log, tmp_path)

    return running


async def test_kubectl_prints_the_deny_and_warn_texts(audited: Any) -> None:
    """dispatcher.go: Deny refuses with the Invalid Status kubectl prints with its cause;
    Warn lets the write through with ``Validation failed for ValidatingAdmissionPolicy
    '<policy>' with binding '<binding>': <message>`` in a Warning header, which kubectl
    prints as ``Warning: ...``; one binding may Warn and Audit at once."""
    async with audited(audit_policy({"level": "None"})) as a:
        for obj in (policy("small", {"expression": "size(object.data) < 2",
                                     "message": "too much data"}),
                    binding("small-deny", "small"),
                    policy("named", {"expression": "object.metadata.name != 'loud'",
                                     "messageExpression": "'loud is ' + 'discouraged'"}),
                    binding("named-warn", "named", ["Warn", "Audit"])):
            code, _, err = await a.kubectl("create", "-f", "-", stdin=_yaml(obj))
            assert code == 0, err
        code, out, err = await a.kubectl("create", "-f", "-", stdin=_yaml(
            cm("big", {"a": "1", "b": "2"}) | {"metadata": {"name": "big",
                                                            "namespace": "default"}}))
        assert code == 1, out
        assert err.strip() == (
            'The configmaps "big" is invalid: : ValidatingAdmissionPolicy \'small\' with '
            "binding 'small-deny' denied request: too much data")
        code, out, err = await a.kubectl("create", "configmap", "loud", "-n", "default",
                                         "--from-literal=k=v")
        assert code == 0, err
        assert out.strip() == "configmap/loud created"
        assert err.strip() == ("Warning: Validation failed for ValidatingAdmissionPolicy "
                               "'named' with binding 'named-warn': loud is discouraged")


async def test_audit_annotations_of_failures_and_of_audit_annotations(audited: Any) -> None:
    """dispatcher.go: an Audit failure is the ``validation_failure`` annotation (a JSON list
    of message, policy, binding, expressionIndex, validationActions; the first binding's
    kept); auditAnnotations'
    values are ``<policy>/<key>``, the same value from two bindings once, different ones
    joined by ", "; a null value leaves the key out (validator.go)."""
    async with audited(audit_policy({"level": "Metadata"})) as a:
        for obj in (policy("audited",
                           {"expression": "true"},
                           {"expression": "object.data.k == 'v'",
                            "messageExpression": "'k is ' + object.data.k"},
                           auditAnnotations=[
                               {"key": "seen", "valueExpression": "'name ' + object.metadata.name"},
                               {"key": "param", "valueExpression":
                                   "params == null ? null : params.data.tag"}],
                           paramKind={"apiVersion": "v1", "kind": "ConfigMap"}),
                    binding("audit-a", "audited", ["Audit"]),
                    binding("audit-b", "audited", ["Audit"], paramRef={
                        "name": "tag", "namespace": "kube-system",
                        "parameterNotFoundAction": "Allow"})):
            code, _, err = await a.kubectl("create", "-f", "-", stdin=_yaml(obj))
            assert code == 0, err
        code, _, err = await a.kubectl("create", "configmap", "tag", "-n", "kube-system",
                                       "--from-literal=tag=blue")
        assert code == 0, err
        code, _, err = await a.kubectl("create", "configmap", "c1", "-n", "default",
                                       "--from-literal=k=x")
        assert code == 0, err
        event = await a.event(lambda e: e["verb"] == "create" and e["stage"] ==
                              "ResponseComplete" and e.get("objectRef", {}).get("name") == "c1")
        notes = event["annotations"]
        # both bindings failed the second expression; the admission attributes keep a
        # key's first value (pkg/admission/attributes.go AddAnnotationWithLevel)
        assert orjson.loads(notes["validation.policy.admission.k8s.io/validation_failure"]) \
            == [{"message": "k is x", "policy": "audited", "binding": "audit-a",
                 "expressionIndex": 1, "validationActions": ["Audit"]}]
        assert notes["audited/seen"] == "name c1"
        assert notes["audited/param"] == "blue"  # the first binding's null left it out


async def test_audit_annotation_values_null_blank_and_trimmed(audited: Any) -> None:
    """validator.go Validate: a valueExpression's string is trimmed; null, an empty string
    and one of spaces leave the key out (AuditAnnotationActionExclude); an evaluation error
    leaves it out under failurePolicy Ignore (auditAnnotationEvaluationForError)."""
    async with audited(audit_policy({"level": "Metadata"})) as a:
        for obj in (policy("noted", {"expression": "true"}, failurePolicy="Ignore",
                           auditAnnotations=[
                               {"key": "null", "valueExpression": "null"},
                               {"key": "empty", "valueExpression": "''"},
                               {"key": "blank", "valueExpression": "'   '"},
                               {"key": "error", "valueExpression": "object.data.nope + 'x'"},
                               {"key": "trimmed", "valueExpression":
                                   "'  ' + object.metadata.name + ' '"}]),
                    binding("noted-b", "noted", ["Audit"])):
            code, _, err = await a.kubectl("create", "-f", "-", stdin=_yaml(obj))
            assert code == 0, err
        code, _, err = await a.kubectl("create", "configmap", "n1", "-n", "default",
                                       "--from-literal=k=x")
        assert code == 0, err
        event = await a.event(lambda e: e["verb"] == "create" and e["stage"] ==
                              "ResponseComplete" and e.get("objectRef", {}).get("name") == "n1")
        notes = {k: v for k, v in event["annotations"].items() if k.startswith("noted/")}
        assert notes == {"noted/trimmed": "n1"}, event["annotations"]


async def test_the_official_python_client_reads_the_denial(api: API, tmp_path: Path) -> None:
    """dispatcher.go Dispatch: the denial's Status (reason Invalid, 422, the message as a
    cause), as the official client's ApiException carries it; the client is configured only
    from a kubeconfig this test wrote."""
    from kubernetes import client, config
    from kubernetes.client.exceptions import ApiException

    await install(api, policy("small", {"expression": "size(object.data) < 2"}),
                  binding("small-b", "small"))
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_bytes(Path(api.cluster.kubeconfig).read_bytes())

    def create() -> ApiException:
        configuration = client.Configuration()
        config.load_kube_config(config_file=str(kubeconfig),
                                client_configuration=configuration)
        with client.ApiClient(configuration) as api_client:
            core = client.CoreV1Api(api_client)
            try:
                core.create_namespaced_config_map("default", client.V1ConfigMap(
                    metadata=client.V1ObjectMeta(name="big"), data={"a": "1", "b": "2"}))
            except ApiException as exc:
                return exc
        raise AssertionError("the policy let the ConfigMap through")

    exc = await asyncio.to_thread(create)
    message = ("ValidatingAdmissionPolicy 'small' with binding 'small-b' denied request: "
               "failed expression: size(object.data) < 2")
    assert exc.status == 422
    status = orjson.loads(exc.body or b"")
    assert status["reason"] == "Invalid"
    assert status["message"] == f'configmaps "big" is forbidden: {message}'
    assert status["details"]["causes"] == [{"message": message}]
