"""What admission adds to pods: the ServiceAccount, Priority and DefaultTolerationSeconds steps.

Ports of the apiserver's admission plugins, run in their order for ``pods`` writes:

- ``ServiceAccount`` (create): ``spec.serviceAccountName`` defaults to ``default``, the
  account must exist (403 otherwise), its image pull secrets are copied when the pod has
  none, and unless automounting is turned off the projected volume ``kube-api-access-xxxxx``
  (token, ``kube-root-ca.crt``, namespace) is mounted read-only at
  ``/var/run/secrets/kubernetes.io/serviceaccount`` in every container and init container.
  Mirror pods are not changed and may not reference accounts, secrets or tokens.
- ``Priority`` (create, update): ``spec.priority`` and ``spec.preemptionPolicy`` resolved
  from ``spec.priorityClassName`` or the global default PriorityClass (0 and
  ``PreemptLowerPriority`` without one); a conflicting value is refused (403).
- ``DefaultTolerationSeconds`` (create, update): tolerate ``not-ready`` and ``unreachable``
  NoExecute taints for 300 s unless the pod already tolerates them.

Admission runs after the registry's defaults, so fields added here are not recorded in
``managedFields``, as on a real server.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from setpoint.cluster.admission.forbidden import new_forbidden
from setpoint.cluster.admission.priorityclasses import PRIORITY_CLASSES, DefaultPriorityClass
from setpoint.cluster.registry.admissionpoints import Attributes
from setpoint.cluster.registry.types import ResourceType
from setpoint.machinery.names import generate_name
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.storage import Reader

MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
DEFAULT_SERVICE_ACCOUNT = "default"
TOKEN_VOLUME_PREFIX = "kube-api-access-"
TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
# serviceaccount.WarnOnlyBoundTokenExpirationSeconds: 1 h + 7 s
TOKEN_EXPIRATION_SECONDS = 3607
PROJECTED_DEFAULT_MODE = 0o644

SERVICE_ACCOUNTS = "/serviceaccounts"
# Created by the apiserver at startup (scheduling's bootstrap-system-priority-classes).
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000,
                           "system-cluster-critical": 2000000000}
DEFAULT_PREEMPTION_POLICY = "PreemptLowerPriority"

DEFAULT_TOLERATION_SECONDS = 300


@dataclass(frozen=True)
class DefaultTolerationSeconds:
    """kube-apiserver's ``--default-not-ready-toleration-seconds`` and
    ``--default-unreachable-toleration-seconds`` (300 each; plugin/pkg/admission/
    defaulttolerationseconds/admission.go): how long the NoExecute toleration added to
    every pod lets it stay on a node that is not ready, or unreachable, before taint-based
    eviction deletes it."""

    not_ready: int = DEFAULT_TOLERATION_SECONDS
    unreachable: int = DEFAULT_TOLERATION_SECONDS
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"

# Field order of the Go structs, which is how the apiserver serializes them.
POD_SPEC_ORDER = (
    "volumes", "initContainers", "containers", "ephemeralContainers", "restartPolicy",
    "terminationGracePeriodSeconds", "activeDeadlineSeconds", "dnsPolicy", "nodeSelector",
    "serviceAccountName", "serviceAccount", "automountServiceAccountToken", "nodeName",
    "hostNetwork", "hostPID", "hostIPC", "shareProcessNamespace", "securityContext",
    "imagePullSecrets", "hostname", "subdomain", "affinity", "schedulerName", "tolerations",
    "hostAliases", "priorityClassName", "priority", "dnsConfig", "readinessGates",
    "runtimeClassName", "enableServiceLinks", "preemptionPolicy", "overhead",
    "topologySpreadConstraints", "setHostnameAsFQDN", "os", "hostUsers", "schedulingGates",
    "resourceClaims", "resources",
)
CONTAINER_ORDER = (
    "name", "image", "command", "args", "workingDir", "ports", "envFrom", "env", "resources",
    "resizePolicy", "restartPolicy", "volumeMounts", "volumeDevices", "livenessProbe",
    "readinessProbe", "startupProbe", "lifecycle", "terminationMessagePath",
    "terminationMessagePolicy", "imagePullPolicy", "securityContext", "stdin", "stdinOnce",
    "tty",
)


def _ordered(obj: Obj, order: tuple[str, ...]) -> Obj:
    out = {k: obj[k] for k in order if k in obj}
    out.update((k, v) for k, v in obj.items() if k not in out)
    return out


class PodDefaults:
    """The pod admission steps, in the apiserver's plugin order."""

    def __init__(self, store: Reader, default_priority: DefaultPriorityClass,
                 toleration_seconds: DefaultTolerationSeconds | None = None) -> None:
        self._store = store
        self._default_priority = default_priority
        self._toleration_seconds = toleration_seconds or DefaultTolerationSeconds()

    def __repr__(self) -> str:
        return "PodDefaults(ServiceAccount, Priority, DefaultTolerationSeconds)"

    def __call__(self, attributes: Attributes) -> None:
        operation, rt, obj, old = (attributes.operation, attributes.rt, attributes.obj,
                                   attributes.old)
        if rt.group or rt.kind != "Pod" or operation not in ("CREATE", "UPDATE"):
            return
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        _service_account_alias(spec)
        if operation == "CREATE":
            self._service_account(rt, obj, spec)
            self._priority_on_create(rt, obj, spec)
        else:
            _priority_on_update(spec, (old or {}).get("spec") or {})
        add_default_tolerations(spec, self._toleration_seconds)
        for key in ("initContainers", "containers"):
            containers = spec.get(key)
            if isinstance(containers, list):
                spec[key] = [_ordered(c, CONTAINER_ORDER) if isinstance(c, dict) else c
                             for c in containers]
        obj["spec"] = _ordered(spec, POD_SPEC_ORDER)

    # -- ServiceAccount ------------------------------------------------------------------
    def _service_account(self, rt: ResourceType, pod: Obj, spec: Obj) -> None:
        meta = pod["metadata"]
        if MIRROR_POD_ANNOTATION in (meta.get("annotations") or {}):
            _validate_mirror_pod(rt, pod, spec)
            return
        if not spec.get("serviceAccountName"):
            spec["serviceAccountName"] = DEFAULT_SERVICE_ACCOUNT
        spec["serviceAccount"] = spec["serviceAccountName"]
        namespace = meta.get("namespace") or ""
        name = spec["serviceAccountName"]
        account = self._store.get(SERVICE_ACCOUNTS, namespace, name)
        if account is None:
            raise new_forbidden(rt, pod, f"error looking up service account {namespace}/{name}: "
                                      f'serviceaccount "{name}" not found')
        if _should_automount(account, spec):
            mount_service_account_token(spec)
        pull_secrets = account.get("imagePullSecrets") or []
        if not spec.get("imagePullSecrets") and pull_secrets:
            spec["imagePullSecrets"] = [{"name": s.get("name", "")} for s in pull_secrets]

    # -- Priority ------------------------------------------------------------------------
    def _priority_on_create(self, rt: ResourceType, pod: Obj, spec: Obj) -> None:
        class_name = spec.get("priorityClassName") or ""
        if not class_name:
            default = self._default_priority.get()
            if default is None:
                priority, policy = 0, DEFAULT_PREEMPTION_POLICY
            else:
                spec["priorityClassName"] = default["metadata"]["name"]
                priority = int(default.get("value") or 0)
                policy = default.get("preemptionPolicy") or DEFAULT_PREEMPTION_POLICY
        else:
            found = self._priority_class(class_name)
            if found is None:
                raise new_forbidden(rt, pod, f"no PriorityClass with name {class_name} was found")
            priority, policy = found
        given = spec.get("priority")
        if given is not None and given != priority:
            raise new_forbidden(rt, pod, f"the integer value of priority ({given}) must not be "
                                      "provided in pod spec; priority admission controller "
                                      f"computed {priority} from the given PriorityClass name")
        spec["priority"] = priority
        given_policy = spec.get("preemptionPolicy")
        if given_policy is not None and given_policy != policy:
            raise new_forbidden(rt, pod, f"the string value of PreemptionPolicy ({given_policy}) "
                                      "must not be provided in pod spec; priority admission "
                                      f"controller computed {policy} from the given "
                                      "PriorityClass name")
        spec["preemptionPolicy"] = policy

    def _priority_class(self, name: str) -> tuple[int, str] | None:
        pc = self._store.get(PRIORITY_CLASSES, "", name)
        if pc is not None:
            return (int(pc.get("value") or 0),
                    pc.get("preemptionPolicy") or DEFAULT_PREEMPTION_POLICY)
        if name in SYSTEM_PRIORITY_CLASSES:
            return SYSTEM_PRIORITY_CLASSES[name], DEFAULT_PREEMPTION_POLICY
        return None


def _service_account_alias(spec: Obj) -> None:
    """``serviceAccount`` is the deprecated alias of ``serviceAccountName`` (the name wins)."""
    if not spec.get("serviceAccountName") and spec.get("serviceAccount"):
        spec["serviceAccountName"] = spec["serviceAccount"]
    if spec.get("serviceAccountName"):
        spec["serviceAccount"] = spec["serviceAccountName"]
    else:
        spec.pop("serviceAccount", None)


def _should_automount(account: Obj, spec: Obj) -> bool:
    """The pod's preference wins, then the account's; the default is to mount."""
    if spec.get("automountServiceAccountToken") is not None:
        return bool(spec["automountServiceAccountToken"])
    if account.get("automountServiceAccountToken") is not None:
        return bool(account["automountServiceAccountToken"])
    return True


def token_volume(name: str) -> Obj:
    """The projected volume that gives a pod its API credentials."""
    return {"name": name, "projected": {
        "sources": [
            {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS,
                                     "path": "token"}},
            {"configMap": {"name": ROOT_CA_CONFIGMAP,
                           "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {
                "apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
        ],
        "defaultMode": PROJECTED_DEFAULT_MODE,
    }}


def mount_service_account_token(spec: Obj) -> None:
    """Mount the token volume in every container without a mount at its path; add the
    volume (reusing an existing ``kube-api-access-*`` one) if any container needed it."""
    volumes = [v for v in spec.get("volumes") or [] if isinstance(v, dict)]
    existing = next((v["name"] for v in volumes
                     if str(v.get("name", "")).startswith(TOKEN_VOLUME_PREFIX)), None)
    name = existing or generate_name(TOKEN_VOLUME_PREFIX)
    needed = False
    for key in ("initContainers", "containers"):
        for container in spec.get(key) or []:
            if not isinstance(container, dict):
                continue
            mounts = container.get("volumeMounts") or []
            if any(m.get("mountPath") == TOKEN_MOUNT_PATH for m in mounts):
                continue
            container["volumeMounts"] = [*mounts, {"name": name, "readOnly": True,
                                                   "mountPath": TOKEN_MOUNT_PATH}]
            needed = True
    if existing is None and needed:
        spec["volumes"] = [*(spec.get("volumes") or []), token_volume(name)]


def _validate_mirror_pod(rt: ResourceType, pod: Obj, spec: Obj) -> None:
    if spec.get("serviceAccountName"):
        raise new_forbidden(rt, pod, "a mirror pod may not reference service accounts")
    if _references_secrets(spec):
        raise new_forbidden(rt, pod, "a mirror pod may not reference secrets")
    for volume in spec.get("volumes") or []:
        for source in (volume.get("projected") or {}).get("sources") or []:
            if source.get("serviceAccountToken") is not None:
                raise new_forbidden(rt, pod, "a mirror pod may not use ServiceAccountToken "
                                          "volume projections")


def _references_secrets(spec: Obj) -> bool:
    """``VisitPodSecretNames``: pull secrets, env and envFrom, and secret volume sources."""
    if spec.get("imagePullSecrets"):
        return True
    for key in ("initContainers", "containers", "ephemeralContainers"):
        for c in spec.get(key) or []:
            if any((e.get("secretRef") or {}).get("name") for e in c.get("envFrom") or []):
                return True
            if any(((e.get("valueFrom") or {}).get("secretKeyRef") or {}).get("name")
                   for e in c.get("env") or []):
                return True
    for volume in spec.get("volumes") or []:
        if (volume.get("secret") or {}).get("secretName"):
            return True
        if (volume.get("azureFile") or {}).get("secretName"):
            return True
        for source in (volume.get("projected") or {}).get("sources") or []:
            if (source.get("secret") or {}).get("name"):
                return True
        for value in volume.values():
            if isinstance(value, dict) and any(
                    (value.get(k) or {}).get("name")
                    for k in ("secretRef", "nodePublishSecretRef")):
                return True
    return False


def _priority_on_update(spec: Obj, old_spec: Obj) -> None:
    """The priority set at creation is kept when an update leaves it out."""
    for key in ("priority", "preemptionPolicy"):
        if spec.get(key) is None and old_spec.get(key) is not None:
            spec[key] = old_spec[key]


def add_default_tolerations(spec: Obj, seconds: DefaultTolerationSeconds | None = None,
                            ) -> None:
    """DefaultTolerationSeconds: tolerate not-ready/unreachable NoExecute for ``seconds``
    (300 s each unless the server was told otherwise)."""
    seconds = seconds or DefaultTolerationSeconds()
    tolerations = [t for t in spec.get("tolerations") or [] if isinstance(t, dict)]
    not_ready = unreachable = False
    for t in tolerations:
        key, effect = t.get("key") or "", t.get("effect") or ""
        if effect in ("NoExecute", ""):
            not_ready = not_ready or key in (NOT_READY_TAINT, "")
            unreachable = unreachable or key in (UNREACHABLE_TAINT, "")
    added = [{"key": taint, "operator": "Exists", "effect": "NoExecute",
              "tolerationSeconds": after}
             for taint, tolerated, after in (
                 (NOT_READY_TAINT, not_ready, seconds.not_ready),
                 (UNREACHABLE_TAINT, unreachable, seconds.unreachable)) if not tolerated]
    if added:
        spec["tolerations"] = [*(spec.get("tolerations") or []), *added]
