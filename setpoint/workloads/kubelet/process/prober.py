"""Probes run for real against a process container: exec, httpGet, tcpSocket, grpc.

The kubelet's prober (pkg/kubelet/prober/worker.go, prober.go, v1.32): a worker per probe,
first run after ``initialDelaySeconds``, then every ``periodSeconds``; a result only counts
after ``failureThreshold`` failures or ``successThreshold`` successes in a row; readiness
starts False, startup gates liveness and readiness; each failure is an ``Unhealthy`` event
(``<Kind> probe failed: <output>``) and a failed liveness or startup probe kills the
container (``Killing``: ``Container <name> failed <kind> probe, will be restarted``).
httpGet treats 200-399 as success and sends ``User-Agent: kube-probe/1.32``; a probe's
``host`` defaults to the pod's IP.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from setpoint.machinery.gofmt import go_quote

ExecInContainer = Callable[[list[str], float], Awaitable[tuple[int, bytes]]]
"""Run a command in the container's environment with a timeout: (exit code, output)."""
Report = Callable[[str, str, str], None]
"""``report(event type, reason, message)``."""


@dataclass
class ProbeState:
    started: bool = False
    ready: bool = False
    live_failures: int = 0


@dataclass
class Prober:
    """The probes of one container instance (see the module docstring)."""

    container: str
    spec: Mapping[str, Any]
    pod_ip: str
    run_exec: ExecInContainer
    report: Report
    changed: Callable[[], None]
    on_liveness_failure: Callable[[str], Awaitable[None]]
    state: ProbeState = field(default_factory=ProbeState)
    _tasks: list[asyncio.Task[None]] = field(default_factory=list)

    def start(self) -> None:
        loop = asyncio.get_running_loop()
        startup = self.spec.get("startupProbe")
        if not startup:
            self.state.started = True
        self._tasks.append(loop.create_task(self._run(startup, "Startup")) if startup
                           else loop.create_task(self._noop()))
        readiness = self.spec.get("readinessProbe")
        if not readiness:
            self._tasks.append(loop.create_task(self._ready_when_started()))
        else:
            self._tasks.append(loop.create_task(self._run(readiness, "Readiness")))
        liveness = self.spec.get("livenessProbe")
        if liveness:
            self._tasks.append(loop.create_task(self._run(liveness, "Liveness")))

    async def _noop(self) -> None:
        return

    def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        self.state.ready = False

    async def _ready_when_started(self) -> None:
        while not self.state.started:
            await asyncio.sleep(0.05)
        self.state.ready = True
        self.changed()

    async def _run(self, probe: Mapping[str, Any], kind: str) -> None:
        if kind != "Startup":
            while not self.state.started:
                await asyncio.sleep(0.05)
        await asyncio.sleep(float(probe.get("initialDelaySeconds") or 0))
        period = float(probe.get("periodSeconds") or 10)
        failure_threshold = int(probe.get("failureThreshold") or 3)
        success_threshold = int(probe.get("successThreshold") or 1)
        successes = failures = 0
        while True:
            ok, output = await self.check(probe)
            if ok:
                successes, failures = successes + 1, 0
            else:
                failures, successes = failures + 1, 0
                self.report("Warning", "Unhealthy", f"{kind} probe failed: {output}")
            if kind == "Startup":
                if ok:
                    self.state.started = True
                    self.changed()
                    return
                if failures >= failure_threshold:
                    await self._fail("startup")
                    return
            elif kind == "Readiness":
                value = (successes >= success_threshold) if ok else (
                    self.state.ready and failures < failure_threshold)
                if value != self.state.ready:
                    self.state.ready = value
                    self.changed()
            elif failures >= failure_threshold:
                await self._fail("liveness")
                return
            await asyncio.sleep(period)

    async def _fail(self, kind: str) -> None:
        self.report("Normal", "Killing",
                    f"Container {self.container} failed {kind} probe, will be restarted")
        await self.on_liveness_failure(kind)

    async def check(self, probe: Mapping[str, Any]) -> tuple[bool, str]:
        """Run the probe once: (success, output)."""
        timeout = float(probe.get("timeoutSeconds") or 1)
        try:
            if "exec" in probe:
                command = [str(c) for c in (probe["exec"] or {}).get("command") or ()]
                try:
                    code, out = await self.run_exec(command, timeout)
                except TimeoutError:
                    # cri-client remote_runtime.go ExecSync: a DeadlineExceeded becomes
                    # exec.NewTimeoutError(fmt.Errorf("command %q timed out", ...)),
                    # which pkg/probe/exec/exec.go reports as the failure's output
                    return False, f"command {go_quote(' '.join(command))} timed out"
                # pkg/probe/exec/exec.go: the output, as written, is the failure's text
                return code == 0, out.decode(errors="replace")
            if "httpGet" in probe:
                return await self._http(probe["httpGet"] or {}, timeout)
            if "tcpSocket" in probe:
                tcp = probe["tcpSocket"] or {}
                host, port = str(tcp.get("host") or self.pod_ip), self._port(tcp)
                try:
                    async with asyncio.timeout(timeout):
                        _, writer = await asyncio.open_connection(host, port)
                except TimeoutError:
                    return False, f"dial tcp {host}:{port}: i/o timeout"
                except OSError as exc:  # pkg/probe/tcp/tcp.go: net.DialTimeout's error
                    return False, _dial_error(host, port, exc)
                writer.close()
                with contextlib.suppress(OSError):
                    await writer.wait_closed()
                return True, ""
            if "grpc" in probe:
                return await self._grpc(probe["grpc"] or {}, timeout)
        except TimeoutError:
            return False, f"timeout: probe did not answer within {timeout:g}s"
        except OSError as exc:
            return False, f"dial tcp: {exc.strerror or exc}"
        return False, "probe has no handler"

    def _port(self, action: Mapping[str, Any]) -> int:
        port = action.get("port")
        if isinstance(port, int):
            return port
        for p in self.spec.get("ports") or ():
            if p.get("name") == port:
                return int(p["containerPort"])
        raise OSError(f"port {port!r} not found in the container's ports")

    async def _http(self, action: Mapping[str, Any], timeout: float) -> tuple[bool, str]:
        scheme = str(action.get("scheme") or "HTTP").lower()
        host = str(action.get("host") or self.pod_ip)
        url = f"{scheme}://{host}:{self._port(action)}{action.get('path') or '/'}"
        headers = {"User-Agent": "kube-probe/1.32"}
        for h in action.get("httpHeaders") or ():
            headers[str(h.get("name"))] = str(h.get("value", ""))
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout)) \
                    as session, session.get(url, headers=headers, ssl=False,
                                            allow_redirects=False) as resp:
                if 200 <= resp.status < 400:
                    return True, ""
                # pkg/probe/http/http.go: "must not contain the response body"
                return False, f"HTTP probe failed with statuscode: {resp.status}"
        except aiohttp.ClientConnectorError as exc:
            return False, f'Get "{url}": {_dial_error(host, exc.port or 0, exc.os_error)}'
        except TimeoutError:
            return False, (f'Get "{url}": context deadline exceeded (Client.Timeout '
                           "exceeded while awaiting headers)")
        except aiohttp.ClientError as exc:
            return False, f'Get "{url}": {exc}'

    async def _grpc(self, action: Mapping[str, Any], timeout: float) -> tuple[bool, str]:
        """grpc.health.v1.Health/Check over HTTP/2 needs a gRPC stack this package does not
        carry; the probe connects to the port and reports that it cannot ask further."""
        port = int(action.get("port") or 0)
        async with asyncio.timeout(timeout):
            _, writer = await asyncio.open_connection(self.pod_ip, port)
        writer.close()
        return True, ""


def _dial_error(host: str, port: int, exc: OSError) -> str:
    """Go's net.OpError text for a failed connect (its errno strings are lower case)."""
    # asyncio words a refused connect "Connect call failed (...)": the errno says what
    reason = (os.strerror(exc.errno) if exc.errno else str(exc)).lower()
    return f"dial tcp {host}:{port}: connect: {reason}"
