"""The kubelet's volume manager on the process runtime: a pod's volumes made into
directories and mounted at each container's ``mountPath``, and API-backed volumes kept in
step with their sources.

With a mount namespace (:func:`.spawn.mount_namespaces_available`) a volume is bind-mounted
at its real path inside the container; without one, the path is reached through a symlink
under the pod's ``rootfs`` directory (the container's argument vector is rewritten to it).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from setpoint.workloads.kubelet.process import spawn
from setpoint.workloads.kubelet.process.sandbox import ProcessContainer, ProcessSandbox
from setpoint.workloads.kubelet.process.volumes import (
    VolumeError,
    VolumeSources,
    volume_dir,
    volume_files,
    write_atomic,
)

log = logging.getLogger("setpoint.workloads.kubelet.process")


async def mount_volumes(sandbox: ProcessSandbox, container: ProcessContainer,
                        sources: VolumeSources, isolate: bool) -> None:
    """Add the container's ``volumeMounts`` to its binds, materializing each volume the
    first time one of the pod's containers mounts it."""
    pod = sandbox.config.pod
    volumes = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or ()}
    for mount in container.config.spec.get("volumeMounts") or ():
        name = str(mount.get("name"))
        volume = volumes.get(name)
        if volume is None:
            continue
        source = sandbox.volumes.get(name)
        if source is None or not source.exists():
            # each attempt sets its volumes up again, as the kubelet's volume manager does
            # before every start (WaitForAttachAndMount): a directory removed since an
            # earlier attempt (its PV's reclaim) is made anew, not bound missing forever
            source = await materialize(sandbox, name, volume, sources)
        sub = str(mount.get("subPath") or "")
        if sub:
            source = source / sub
            if not source.exists():
                source.mkdir(parents=True, mode=0o755)
        target = str(mount.get("mountPath"))
        container.binds.append((str(source), target, bool(mount.get("readOnly"))))
        if isolate:
            created = spawn.ensure_mount_point(Path(target), source.is_dir())
            if created is not None:
                sandbox.created_points.append(created)
        else:
            link = sandbox.dir / "rootfs" / target.lstrip("/")
            link.parent.mkdir(parents=True, exist_ok=True)
            if not link.is_symlink():
                link.symlink_to(source)


async def materialize(sandbox: ProcessSandbox, name: str, volume: Mapping[str, Any],
                      sources: VolumeSources) -> Path:
    """The directory of one of the pod's volumes, written now."""
    if "persistentVolumeClaim" in volume:
        path = await _claim_dir(sandbox, volume["persistentVolumeClaim"], sources)
    elif "ephemeral" in volume:
        # a generic ephemeral volume is its claim's (ephemeral.VolumeClaimName)
        pod_name = (sandbox.config.pod.get("metadata") or {}).get("name")
        path = await _claim_dir(sandbox, {"claimName": f"{pod_name}-{name}"}, sources)
    elif "hostPath" in volume:
        path = Path(str(volume["hostPath"].get("path")))
        path.mkdir(parents=True, exist_ok=True)
    else:
        path = sandbox.dir / "volumes" / name
        path.mkdir(parents=True, exist_ok=True, mode=0o777 if "emptyDir" in volume
                   else 0o700)
        files = await volume_files(sandbox.config.pod, volume, sources)
        if files is not None:
            write_atomic(path, files)
    sandbox.volumes[name] = path
    return path


async def _claim_dir(sandbox: ProcessSandbox, source: Mapping[str, Any],
                     sources: VolumeSources) -> Path:
    ns = str(sandbox.config.namespace)
    claim = await sources.fetch("PersistentVolumeClaim", ns, str(source.get("claimName")))
    volume_name = ((claim or {}).get("spec") or {}).get("volumeName")
    if not volume_name:
        raise VolumeError(f'persistentvolumeclaim "{source.get("claimName")}" is not '
                          "bound")
    # pkg/kubelet/volumemanager/populator/desired_state_of_world_populator.go getPVSpec:
    # the claim's volume must exist (without it the runtime's reclaim would remove the
    # directory made here, under the container about to mount it)
    volume = await sources.fetch("PersistentVolume", "", str(volume_name))
    if volume is None:
        raise VolumeError(f"failed to fetch PV {volume_name} from API server: "
                          f'persistentvolumes "{volume_name}" not found')
    path = volume_dir(sources.volumes_root, volume)
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    return path


async def refresh_volumes(sandboxes: Iterable[ProcessSandbox], sources: VolumeSources) -> None:
    """Rewrite the API-backed volumes of every running pod whose sources changed (the
    kubelet's periodic sync of ConfigMap and Secret volumes)."""
    for sandbox in sandboxes:
        volumes = {v.get("name"): v for v in
                   (sandbox.config.pod.get("spec") or {}).get("volumes") or ()}
        for name, path in list(sandbox.volumes.items()):
            volume = volumes.get(name) or {}
            if not any(k in volume for k in ("configMap", "secret", "projected",
                                             "downwardAPI")):
                continue
            try:
                files = await volume_files(sandbox.config.pod, volume, sources)
            except VolumeError as exc:
                log.debug("volume %s of %s not refreshed: %s", name, sandbox.id, exc)
                continue
            if files is not None:
                write_atomic(path, files)
