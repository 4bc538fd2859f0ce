"""Real kubectl (1.27, 1.32, 1.33) ``cp`` into and out of a process pod: kubectl runs
``tar`` in the container through ``exec`` (staging/src/k8s.io/kubectl/pkg/cmd/cp/cp.go
``copyToPod`` runs ``tar -xmf - -C <dir>``, ``copyFromPod`` ``tar cf - <path>``), so the
file goes through the apiserver's exec proxy and the kubelet's streams both ways."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.workloads.process.support import Kubectl, need, process_env
from tests.workloads.process.test_kubectl_streams import VERSIONS, busybox
from tests.workloads.test_kubelet_support import ready


@pytest.mark.parametrize("version", VERSIONS)
async def test_kubectl_cp_copies_a_file_into_a_container_and_back(
        tmp_path: Path, version: str | None) -> None:
    need("busybox", "busybox")
    async with process_env(tmp_path) as env:
        kubectl = Kubectl(env, tmp_path, version)
        await env.run(busybox("box", "sleep 3600"))
        await env.until("box", ready)
        box_dir = (await kubectl.ok("exec", "box", "--", "sh", "-c",
                                    "mkdir -p cpdir && cd cpdir && pwd")).strip()
        source = tmp_path / "payload.txt"
        body = "line one\n" + "x" * 70000 + "\nlast\n"
        source.write_text(body)
        await kubectl.ok("cp", str(source), f"box:{box_dir}/inside.txt")
        assert await kubectl.ok("exec", "box", "--", "cat", f"{box_dir}/inside.txt") == body
        back = tmp_path / "back.txt"
        await kubectl.ok("cp", f"box:{box_dir}/inside.txt", str(back))
        assert back.read_text() == body
