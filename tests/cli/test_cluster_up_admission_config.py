"""``setpoint cluster up --admission-control-config-file``: kube-apiserver's flag of the same
name (k8s.io/apiserver pkg/admission/config.go ``ReadAdmissionConfiguration``), here the
PodSecurity plugin's PodSecurityConfiguration (k8s.io/pod-security-admission
admission/api/load/load.go): a file it cannot use stops the start with one line naming
what is wrong; a good one configures the plugin, as real kubectl sees."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from tests.cli.test_cluster_up_mistakes import cluster_up
from tests.conftest import kubectl_path

CONFIG = """\
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: PodSecurity
  configuration:
    apiVersion: pod-security.admission.config.k8s.io/v1
    kind: PodSecurityConfiguration
    defaults: {{enforce: {level}}}
    exemptions: {{namespaces: [kube-system]}}
"""


def test_a_configuration_it_cannot_use_is_one_line(tmp_path: Path) -> None:
    config = tmp_path / "admission.yaml"
    config.write_text(CONFIG.format(level="strict"))
    result = cluster_up(tmp_path, "--memory", "--admission-control-config-file", str(config))
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        f'error: --admission-control-config-file: {config}: couldn\'t init admission plugin '
        '"PodSecurity": defaults.enforce: Invalid value: "strict": must be one of '
        "privileged, baseline, restricted"], result.stderr
    result = cluster_up(tmp_path, "--memory", "--admission-control-config-file",
                        str(tmp_path / "absent.yaml"))
    assert (result.returncode, result.stderr.strip().splitlines()) == (1, [
        "error: --admission-control-config-file: unable to read admission control "
        f'configuration from "{tmp_path / "absent.yaml"}" [No such file or directory]: pass '
        "a readable file"]), result.stderr


def test_a_file_that_is_not_yaml_is_one_line_with_line_and_column(tmp_path: Path) -> None:
    """ReadAdmissionConfiguration (apiserver pkg/admission/config.go) returns the decoder's
    "error converting YAML to JSON: yaml: line N: ..." and options/admission.go wraps it as
    "failed to read plugin config: %v": one line, not PyYAML's five; the file and the
    column added."""
    config = tmp_path / "admission.yaml"
    config.write_text("apiVersion: apiserver.config.k8s.io/v1\nkind: AdmissionConfiguration\n"
                      "plugins:\n  - name: PodSecurity\n   path: [\n")
    result = cluster_up(tmp_path, "--memory", "--admission-control-config-file", str(config))
    assert (result.returncode, result.stderr.splitlines()) == (1, [
        f'error: --admission-control-config-file: failed to read plugin config from "{config}": '
        "error converting YAML to JSON: yaml: line 5, column 4: expected <block end>, but "
        "found '<block mapping start>'"]), result.stderr


def test_the_configured_defaults_are_enforced(tmp_path: Path) -> None:
    config = tmp_path / "admission.yaml"
    config.write_text(CONFIG.format(level="baseline"))
    kubeconfig = tmp_path / "kubeconfig"
    env = {**os.environ, "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "xdg")}
    env.pop("KUBECONFIG", None)
    process = subprocess.Popen(
        [sys.executable, "-m", "setpoint.cli.main", "cluster", "up", "--memory", "--port", "0",
         "--no-workloads", "--kubeconfig", str(kubeconfig),
         "--admission-control-config-file", str(config)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert process.stdout is not None
        lines: list[str] = []
        while "ready\n" not in lines:
            line = process.stdout.readline()
            assert line, f"cluster up ended: {lines}"
            lines.append(line)
        kubectl = [kubectl_path(), "--kubeconfig", str(kubeconfig), "--cache-dir",
                   str(tmp_path / "cache")]
        result = subprocess.run(
            [*kubectl, "run", "root", "--image=busybox:1.36", "--restart=Never",
             "--overrides", '{"spec": {"containers": [{"name": "root", "image": '
             '"busybox:1.36", "securityContext": {"privileged": true}}]}}'],
            capture_output=True, text=True, env=env, timeout=60)
        assert (result.returncode, result.stderr.strip()) == (1, (
            'Error from server (Forbidden): pods "root" is forbidden: violates PodSecurity '
            '"baseline:latest": privileged (container "root" must not set '
            "securityContext.privileged=true)")), result
        # the exempt namespace takes it
        result = subprocess.run([*kubectl, "-n", "kube-system", "run", "root",
                                 "--image=busybox:1.36", "--restart=Never", "--overrides",
                                 '{"spec": {"containers": [{"name": "root", "image": '
                                 '"busybox:1.36", "securityContext": {"privileged": true}}]}}'],
                                capture_output=True, text=True, env=env, timeout=60)
        assert result.returncode == 0, result
    finally:
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=60)
