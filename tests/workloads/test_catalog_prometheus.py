"""The image catalog's Prometheus family: the images' default arguments (their Dockerfiles'
ENTRYPOINT/CMD/VOLUME: prometheus/prometheus Dockerfile, prometheus/alertmanager
Dockerfile, prometheus/blackbox_exporter Dockerfile) become the Debian programs' arguments,
listening on the pod's address only and writing nowhere outside the container's directory
or its volumes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from setpoint.workloads.kubelet.process.catalog import ImageCatalog, LaunchContext

POD_IP = "127.16.0.9"


def argv(image: str, tmp_path: Path, args: tuple[str, ...] = (),
         mounts: tuple[str, ...] = ()) -> list[str]:
    entry = ImageCatalog().lookup(image)
    assert entry is not None, image
    return entry.argv([], list(args), LaunchContext(POD_IP, tmp_path, mounts=mounts))


@pytest.mark.parametrize("image", ["prom/prometheus:v2.42.0",
                                   "quay.io/prometheus/prometheus:v2.42.0"])
def test_prometheus_image_defaults_keep_storage_in_the_container(image: str,
                                                                 tmp_path: Path) -> None:
    out = argv(image, tmp_path)
    assert out[0] == (shutil.which("prometheus") or "prometheus")
    assert "--config.file=/etc/prometheus/prometheus.yml" in out
    # VOLUME /prometheus, not mounted: an anonymous volume of the container's own
    storage = tmp_path / "volumes" / "prometheus"
    assert f"--storage.tsdb.path={storage}" in out and storage.is_dir()
    assert "--web.console.libraries=/etc/prometheus/console_libraries" in out
    assert f"--web.listen-address={POD_IP}:9090" in out


def test_prometheus_mounted_paths_are_left_to_the_volumes(tmp_path: Path) -> None:
    """What the monitoring operator passes: config and storage on mounted volumes."""
    args = ("--config.file=/etc/prometheus/config_out/prometheus.env.yaml",
            "--storage.tsdb.path=/prometheus", "--web.listen-address=0.0.0.0:9090")
    out = argv("prom/prometheus:v2.42.0", tmp_path, args,
               ("/prometheus", "/etc/prometheus/config_out"))
    assert out[1:] == ["--config.file=/etc/prometheus/config_out/prometheus.env.yaml",
                       "--storage.tsdb.path=/prometheus",
                       f"--web.listen-address={POD_IP}:9090"]


def test_alertmanager_gossips_and_serves_on_the_pod_address(tmp_path: Path) -> None:
    out = argv("quay.io/prometheus/alertmanager:v0.25.0", tmp_path)
    assert out[0] == (shutil.which("prometheus-alertmanager") or "prometheus-alertmanager")
    assert "--config.file=/etc/prometheus/alertmanager.yml" in out
    assert f"--storage.path={tmp_path / 'volumes' / 'alertmanager'}" in out
    assert f"--web.listen-address={POD_IP}:9093" in out
    assert f"--cluster.listen-address={POD_IP}:9094" in out
    peers = argv("prom/alertmanager:v0.25.0", tmp_path,
                 ("--cluster.listen-address=0.0.0.0:9094", "--cluster.peer=a-1.x:9094"))
    assert f"--cluster.listen-address={POD_IP}:9094" in peers
    assert "--cluster.peer=a-1.x:9094" in peers


def test_blackbox_exporter_uses_the_packaged_configuration(tmp_path: Path) -> None:
    out = argv("prom/blackbox-exporter:v0.23.0", tmp_path)
    assert out[1:] == ["--config.file=/etc/prometheus/blackbox.yml",
                       f"--web.listen-address={POD_IP}:9115"]
    mounted = argv("prom/blackbox-exporter:v0.23.0", tmp_path,
                   ("--config.file=/etc/blackbox_exporter/config.yml",),
                   ("/etc/blackbox_exporter",))
    assert mounted[1] == "--config.file=/etc/blackbox_exporter/config.yml"
