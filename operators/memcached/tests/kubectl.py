"""kubectl for tests, against the test's cluster only."""

from __future__ import annotations

import asyncio
import os
import uuid
from pathlib import Path

KUBECTL = "kubectl"


class Kubectl:
    """kubectl against the test's cluster only: its kubeconfig, a fresh discovery cache,
    a private HOME. Runs as a subprocess without blocking the event loop, which also
    serves the embedded cluster."""

    def __init__(self, kubeconfig: Path, workdir: Path, namespace: str) -> None:
        self.kubeconfig = kubeconfig
        self.namespace = namespace
        self.home = workdir / "home"
        self.home.mkdir(parents=True, exist_ok=True)
        self.cache = workdir / f"kube-cache-{uuid.uuid4().hex[:8]}"

    def __repr__(self) -> str:
        return f"Kubectl({self.kubeconfig}, namespace={self.namespace!r})"

    async def __call__(self, *args: str, stdin: str | None = None, ok: bool = True,
                       timeout: float = 30.0) -> str:
        """Run ``kubectl ARGS`` and return its standard output; ``ok`` asserts exit 0."""
        process = await asyncio.create_subprocess_exec(
            KUBECTL, "--kubeconfig", str(self.kubeconfig), "--cache-dir", str(self.cache),
            "--namespace", self.namespace, *args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.home)})
        out, err = await asyncio.wait_for(
            process.communicate(stdin.encode() if stdin is not None else None), timeout)
        shown = f"kubectl {' '.join(args)}: exit {process.returncode}\n{out.decode()}\n" \
                f"{err.decode()}"
        if ok:
            assert process.returncode == 0, shown
        return out.decode()
