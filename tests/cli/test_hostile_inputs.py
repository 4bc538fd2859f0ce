"""The command line given a broken kubeconfig or manifest: one ``Error:`` line, never a
traceback."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from setpoint.cli.main import cli

BROKEN = {
    "shape": b"clusters: 5\n",
    "encoding": b"\xff\xfe\x00",
    "server-scheme": (b"current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
                      b"clusters: [{name: c, cluster: {server: 'not a url'}}]\n"),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_a_broken_kubeconfig_is_one_error_line(tmp_path: Path, case: str) -> None:
    path = tmp_path / "kubeconfig"
    path.write_bytes(BROKEN[case])
    path.chmod(0o600)
    result = CliRunner().invoke(cli, ["metrics", "pod", "x", "--kubeconfig", str(path)])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        result.exception)
    assert result.output.startswith("Error: ") and result.output.count("\n") == 1, (
        result.output)


BROKEN_MANIFESTS = {
    "metadata-not-a-mapping": (b"kind: Deployment\nmetadata: 5\n",
                               "Deployment ?: metadata: Input should be a valid dictionary"),
    "containers-of-numbers": (
        b"kind: Deployment\napiVersion: apps/v1\nmetadata: {name: x}\n"
        b"spec: {template: {spec: {containers: [5]}}}\n",
        "Deployment x: spec.template.spec.containers.0: Input should be a valid dictionary"),
    "crd-names-a-number": (b"kind: CustomResourceDefinition\nmetadata: {name: c}\n"
                           b"spec: {names: 3}\n",
                           "CustomResourceDefinition c: spec.names: Input should be"),
    "custom-resource-labels-a-list": (b"kind: Widget\nmetadata: {name: w, labels: [1]}\n",
                                      "Widget w: metadata.labels: Input should be"),
    "not-utf-8": (b"\xff\xfe", "not UTF-8 text"),
}


@pytest.mark.parametrize("case", sorted(BROKEN_MANIFESTS))
def test_a_manifest_not_of_its_kinds_shape_is_one_error_line(tmp_path: Path, case: str) -> None:
    """``setpoint check`` reads manifests by kind: one whose fields are not of the kind's
    types is refused with the field's path (as kubectl's decoding refuses it), before any
    check reads it."""
    text, message = BROKEN_MANIFESTS[case]
    path = tmp_path / "operator.yaml"
    path.write_bytes(text)
    result = CliRunner().invoke(cli, ["check", str(path)])
    assert result.exit_code == 1, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        result.exception)
    assert result.output == f"Error: {path}: {message}" + result.output.split(message)[1]
    assert result.output.count("\n") == 1, result.output


@pytest.mark.parametrize(("text", "message"), [
    (b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n data: {}\n",
     "line 5, column 2: expected <block end>, but found '<block mapping start>'"),
    (b"a: [\n", "line 2, column 1: expected the node content, but found '<stream end>'"),
], ids=["indentation", "unclosed"])
def test_a_manifest_that_is_no_yaml_is_one_line_naming_file_and_line(
        tmp_path: Path, text: bytes, message: str) -> None:
    """A typo in a manifest's indentation: PyYAML's five-line text with a caret, naming
    "<unicode string>" rather than the file. One line now, the file, line and column, as
    kubectl says "error parsing FILE: ... yaml: line 5: ..."."""
    path = tmp_path / "operator.yaml"
    path.write_bytes(text)
    result = CliRunner().invoke(cli, ["check", str(path)])
    assert result.exit_code == 1, result.output
    assert result.output == f"Error: {path}: not YAML: {message}\n"
