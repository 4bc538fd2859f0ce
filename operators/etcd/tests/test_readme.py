"""The README's example is accepted as written, and its lifecycle diagram names exactly the
phases the code can set (operators/etcd/health.py's ``phase``)."""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any

import yaml

from operators.etcd.resource import EtcdCluster, Phase
from setpoint.client import Client
from setpoint.testing import SetpointCluster

README = Path(__file__).parents[1] / "README.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README.read_text(), re.S)


async def test_the_readme_cluster_is_accepted_as_written(
        setpoint_cluster: SetpointCluster, k8s: Client) -> None:
    await setpoint_cluster.install(EtcdCluster)
    (example,) = blocks("yaml")
    created: dict[str, Any] = await k8s.create(yaml.safe_load(example))
    assert (created["spec"]["size"], created["spec"]["version"]) == (3, "3.5.1")


def test_the_state_diagram_has_every_phase_and_no_other() -> None:
    (diagram,) = blocks("mermaid")
    states = set(re.findall(r"(\w+) -->", diagram)) | set(re.findall(r"--> (\w+)", diagram))
    assert states - {"[*]"} == set(typing.get_args(Phase))
