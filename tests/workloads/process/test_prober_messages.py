"""The process runtime's exec probe wording, on a real command that outlives its timeout."""

from __future__ import annotations

import asyncio

from setpoint.workloads.kubelet.process.containerexec import exec_result
from setpoint.workloads.kubelet.process.prober import Prober


async def _run(command: list[str], timeout: float) -> tuple[int, bytes]:
    proc = await asyncio.create_subprocess_exec(
        *command, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        start_new_session=True)
    return await exec_result(proc, timeout)


async def _never(_: str) -> None:
    raise AssertionError("a probe check alone kills nothing")


async def test_a_timed_out_exec_probe_quotes_its_command_as_go_does() -> None:
    """Rule: the failure's output is ``command %q timed out`` over the joined command, and
    Go's %q (strconv.Quote) escapes a control character as \\x01 and keeps printable
    Unicode as it is.
    Source: k8s.io/cri-client pkg/remote_runtime.go (ExecSync: "command %q timed out"),
    Go src/strconv/quote.go (appendEscapedRune)."""
    prober = Prober("c", {}, "127.0.0.1", _run, lambda *_: None, lambda: None, _never)
    ok, output = await prober.check({"exec": {"command": ["sh", "-c", "sleep 30 # \x01 é"]},
                                     "timeoutSeconds": 0.2})
    assert (ok, output) == (False, 'command "sh -c sleep 30 # \\x01 é" timed out')
