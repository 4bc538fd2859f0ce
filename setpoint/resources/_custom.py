"""``CustomResource``: a custom resource declared as a Python class.

::

    class Memcached(CustomResource, group="cache.setpoint.dev", version="v1",
                    short_names=["mc"], scale=Scale(".spec.replicas", ".status.readyReplicas")):
        \"\"\"A memcached pool behind a proxy.\"\"\"
        spec: MemcachedSpec
        status: MemcachedStatus = MemcachedStatus()

The class keywords are what kubebuilder's markers say about a Go type: names, scope,
printer columns, subresources and the version's role. Several classes may declare the same
group and kind with different versions; exactly one of them is the storage version.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from setpoint.resources._markers import Rule
from setpoint.resources._resource import Resource
from setpoint.resources.relationships import Relationship, crd_annotations

__all__ = ["CustomResource", "Declaration", "PrinterColumn", "Scale", "plural_of"]

Scope = Literal["Namespaced", "Cluster"]
ColumnType = Literal["integer", "number", "string", "boolean", "date"]


@dataclass(frozen=True)
class PrinterColumn:
    """A column of ``kubectl get`` (``additionalPrinterColumns``).

    ``json_path`` is a simple JSONPath into the object such as ``.status.readyReplicas``;
    columns with a ``priority`` above 0 show only with ``-o wide``.
    """

    name: str
    type: ColumnType
    json_path: str
    description: str | None = None
    format: str | None = None
    priority: int = 0

    @classmethod
    def age(cls) -> PrinterColumn:
        """The ``AGE`` column Kubernetes shows when a CRD declares no columns."""
        return cls("Age", "date", ".metadata.creationTimestamp")

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "type": self.type, "jsonPath": self.json_path}
        if self.description:
            out["description"] = self.description
        if self.format:
            out["format"] = self.format
        if self.priority:
            out["priority"] = self.priority
        return out


@dataclass(frozen=True)
class Scale:
    """The scale subresource: where replicas are asked for and counted (JSON paths)."""

    spec_replicas: str = ".spec.replicas"
    status_replicas: str = ".status.replicas"
    label_selector: str | None = None

    def to_json(self) -> dict[str, Any]:
        out = {
            "specReplicasPath": _dot_path(self.spec_replicas),
            "statusReplicasPath": _dot_path(self.status_replicas),
        }
        if self.label_selector:
            out["labelSelectorPath"] = _dot_path(self.label_selector)
        return out


def _dot_path(path: str) -> str:
    return path if path.startswith(".") else "." + path


@dataclass(frozen=True)
class Declaration:
    """What one custom resource class declares; read by the CRD generator."""

    group: str
    version: str
    kind: str
    plural: str
    singular: str
    scope: Scope
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    printer_columns: tuple[PrinterColumn, ...] = ()
    scale: Scale | None = None
    status_subresource: bool | None = None  # None: when the class has a status field
    storage: bool | None = None
    served: bool = True
    deprecated: bool = False
    deprecation_warning: str | None = None
    rules: tuple[Rule, ...] = ()
    list_kind: str = field(default="")
    annotations: tuple[tuple[str, str], ...] = ()
    """The CRD's annotations: KubePlus's relationship annotations (``relationships.py``)."""

    @property
    def name(self) -> str:
        """The CRD's name, ``<plural>.<group>``."""
        return f"{self.plural}.{self.group}"


_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def plural_of(kind: str) -> str:
    """The lowercase plural kubebuilder derives from a kind (``Policy`` -> ``policies``)."""
    word = kind.lower()
    if re.search(r"(s|x|z|ch|sh)$", word):
        return word + "es"
    if re.search(r"[^aeiou]y$", word):
        return word[:-1] + "ies"
    return word + "s"


class CustomResource(Resource):
    """Base class of custom resources; subclasses declare themselves with class keywords.

    Keywords: ``group``, ``version`` (required); ``kind`` (default: the class name);
    ``scope`` (``"Namespaced"`` or ``"Cluster"``); ``plural``, ``singular``,
    ``short_names``, ``categories``; ``printer_columns`` (a list of :class:`PrinterColumn`);
    ``scale`` (a :class:`Scale` or the spec replicas path); ``status_subresource`` (default:
    on when the class has a ``status`` field); ``storage``, ``served``, ``deprecated``,
    ``deprecation_warning`` for multi-version kinds; ``rules``: CEL rules on the object;
    ``composition``, ``relationships``, ``usage``: KubePlus's relationship annotations on the
    CRD (``setpoint.resources.relationships``).
    A subclass without ``group`` is an abstract base that others may extend.
    """

    __declaration__: ClassVar[Declaration | None] = None

    def __init_subclass__(
        cls,
        *,
        group: str | None = None,
        version: str | None = None,
        kind: str | None = None,
        scope: Scope = "Namespaced",
        plural: str | None = None,
        singular: str | None = None,
        short_names: Sequence[str] = (),
        categories: Sequence[str] = (),
        printer_columns: Sequence[PrinterColumn] = (),
        scale: Scale | str | None = None,
        status_subresource: bool | None = None,
        storage: bool | None = None,
        served: bool = True,
        deprecated: bool = False,
        deprecation_warning: str | None = None,
        rules: Sequence[Rule] = (),
        composition: Sequence[str] = (),
        relationships: Sequence[Relationship] = (),
        usage: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        if group is None:
            cls.__declaration__ = None
            return
        if version is None:
            raise TypeError(f"{cls.__name__}: a custom resource needs a version")
        # what the server would refuse the generated CRD for, said where the class is
        # (apiextensions-apiserver validation.go, ValidateCustomResourceDefinitionSpec:
        # the group a lowercase subdomain "with at least one dot", a version a DNS-1035 label)
        if not _DNS_SUBDOMAIN.match(group) or "." not in group:
            raise TypeError(f"{cls.__name__}: group {group!r} must be a lowercase domain with "
                            f"at least one dot, such as 'example.com'")
        if not _DNS_LABEL.match(version):
            raise TypeError(f"{cls.__name__}: version {version!r} must be a lowercase DNS "
                            f"label, such as 'v1' or 'v1alpha1'")
        kind = kind or cls.__name__
        plural = plural or plural_of(kind)
        for label, value in (("plural", plural), ("singular", singular or kind.lower())):
            if not _DNS_LABEL.match(value):
                raise TypeError(f"{cls.__name__}: {label} {value!r} must be a lowercase DNS label")
        if isinstance(scale, str):
            scale = Scale(spec_replicas=scale)
        cls.__declaration__ = Declaration(
            group=group, version=version, kind=kind, plural=plural,
            singular=singular or kind.lower(), scope=scope,
            short_names=tuple(short_names), categories=tuple(categories),
            printer_columns=tuple(printer_columns), scale=scale,
            status_subresource=status_subresource,
            storage=storage, served=served, deprecated=deprecated,
            deprecation_warning=deprecation_warning, rules=tuple(rules),
            list_kind=f"{kind}List",
            annotations=tuple(crd_annotations(composition, relationships, usage).items()),
        )
        cls.api_version = f"{group}/{version}"
        cls.kind = kind
        cls.plural = plural
        cls.namespaced = scope == "Namespaced"

    @classmethod
    def declaration(cls) -> Declaration:
        """The class's declaration; a ``TypeError`` for an abstract base."""
        if cls.__declaration__ is None:
            raise TypeError(f"{cls.__name__} declares no group and version")
        return cls.__declaration__
