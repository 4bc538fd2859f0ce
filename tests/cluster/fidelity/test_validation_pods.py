"""Pod creation validation over HTTP, case by case, with kube-apiserver 1.32's (field,
reason) causes; the same ValidatePodSpec reached through a Deployment's pod template.

Sources, pkg/apis/core/validation/validation.go: ValidatePodCreate,
validatePodMetadataAndSpec, ValidatePodSpec, validateContainers, validateInitContainers,
validateContainerCommon, validateContainerPorts, ValidateEnv, validateEnvVarValueFrom,
ValidateVolumes, validateVolumeSource, ValidateVolumeMounts,
ValidateContainerResourceRequirements, validateProbe, validateHandler, ValidateSecurityContext,
validatePodSpecSecurityContext, validateSeccompProfileField, validateAffinity,
ValidateNodeSelectorRequirement, validatePodAffinityTerm, ValidateTolerations,
validatePodHostNetworkDeps, validateContainerOnlyForPod, ValidatePodTemplateSpec;
pkg/registry/core/pod/strategy.go (Validate is ValidatePodCreate);
pkg/features/kube_features.go (RelaxedEnvironmentVariableValidation: beta and on in 1.32).
"""

from __future__ import annotations

import copy
from collections import Counter
from typing import Any

import pytest

from tests.cluster.fidelity.builtin_server import Kube, pod

PODS = "/api/v1/namespaces/default/pods"
DEPLOYMENTS = "/apis/apps/v1/namespaces/default/deployments"

REQ, INV, UNSUP, FORB, DUP, MISSING = (
    "FieldValueRequired", "FieldValueInvalid", "FieldValueNotSupported", "FieldValueForbidden",
    "FieldValueDuplicate", "FieldValueNotFound")
C0 = "spec.containers[0]"

# (case, spec keys, first container keys, expected causes)
CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[tuple[str, str], int]]] = [
    # validateContainerCommon: names are DNS labels; validateInitContainers: unique across
    ("container-name", {}, {"name": "Web_1"}, {(f"{C0}.name", INV): 1}),
    ("init-name-taken", {"initContainers": [{"name": "c", "image": "i"}]}, {},
     {("spec.initContainers[0].name", DUP): 1}),
    ("image-whitespace", {}, {"image": " nginx"}, {(f"{C0}.image", INV): 1}),
    # validateContainerPorts
    ("ports", {}, {"ports": [{"name": "web", "containerPort": 80, "protocol": "HTTP"},
                             {"name": "web", "containerPort": 81},
                             {"hostPort": 70000, "containerPort": 82},
                             {"name": "X"}]},
     {(f"{C0}.ports[0].protocol", UNSUP): 1, (f"{C0}.ports[1].name", DUP): 1,
      (f"{C0}.ports[2].hostPort", INV): 1, (f"{C0}.ports[3].name", INV): 2,
      (f"{C0}.ports[3].containerPort", REQ): 1}),
    # validatePodHostNetworkDeps: on the host network a hostPort is the containerPort
    ("host-network-port", {"hostNetwork": True},
     {"ports": [{"containerPort": 80, "hostPort": 81}]},
     {(f"{C0}.ports[0].hostPort", INV): 1}),
    # AccumulateUniqueHostPorts
    ("host-port-twice", {"containers": [
        {"name": "a", "image": "i", "ports": [{"containerPort": 80, "hostPort": 8080}]},
        {"name": "b", "image": "i", "ports": [{"containerPort": 81, "hostPort": 8080}]}]}, {},
     {("spec.containers[1].ports[0].hostPort", DUP): 1}),
    # ValidateEnv (relaxed names: printable ASCII but '='), validateEnvVarValueFrom
    ("env", {}, {"env": [{"name": "A=B"}, {"value": "x"}, {"name": "ok", "valueFrom": {}},
                         {"name": "both", "value": "v", "valueFrom": {
                             "secretKeyRef": {"name": "s", "key": "k"}}},
                         {"name": "relaxed.1-ok", "value": "v"}]},
     {(f"{C0}.env[0].name", INV): 1, (f"{C0}.env[1].name", REQ): 1,
      (f"{C0}.env[2].valueFrom", INV): 1, (f"{C0}.env[3].valueFrom", INV): 1}),
    ("env-from", {}, {"envFrom": [{"prefix": "P="}, {"configMapRef": {"name": "Bad_Name"}}]},
     {(f"{C0}.envFrom", INV): 1, (f"{C0}.envFrom[0].prefix", INV): 1,
      (f"{C0}.envFrom[1].configMapRef.name", INV): 1}),
    # ValidateVolumes / validateVolumeSource / ValidateVolumeMounts: a faulty volume is no
    # volume to mount (one without a source is defaulted to an emptyDir: SetDefaults_Volume)
    ("volumes", {"volumes": [{"name": "two", "emptyDir": {}, "configMap": {"name": "c"}},
                             {"name": "none"}, {"name": "ok", "emptyDir": {}},
                             {"name": "ok", "emptyDir": {}},
                             {"name": "s", "secret": {}}]},
     {"volumeMounts": [{"name": "two", "mountPath": "/a"}, {"name": "ok", "mountPath": "/a"},
                       {"name": "missing"}]},
     {("spec.volumes[0].configMap", FORB): 1,
      ("spec.volumes[3].name", DUP): 1, ("spec.volumes[4].secret.secretName", REQ): 1,
      (f"{C0}.volumeMounts[0].name", MISSING): 1, (f"{C0}.volumeMounts[1].mountPath", INV): 1,
      (f"{C0}.volumeMounts[2].name", MISSING): 1, (f"{C0}.volumeMounts[2].mountPath", REQ): 1}),
    ("host-path", {"volumes": [{"name": "h", "hostPath": {"path": "/a/../b", "type": "Dir"}}]},
     {}, {("spec.volumes[0].hostPath.path", INV): 1, ("spec.volumes[0].hostPath.type", UNSUP): 1}),
    # ValidateContainerResourceRequirements: requests <= limits (at .requests), names;
    # SetDefaults_Pod copies the limits without a request into the requests first; a bare
    # unknown name fails both validateResourceName (not a standard resource type) and
    # validateContainerResourceName (not a standard resource for containers)
    ("resources", {}, {"resources": {"limits": {"cpu": "1", "memory": "-1", "gpu": "1"},
                                     "requests": {"cpu": "2"}}},
     {(f"{C0}.resources.requests", INV): 1, (f"{C0}.resources.limits[memory]", INV): 1,
      (f"{C0}.resources.limits[gpu]", INV): 2, (f"{C0}.resources.requests[memory]", INV): 1,
      (f"{C0}.resources.requests[gpu]", INV): 2}),
    # validateRestartPolicy, validateDNSPolicy, validatePodDNSConfig
    ("policies", {"restartPolicy": "Sometimes", "dnsPolicy": "None"}, {},
     {("spec.restartPolicy", UNSUP): 1, ("spec.dnsConfig", REQ): 1}),
    # ValidatePodSpec: activeDeadlineSeconds in [1, MaxInt32], hostname and subdomain labels
    ("names-and-deadline", {"activeDeadlineSeconds": 0, "hostname": "Host_1",
                            "subdomain": "a.b", "nodeName": "Bad_Node"}, {},
     {("spec.activeDeadlineSeconds", INV): 1, ("spec.hostname", INV): 1, ("spec.subdomain", INV): 1,
      ("spec.nodeName", INV): 1}),
    # validateLivenessProbe / validateReadinessProbe / validateHandler (handlers counted in
    # the order exec, httpGet, tcpSocket, grpc: the second is Forbidden, not checked)
    ("probes", {}, {"livenessProbe": {"successThreshold": 2},
                    "readinessProbe": {"httpGet": {"port": 0}, "exec": {"command": ["x"]},
                                       "terminationGracePeriodSeconds": 5},
                    "startupProbe": {"tcpSocket": {"port": "not_a_name"}}},
     {(f"{C0}.livenessProbe", REQ): 1, (f"{C0}.livenessProbe.successThreshold", INV): 1,
      (f"{C0}.readinessProbe.httpGet", FORB): 1,
      (f"{C0}.readinessProbe.terminationGracePeriodSeconds", INV): 1,
      (f"{C0}.startupProbe.tcpSocket.port", INV): 1}),
    # validateInitContainers: probes only on restartable (sidecar) init containers
    ("init-probes", {"initContainers": [
        {"name": "i", "image": "i", "livenessProbe": {"exec": {"command": ["x"]}}},
        {"name": "j", "image": "i", "restartPolicy": "Never"}]}, {"restartPolicy": "Always"},
     {("spec.initContainers[0].livenessProbe", FORB): 1,
      ("spec.initContainers[1].restartPolicy", UNSUP): 1, (f"{C0}.restartPolicy", FORB): 1}),
    # ValidateSecurityContext, validatePodSpecSecurityContext
    ("security", {"securityContext": {"runAsUser": -1, "seccompProfile": {"type": "Bogus"}}},
     {"securityContext": {"runAsGroup": -1, "procMount": "Secret"}},
     {("spec.securityContext.runAsUser", INV): 1, ("spec.securityContext.seccompProfile.type",
                                                  UNSUP): 1,
      (f"{C0}.securityContext.runAsGroup", INV): 1, (f"{C0}.securityContext.procMount", UNSUP): 1}),
    # ValidateLabels of nodeSelector; ValidateNodeSelector; validatePodAffinityTerm
    ("scheduling", {"nodeSelector": {"a b": "c"}, "affinity": {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "zone", "operator": "Near"}]}]}},
        "podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 0, "podAffinityTerm": {"topologyKey": "zone"}}]}}}, {},
     {("spec.nodeSelector", INV): 1,
      ("spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
       ".nodeSelectorTerms[0].matchExpressions[0].operator", INV): 1,
      ("spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0]"
       ".weight", INV): 1}),
    # ValidateTolerations
    ("tolerations", {"tolerations": [{"operator": "Equal", "value": "x"},
                                      {"key": "k", "tolerationSeconds": 5,
                                       "effect": "NoSchedule"},
                                      {"key": "k", "effect": "Sometimes"},
                                      {"key": "k", "operator": "Exists", "value": "v"}]}, {},
     {("spec.tolerations[0].operator", INV): 1, ("spec.tolerations[1].effect", INV): 1,
      ("spec.tolerations[2].effect", UNSUP): 1, ("spec.tolerations[3].operator", INV): 1}),
    # validateTopologySpreadConstraints, ValidateHostAliases
    ("spread-and-aliases", {"topologySpreadConstraints": [
        {"maxSkew": 0, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
        {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"},
        {"maxSkew": 1, "whenUnsatisfiable": "Sometimes", "minDomains": 2}],
        "hostAliases": [{"ip": "not-an-ip", "hostnames": ["Bad_Host"]}]}, {},
     {("spec.topologySpreadConstraints[0].maxSkew", INV): 1,
      ("spec.topologySpreadConstraints[0].{topologyKey, whenUnsatisfiable}", DUP): 1,
      ("spec.topologySpreadConstraints[2].topologyKey", REQ): 1,
      ("spec.topologySpreadConstraints[2].whenUnsatisfiable", UNSUP): 1,
      ("spec.topologySpreadConstraints[2].minDomains", INV): 1,
      ("spec.hostAliases[0].ip", INV): 1, ("spec.hostAliases[0].hostnames[0]", INV): 1}),
    # ValidatePodCreate: ephemeral containers only through their subresource; a gated pod
    # may not name its node
    ("create-only", {"nodeName": "n1", "schedulingGates": [{"name": "example.com/wait"}],
                     "ephemeralContainers": [{"name": "e", "image": "i"}]}, {},
     {("spec.ephemeralContainers", FORB): 1, ("spec.nodeName", FORB): 1}),
]


@pytest.mark.parametrize(("case", "spec", "container", "expected"), CASES,
                         ids=[c[0] for c in CASES])
def test_pod_create_is_validated(kube: Kube, case: str, spec: dict[str, Any],
                                 container: dict[str, Any],
                                 expected: dict[tuple[str, str], int]) -> None:
    assert kube.reject("POST", PODS, pod(case, spec, container)) == Counter(expected)


def test_pod_messages_are_kubernetes_words(kube: Kube) -> None:
    got = kube.messages("POST", PODS, pod("words", {"activeDeadlineSeconds": 0}, {
        "env": [{"name": "A=B"}],
        "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "1500m"}}}))
    assert got == {
        f"{C0}.env[0].name": ['Invalid value: "A=B": a valid environment variable name must '
                              "consist only of printable ASCII characters other than '='"],
        f"{C0}.resources.requests": ['Invalid value: "1500m": must be less than or equal to '
                                     "cpu limit of 1"],
        "spec.activeDeadlineSeconds": ["Invalid value: 0: must be between 1 and 2147483647, "
                                       "inclusive"]}


def test_a_valid_pod_with_everything_is_accepted(kube: Kube) -> None:
    """What the rules above must not refuse: volumes of each common kind mounted, sidecars
    with probes, tolerations, affinity and security settings all well formed."""
    status, body = kube.call("POST", PODS, pod("fine", {
        "volumes": [{"name": "data", "emptyDir": {}}, {"name": "cfg", "configMap": {"name": "c"}},
                    {"name": "claim", "persistentVolumeClaim": {"claimName": "pvc"}},
                    {"name": "eph", "ephemeral": {"volumeClaimTemplate": {"spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "resources": {"requests": {"storage": "1Gi"}}}}}}],
        "initContainers": [{"name": "sidecar", "image": "i", "restartPolicy": "Always",
                            "readinessProbe": {"tcpSocket": {"port": 80}}}],
        "tolerations": [{"operator": "Exists"},
                        {"key": "k", "operator": "Equal", "value": "v", "effect": "NoExecute",
                         "tolerationSeconds": 30}],
        "securityContext": {"runAsUser": 1000, "fsGroup": 2000,
                            "seccompProfile": {"type": "RuntimeDefault"}},
        "affinity": {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "x"}},
             "topologyKey": "kubernetes.io/hostname"}]}},
        "hostname": "web-0", "subdomain": "web"}, {
        "ports": [{"name": "http", "containerPort": 80}],
        "env": [{"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
        "volumeMounts": [{"name": "data", "mountPath": "/data"},
                         {"name": "cfg", "mountPath": "/etc/cfg"}],
        "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}},
        "livenessProbe": {"httpGet": {"port": "http"}},
        "lifecycle": {"preStop": {"sleep": {"seconds": 5}}}}))
    assert status == 201, body


def test_deployment_pod_template_shares_the_pod_rules(kube: Kube) -> None:
    """ValidatePodTemplateSpec names the template's labels and annotations under the
    template itself (``spec.template.annotations``), then validates its spec."""
    deployment = {"metadata": {"name": "d"}, "spec": {
        "selector": {"matchLabels": {"app": "d"}},
        "template": {"metadata": {"labels": {"app": "d"}, "annotations": {"a b": "x"}},
                     "spec": {"containers": [{"name": "c", "image": "i",
                                              "env": [{"name": "A=B"}],
                                              "volumeMounts": [{"name": "v",
                                                                "mountPath": "/v"}]}]}}}}
    assert kube.reject("POST", DEPLOYMENTS, deployment) == Counter({
        ("spec.template.annotations", INV): 1,
        ("spec.template.spec.containers[0].env[0].name", INV): 1,
        ("spec.template.spec.containers[0].volumeMounts[0].name", MISSING): 1})


def test_stateful_set_template_spec_is_not_pod_validated(kube: Kube) -> None:
    """ValidatePodTemplateSpecForStatefulSet checks the template's labels and annotations
    only (the pod spec check is a TODO in pkg/apis/apps/validation: mounts name the claim
    templates), then restartPolicy Always and no activeDeadlineSeconds."""
    template: dict[str, Any] = {
        "metadata": {"labels": {"app": "s"}},
        "spec": {"containers": [{"name": "c", "image": "i", "env": [{"name": "A=B"}],
                                 "volumeMounts": [{"name": "data", "mountPath": "/d"}]}]}}
    sts: dict[str, Any] = {"metadata": {"name": "s"}, "spec": {
        "selector": {"matchLabels": {"app": "s"}}, "template": template,
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
            "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}
    status, body = kube.call("POST", "/apis/apps/v1/namespaces/default/statefulsets", sts)
    assert status == 201, body
    bad = copy.deepcopy(sts)
    bad["metadata"]["name"] = "t"
    bad["spec"]["template"]["metadata"]["annotations"] = {"a b": "x"}
    bad["spec"]["template"]["spec"]["activeDeadlineSeconds"] = 5
    assert kube.reject("POST", "/apis/apps/v1/namespaces/default/statefulsets", bad) == Counter(
        {("spec.template.annotations", INV): 1,
         ("spec.template.spec.activeDeadlineSeconds", FORB): 1})
