"""The process runtime's records of a pod sandbox and its containers (CRI's
``PodSandbox`` and ``Container``), and the sandbox's own files.

A sandbox is the pod's loopback address (``config.ip``) and a directory
(``<root>/pods/<uid>``) holding its volumes, its containers' working directories, logs and
the ``/etc/hosts`` and ``/etc/resolv.conf`` its containers see.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from setpoint.workloads.kubelet.process import spawn
from setpoint.workloads.kubelet.process.dnsfiles import hosts_file, resolv_conf
from setpoint.workloads.kubelet.process.logs import LogWriter
from setpoint.workloads.kubelet.process.prober import Prober
from setpoint.workloads.kubelet.process.terminal import Terminal
from setpoint.workloads.kubelet.runtime import ContainerConfig, SandboxConfig


@dataclass
class ProcessContainer:
    id: str
    sandbox_id: str
    config: ContainerConfig
    created_at: float
    dir: Path
    log_path: Path
    argv: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cwd: str = ""
    binds: list[tuple[str, str, bool]] = field(default_factory=list)
    proc: asyncio.subprocess.Process | None = None
    namespace: spawn.MountNamespace | None = None  # its processes, daemons included
    stdin: asyncio.StreamWriter | None = None  # open for `stdin: true`, for attach
    terminal: Terminal | None = None  # for `tty: true`
    log: LogWriter | None = None  # its log file while it runs
    started_at: float | None = None
    finished_at: float | None = None
    exit_code: int | None = None
    reason: str = ""
    message: str = ""
    stopping: asyncio.Task[None] | None = None
    prober: Prober | None = None
    running: asyncio.Event = field(default_factory=asyncio.Event)
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)


@dataclass
class ProcessSandbox:
    id: str
    config: SandboxConfig
    dir: Path
    volumes: dict[str, Path] = field(default_factory=dict)
    containers: set[str] = field(default_factory=set)
    created_points: list[Path] = field(default_factory=list)
    instances: dict[str, int] = field(default_factory=dict)  # container name -> next log no.



def write_dns_files(sandbox: ProcessSandbox, cluster_dns: str) -> None:
    """The pod's resolv.conf and hosts (see :mod:`.dnsfiles`), bind-mounted over the
    machine's in each of its containers."""
    etc = sandbox.dir / "etc"
    etc.mkdir(mode=0o755, exist_ok=True)
    (etc / "hosts").write_text(hosts_file(sandbox.config.pod, sandbox.config.ip))
    resolv = resolv_conf(sandbox.config.pod, cluster_dns=cluster_dns)
    if resolv is not None:
        (etc / "resolv.conf").write_text(resolv)
    for name in ("hosts", "resolv.conf"):
        with contextlib.suppress(FileNotFoundError):
            (etc / name).chmod(0o644)  # read by programs that drop root (memcached)
