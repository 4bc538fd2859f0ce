"""A pod's volumes as directories, written the way the kubelet writes them.

ConfigMap, Secret, downwardAPI and projected volumes are written with the kubelet's
``AtomicWriter`` layout (pkg/volume/util/atomic_writer.go): the files live in a timestamped
directory ``..<timestamp>``, the symlink ``..data`` points at it, and each visible name is a
symlink through ``..data``. An update writes a new timestamped directory, points a fresh
symlink ``..data_tmp`` at it and renames that over ``..data`` (one atomic step), then removes
the old directory: a program reading ``/etc/config/key`` sees the old file or the new one,
never a mix. emptyDir is a plain directory of the pod; a PersistentVolumeClaim resolves to
its bound volume's directory (``hostPath.path`` of the volume the simulated provisioner
made, under :func:`volume_dir`), which outlives the pod.

Keys, tokens and Secret data are written 0600 unless the volume's mode says otherwise for
the program (modes are the pod's to choose, as on a node); directories are 0700.
"""

from __future__ import annotations

import base64
import os
import shutil
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from setpoint.workloads.kubelet.process.environment import Fetch, _field, resource_field

Obj = dict[str, Any]
DEFAULT_MODE = 0o644
RequestToken = Callable[[str, str, Mapping[str, Any]], Awaitable[str]]
"""``request_token(namespace, service_account, serviceAccountToken source)`` -> a token."""


class VolumeError(Exception):
    """A volume cannot be set up (``FailedMount``, with this message)."""


@dataclass
class VolumeSources:
    """How volume contents are read: objects from the API, tokens, the PVC directories."""

    fetch: Fetch
    request_token: RequestToken
    volumes_root: Path
    """Where provisioned PersistentVolumes without a usable hostPath get directories."""


def volume_dir(volumes_root: Path, pv: Mapping[str, Any]) -> Path:
    """The directory that holds a PersistentVolume's data."""
    name = str((pv.get("metadata") or {}).get("name"))
    return volumes_root / name


def _decode(obj: Obj, key: str) -> bytes | None:
    data = obj.get("data") or {}
    if obj.get("kind") == "Secret":
        raw = data.get(key)
        return base64.b64decode(raw) if raw is not None else None
    if key in data:
        return str(data[key]).encode()
    binary = (obj.get("binaryData") or {}).get(key)
    return base64.b64decode(binary) if binary is not None else None


def _keys(obj: Obj) -> list[str]:
    return sorted({*(obj.get("data") or {}), *(obj.get("binaryData") or {})})


def _select(obj: Obj, items: Any, mode: int) -> dict[str, tuple[bytes, int]]:
    """Files of a ConfigMap/Secret source: every key, or the ``items`` asked for."""
    out: dict[str, tuple[bytes, int]] = {}
    if items:
        for item in items:
            content = _decode(obj, str(item.get("key", "")))
            if content is None:
                raise VolumeError(f"configmap references non-existent config key: "
                                  f"{item.get('key')}")
            out[str(item.get("path"))] = (content, int(item.get("mode") or mode))
        return out
    for key in _keys(obj):
        content = _decode(obj, key)
        if content is not None:
            out[key] = (content, mode)
    return out


async def _object_files(kind: str, ns: str, source: Mapping[str, Any], name_key: str,
                        mode: int, sources: VolumeSources) -> dict[str, tuple[bytes, int]]:
    name = str(source.get(name_key, ""))
    obj = await sources.fetch(kind, ns, name)
    if obj is None:
        if source.get("optional"):
            return {}
        raise VolumeError(f'{kind.lower()} "{name}" not found')
    return _select(obj, source.get("items"), mode)


def _downward(pod: Mapping[str, Any], items: Any, mode: int) -> dict[str, tuple[bytes, int]]:
    out: dict[str, tuple[bytes, int]] = {}
    containers = {c.get("name"): c for c in (pod.get("spec") or {}).get("containers") or ()}
    for item in items or ():
        if "fieldRef" in item:
            path = str(item["fieldRef"].get("fieldPath", ""))
            if path in ("metadata.labels", "metadata.annotations"):
                values = ((pod.get("metadata") or {}).get(path.split(".")[1]) or {})
                # the downward API's format: key="value" lines, sorted
                text = "\n".join(f'{k}="{v}"' for k, v in sorted(values.items()))
            else:
                text = _field(pod, path)
        elif "resourceFieldRef" in item:
            ref = item["resourceFieldRef"]
            text = resource_field(containers.get(ref.get("containerName")) or {}, ref)
        else:
            continue
        out[str(item.get("path"))] = (text.encode(), int(item.get("mode") or mode))
    return out


async def volume_files(pod: Mapping[str, Any], volume: Mapping[str, Any],
                       sources: VolumeSources) -> dict[str, tuple[bytes, int]] | None:
    """The files an API-backed volume holds (None for a volume that is a directory)."""
    ns = str((pod.get("metadata") or {}).get("namespace") or "default")
    if "configMap" in volume:
        src = volume["configMap"]
        return await _object_files("ConfigMap", ns, src, "name",
                                   int(src.get("defaultMode") or DEFAULT_MODE), sources)
    if "secret" in volume:
        src = volume["secret"]
        return await _object_files("Secret", ns, src, "secretName",
                                   int(src.get("defaultMode") or DEFAULT_MODE), sources)
    if "downwardAPI" in volume:
        src = volume["downwardAPI"]
        return _downward(pod, src.get("items"), int(src.get("defaultMode") or DEFAULT_MODE))
    if "projected" in volume:
        src = volume["projected"]
        mode = int(src.get("defaultMode") or DEFAULT_MODE)
        files: dict[str, tuple[bytes, int]] = {}
        for part in src.get("sources") or ():
            if "configMap" in part:
                files.update(await _object_files("ConfigMap", ns, part["configMap"], "name",
                                                 mode, sources))
            elif "secret" in part:
                files.update(await _object_files("Secret", ns, part["secret"], "name", mode,
                                                 sources))
            elif "downwardAPI" in part:
                files.update(_downward(pod, part["downwardAPI"].get("items"), mode))
            elif "serviceAccountToken" in part:
                token_source = part["serviceAccountToken"]
                account = str((pod.get("spec") or {}).get("serviceAccountName") or "default")
                token = await sources.request_token(ns, account, token_source)
                files[str(token_source.get("path", "token"))] = (token.encode(), mode)
        return files
    return None


def write_atomic(target: Path, files: Mapping[str, tuple[bytes, int]]) -> bool:
    """Write ``files`` into ``target`` as the AtomicWriter does; False when the current
    content is already exactly this (nothing is rewritten)."""
    target.mkdir(parents=True, exist_ok=True, mode=0o700)
    data_link = target / "..data"
    if data_link.is_symlink() and _same(target / os.readlink(data_link), files):
        return False
    stamp = target / f"..{time.strftime('%Y_%m_%d_%H_%M_%S')}.{time.monotonic_ns()}"
    stamp.mkdir(mode=0o755)
    for rel, (content, mode) in files.items():
        path = stamp / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode & 0o7777)
        with os.fdopen(fd, "wb") as fh:
            fh.write(content)
        os.chmod(path, mode & 0o7777)
    old = os.readlink(data_link) if data_link.is_symlink() else None
    tmp = target / "..data_tmp"
    if tmp.is_symlink():
        tmp.unlink()
    tmp.symlink_to(stamp.name)
    os.rename(tmp, data_link)  # the one atomic step readers can see
    wanted_top = {rel.split("/", 1)[0] for rel in files}
    for top in wanted_top:
        link = target / top
        if not link.is_symlink():
            link.symlink_to(f"..data/{top}")
    for entry in target.iterdir():
        if entry.name.startswith(".."):
            continue
        if entry.is_symlink() and entry.name not in wanted_top:
            entry.unlink()
    if old is not None and old != stamp.name:
        shutil.rmtree(target / old, ignore_errors=True)
    return True


def _same(current: Path, files: Mapping[str, tuple[bytes, int]]) -> bool:
    try:
        present = {str(p.relative_to(current)) for p in current.rglob("*") if p.is_file()}
        if present != set(files):
            return False
        return all((current / rel).read_bytes() == content and
                   (current / rel).stat().st_mode & 0o7777 == mode & 0o7777
                   for rel, (content, mode) in files.items())
    except OSError:
        return False
