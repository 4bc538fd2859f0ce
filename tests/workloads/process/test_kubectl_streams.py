"""Real kubectl (1.27, 1.32, 1.33) against process pods: ``logs``, ``exec``,
``port-forward`` and ``attach`` through the API server's proxy to the node's kubelet.

kube-apiserver proxies these subresources to the kubelet (pkg/registry/core/pod/rest/log.go,
subresources.go, locations from pkg/registry/core/pod/strategy.go, the upgrade-aware proxy
of apimachinery). kubectl 1.27 speaks SPDY/3.1 for exec, attach and port-forward; 1.32 and
1.33 use WebSocket ``v5.channel.k8s.io`` for exec and attach, and tunnel SPDY through a
WebSocket (``SPDY/3.1+portforward.k8s.io``) for port-forward.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from setpoint.client import ApiError
from tests.waiting import wait_for
from tests.workloads.process.support import Kubectl, need, process_env
from tests.workloads.test_kubelet_support import condition, pod, ready

VERSIONS = ["1.27", None, "1.33"]  # None: the kubectl on PATH (1.32)


def busybox(name: str, script: str, **extra: Any) -> dict[str, Any]:
    body = pod(name)
    body["spec"]["containers"] = [{"name": "main", "image": "busybox:1.36",
                                   "command": ["sh", "-c", script], **extra}]
    return body


async def read_until(stream: asyncio.StreamReader | None, needle: bytes) -> bytes:
    assert stream is not None
    seen = b""
    async with asyncio.timeout(30):
        while needle not in seen:
            chunk = await stream.read(4096)
            assert chunk, seen
            seen += chunk
    return seen


async def stop(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is None:
        proc.kill()
    await proc.wait()


@pytest.mark.parametrize("version", VERSIONS)
async def test_kubectl_logs_tail_since_container_follow_and_previous(
        tmp_path: Path, version: str | None) -> None:
    need("busybox", "busybox")
    gate = tmp_path / "gate"
    async with process_env(tmp_path) as env:
        kubectl = Kubectl(env, tmp_path, version)
        two = busybox("two", "echo one; echo two; echo three; sleep 3600")
        two["spec"]["containers"].append({"name": "side", "image": "busybox:1.36",
                                          "command": ["sh", "-c", "echo side; sleep 3600"]})
        await env.run(two)
        await env.until("two", ready)
        assert (await kubectl.ok("logs", "two", "-c", "main")).split() == ["one", "two",
                                                                         "three"]
        assert await kubectl.ok("logs", "two", "-c", "main", "--tail=1") == "three\n"
        assert await kubectl.ok("logs", "two", "-c", "side", "--since=1h") == "side\n"
        # strategy.go validateContainer: a pod of two containers needs one named
        code, _, err = await kubectl.run("get", "--raw", "/api/v1/namespaces/default/pods/"
                                         "two/log")
        assert code != 0 and "a container name must be specified for pod two, choose " \
            "one of: [main side]" in err
        # -f follows the running container until it exits
        await env.run(busybox("follow", f"echo first; until [ -e {gate} ]; do sleep 0.1; "
                                        "done; echo second",
                              ), node_name="node-b")
        await env.until("follow", ready)
        follower = await kubectl.start("logs", "-f", "follow")
        try:
            await read_until(follower.stdout, b"first\n")
            gate.touch()
            assert follower.stdout is not None
            rest = await asyncio.wait_for(follower.stdout.read(), 30)
            assert rest == b"second\n"
            assert await asyncio.wait_for(follower.wait(), 30) == 0
        finally:
            await stop(follower)
        # --previous: the instance before the last restart
        await env.run(busybox("crash", "echo run; sleep 0.3; exit 1"))
        await env.until("crash", lambda p: any(
            (s.get("restartCount") or 0) >= 1
            for s in (p.get("status") or {}).get("containerStatuses") or ()))
        assert await kubectl.ok("logs", "crash", "--previous") == "run\n"


@pytest.mark.parametrize("version", VERSIONS)
async def test_kubectl_exec_runs_in_the_container_with_stdin_and_exit_code(
        tmp_path: Path, version: str | None) -> None:
    need("busybox", "busybox")
    async with process_env(tmp_path) as env:
        kubectl = Kubectl(env, tmp_path, version)
        await env.run(busybox("box", "sleep 3600", env=[{"name": "GREETING",
                                                         "value": "hi"}]))
        await env.until("box", ready)
        out = await kubectl.ok("exec", "box", "--", "sh", "-c", 'echo "$GREETING" out')
        assert out == "hi out\n"
        code, out, err = await kubectl.run("exec", "box", "--", "sh", "-c",
                                           "echo partial; echo oops >&2; exit 3")
        assert (code, out) == (3, "partial\n")
        assert "oops" in err and "command terminated with exit code 3" in err
        out = await kubectl.ok("exec", "-i", "box", "--", "sh", "-c", "tr a-z A-Z",
                               stdin=b"from stdin\n")
        assert out == "FROM STDIN\n"


@pytest.mark.parametrize("version", VERSIONS)
async def test_kubectl_port_forward_to_nginx_carries_a_real_request(
        tmp_path: Path, version: str | None) -> None:
    need("nginx", "nginx-light")
    async with process_env(tmp_path) as env:
        kubectl = Kubectl(env, tmp_path, version)
        body = pod("web")
        body["spec"]["containers"] = [{
            "name": "nginx", "image": "nginx:1.27",
            "readinessProbe": {"httpGet": {"path": "/", "port": 80}, "periodSeconds": 1}}]
        await env.run(body)
        await env.until("web", ready)
        forward = await kubectl.start("port-forward", "--address", "127.0.0.1", "pod/web",
                                      ":80")
        try:
            seen = await read_until(forward.stdout, b"-> 80")
            match = re.search(rb"Forwarding from 127\.0\.0\.1:(\d+) -> 80", seen)
            assert match, seen
            url = f"http://127.0.0.1:{int(match.group(1))}/"
            for _ in range(2):  # two connections: each one a stream pair of its own
                async with aiohttp.ClientSession() as session, session.get(url) as resp:
                    assert resp.status == 200
                    assert "Welcome to nginx" in await resp.text()
        finally:
            await stop(forward)


@pytest.mark.parametrize("version", VERSIONS)
async def test_kubectl_attach_shows_output_and_feeds_stdin(
        tmp_path: Path, version: str | None) -> None:
    need("busybox", "busybox")
    async with process_env(tmp_path) as env:
        kubectl = Kubectl(env, tmp_path, version)
        await env.run(busybox("echoer", "while read line; do echo got $line; done",
                              stdin=True))
        await env.until("echoer", lambda p: condition(p, "Ready").get("status") == "True")
        attach = await kubectl.start("attach", "-i", "echoer", stdin=True)
        try:
            assert attach.stdin is not None
            attach.stdin.write(b"ping\n")
            await attach.stdin.drain()
            await read_until(attach.stdout, b"got ping\n")
        finally:
            await stop(attach)


async def test_a_tty_container_runs_on_a_terminal_that_attach_drives(tmp_path: Path) -> None:
    """``tty: true``: the program's stdin, stdout and stderr are one terminal (a shell on it
    is interactive), what it writes is logged, and attach's input reaches it as typed keys
    (the CRI ContainerConfig's ``tty``, pkg/kubelet/kuberuntime/kuberuntime_container.go)."""
    need("busybox", "busybox")
    async with process_env(tmp_path) as env:
        kubectl = Kubectl(env, tmp_path, None)
        await env.run(busybox(
            "term", 'for fd in 0 1 2; do [ -t $fd ] && echo "fd $fd is a terminal"; done; '
            "exec sh", stdin=True, tty=True))
        await env.until("term", ready)

        async def logged() -> str | None:
            out = await kubectl.ok("logs", "term")
            return out if "fd 2 is a terminal" in out else None

        out = await wait_for(logged)
        assert "fd 0 is a terminal" in out and "fd 1 is a terminal" in out, out
        attach = await kubectl.start("attach", "-i", "term", stdin=True)
        try:
            assert attach.stdin is not None
            attach.stdin.write(b"echo marker-$((40+2))\n")
            await attach.stdin.drain()
            await read_until(attach.stdout, b"marker-42")
        finally:
            await stop(attach)


async def test_pod_log_options_are_validated_before_the_pod_is_read(tmp_path: Path) -> None:
    """log.go validates PodLogOptions first (pkg/apis/core/validation ValidatePodLogOptions:
    422 PodLogOptions with field causes); a query value that is no int64 is a 400 from the
    parameter codec (strconv.ParseInt's message)."""
    async with process_env(tmp_path) as env:
        base = "/api/v1/namespaces/default/pods/absent/log"
        cases = {
            "tailLines=-1": (422, "Invalid", 'PodLogOptions "absent" is invalid: tailLines: '
                             "Invalid value: -1: must be greater than or equal to 0"),
            "limitBytes=0": (422, "Invalid", 'PodLogOptions "absent" is invalid: limitBytes: '
                             "Invalid value: 0: must be greater than 0"),
            "sinceSeconds=0": (422, "Invalid", 'PodLogOptions "absent" is invalid: '
                               "sinceSeconds: Invalid value: 0: must be greater than 0"),
            "sinceSeconds=5&sinceTime=2024-01-01T00:00:00Z": (
                422, "Invalid", 'PodLogOptions "absent" is invalid: : Forbidden: at most one '
                "of `sinceTime` or `sinceSeconds` may be specified"),
            "tailLines=ten": (400, "BadRequest",
                              'strconv.ParseInt: parsing "ten": invalid syntax'),
            "tailLines=5": (404, "NotFound", 'pods "absent" not found'),
        }
        for query, (code, reason, message) in cases.items():
            with pytest.raises(ApiError) as caught:
                await env.client.request("GET", base, params=dict(
                    pair.split("=") for pair in query.split("&")))
            status = caught.value.status
            assert (status["code"], status["reason"], status["message"]) == \
                (code, reason, message), query
