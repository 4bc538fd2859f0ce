"""A container's configuration on the process runtime, made just before it is created (the
kubelet's ``generateContainerConfig``, kuberuntime_container.go): its environment, its
mounts, its argument vector and its working directory.
"""

from __future__ import annotations

import os
from pathlib import Path

from setpoint.workloads.kubelet.process.catalog import ImageEntry, LaunchContext, busybox_bin
from setpoint.workloads.kubelet.process.environment import environment, expand
from setpoint.workloads.kubelet.process.sandbox import ProcessContainer, ProcessSandbox
from setpoint.workloads.kubelet.process.volumemanager import mount_volumes
from setpoint.workloads.kubelet.process.volumes import VolumeSources


async def generate_container_config(sandbox: ProcessSandbox, container: ProcessContainer,
                                    entry: ImageEntry, sources: VolumeSources, *,
                                    api_host: str, api_port: str, root: Path,
                                    isolate: bool) -> None:
    """Set the container's ``env``, ``binds``, ``argv`` and ``cwd``. ``api_host``/
    ``api_port``: the API server (``KUBERNETES_SERVICE_*``); ``root``: the runtime's
    directory (where the busybox helpers are linked)."""
    pod, spec = sandbox.config.pod, container.config.spec
    # the sandbox's address is the pod's IP before any status says so (the kubelet's
    # podFieldSelectorRuntimeValue reads it from the sandbox, kubelet_pods.go)
    status = {**(pod.get("status") or {}), "podIP": sandbox.config.ip,
              "podIPs": [{"ip": sandbox.config.ip}]}
    env = dict(await environment({**pod, "status": status}, spec, sources.fetch))
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOSTNAME": sandbox.config.name, "HOME": str(container.dir)}
    if api_host:
        base.update(KUBERNETES_SERVICE_HOST=api_host,
                    KUBERNETES_SERVICE_PORT=api_port,
                    KUBERNETES_SERVICE_PORT_HTTPS=api_port)
    helpers = busybox_bin(root / "busybox-bin")
    if helpers is not None:
        base["PATH"] += os.pathsep + str(helpers)
    container.env = {**base, **env}
    if isolate:
        # a bind needs an existing target (a dangling symlink is not one)
        container.binds += [(str(sandbox.dir / "etc" / name), f"/etc/{name}", True)
                            for name in ("hosts", "resolv.conf")
                            if (sandbox.dir / "etc" / name).exists()
                            and os.path.exists(f"/etc/{name}")]
    await mount_volumes(sandbox, container, sources, isolate)
    command = [expand(str(a), container.env) for a in spec.get("command") or ()]
    args = [expand(str(a), container.env) for a in spec.get("args") or ()]
    ctx = LaunchContext(pod_ip=sandbox.config.ip, root=container.dir, env=container.env,
                        mounts=tuple(target for _, target, _ in container.binds))
    argv = entry.argv(command, args, ctx)
    if not isolate:
        # no mount namespace: mount paths are reached through the pod's root directory
        rootfs = str(sandbox.dir / "rootfs")
        for _, target, _ in container.binds:
            argv = [a.replace(target, rootfs + target) for a in argv]
    container.argv = argv
    working = spec.get("workingDir")
    container.cwd = str(working) if working and os.path.isdir(str(working)) else \
        str(container.dir)
