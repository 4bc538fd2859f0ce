"""``kubectl debug`` (1.32, without ``-it``) on the process runtime: the ephemeral container
runs its command for real as a container of the pod, exits, is not restarted, and its
output is what ``kubectl logs POD -c NAME`` shows.

The kubelet starts an ephemeral container once and never restarts it (computePodActions,
pkg/kubelet/kuberuntime/kuberuntime_manager.go of release-1.32); its exit is reported in
``status.ephemeralContainerStatuses`` as any container's (convertToAPIContainerStatuses).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.workloads.process.support import Kubectl, need, process_env
from tests.workloads.test_kubelet_support import pod, ready

Obj = dict[str, Any]


def ephemeral_state(obj: Obj, name: str) -> Obj:
    for cs in (obj.get("status") or {}).get("ephemeralContainerStatuses") or ():
        if cs.get("name") == name:
            return dict(cs.get("state") or {})
    return {}


async def test_kubectl_debug_runs_the_command_in_the_pod_and_logs_it(tmp_path: Path) -> None:
    need("busybox", "busybox")
    async with process_env(tmp_path) as env:
        kubectl = Kubectl(env, tmp_path, None)
        body = pod("box")
        body["spec"]["containers"] = [{"name": "c", "image": "busybox:1.36",
                                       "command": ["sleep", "3600"]}]
        await env.run(body)
        await env.until("box", ready)
        # HOSTNAME is the pod's: the program runs as a container of that pod
        await kubectl.ok("debug", "box", "--image=busybox", "--target=c", "-c", "dbg", "--",
                         "sh", "-c", 'echo "debug in $HOSTNAME"')
        live = await env.until("box", lambda p: "terminated" in ephemeral_state(p, "dbg"))
        terminated = ephemeral_state(live, "dbg")["terminated"]
        assert (terminated["exitCode"], terminated["reason"]) == (0, "Completed")
        assert await kubectl.ok("logs", "box", "-c", "dbg") == "debug in box\n"
        # kubectl debug's own example: started, running for a second, then done for good
        await kubectl.ok("debug", "box", "--image=busybox", "--target=c", "-c", "nap", "--",
                         "sleep", "1")
        live = await env.until("box", lambda p: "terminated" in ephemeral_state(p, "nap"))
        [dbg] = [cs for cs in live["status"]["ephemeralContainerStatuses"]
                 if cs["name"] == "dbg"]
        assert dbg["restartCount"] == 0 and dbg["state"] == {"terminated": terminated}
        assert live["status"]["phase"] == "Running" and ready(live)
