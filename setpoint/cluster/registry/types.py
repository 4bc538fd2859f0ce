"""What the server knows about one resource: names, scope, subresources, schema, strategy.

The strategy is named here only by the face the generic store calls (``RESTStrategy``, the
apiserver's ``rest.RESTCreateStrategy``/``RESTUpdateStrategy`` of pkg/registry/rest): the
strategies themselves stand above this module, and whoever builds a ``ResourceType`` hands
it its strategy.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Protocol

from setpoint.cluster.registry.conversion import SHARED_STORAGE
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj
from setpoint.machinery.schema import Schema

STANDARD_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update",
                  "watch")


@dataclass(frozen=True, slots=True)
class ScalePaths:
    """Where a resource keeps the numbers its ``scale`` subresource exposes."""

    spec_replicas: str = ".spec.replicas"
    status_replicas: str = ".status.replicas"
    label_selector: str | None = ".status.selector"
    # a plain map of labels (a ReplicationController's), not a LabelSelector
    label_selector_is_set: bool = False


class RESTStrategy(Protocol):
    """The per-kind rules the generic store applies to a write."""

    def default(self, rt: ResourceType, obj: Obj) -> None: ...
    # (``warnings`` is the request context's recorder: PrepareForCreate may warn)
    def prepare_for_create(self, rt: ResourceType, obj: Obj,
                           warnings: list[str] | None = None) -> None: ...
    def validate_approval_update(self, rt: ResourceType, new: Obj,
                                 old: Obj) -> list[Cause]: ...
    def prepare_for_update(self, rt: ResourceType, new: Obj, old: Obj) -> None: ...
    def prepare_for_status_update(self, rt: ResourceType, new: Obj, old: Obj) -> Obj: ...
    def validate(self, rt: ResourceType, obj: Obj) -> list[Cause]: ...
    def validate_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[Cause]: ...
    def validate_status_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[Cause]: ...
    def canonicalize(self, rt: ResourceType, obj: Obj) -> None: ...
    def decoded_from_storage(self, rt: ResourceType, obj: Obj) -> None: ...
    def prepare_for_ephemeral_containers_update(self, rt: ResourceType, new: Obj,
                                                old: Obj) -> Obj: ...
    def validate_ephemeral_containers_update(self, rt: ResourceType, new: Obj,
                                             old: Obj) -> list[Cause]: ...
    def prepare_for_resize_update(self, rt: ResourceType, new: Obj, old: Obj) -> Obj: ...
    def validate_resize_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[Cause]: ...
    def validate_finalize_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[Cause]: ...
    def warnings_on_create(self, rt: ResourceType, obj: Obj) -> list[str]: ...
    def warnings_on_update(self, rt: ResourceType, new: Obj, old: Obj) -> list[str]: ...
    def field_labels(self, rt: ResourceType, obj: Obj) -> dict[str, str]: ...
    def allows_create_on_update(self, rt: ResourceType) -> bool: ...
    def allows_unconditional_update(self, rt: ResourceType) -> bool: ...


@dataclass(eq=False)
class ResourceType:
    """One served resource at one group/version (``apps/v1 deployments``)."""

    group: str
    version: str
    resource: str
    kind: str
    namespaced: bool = True
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = STANDARD_VERBS
    subresources: tuple[str, ...] = ()
    scale: ScalePaths | None = None
    schema: Schema | None = None
    # custom resources: the CRD that defines this version, and whether it is the storage one
    crd: dict[str, Any] | None = None
    served: bool = True
    storage_version: bool = True
    # no default: whoever builds a type names its rules (builtin.py, the CRD registry)
    strategy: RESTStrategy = field(kw_only=True)

    def __post_init__(self) -> None:
        if not self.singular:
            self.singular = self.kind.lower()

    def __repr__(self) -> str:
        return f"ResourceType({self.group_version}, {self.resource})"

    # Names and kind derived from the fields are computed once: a type's identity (group,
    # version, resource, kind, crd, subresources) is set when it is built and never
    # reassigned (a changed CRD builds new types), and these are asked for many times in
    # every request (is_custom alone 16 times in a create).
    @cached_property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        return self.api_version

    @property
    def conversion_webhook(self) -> dict[str, Any] | None:
        """The CRD's conversion webhook (``spec.conversion.webhook``) when its strategy is
        Webhook: objects then change version only through it."""
        if self.crd is None:
            return None  # (a built-in kind: asked several times per request)
        conversion = (self.crd.get("spec") or {}).get("conversion") or {}
        if conversion.get("strategy") != "Webhook":
            return None
        return dict(conversion.get("webhook") or {})

    @cached_property
    def storage_key(self) -> str:
        """Objects of every version of a group/resource share one storage key."""
        return SHARED_STORAGE.get((self.group, self.resource), f"{self.group}/{self.resource}")

    @cached_property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @cached_property
    def is_custom(self) -> bool:
        return self.crd is not None

    @cached_property
    def discoverable(self) -> bool:
        """Whether discovery and the OpenAPI documents list the type: a built-in one always,
        a custom one once its CRD is Established (apiextensions-apiserver
        customresource_discovery_controller.go and controller/openapi{,v3}/controller.go skip
        the others; the handler may serve it before, on NamesAccepted alone)."""
        return self.crd is None or any(
            c.get("type") == "Established" and c.get("status") == "True"
            for c in (self.crd.get("status") or {}).get("conditions") or ())

    @cached_property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @cached_property
    def qualified_resource(self) -> str:
        return f"{self.resource}.{self.group}" if self.group else self.resource

