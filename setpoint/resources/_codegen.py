"""Generate ``setpoint/resources/models/`` from the Kubernetes OpenAPI definitions.

Run ``python -m setpoint.resources._codegen`` after changing the Kubernetes version in
``setpoint.machinery.schema``; the output is committed so that editors and type checkers see
every field. One module per API group version (``core_v1``, ``apps_v1`` …); every
definition with properties becomes a :class:`~setpoint.resources._model.Model`, every kind
the API serves becomes a :class:`~setpoint.resources._resource.Resource` with its plural and
scope. All fields are optional, as in an apply configuration: what the server fills in is
``None`` until it did.
"""

from __future__ import annotations

import keyword
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from setpoint.machinery.schema import KUBERNETES_SCHEMA_VERSION, definitions

OUTPUT = Path(__file__).parent / "models"

# definition package -> generated module; the order is the precedence of flat exports
PACKAGES: dict[str, str] = {
    "io.k8s.api.core.v1": "core_v1",
    "io.k8s.api.apps.v1": "apps_v1",
    "io.k8s.api.batch.v1": "batch_v1",
    "io.k8s.api.networking.v1": "networking_v1",
    "io.k8s.api.policy.v1": "policy_v1",
    "io.k8s.api.rbac.v1": "rbac_v1",
    "io.k8s.api.coordination.v1": "coordination_v1",
    "io.k8s.api.events.v1": "events_v1",
    "io.k8s.api.autoscaling.v2": "autoscaling_v2",
    "io.k8s.api.autoscaling.v1": "autoscaling_v1",
    "io.k8s.api.discovery.v1": "discovery_v1",
    "io.k8s.api.storage.v1": "storage_v1",
    "io.k8s.api.scheduling.v1": "scheduling_v1",
    "io.k8s.api.admissionregistration.v1": "admissionregistration_v1",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1": "apiextensions_v1",
    "io.k8s.apimachinery.pkg.apis.meta.v1": "meta_v1",
}

# (apiVersion, kind) -> (plural, namespaced): what discovery of a v1.32 server says
RESOURCES: dict[tuple[str, str], tuple[str, bool]] = {
    ("v1", "ConfigMap"): ("configmaps", True),
    ("v1", "Endpoints"): ("endpoints", True),
    ("v1", "Event"): ("events", True),
    ("v1", "LimitRange"): ("limitranges", True),
    ("v1", "Namespace"): ("namespaces", False),
    ("v1", "Node"): ("nodes", False),
    ("v1", "PersistentVolumeClaim"): ("persistentvolumeclaims", True),
    ("v1", "PersistentVolume"): ("persistentvolumes", False),
    ("v1", "Pod"): ("pods", True),
    ("v1", "PodTemplate"): ("podtemplates", True),
    ("v1", "ReplicationController"): ("replicationcontrollers", True),
    ("v1", "ResourceQuota"): ("resourcequotas", True),
    ("v1", "Secret"): ("secrets", True),
    ("v1", "ServiceAccount"): ("serviceaccounts", True),
    ("v1", "Service"): ("services", True),
    ("apps/v1", "ControllerRevision"): ("controllerrevisions", True),
    ("apps/v1", "DaemonSet"): ("daemonsets", True),
    ("apps/v1", "Deployment"): ("deployments", True),
    ("apps/v1", "ReplicaSet"): ("replicasets", True),
    ("apps/v1", "StatefulSet"): ("statefulsets", True),
    ("batch/v1", "CronJob"): ("cronjobs", True),
    ("batch/v1", "Job"): ("jobs", True),
    ("networking.k8s.io/v1", "IngressClass"): ("ingressclasses", False),
    ("networking.k8s.io/v1", "Ingress"): ("ingresses", True),
    ("networking.k8s.io/v1", "NetworkPolicy"): ("networkpolicies", True),
    ("policy/v1", "PodDisruptionBudget"): ("poddisruptionbudgets", True),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): ("clusterrolebindings", False),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): ("clusterroles", False),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ("rolebindings", True),
    ("rbac.authorization.k8s.io/v1", "Role"): ("roles", True),
    ("coordination.k8s.io/v1", "Lease"): ("leases", True),
    ("events.k8s.io/v1", "Event"): ("events", True),
    ("autoscaling/v2", "HorizontalPodAutoscaler"): ("horizontalpodautoscalers", True),
    ("autoscaling/v1", "HorizontalPodAutoscaler"): ("horizontalpodautoscalers", True),
    ("discovery.k8s.io/v1", "EndpointSlice"): ("endpointslices", True),
    ("storage.k8s.io/v1", "CSIDriver"): ("csidrivers", False),
    ("storage.k8s.io/v1", "CSINode"): ("csinodes", False),
    ("storage.k8s.io/v1", "CSIStorageCapacity"): ("csistoragecapacities", True),
    ("storage.k8s.io/v1", "StorageClass"): ("storageclasses", False),
    ("storage.k8s.io/v1", "VolumeAttachment"): ("volumeattachments", False),
    ("scheduling.k8s.io/v1", "PriorityClass"): ("priorityclasses", False),
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"):
        ("mutatingwebhookconfigurations", False),
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"):
        ("validatingwebhookconfigurations", False),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"):
        ("validatingadmissionpolicies", False),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"):
        ("validatingadmissionpolicybindings", False),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): ("customresourcedefinitions", False),
}

# definitions that are a wire type rather than an object of their own
SCALARS: dict[str, str] = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": "Quantity",
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": "IntOrString",
    "io.k8s.apimachinery.pkg.apis.meta.v1.Time": "Time",
    "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime": "MicroTime",
    "io.k8s.apimachinery.pkg.apis.meta.v1.FieldsV1": "dict[str, Any]",
    "io.k8s.apimachinery.pkg.runtime.RawExtension": "dict[str, Any]",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON": "Any",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray": "Any",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool":
        "JSONSchemaProps | bool",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray":
        "JSONSchemaProps | list[str]",
}

_RESERVED = set(dir(BaseModel)) | {"schema", "json", "copy", "dict", "validate", "fields"}
_WORD = re.compile(r"[A-Z]{2,}s(?![a-z])|[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def snake_name(wire: str) -> str:
    """The Python attribute for a wire field name (``hostIPs`` -> ``host_ips``)."""
    name = "_".join(w.lower() for w in _WORD.findall(wire)) or "field"
    if keyword.iskeyword(name) or name in _RESERVED or name.startswith("model_"):
        name += "_"
    return name


@dataclass
class _Class:
    definition: str
    name: str
    doc: str
    fields: list[tuple[str, str, str]] = field(default_factory=list)  # py, type, alias
    resource: tuple[str, str, str, bool] | None = None  # apiVersion, kind, plural, namespaced


@dataclass
class _Module:
    name: str
    classes: list[_Class] = field(default_factory=list)
    imports: set[str] = field(default_factory=set)


def _type_of(raw: Mapping[str, Any], module: _Module) -> str:
    ref = raw.get("$ref")
    all_of = raw.get("allOf")
    if ref is None and isinstance(all_of, list) and len(all_of) == 1:
        ref = all_of[0].get("$ref")
    if ref is not None:
        return _definition_type(ref.rsplit("/", 1)[-1], module)
    t = raw.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), None)
    if t == "array":
        return f"list[{_type_of(raw.get('items') or {}, module)}]"
    if t == "object":
        extra = raw.get("additionalProperties")
        if isinstance(extra, Mapping):
            return f"dict[str, {_type_of(extra, module)}]"
        return "dict[str, Any]"
    return {"string": "str", "integer": "int", "number": "float", "boolean": "bool"}.get(
        t or "", "Any"
    )


def _definition_type(name: str, module: _Module) -> str:
    if name in SCALARS:
        return SCALARS[name]
    package, _, cls = name.rpartition(".")
    target = PACKAGES.get(package)
    raw = definitions().raw[name]
    if "properties" not in raw:
        return _type_of(raw, module)
    if target is None:
        raise ValueError(f"{name} is outside the generated packages; add its package")
    if target == module.name:
        return cls
    module.imports.add(target)
    return f"{target}.{cls}"


def _doc(description: str) -> str:
    first = description.strip().split("\n\n", 1)[0].replace("\\", "\\\\").replace('"""', "'''")
    lines = textwrap.wrap(" ".join(first.split()), 88) or [""]
    if len(lines) == 1:
        return f'    """{lines[0]}"""'
    return '    """' + "\n    ".join(lines) + '\n    """'


def build_modules() -> dict[str, _Module]:
    defs = definitions().raw
    modules = {m: _Module(m) for m in PACKAGES.values()}
    for name in sorted(defs):
        package, _, cls_name = name.rpartition(".")
        module = modules.get(PACKAGES.get(package, ""))
        raw = defs[name]
        if module is None or name in SCALARS or "properties" not in raw:
            continue
        gvks = raw.get("x-kubernetes-group-version-kind") or []
        if cls_name.endswith("List") and "items" in raw["properties"] and gvks:
            continue  # lists are the client's ObjectList
        cls = _Class(name, cls_name, _doc(raw.get("description") or cls_name))
        for gvk in gvks:
            api_version = f"{gvk['group']}/{gvk['version']}" if gvk.get("group") else gvk["version"]
            row = RESOURCES.get((api_version, gvk["kind"]))
            if row is not None:
                cls.resource = (api_version, gvk["kind"], *row)
        skip = {"apiVersion", "kind", "metadata"} if cls.resource else set()
        for wire, prop in raw["properties"].items():
            if wire in skip:
                continue
            py = snake_name(wire)
            alias = "" if to_camel(py) == wire else wire
            cls.fields.append((py, _type_of(prop, module), alias))
        module.classes.append(cls)
    return modules


def render(module: _Module) -> str:
    out = [
        f'"""Kubernetes {KUBERNETES_SCHEMA_VERSION} ``{module.name}`` models.',
        "",
        'Generated by setpoint.resources._codegen; do not edit."""',
        "",
        "from __future__ import annotations",
        "",
        "from typing import Any, ClassVar",
        "",
        "from pydantic import Field",
        "",
        "from setpoint.resources._model import IntOrString, MicroTime, Model, Quantity, Time",
    ]
    if any(c.resource for c in module.classes):
        out.append("from setpoint.resources._resource import Resource")
    for imp in sorted(module.imports):
        out.append(f"from setpoint.resources.models import {imp}")
    out += ["", "__all__ = [", *(f'    "{c.name}",' for c in module.classes), "]"]
    for cls in module.classes:
        out += ["", "", f"class {cls.name}({'Resource' if cls.resource else 'Model'}):", cls.doc]
        if cls.resource:
            api_version, kind, plural, namespaced = cls.resource
            out += [
                "",
                f'    api_version: ClassVar[str] = "{api_version}"',
                f'    kind: ClassVar[str] = "{kind}"',
                f'    plural: ClassVar[str] = "{plural}"',
                f"    namespaced: ClassVar[bool] = {namespaced}",
            ]
        if cls.fields:
            out.append("")
        for py, typ, alias in cls.fields:
            default = f'Field(None, alias="{alias}")' if alias else "None"
            out.append(f"    {py}: {typ} | None = {default}")
    out.append("")
    return "\n".join(out)


def render_index(modules: Iterable[_Module]) -> str:
    exports: dict[str, str] = {}
    for module in modules:
        for cls in module.classes:
            exports.setdefault(cls.name, module.name)
    out = [
        '"""Typed models of the built-in Kubernetes kinds, one module per group version.',
        "",
        "``from setpoint.resources.models import Deployment, Pod`` takes the class from the",
        "first module that defines it (core, apps, batch, networking, policy, rbac, ...);",
        "``from setpoint.resources.models.events_v1 import Event`` picks a specific one.",
        "Modules load on first use. Generated by setpoint.resources._codegen; do not edit.",
        '"""',
        "",
        "from __future__ import annotations",
        "",
        "import importlib",
        "from typing import TYPE_CHECKING, Any",
        "",
        "if TYPE_CHECKING:",
    ]
    for mod in PACKAGES.values():
        names = sorted(n for n, m in exports.items() if m == mod)
        if names:
            out.append(f"    from setpoint.resources.models.{mod} import {', '.join(names)}")
    out += ["", "__all__ = [", *(f'    "{name}",' for name in sorted(exports)), "]"]
    out += ["", "_EXPORTS: dict[str, str] = {"]
    out += [f'    "{name}": "{mod}",' for name, mod in sorted(exports.items())]
    out += [
        "}",
        f"MODULES = {tuple(PACKAGES.values())!r}",
        "",
        "",
        "def __getattr__(name: str) -> Any:",
        "    module = _EXPORTS.get(name)",
        "    if module is not None:",
        '        return getattr(importlib.import_module(f"{__name__}.{module}"), name)',
        "    if name in MODULES:",
        '        return importlib.import_module(f"{__name__}.{name}")',
        '    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")',
        "",
        "",
        "def __dir__() -> list[str]:",
        "    return sorted([*_EXPORTS, *MODULES])",
        "",
    ]
    return "\n".join(out)


def main() -> None:
    """Write every module and the index, then let ruff wrap the long lines."""
    modules = build_modules()
    OUTPUT.mkdir(exist_ok=True)
    for module in modules.values():
        (OUTPUT / f"{module.name}.py").write_text(render(module))
    (OUTPUT / "__init__.py").write_text(render_index(modules.values()))
    ruff = Path(sys.executable).with_name("ruff")
    subprocess.run([str(ruff), "format", "--line-length", "100", str(OUTPUT)], check=True)
    subprocess.run([str(ruff), "check", "--fix", "--quiet", str(OUTPUT)], check=False)


if __name__ == "__main__":
    main()
