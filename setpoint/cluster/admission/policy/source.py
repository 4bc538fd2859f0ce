"""The policies and bindings the plugin enforces, as its informers hold them.

k8s.io/apiserver pkg/admission/plugin/policy/generic/policy_source.go: the policies and
bindings are watched, and the hooks (each policy with the bindings naming it by
``spec.policyName``) are recomputed on the first request after a change, never listed per
request. A binding naming a policy that does not exist is skipped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.registry import Registry
    from setpoint.cluster.storage import Informer

GROUP = "admissionregistration.k8s.io"


@dataclass(frozen=True)
class PolicyHook:
    """A policy and the bindings that bind it, in the bindings' name order."""

    policy: Obj
    bindings: tuple[Obj, ...]

    @property
    def name(self) -> str:
        return str(self.policy["metadata"]["name"])


class PolicySource:
    """The hooks of the stored policies, kept current by the store's change events."""

    def __init__(self, store: Informer, registry: Registry) -> None:
        self._store = store
        self.policies_key = registry.require(GROUP, "v1", "validatingadmissionpolicies"
                                             ).storage_key
        self.bindings_key = registry.require(GROUP, "v1", "validatingadmissionpolicybindings"
                                             ).storage_key
        self._hooks: list[PolicyHook] | None = None
        self._watchers: list[Callable[[], None]] = []
        store.add_listener(self._changed, (self.policies_key, self.bindings_key))

    def on_change(self, watcher: Callable[[], None]) -> None:
        self._watchers.append(watcher)

    def _changed(self, event: Any) -> None:
        self._hooks = None  # recomputed on the next request, as the source's dirty flag
        for watcher in self._watchers:
            watcher()

    def has_bindings(self) -> bool:
        return bool(self._store.count(self.bindings_key))

    def hooks(self) -> list[PolicyHook]:
        if self._hooks is None:
            self._hooks = self._compute()
        return self._hooks

    def _compute(self) -> list[PolicyHook]:
        by_policy: dict[str, list[Obj]] = {}
        for binding in self._store.list(self.bindings_key):
            name = str((binding.get("spec") or {}).get("policyName") or "")
            by_policy.setdefault(name, []).append(binding)
        hooks = []
        for name in sorted(by_policy):
            policy = self._store.get(self.policies_key, "", name)
            if policy is not None:
                hooks.append(PolicyHook(policy, tuple(by_policy[name])))
        return hooks
