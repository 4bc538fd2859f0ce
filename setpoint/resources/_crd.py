"""CustomResourceDefinitions from :class:`CustomResource` classes (``setpoint generate crds``).

``crd_for(Memcached)`` is the CRD of one class; ``generate_crds(classes)`` merges the
classes of one group and kind into one CRD with a version each, and checks that exactly
one of them is the storage version. ``discover_resources("myoperator.api")`` finds the
classes in a module, a package (with its submodules) or a ``.py`` file, and
:func:`dump_yaml` writes the documents as ``kubectl apply -f`` takes them.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import pkgutil
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from setpoint.resources._custom import CustomResource, Declaration
from setpoint.resources._schema import SchemaError, structural_schema

__all__ = [
    "CRDError",
    "crd_for",
    "discover_resources",
    "dump_yaml",
    "generate_crds",
    "openapi_schema",
    "version_priority",
]

_API_VERSION_DOC = (
    "APIVersion defines the versioned schema of this representation of an object.\n"
    "Servers should convert recognized schemas to the latest internal value, and\n"
    "may reject unrecognized values.\n"
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#resources"
)
_KIND_DOC = (
    "Kind is a string value representing the REST resource this object represents.\n"
    "Servers may infer this from the endpoint the client submits requests to.\n"
    "Cannot be updated.\n"
    "In CamelCase.\n"
    "More info: https://git.k8s.io/community/contributors/devel/sig-architecture/"
    "api-conventions.md#types-kinds"
)
_HEADER = ("apiVersion", "kind", "metadata")


class CRDError(ValueError):
    """The declared classes do not make a valid set of CRDs (names, versions, storage)."""


def openapi_schema(cls: type[CustomResource]) -> dict[str, Any]:
    """The ``openAPIV3Schema`` of one custom resource class."""
    decl = cls.declaration()
    schema = structural_schema(cls)
    fields = schema.get("properties", {})
    properties: dict[str, Any] = {
        "apiVersion": {"description": _API_VERSION_DOC, "type": "string"},
        "kind": {"description": _KIND_DOC, "type": "string"},
        "metadata": {"type": "object"},
    }
    for name, prop in fields.items():
        if name not in _HEADER:
            if name == "status":
                # a defaulted status would show on every object before any controller saw it
                prop.pop("default", None)
            properties[name] = prop
    root: dict[str, Any] = {
        "description": schema.get("description")
        or f"{decl.kind} is the Schema for the {decl.plural} API.",
        "type": "object",
        "properties": properties,
    }
    required = [r for r in schema.get("required", ()) if r not in _HEADER]
    if required:
        root["required"] = required
    rules = [*schema.get("x-kubernetes-validations", ()), *(r.to_json() for r in decl.rules)]
    if rules:
        root["x-kubernetes-validations"] = rules
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        root["x-kubernetes-preserve-unknown-fields"] = True
    return root


def _version(cls: type[CustomResource], storage: bool) -> dict[str, Any]:
    decl = cls.declaration()
    out: dict[str, Any] = {"name": decl.version, "served": decl.served, "storage": storage}
    if decl.deprecated:
        out["deprecated"] = True
        if decl.deprecation_warning:
            out["deprecationWarning"] = decl.deprecation_warning
    if decl.printer_columns:
        out["additionalPrinterColumns"] = [c.to_json() for c in decl.printer_columns]
    try:
        out["schema"] = {"openAPIV3Schema": openapi_schema(cls)}
    except SchemaError as e:
        raise SchemaError(f"{cls.__module__}.{cls.__qualname__}: {e}") from None
    subresources: dict[str, Any] = {}
    has_status = "status" in cls.model_fields
    if decl.status_subresource or (decl.status_subresource is None and has_status):
        subresources["status"] = {}
    if decl.scale is not None:
        subresources["scale"] = decl.scale.to_json()
    if subresources:
        out["subresources"] = subresources
    return out


def crd_for(cls: type[CustomResource]) -> dict[str, Any]:
    """The CRD of ``cls`` alone (its version is the storage version)."""
    return generate_crds([cls])[0]


def generate_crds(classes: Iterable[type[CustomResource]]) -> list[dict[str, Any]]:
    """One CRD per group and kind, versions ordered as Kubernetes prefers them.

    Raises :class:`CRDError` when classes of one kind disagree about names or scope,
    declare a version twice, or do not name exactly one storage version.
    """
    by_name: dict[str, list[type[CustomResource]]] = {}
    for cls in dict.fromkeys(classes):
        by_name.setdefault(cls.declaration().name, []).append(cls)
    return [_crd(name, members) for name, members in sorted(by_name.items())]


def _crd(name: str, members: list[type[CustomResource]]) -> dict[str, Any]:
    members.sort(key=lambda c: version_priority(c.declaration().version))
    decls = [c.declaration() for c in members]
    seen: set[str] = set()
    for d in decls:
        if d.version in seen:
            raise CRDError(f"{name}: version {d.version} is declared by more than one class")
        seen.add(d.version)
    storage = _storage_index(name, decls)
    first = decls[storage]
    for d in decls:
        for attr in ("kind", "scope", "singular", "short_names", "categories"):
            if getattr(d, attr) != getattr(first, attr) and getattr(d, attr):
                raise CRDError(
                    f"{name}: versions {first.version} and {d.version} disagree about {attr}"
                )
    names: dict[str, Any] = {
        "kind": first.kind, "listKind": first.list_kind, "plural": first.plural,
        "singular": first.singular,
    }
    if first.short_names:
        names["shortNames"] = list(first.short_names)
    if first.categories:
        names["categories"] = list(first.categories)
    metadata: dict[str, Any] = {"name": name}
    annotations = dict(a for d in decls for a in d.annotations)
    if annotations:
        metadata["annotations"] = annotations
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": metadata,
        "spec": {
            "group": first.group,
            "names": names,
            "scope": first.scope,
            "versions": [_version(c, i == storage) for i, c in enumerate(members)],
        },
    }


def _storage_index(name: str, decls: list[Declaration]) -> int:
    marked = [i for i, d in enumerate(decls) if d.storage]
    if len(marked) > 1:
        versions = ", ".join(decls[i].version for i in marked)
        raise CRDError(f"{name}: only one version can be the storage version, not {versions}")
    if marked:
        return marked[0]
    if len(decls) == 1 and decls[0].storage is None:
        return 0
    raise CRDError(
        f"{name}: declare storage=True on exactly one of the versions "
        f"{', '.join(d.version for d in decls)}"
    )


_VERSION = re.compile(r"^v(\d+)(?:(alpha|beta)(\d+))?$")


def version_priority(version: str) -> tuple[int, int, int, str]:
    """A sort key putting versions in Kubernetes' order: v2, v1, v1beta2, v1alpha1, other."""
    m = _VERSION.match(version)
    if m is None:
        return (3, 0, 0, version)
    major, stage, minor = m.groups()
    rank = {None: 0, "beta": 1, "alpha": 2}[stage]
    return (rank, -int(major), -int(minor or 0), version)


def discover_resources(target: ModuleType | str | Path) -> list[type[CustomResource]]:
    """The custom resource classes defined in a module, a package and its submodules, or a
    file (not those it only imports).

    ``target`` is a module, a dotted module name, or the path of a ``.py`` file or of a
    directory of them. Abstract bases (no group) are skipped; the result is ordered by
    CRD name and version priority.
    """
    modules = list(_load(target))
    # only the classes defined there: one the module imports is its own module's CRD
    # (controller-gen's ``crd paths=./api/...`` likewise writes the types of those packages)
    names = {module.__name__ for module in modules}
    found: dict[type[CustomResource], None] = {}
    for module in modules:
        for value in vars(module).values():
            if (inspect.isclass(value) and issubclass(value, CustomResource)
                    and value.__declaration__ is not None and value.__module__ in names):
                found[value] = None
    return sorted(found, key=lambda c: (c.declaration().name,
                                        version_priority(c.declaration().version)))


def _load(target: ModuleType | str | Path) -> Iterable[ModuleType]:
    if isinstance(target, ModuleType):
        module = target
    elif isinstance(target, Path) or str(target).endswith(".py") or Path(target).is_dir():
        path = Path(target)
        if path.is_dir():
            for file in sorted(path.glob("*.py")):
                yield from _load(file)
            return
        module = _load_file(path)
    else:
        module = importlib.import_module(str(target))
    yield module
    if hasattr(module, "__path__"):
        for info in pkgutil.walk_packages(module.__path__, module.__name__ + "."):
            yield importlib.import_module(info.name)


def _load_file(path: Path) -> ModuleType:
    if not path.is_file():
        raise FileNotFoundError(f"no such Python file: {path}")
    name = f"_setpoint_discovered_{abs(hash(str(path.resolve())))}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # pydantic resolves annotations through sys.modules
    spec.loader.exec_module(module)
    return module


class _Dumper(yaml.SafeDumper):
    """Block style, multi-line strings as ``|`` blocks, keys in the order given, and no
    anchors: a schema part used twice is written out twice, as Kubernetes tools expect."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    if "\n" in value:
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", value)


_Dumper.add_representer(str, _str)


def dump_yaml(documents: Iterable[dict[str, Any]]) -> str:
    """The documents as one multi-document YAML stream, each starting with ``---``."""
    return yaml.dump_all(
        list(documents), Dumper=_Dumper, sort_keys=False, explicit_start=True,
        default_flow_style=False, allow_unicode=True, width=100,
    )
