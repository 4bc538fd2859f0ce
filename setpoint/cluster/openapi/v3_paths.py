"""The ``paths`` of an /openapi/v3 group-version document: one entry per REST operation.

Operations carry what clients read from them: ``x-kubernetes-action`` and
``x-kubernetes-group-version-kind`` (kubectl finds the PATCH operation of a kind to learn
whether the server supports field validation), the query parameters, the request and
response media types, and schema references into ``components.schemas``.
"""

from __future__ import annotations

from typing import Any

from setpoint.cluster.openapi.schemas import META, ref
from setpoint.machinery.objects import Obj

STATUS = META + "Status"
DELETE_OPTIONS = META + "DeleteOptions"
PATCH = META + "Patch"
WATCH_EVENT = META + "WatchEvent"
SCALE = "io.k8s.api.autoscaling.v1.Scale"

_RESPONSE_TYPES = ("application/json", "application/vnd.kubernetes.protobuf",
                   "application/yaml")
_LIST_TYPES = ("application/json", "application/json;stream=watch",
               "application/vnd.kubernetes.protobuf",
               "application/vnd.kubernetes.protobuf;stream=watch", "application/yaml")
_WATCH_TYPES = ("application/json", "application/json;stream=watch",
                "application/vnd.kubernetes.protobuf",
                "application/vnd.kubernetes.protobuf;stream=watch")
_BUILTIN_PATCH_TYPES = ("application/apply-patch+yaml", "application/json-patch+json",
                        "application/merge-patch+json", "application/strategic-merge-patch+json")
_CUSTOM_PATCH_TYPES = _BUILTIN_PATCH_TYPES[:3]

_DOCS: dict[str, tuple[str, str]] = {
    "allowWatchBookmarks": ("boolean", "allowWatchBookmarks requests watch events with type "
                            "\"BOOKMARK\". Servers that do not implement bookmarks may ignore "
                            "this flag and bookmarks are sent at the server's discretion. "
                            "Clients should not assume bookmarks are returned at any specific "
                            "interval, nor may they assume the server will send any BOOKMARK "
                            "event during a session. If this is not a watch, this field is "
                            "ignored."),
    "continue": ("string", "The continue option should be set when retrieving more results "
                 "from the server. Since this value is server defined, clients may only use "
                 "the continue value from a previous query result with identical query "
                 "parameters (except for the value of continue) and the server may reject a "
                 "continue value it does not recognize."),
    "dryRun": ("string", "When present, indicates that modifications should not be persisted. "
               "An invalid or unrecognized dryRun directive will result in an error response "
               "and no further processing of the request. Valid values are: - All: all dry run "
               "stages will be processed"),
    "fieldManager": ("string", "fieldManager is a name associated with the actor or entity "
                     "that is making these changes. The value must be less than or 128 "
                     "characters long, and only contain printable characters, as defined by "
                     "https://golang.org/pkg/unicode/#IsPrint."),
    "fieldSelector": ("string", "A selector to restrict the list of returned objects by their "
                      "fields. Defaults to everything."),
    "fieldValidation": ("string", "fieldValidation instructs the server on how to handle "
                        "objects in the request (POST/PUT/PATCH) containing unknown or "
                        "duplicate fields. Valid values are: - Ignore: This will ignore any "
                        "unknown fields that are silently dropped from the object, and will "
                        "ignore all but the last duplicate field that the decoder encounters. "
                        "This is the default behavior prior to v1.23. - Warn: This will send a "
                        "warning via the standard warning response header for each unknown "
                        "field that is dropped from the object, and for each duplicate field "
                        "that is encountered. The request will still succeed if there are no "
                        "other errors, and will only persist the last of any duplicate fields. "
                        "This is the default in v1.23+ - Strict: This will fail the request "
                        "with a BadRequest error if any unknown fields would be dropped from "
                        "the object, or if any duplicate fields are present. The error "
                        "returned from the server will contain all unknown and duplicate "
                        "fields encountered."),
    "force": ("boolean", "Force is going to \"force\" Apply requests. It means user will "
              "re-acquire conflicting fields owned by other people. Force flag must be unset "
              "for non-apply patch requests."),
    "gracePeriodSeconds": ("integer", "The duration in seconds before the object should be "
                           "deleted. Value must be non-negative integer. The value zero "
                           "indicates delete immediately. If this value is nil, the default "
                           "grace period for the specified type will be used. Defaults to a "
                           "per object value if not specified. zero means delete immediately."),
    "ignoreStoreReadErrorWithClusterBreakingPotential": (
        "boolean", "if set to true, it will trigger an unsafe deletion of the resource in case "
        "the normal deletion flow fails with a corrupt object error."),
    "labelSelector": ("string", "A selector to restrict the list of returned objects by their "
                      "labels. Defaults to everything."),
    "limit": ("integer", "limit is a maximum number of responses to return for a list call. "
              "If more items exist, the server will set the `continue` field on the list "
              "metadata to a value that can be used with the same initial query to retrieve "
              "the next set of results."),
    "orphanDependents": ("boolean", "Deprecated: please use the PropagationPolicy, this field "
                         "will be deprecated in 1.7. Should the dependent objects be orphaned. "
                         "If true/false, the \"orphan\" finalizer will be added to/removed "
                         "from the object's finalizers list. Either this field or "
                         "PropagationPolicy may be set, but not both."),
    "pretty": ("string", "If 'true', then the output is pretty printed. Defaults to 'false' "
               "unless the user-agent indicates a browser or command-line HTTP tool (curl and "
               "wget)."),
    "propagationPolicy": ("string", "Whether and how garbage collection will be performed. "
                          "Either this field or OrphanDependents may be set, but not both. The "
                          "default policy is decided by the existing finalizer set in the "
                          "metadata.finalizers and the resource-specific default policy. "
                          "Acceptable values are: 'Orphan' - orphan the dependents; "
                          "'Background' - allow the garbage collector to delete the dependents "
                          "in the background; 'Foreground' - a cascading policy that deletes "
                          "all dependents in the foreground."),
    "resourceVersion": ("string", "resourceVersion sets a constraint on what resource versions "
                        "a request may be served from. See https://kubernetes.io/docs/"
                        "reference/using-api/api-concepts/#resource-versions for details. "
                        "Defaults to unset"),
    "resourceVersionMatch": ("string", "resourceVersionMatch determines how resourceVersion "
                             "is applied to list calls. It is highly recommended that "
                             "resourceVersionMatch be set for list calls where resourceVersion "
                             "is set See https://kubernetes.io/docs/reference/using-api/"
                             "api-concepts/#resource-versions for details. Defaults to unset"),
    "sendInitialEvents": ("boolean", "`sendInitialEvents=true` may be set together with "
                          "`watch=true`. In that case, the watch stream will begin with "
                          "synthetic events to produce the current state of objects in the "
                          "collection. Once all such events have been sent, a synthetic "
                          "\"Bookmark\" event  will be sent."),
    "timeoutSeconds": ("integer", "Timeout for the list/watch call. This limits the duration "
                       "of the call, regardless of any activity or inactivity."),
    "watch": ("boolean", "Watch for changes to the described resources and return them as a "
              "stream of add, update, and remove notifications. Specify resourceVersion."),
}

_PATCH_FIELD_MANAGER = (
    "fieldManager is a name associated with the actor or entity that is making these "
    "changes. The value must be less than or 128 characters long, and only contain printable "
    "characters, as defined by https://golang.org/pkg/unicode/#IsPrint. This field is "
    "required for apply requests (application/apply-patch) but optional for non-apply patch "
    "types (JsonPatch, MergePatch, StrategicMergePatch).")

_LIST_PARAMS = ("allowWatchBookmarks", "continue", "fieldSelector", "labelSelector", "limit",
                "resourceVersion", "resourceVersionMatch", "sendInitialEvents",
                "timeoutSeconds", "watch")
_WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation")
_DELETE_PARAMS = ("dryRun", "gracePeriodSeconds",
                  "ignoreStoreReadErrorWithClusterBreakingPotential", "orphanDependents",
                  "propagationPolicy")


def query(name: str, description: str | None = None) -> Obj:
    kind, doc = _DOCS[name]
    return {"name": name, "in": "query", "description": description or doc,
            "schema": {"type": kind, "uniqueItems": True}}


def path_param(name: str, description: str) -> Obj:
    return {"name": name, "in": "path", "description": description, "required": True,
            "schema": {"type": "string", "uniqueItems": True}}


def _params(*names: str, patch: bool = False) -> list[Obj]:
    out = [query(n, _PATCH_FIELD_MANAGER if patch and n == "fieldManager" else None)
           for n in names]
    return sorted(out, key=lambda p: p["name"])


def _content(schema: Obj, types: tuple[str, ...] = _RESPONSE_TYPES) -> Obj:
    return {t: {"schema": schema} for t in types}


def _responses(schema: Obj, *codes: str, types: tuple[str, ...] = _RESPONSE_TYPES) -> Obj:
    names = {"200": "OK", "201": "Created", "202": "Accepted"}
    return {c: {"description": names[c], "content": _content(schema, types)} for c in codes}


class OperationNames:
    """How the apiserver names one kind's operations: ``listAppsV1NamespacedDeployment``."""

    def __init__(self, group: str, version: str, kind: str, namespaced: bool) -> None:
        self.gv = camel_group(group) + version[:1].upper() + version[1:]
        self.kind = kind
        self.scope = "Namespaced" if namespaced else ""
        self.tag = f"{camel_group(group, lower_first=True)}_{version}"

    def id(self, action: str, suffix: str = "", collection: bool = False) -> str:
        coll = "Collection" if collection else ""
        return f"{action}{self.gv}{coll}{self.scope}{self.kind}{suffix}"


def camel_group(group: str, lower_first: bool = False) -> str:
    """``rbac.authorization.k8s.io`` -> ``RbacAuthorization``; the core group is ``Core``."""
    if not group:
        return "core" if lower_first else "Core"
    name = group.removesuffix(".k8s.io")
    text = "".join(p[:1].upper() + p[1:] for p in name.replace("-", ".").split("."))
    return text[:1].lower() + text[1:] if lower_first else text


def _op(names: OperationNames, gvk: Obj, action: str, op_id: str, description: str,
        **fields: Any) -> Obj:
    return {"tags": [names.tag], "description": description, "operationId": op_id, **fields,
            "x-kubernetes-action": action, "x-kubernetes-group-version-kind": gvk}


def resource_paths(*, prefix: str, resource: str, kind: str, namespaced: bool,
                   group: str, version: str, verbs: tuple[str, ...], object_ref: str,
                   list_ref: str | None, custom: bool,
                   subresources: list[tuple[str, str, Obj, tuple[str, ...]]]) -> dict[str, Obj]:
    """Every path of one resource.

    ``prefix`` is ``/api/v1`` or ``/apis/<group>/<version>``; ``subresources`` holds
    ``(name, schema ref, its group-version-kind, verbs)``.
    """
    names = OperationNames(group, version, kind, namespaced)
    gvk = {"group": group, "version": version, "kind": kind}
    obj, lst = ref(object_ref), ref(list_ref) if list_ref else None
    scope = f"{prefix}/namespaces/{{namespace}}" if namespaced else prefix
    ns_param = [path_param("namespace", "object name and auth scope, such as for teams "
                                        "and projects")] if namespaced else []
    name_param = [path_param("name", f"name of the {kind}")]
    pretty = [query("pretty")]
    patch_types = _CUSTOM_PATCH_TYPES if custom else _BUILTIN_PATCH_TYPES
    paths: dict[str, Obj] = {}

    collection: Obj = {}
    if "list" in verbs and lst is not None:
        collection["get"] = _op(names, gvk, "list", names.id("list"),
                                f"list or watch objects of kind {kind}",
                                parameters=_params(*_LIST_PARAMS),
                                responses=_responses(lst, "200", types=_LIST_TYPES))
    if "create" in verbs:
        collection["post"] = _op(names, gvk, "post", names.id("create"), f"create a {kind}",
                                 parameters=_params(*_WRITE_PARAMS),
                                 requestBody={"content": {"*/*": {"schema": obj}},
                                              "required": True},
                                 responses=_responses(obj, "200", "201", "202"))
    if "deletecollection" in verbs:
        collection["delete"] = _op(
            names, gvk, "deletecollection", names.id("delete", collection=True),
            f"delete collection of {kind}",
            parameters=_params(*_DELETE_PARAMS, *[p for p in _LIST_PARAMS if p != "watch"
                                                  and p != "allowWatchBookmarks"]),
            requestBody={"content": {"*/*": {"schema": ref(DELETE_OPTIONS)}}},
            responses=_responses(ref(STATUS), "200"))
    if collection:
        paths[f"{scope}/{resource}"] = {**collection, "parameters": ns_param + pretty}

    item: Obj = {}
    if "get" in verbs:
        item["get"] = _op(names, gvk, "get", names.id("read"), f"read the specified {kind}",
                          responses=_responses(obj, "200"))
    if "update" in verbs:
        item["put"] = _op(names, gvk, "put", names.id("replace"),
                          f"replace the specified {kind}", parameters=_params(*_WRITE_PARAMS),
                          requestBody={"content": {"*/*": {"schema": obj}}, "required": True},
                          responses=_responses(obj, "200", "201"))
    if "delete" in verbs:
        item["delete"] = _op(names, gvk, "delete", names.id("delete"), f"delete a {kind}",
                             parameters=_params(*_DELETE_PARAMS),
                             requestBody={"content": {"*/*": {"schema": ref(DELETE_OPTIONS)}}},
                             responses=_responses(ref(STATUS), "200", "202"))
    if "patch" in verbs:
        item["patch"] = _op(names, gvk, "patch", names.id("patch"),
                            f"partially update the specified {kind}",
                            parameters=_params(*_WRITE_PARAMS, "force", patch=True),
                            requestBody={"content": {t: {"schema": ref(PATCH)}
                                                     for t in patch_types}, "required": True},
                            responses=_responses(obj, "200", "201"))
    if item:
        paths[f"{scope}/{resource}/{{name}}"] = {**item,
                                                 "parameters": name_param + ns_param + pretty}

    for sub, sub_ref, sub_gvk, sub_verbs in subresources:
        schema = ref(sub_ref)
        sub_item: Obj = {}
        suffix = sub[:1].upper() + sub[1:]
        if "get" in sub_verbs:
            sub_item["get"] = _op(names, sub_gvk, "get", names.id("read", suffix),
                                  f"read {sub} of the specified {kind}",
                                  responses=_responses(schema, "200"))
        if "create" in sub_verbs:
            sub_item["post"] = _op(names, sub_gvk, "post", names.id("create", suffix),
                                   f"create {sub} of a {kind}",
                                   parameters=_params(*_WRITE_PARAMS),
                                   requestBody={"content": {"*/*": {"schema": schema}},
                                                "required": True},
                                   responses=_responses(schema, "200", "201", "202"))
        if "update" in sub_verbs:
            sub_item["put"] = _op(names, sub_gvk, "put", names.id("replace", suffix),
                                  f"replace {sub} of the specified {kind}",
                                  parameters=_params(*_WRITE_PARAMS),
                                  requestBody={"content": {"*/*": {"schema": schema}},
                                               "required": True},
                                  responses=_responses(schema, "200", "201"))
        if "patch" in sub_verbs:
            sub_item["patch"] = _op(names, sub_gvk, "patch", names.id("patch", suffix),
                                    f"partially update {sub} of the specified {kind}",
                                    parameters=_params(*_WRITE_PARAMS, "force", patch=True),
                                    requestBody={"content": {t: {"schema": ref(PATCH)}
                                                             for t in patch_types},
                                                 "required": True},
                                    responses=_responses(schema, "200", "201"))
        if sub_item:
            paths[f"{scope}/{resource}/{{name}}/{sub}"] = {
                **sub_item, "parameters": name_param + ns_param + pretty}

    if "watch" in verbs and lst is not None:
        _add_watch_paths(paths, names, gvk, prefix, scope, resource, namespaced, lst,
                         ns_param + pretty, name_param)
    return paths


def _add_watch_paths(paths: dict[str, Obj], names: OperationNames, gvk: Obj, prefix: str,
                     scope: str, resource: str, namespaced: bool, list_ref: Obj,
                     params: list[Obj], name_param: list[Obj]) -> None:
    """The deprecated /watch/ paths and, for namespaced kinds, the all-namespaces paths."""
    event = ref(WATCH_EVENT)
    list_params = [query(p) for p in _LIST_PARAMS]
    watch_scope = scope.replace(prefix, f"{prefix}/watch", 1)
    kind = gvk["kind"]
    paths[f"{watch_scope}/{resource}"] = {
        "get": _op(names, gvk, "watchList", names.id("watch", "List"),
                   f"watch individual changes to a list of {kind}. deprecated: use the 'watch' "
                   "parameter with a list operation instead.",
                   responses=_responses(event, "200", types=_WATCH_TYPES)),
        "parameters": sorted(list_params + params, key=_param_key)}
    paths[f"{watch_scope}/{resource}/{{name}}"] = {
        "get": _op(names, gvk, "watch", names.id("watch"),
                   f"watch changes to an object of kind {kind}. deprecated: use the 'watch' "
                   "parameter with a list operation instead, filtered to a single item with "
                   "the 'fieldSelector' parameter.",
                   responses=_responses(event, "200", types=_WATCH_TYPES)),
        "parameters": sorted(list_params + name_param + params, key=_param_key)}
    if namespaced:
        every = OperationNames(gvk["group"], gvk["version"], kind, False)
        every.tag = names.tag
        paths[f"{prefix}/{resource}"] = {
            "get": _op(every, gvk, "list", every.id("list", "ForAllNamespaces"),
                       f"list or watch objects of kind {kind}",
                       responses=_responses(list_ref, "200", types=_LIST_TYPES)),
            "parameters": sorted([*list_params, query("pretty")], key=_param_key)}
        paths[f"{prefix}/watch/{resource}"] = {
            "get": _op(every, gvk, "watchList", every.id("watch", "ListForAllNamespaces"),
                       f"watch individual changes to a list of {kind}. deprecated: use the "
                       "'watch' parameter with a list operation instead.",
                       responses=_responses(event, "200", types=_WATCH_TYPES)),
            "parameters": sorted([*list_params, query("pretty")], key=_param_key)}


def _param_key(p: Obj) -> tuple[int, str]:
    return (0 if p["in"] == "path" else 1, p["name"])
