"""API Priority and Fairness classification: which FlowSchema and priority level a request
is matched to, told in the ``X-Kubernetes-PF-FlowSchema-UID`` and
``X-Kubernetes-PF-PriorityLevel-UID`` response headers.

The apiserver's ``WithPriorityAndFairness`` filter (k8s.io/apiserver pkg/server/filters/
priority-and-fairness.go) runs after authentication and impersonation, before
authorization, so a 403 carries the headers and a 401 does not. Long-running requests other
than watches are not classified (the filter serves them unseen). The FlowSchemas are tried
by ascending matchingPrecedence, then name (pkg/apis/flowcontrol/util
``FlowSchemaSequence``), with the rules of pkg/util/flowcontrol/rule.go. Nothing is queued
or limited here: the embedded server only reports the match.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from setpoint.cluster.authorization.rbac import Attributes
from setpoint.machinery.objects import Obj

if TYPE_CHECKING:
    from setpoint.cluster.storage import Store
    from setpoint.cluster.storage.store import Event

FLOW_SCHEMAS = "flowcontrol.apiserver.k8s.io/flowschemas"
PRIORITY_LEVELS = "flowcontrol.apiserver.k8s.io/prioritylevelconfigurations"
FLOW_SCHEMA_HEADER = "X-Kubernetes-PF-FlowSchema-UID"
PRIORITY_LEVEL_HEADER = "X-Kubernetes-PF-PriorityLevel-UID"
# kube-apiserver's BasicLongRunningRequestCheck(watch, proxy; attach, exec, proxy, log,
# portforward); watches are classified nonetheless
_LONG_RUNNING_SUBRESOURCES = frozenset({"attach", "exec", "proxy", "log", "portforward"})
_SERVICE_ACCOUNT_PREFIX = "system:serviceaccount:"
# matches remembered per who and what (a request's name never counts; a path only for a
# non-resource request), forgotten on any FlowSchema or level write; bounded, as clients may
# send any path or namespace
_REMEMBERED_MATCHES = 4096


class FlowClassifier:
    """The FlowSchemas in matching order, rebuilt after a write to them or the levels."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self._schemas: list[tuple[Obj, str]] | None = None
        self._matches: dict[tuple[object, ...], list[tuple[str, str]]] = {}
        self.generation = 0  # bumps whenever a FlowSchema or level is written
        store.add_listener(self._on_event, (FLOW_SCHEMAS, PRIORITY_LEVELS))

    def _on_event(self, event: Event) -> None:
        del event
        self.generation += 1
        self._schemas = None
        self._matches = {}

    def _ordered(self) -> list[tuple[Obj, str]]:
        if self._schemas is None:
            levels = {pl["metadata"]["name"]: pl["metadata"].get("uid", "")
                      for pl in self._store.list(PRIORITY_LEVELS)}
            schemas = sorted(self._store.list(FLOW_SCHEMAS),
                             key=lambda fs: (_precedence(fs), fs["metadata"]["name"]))
            # a dangling schema is skipped: its requests go on to the next match
            # (apf_controller.go digestFlowSchemasLocked keeps only those with a level)
            self._schemas = [
                (fs, levels[level]) for fs in schemas
                if (level := _level_name(fs)) in levels]
        return self._schemas

    def headers(self, user: Obj, attrs: Attributes) -> list[tuple[str, str]]:
        """The response headers naming the request's match, none for a request the filter
        does not classify (a new list: the caller may extend an answer's headers with it)."""
        if attrs.verb == "proxy" or attrs.subresource in _LONG_RUNNING_SUBRESOURCES:
            return []
        # what the rules read: the subjects' username and groups, and the attributes but the
        # name (and the path, for resource requests: every one of its rules reads the
        # resource's attributes instead)
        groups = user.get("groups")
        key = (user.get("username"), tuple(groups) if isinstance(groups, list) else groups,
               attrs.verb, attrs.resource, attrs.subresource, attrs.group, attrs.namespace,
               "" if attrs.resource else attrs.path)
        try:
            return list(self._matches[key])
        except KeyError:
            pass
        except TypeError:  # groups that cannot be a key (never from our authenticators)
            return self._match(user, attrs)
        matched = self._match(user, attrs)
        if len(self._matches) >= _REMEMBERED_MATCHES:
            self._matches = {}
        self._matches[key] = matched
        return list(matched)

    def _match(self, user: Obj, attrs: Attributes) -> list[tuple[str, str]]:
        for schema, level_uid in self._ordered():
            if any(_rule_matches(rule, user, attrs)
                   for rule in _spec(schema).get("rules") or () if isinstance(rule, dict)):
                return [(FLOW_SCHEMA_HEADER, schema["metadata"].get("uid", "")),
                        (PRIORITY_LEVEL_HEADER, level_uid)]
        return []


def _spec(schema: Obj) -> Obj:
    """A stored FlowSchema's spec; whatever one holds, classifying a request never fails."""
    spec = schema.get("spec")
    return spec if isinstance(spec, dict) else {}


def _precedence(schema: Obj) -> int:
    precedence = _spec(schema).get("matchingPrecedence", 1000)
    return precedence if isinstance(precedence, int) else 1000


def _level_name(schema: Obj) -> str | None:
    level = _spec(schema).get("priorityLevelConfiguration")
    name = level.get("name") if isinstance(level, dict) else None
    return name if isinstance(name, str) else None


def _rule_matches(rule: Obj, user: Obj, attrs: Attributes) -> bool:
    if not any(_subject_matches(s, user) for s in rule.get("subjects") or ()):
        return False
    if attrs.is_resource:
        return any(_resource_matches(r, attrs) for r in rule.get("resourceRules") or ())
    return any(_non_resource_matches(r, attrs) for r in rule.get("nonResourceRules") or ())


def _subject_matches(subject: Obj, user: Obj) -> bool:
    kind = subject.get("kind")
    if kind == "User":
        name = (subject.get("user") or {}).get("name")
        return name == "*" or name == user.get("username")
    if kind == "Group":
        name = (subject.get("group") or {}).get("name")
        return name == "*" or name in (user.get("groups") or ())
    if kind == "ServiceAccount":
        account = subject.get("serviceAccount") or {}
        username = str(user.get("username") or "")
        if not username.startswith(_SERVICE_ACCOUNT_PREFIX):
            return False
        namespace, _, name = username[len(_SERVICE_ACCOUNT_PREFIX):].partition(":")
        return namespace == account.get("namespace") and \
            account.get("name") in ("*", name)
    return False


def _has(values: list[str] | None, wanted: str) -> bool:
    values = values or []
    return "*" in values or wanted in values


def _resource_matches(rule: Obj, attrs: Attributes) -> bool:
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    if not (_has(rule.get("verbs"), attrs.verb) and _has(rule.get("apiGroups"), attrs.group)
            and _has(rule.get("resources"), resource)):
        return False
    if not attrs.namespace:
        return rule.get("clusterScope") is True
    return _has(rule.get("namespaces"), attrs.namespace)


def _non_resource_matches(rule: Obj, attrs: Attributes) -> bool:
    if not _has(rule.get("verbs"), attrs.verb):
        return False
    for url in rule.get("nonResourceURLs") or ():
        if url == "*" or url == attrs.path or (
                url.endswith("*") and attrs.path.startswith(url[:-1])):
            return True
    return False
