"""Volume items that write to the same path, or one inside another.

kubernetes v1.32 pkg/api/pod/warnings.go ``warningsForOverlappingVirtualPaths``,
``checkVolumeMappingForOverlap`` and ``checkForOverlap`` (added in v1.32, #121968), with
their quirks kept, since the texts users see come from them:

- the prefix test compares ``item + "/"`` with the bare other path, so ``"key"`` and
  ``"key2"`` overlap;
- an empty path ends the search for that path (no collision reported);
- in a projected volume, a source none of whose cases applies (a ConfigMap without items)
  checks the previous source's paths again, under the previous source's message;
- each projected source is checked alone, then together with the earlier sources' paths
  (sorted), so an overlap inside one source is reported twice.

Go ranges over a set to find the colliding path, so which one it names among several is
random there; here it is the first recorded.
"""

from __future__ import annotations

from typing import Any

from setpoint.machinery.fielderrors import go_quote


def overlapping_virtual_path_warnings(volumes: list[Any]) -> list[str]:
    """``warningsForOverlappingVirtualPaths`` over a pod spec's volumes, in their order."""
    warnings: list[str] = []
    for volume in volumes:
        volume = volume or {}
        name = go_quote(volume.get("name") or "")
        config_map = volume.get("configMap")
        if config_map is not None and config_map.get("items") is not None:
            warnings += _check(_paths(config_map["items"]), f"volume {name} (ConfigMap "
                               f"{go_quote(config_map.get('name') or '')}): overlapping paths")
        secret = volume.get("secret")
        if secret is not None and secret.get("items") is not None:
            warnings += _check(_paths(secret["items"]), f"volume {name} (Secret "
                               f"{go_quote(secret.get('secretName') or '')}): overlapping "
                               "paths")
        downward = volume.get("downwardAPI")
        if downward is not None and downward.get("items") is not None:
            warnings += _check(_paths(downward["items"]),
                               f"volume {name} (DownwardAPI): overlapping paths")
        projected = volume.get("projected")
        if projected is not None:
            warnings += _projected_warnings(name, projected.get("sources") or [])
    return warnings


def _projected_warnings(name: str, sources: list[Any]) -> list[str]:
    warnings: list[str] = []
    # (declared outside the loop in Go: a source no case matches reuses the last ones)
    source_paths: list[str] = []
    message = ""
    all_paths: list[str] = []
    for source in sources:
        if not source:
            warnings.append(f"volume {name} (Projected) has no sources provided")
            continue
        config_map, secret = source.get("configMap"), source.get("secret")
        downward, token = source.get("downwardAPI"), source.get("serviceAccountToken")
        bundle = source.get("clusterTrustBundle")
        if config_map is not None and config_map.get("items") is not None:
            source_paths = _paths(config_map["items"])
            message = (f"volume {name} (Projected ConfigMap "
                       f"{go_quote(config_map.get('name') or '')}): overlapping paths")
        elif secret is not None and secret.get("items") is not None:
            source_paths = _paths(secret["items"])
            message = (f"volume {name} (Projected Secret {go_quote(secret.get('name') or '')}"
                       "): overlapping paths")
        elif downward is not None and downward.get("items") is not None:
            source_paths = _paths(downward["items"])
            message = f"volume {name} (Projected DownwardAPI): overlapping paths"
        elif token is not None:
            source_paths = [token.get("path") or ""]
            message = f"volume {name} (Projected ServiceAccountToken): overlapping paths"
        elif bundle is not None:
            source_paths = [bundle.get("path") or ""]
            label = bundle["name"] if bundle.get("name") is not None else (
                bundle.get("signerName") or "")
            message = (f"volume {name} (Projected ClusterTrustBundle {go_quote(label)}): "
                       "overlapping paths")
        if not source_paths:
            continue
        warnings += _check(source_paths, message)
        unique = list(dict.fromkeys(source_paths))
        warnings += _check(sorted(unique + all_paths), message)
        all_paths += [path for path in unique if path not in all_paths]
    return warnings


def _paths(items: list[Any]) -> list[str]:
    return [(item or {}).get("path") or "" for item in items]


def _check(paths: list[str], message: str) -> list[str]:
    """``checkVolumeMappingForOverlap``: each path (trailing slashes trimmed) against the
    ones before it."""
    warnings = []
    seen: list[str] = []
    for path in paths:
        normalized = path.rstrip("/")
        collision = _overlap(seen, normalized)
        if collision:
            warnings.append(f"{message}: {go_quote(normalized)} with {go_quote(collision)}")
        if normalized not in seen:
            seen.append(normalized)
    return warnings


def _overlap(seen: list[str], path: str) -> str:
    """``checkForOverlap``."""
    for item in seen:
        if item == "" or path == "":
            return ""
        if item == path or (item + "/").startswith(path) or (path + "/").startswith(item):
            return item
    return ""
