"""Who may point a ValidatingAdmissionPolicy at its parameters.

As kube-apiserver's strategies check it once the object is otherwise valid
(pkg/registry/admissionregistration/validatingadmissionpolicy/authz.go and
validatingadmissionpolicybinding/authz.go): a policy with a ``paramKind`` new or changed
needs its author to hold ``get`` on every object of that kind (name and namespace ``*``);
a binding with a ``paramRef`` needs ``get`` on the object it names (its name and namespace as
given, of the kind its policy's ``paramKind`` resolves to; every group, version and resource
when the policy, its paramKind or the kind's resource is not found). A refusal is a field
``Forbidden`` cause of the Invalid answer (``spec.paramKind``, ``spec.paramRef``), naming the
user as Go's ``%v`` prints a ``*user.DefaultInfo``. Members of ``system:masters`` pass
(``rbacregistry.EscalationAllowed``), as do the server's own writes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from setpoint.cluster.authorization.bootstrappolicy import MASTERS
from setpoint.cluster.authorization.rbac import Attributes as AuthorizationAttributes
from setpoint.cluster.registry.admissionpoints import Attributes
from setpoint.machinery import errors
from setpoint.machinery import fielderrors as fe
from setpoint.machinery.gofmt import format_v
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.authorization.rbac import Authorizer
    from setpoint.cluster.storage import Store

GROUP = "admissionregistration.k8s.io"
POLICIES = f"{GROUP}/validatingadmissionpolicies"

ResolveResource = Callable[[str, str, str], "str | None"]
"""(group, version, kind) -> the served resource of that kind (``resolver.ResourceResolver``),
or None."""


def go_user_info(user: Obj) -> str:
    """``%v`` of a ``*user.DefaultInfo``: ``&{name uid [groups] map[extra]}``."""
    return (f"&{{{user.get('username') or ''} {user.get('uid') or ''} "
            f"{format_v(list(user.get('groups') or []))} {format_v(user.get('extra') or {})}}}")


def _group_version(api_version: str) -> tuple[str, str] | None:
    """``schema.ParseGroupVersion``: ``v1``, ``group/v1``; more than one slash fails."""
    if not api_version or api_version == "/":
        return "", ""
    parts = api_version.split("/")
    if len(parts) == 1:
        return "", api_version
    if len(parts) == 2:
        return parts[0], parts[1]
    return None


class ParamAuthorization:
    """The check, run by the generic store after the strategy's validation passed."""

    def __init__(self, authorizer: Authorizer, store: Store,
                 resolve_resource: ResolveResource) -> None:
        self._authorizer = authorizer
        self._store = store
        self._resolve = resolve_resource

    def __repr__(self) -> str:
        return "ParamAuthorization()"

    def __call__(self, attributes: Attributes) -> None:
        rt = attributes.rt
        if rt.group != GROUP or attributes.subresource:
            return
        if rt.kind == "ValidatingAdmissionPolicy":
            self._policy(attributes)
        elif rt.kind == "ValidatingAdmissionPolicyBinding":
            self._binding(attributes)

    def _target(self, param_kind: Any) -> tuple[str, str, str]:
        """(group, version, resource) to authorize: ``*`` for what is not known."""
        if not isinstance(param_kind, dict):
            return "*", "*", "*"
        gv = _group_version(str(param_kind.get("apiVersion") or ""))
        if gv is None:
            return "*", "*", "*"
        resource = self._resolve(gv[0], gv[1], str(param_kind.get("kind") or ""))
        return gv[0], gv[1], resource or "*"

    def _allowed(self, user: Obj, target: tuple[str, str, str], namespace: str,
                 name: str) -> bool:
        group, version, resource = target
        return self._authorizer.decide(user, AuthorizationAttributes(
            "get", resource=resource, group=group, version=version, namespace=namespace,
            name=name))[0]

    @staticmethod
    def _exempt(user: Obj | None) -> bool:
        return user is None or MASTERS in (user.get("groups") or [])

    def _policy(self, attributes: Attributes) -> None:
        param_kind = (attributes.obj.get("spec") or {}).get("paramKind")
        if param_kind is None or self._exempt(attributes.user):
            return
        if attributes.old is not None \
                and (attributes.old.get("spec") or {}).get("paramKind") == param_kind:
            return  # authorizeUpdate: the same paramKind as before
        assert attributes.user is not None
        if self._allowed(attributes.user, self._target(param_kind), "*", "*"):
            return
        raise errors.invalid(attributes.rt.kind, _name(attributes.obj), [fe.forbidden(
            "spec.paramKind",
            f"user {go_user_info(attributes.user)} must have \"get\" permission on all "
            f"objects of the referenced paramKind (kind={param_kind.get('kind') or ''}, "
            f"apiVersion={param_kind.get('apiVersion') or ''})")], GROUP)

    def _binding(self, attributes: Attributes) -> None:
        # (an update re-authorizes even an unchanged paramRef: Go compares the structs,
        # whose parameterNotFoundAction, a required pointer, differs between two decodings)
        spec = attributes.obj.get("spec") or {}
        param_ref = spec.get("paramRef")
        if not isinstance(param_ref, dict) or self._exempt(attributes.user):
            return
        assert attributes.user is not None
        policy = self._store.get(POLICIES, "", str(spec.get("policyName") or ""))
        param_kind = ((policy or {}).get("spec") or {}).get("paramKind")
        if self._allowed(attributes.user, self._target(param_kind),
                         str(param_ref.get("namespace") or ""),
                         str(param_ref.get("name") or "")):
            return
        raise errors.invalid(attributes.rt.kind, _name(attributes.obj), [fe.forbidden(
            "spec.paramRef",
            f"user {go_user_info(attributes.user)} does not have \"get\" permission on the "
            "object referenced by paramRef")], GROUP)


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")
