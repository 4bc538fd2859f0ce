"""A container's real process on the process runtime, found and killed from outside the
kubelet, as an operator's ``kill -9`` on a node would.

``faults.restart_container`` asks the kubelet to kill a container, so the kubelet knows the
kill is coming. A process that dies behind the kubelet's back (the OOM killer, a crash, an
administrator's ``kill -9``) is the case a real kubelet finds only by reaping the exit
(kubelet's PLEG relists the runtime and sees the container exited;
pkg/kubelet/pleg/generic.go), then restarts it under the pod's restart policy with the
back-off of pkg/kubelet/kuberuntime/kuberuntime_manager.go (``computePodActions``).

Pods here share the machine's PID space (docs/process-runtime.md, "Isolation"), and every
catalog program is told to listen on its pod's own loopback address, so the container's
main process is the one whose command line names that program and that address.
"""

from __future__ import annotations

import os
import re
import signal
from pathlib import Path


def container_pids(pod_ip: str, program: str) -> list[int]:
    """The processes running ``program`` (its file name) with ``pod_ip`` in their
    arguments: the main process of that pod's container, on the process runtime."""
    address = re.compile(rf"(?<![\d.]){re.escape(pod_ip)}(?!\d)")
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:  # ended while we looked
            continue
        words = [a.decode(errors="replace") for a in argv if a]
        if words and os.path.basename(words[0]) == program \
                and any(address.search(w) for w in words[1:]):
            found.append(int(entry.name))
    return sorted(found)


def kill_container_process(pod_ip: str, program: str) -> int:
    """``kill -9`` the main process of the container running ``program`` in the pod at
    ``pod_ip``, the signal going to that process alone; returns its pid. Raises
    ``LookupError`` unless exactly one such process runs."""
    pids = container_pids(pod_ip, program)
    if len(pids) != 1:
        raise LookupError(f"expected one {program} process for {pod_ip}, found {pids}")
    os.kill(pids[0], signal.SIGKILL)
    return pids[0]
