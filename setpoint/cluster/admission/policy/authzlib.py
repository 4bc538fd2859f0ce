"""The ``authorizer`` variable of admission CEL: k8s.io/apiserver pkg/cel/library/authz.go.

``authorizer.group(g).resource(r)[.subresource(s)][.namespace(n)][.name(x)].check(verb)`` and
``authorizer.path(p).check(verb)`` ask the cluster's authorizer about the requesting user
(``authorizer.serviceAccount(namespace, name)`` about that service account instead); a
decision answers ``allowed()``, ``reason()``, ``errored()`` and ``error()``. A resource check
is for every version (``APIVersion: "*"``), as authz.go's ``resourceCheckVal.Authorize``.
``authorizer.requestResource`` (a variable of its own in Go, activation.go
``RequestResourceAuthorizerVarName``) is the resource check NewResourceAuthorizerVal prefills
with the request's group, resource, subresource, namespace and name: here a field of the
``authorizer`` value, which is what the qualified name selects.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, cast

from celpy import celtypes
from celpy.evaluation import CELEvalError

from setpoint.cluster.authorization.rbac import Attributes
from setpoint.machinery.objects import Obj

Decide = Callable[[Obj, Attributes], tuple[bool, str]]


class AuthorizerValue(celtypes.MessageType):
    """authorizerVal: whom to ask about (``user``) and how (``decide``); its one field is
    ``requestResource`` (absent from a serviceAccount's, as in Go's environment)."""

    def __init__(self, user: Obj, decide: Decide) -> None:
        super().__init__()
        self.user = user
        self.decide = decide

    __hash__ = object.__hash__  # type: ignore[assignment]  # an identity, not a map

    def __repr__(self) -> str:
        return f"AuthorizerValue(user={self.user.get('username', '')!r})"


@dataclass(frozen=True)
class GroupCheck:
    authz: AuthorizerValue
    group: str


@dataclass(frozen=True)
class ResourceCheck:
    authz: AuthorizerValue | None
    group: str
    resource: str
    subresource: str = ""
    namespace: str = ""
    name: str = ""


@dataclass(frozen=True)
class PathCheck:
    authz: AuthorizerValue
    path: str


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str


def _no_overload() -> CELEvalError:
    return CELEvalError("no such overload")


def authorizer(user: Obj, decide: Decide, request: ResourceCheck) -> AuthorizerValue:
    """The ``authorizer`` of a request's user, ``requestResource`` being ``request``'s
    check asked as that user."""
    value = AuthorizerValue(user, decide)
    value[celtypes.StringType("requestResource")] = cast(Any, replace(request, authz=value))
    return value


def _service_account(authz: Any, namespace: Any, name: Any) -> Any:
    if not isinstance(authz, AuthorizerValue):
        return _no_overload()
    # serviceaccount.MakeUsername and MakeGroupNames
    return AuthorizerValue({"username": f"system:serviceaccount:{namespace}:{name}",
                            "groups": ["system:serviceaccounts",
                                       f"system:serviceaccounts:{namespace}"]}, authz.decide)


def _group(authz: Any, group: Any) -> Any:
    return GroupCheck(authz, str(group)) if isinstance(authz, AuthorizerValue) \
        else _no_overload()


def _path(authz: Any, path: Any) -> Any:
    return PathCheck(authz, str(path)) if isinstance(authz, AuthorizerValue) \
        else _no_overload()


def _resource(check: Any, resource: Any) -> Any:
    return ResourceCheck(check.authz, check.group, str(resource)) \
        if isinstance(check, GroupCheck) else _no_overload()


def _setter(field: str) -> Callable[[Any, Any], Any]:
    def call(check: Any, value: Any) -> Any:
        if not isinstance(check, ResourceCheck):
            return _no_overload()
        fields: dict[str, Any] = {field: str(value)}
        return replace(check, **fields)

    return call


def _check(check: Any, verb: Any) -> Any:
    if isinstance(check, ResourceCheck):
        attrs = Attributes(str(verb), resource=check.resource, subresource=check.subresource,
                           group=check.group, version="*", namespace=check.namespace,
                           name=check.name)
    elif isinstance(check, PathCheck):
        attrs = Attributes(str(verb), path=check.path)
    else:
        return _no_overload()
    authz = check.authz
    if authz is None:  # only ever built with one (``authorizer``)
        return _no_overload()
    allowed, reason = authz.decide(authz.user, attrs)
    return Decision(allowed, reason)


def _decision(read: Callable[[Decision], Any]) -> Callable[[Any], Any]:
    def call(decision: Any) -> Any:
        return read(decision) if isinstance(decision, Decision) else _no_overload()

    return call


FUNCTIONS: dict[str, Any] = {
    "serviceAccount": _service_account,
    "group": _group,
    "path": _path,
    "resource": _resource,
    "subresource": _setter("subresource"),
    "namespace": _setter("namespace"),
    "name": _setter("name"),
    "check": _check,
    "allowed": _decision(lambda d: celtypes.BoolType(d.allowed)),
    "reason": _decision(lambda d: celtypes.StringType(d.reason)),
    "errored": _decision(lambda d: celtypes.BoolType(False)),
    "error": _decision(lambda d: celtypes.StringType("")),
}
