"""OpenAPI v2 of aggregated APIs: each remote APIService's ``/openapi/v2`` merged into ours.

As kube-aggregator's v2 ``specAggregator`` (pkg/controllers/openapi/aggregator/aggregator.go,
1.32): every remote APIService's backend is asked for ``/openapi/v2`` (as
``system:aggregator``, ``downloader.go``) when the APIService changes and every minute; a 404
contributes nothing, a failure keeps the last document that came (``cached.LastSuccess``).
Of a backend's document only the paths under ``/apis/<group>/<version>/`` are kept, with the
definitions and parameters they reach (``FilterSpecByPathsWithoutSideEffects``). The server's
own document comes first and the backends' follow in ``sortByPriority`` order
(priority.go), each merged by
kube-openapi's ``MergeSpecsIgnorePathConflictRenamingDefinitionsAndParameters``
(k8s.io/kube-openapi pkg/aggregator/aggregator.go): a path already present keeps its first
owner; a definition (or parameter) of the same name and content is shared; one of the same
name and other content is renamed ``<name>_v2`` (``_v3``...) along with the references to it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from typing import Any

from setpoint.cluster.aggregator.apiservices import group_version
from setpoint.cluster.aggregator.openapi import Fetch, SpecDownloads
from setpoint.machinery.objects import Obj

# the v2 downloader's own identity (pkg/controllers/openapi/aggregator/aggregator.go)
AGGREGATOR_V2_USER: Obj = {"username": "system:aggregator", "groups": ["system:masters"]}
# each section a reference can name, by its prefix
_SECTIONS = (("definitions", "#/definitions/"), ("parameters", "#/parameters/"))


def _refs(node: Any) -> Iterable[str]:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str):
            yield ref
        for value in node.values():
            yield from _refs(value)
    elif isinstance(node, list):
        for value in node:
            yield from _refs(value)


def _replace_refs(node: Any, renames: dict[str, str]) -> Any:
    if isinstance(node, dict):
        return {k: (renames.get(v, v) if k == "$ref" and isinstance(v, str)
                    else _replace_refs(v, renames)) for k, v in node.items()}
    if isinstance(node, list):
        return [_replace_refs(v, renames) for v in node]
    return node


def filter_by_paths(spec: Obj, keep: Callable[[str], bool]) -> Obj:
    """``FilterSpecByPaths``: the paths ``keep`` accepts, and only the definitions and
    parameters they reach."""
    paths = {p: item for p, item in (spec.get("paths") or {}).items() if keep(p)}
    used: set[str] = set()
    pending = list(_refs(paths))
    while pending:
        ref = pending.pop()
        if ref in used:
            continue
        used.add(ref)
        for section, prefix in _SECTIONS:
            if ref.startswith(prefix):
                target = (spec.get(section) or {}).get(ref[len(prefix):])
                pending.extend(_refs(target))
    out = {**spec, "paths": paths}
    for section, prefix in _SECTIONS:
        if section in spec:
            out[section] = {k: v for k, v in (spec.get(section) or {}).items()
                            if prefix + k in used}
    return out


def merge_specs(dest: Obj, source: Obj) -> None:
    """kube-openapi ``mergeSpecs`` ignoring path conflicts, renaming definition and
    parameter conflicts: ``source``'s new paths and what they reach join ``dest``."""
    dest_paths = dest.setdefault("paths", {})
    keep = {p for p in source.get("paths") or {} if p not in dest_paths}
    if not keep:
        return  # every path is someone else's: nothing to merge
    source = filter_by_paths(source, keep.__contains__)
    renames: dict[str, str] = {}
    for section, prefix in _SECTIONS:
        mine, theirs = dest.get(section) or {}, source.get(section) or {}
        used = set(mine)
        for name in sorted(theirs):
            if name not in used or mine.get(name) == theirs[name]:
                continue
            i = 2
            while f"{name}_v{i}" in used or f"{name}_v{i}" in theirs:
                i += 1
            used.add(f"{name}_v{i}")
            renames[prefix + name] = prefix + f"{name}_v{i}"
    if renames:
        source = _replace_refs(source, renames)
        for section, prefix in _SECTIONS:
            entries = source.get(section) or {}
            source[section] = {renames.get(prefix + k, prefix + k)[len(prefix):]: v
                               for k, v in entries.items()}
    for section, _ in _SECTIONS:
        if source.get(section):
            target = dest.setdefault(section, {})
            for name, value in source[section].items():
                target.setdefault(name, value)
    for path, item in source["paths"].items():
        dest_paths[path] = item


def by_priority(apiservices: list[Obj]) -> list[Obj]:
    """priority.go ``sortByPriority``: by the highest ``groupPriorityMinimum`` of each
    APIService's group, then by name (its comparison of two versions of one group reads
    the same ``versionPriority`` twice, so they go by name too)."""
    groups: dict[str, int] = {}
    for apiservice in apiservices:
        group, _ = group_version(apiservice)
        gpm = int((apiservice.get("spec") or {}).get("groupPriorityMinimum") or 0)
        groups[group] = max(groups.get(group, gpm), gpm)
    return sorted(apiservices, key=lambda a: (-groups[group_version(a)[0]],
                                              a["metadata"]["name"]))


class OpenAPIV2Aggregator(SpecDownloads):
    """The filtered v2 documents of the remote APIServices' backends, and their merge."""

    PATH = "/openapi/v2"
    USER = AGGREGATOR_V2_USER

    def __init__(self, fetch: Fetch) -> None:
        super().__init__(fetch, self._bump)
        self._specs: dict[str, Obj] = {}  # APIService name -> its group-version's part
        self.generation = 0  # moves whenever the merge would change

    def __repr__(self) -> str:
        return f"OpenAPIV2Aggregator({sorted(self._specs)})"

    def _bump(self) -> None:
        self.generation += 1

    def set_apiservice(self, apiservice: Obj) -> None:
        super().set_apiservice(apiservice)
        self._bump()  # its priority may have moved

    def _accept(self, apiservice: Obj, status: int, document: Any) -> bool:
        name = apiservice["metadata"]["name"]
        if status == 404:
            return self._forget(name)
        if not isinstance(document, dict) or not isinstance(document.get("paths"), dict):
            return False  # unavailable or unreadable now: keep the last good one
        group, version = group_version(apiservice)
        prefix = f"/apis/{group}/{version}/"
        kept = filter_by_paths(document, lambda path: path.startswith(prefix))
        if self._specs.get(name) == kept:
            return False
        self._specs[name] = kept
        return True

    def _forget(self, name: str) -> bool:
        return self._specs.pop(name, None) is not None

    def merge(self, document: Obj) -> Obj:
        """``document`` (the server's own, not changed) with every backend's part merged
        in, highest priority first."""
        if not self._specs:
            return document
        merged = {**document, "paths": dict(document.get("paths") or {})}
        for section, _ in _SECTIONS:
            if section in document:
                merged[section] = dict(document[section])
        for apiservice in by_priority([a for n, a in self._apiservices.items()
                                       if n in self._specs]):
            merge_specs(merged, copy.deepcopy(self._specs[apiservice["metadata"]["name"]]))
        merged["paths"] = dict(sorted(merged["paths"].items()))
        return merged
