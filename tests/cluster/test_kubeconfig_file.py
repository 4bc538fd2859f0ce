"""The kubeconfig a started cluster writes is PyYAML's ``safe_dump`` of it, byte for byte.

``setpoint.cluster.authentication.kubeconfig`` writes the text itself when every value is
one PyYAML writes plain (so that a start need not import PyYAML: issue 12, start-up), and
lets PyYAML write it otherwise. Whichever way, the bytes are PyYAML's: checked here for the
values a cluster writes (a token from ``secrets.token_urlsafe``, a real CA, IPv4 and IPv6
URLs) and for arbitrary strings over the characters that decide PyYAML's quoting (YAML 1.1
booleans, nulls, numbers, timestamps, indicators, a trailing colon).
"""

from __future__ import annotations

import base64
import json
import secrets
from pathlib import Path

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from setpoint.cluster.authentication import kubeconfig
from setpoint.machinery.certificates import issue


def _pyyaml(server: str, ca_pem: bytes, token: str, namespace: str = "default") -> str:
    return yaml.safe_dump(kubeconfig._config(server, base64.b64encode(ca_pem).decode(), token,
                                             namespace), sort_keys=False)


def test_the_clusters_own_values_render_as_pyyaml_writes_them() -> None:
    ca_pem = issue(["127.0.0.1"], ca_name="setpoint-ca").ca_pem
    for server in ("https://127.0.0.1:6443", "https://localhost:40123", "https://[::1]:6443"):
        for _ in range(50):
            token = secrets.token_urlsafe(32)
            rendered = kubeconfig.render(server, ca_pem, token)
            assert rendered == _pyyaml(server, ca_pem, token)
            assert yaml.safe_load(rendered)["users"][0]["user"]["token"] == token


# the characters that decide whether PyYAML quotes a scalar, and values built from the
# words and shapes its resolvers know
_CHARS = "aAeEfFgGnNoOsStTuUxXyYzZbB0123456789_.:/+=-#[]{}!&*'\" ~,?|>%@`\t"
_SHAPES = ["yes", "No", "TRUE", "off", "null", "~", "1_000", "0x1F", "0o7", "017", "0b101",
           "1e5", "1.5e+3", ".inf", ".NaN", "-.5", "12:30:15", "2001-12-14", "2001-12-14t21:59",
           "=", "<<", "https://h:1", "a:", ":a", "-a", "- a", "a #b", "#a", "1gh", "+1", ""]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.text(_CHARS, max_size=12), st.sampled_from(_SHAPES)),
                min_size=3, max_size=3).map(lambda parts: parts[0] + parts[1] + parts[2]),
       st.sampled_from([*_SHAPES, "default", "kube-system"]))
def test_any_token_and_namespace_render_as_pyyaml_writes_them(token: str,
                                                              namespace: str) -> None:
    ca_pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    assert (kubeconfig.render("https://127.0.0.1:6443", ca_pem, token, namespace)
            == _pyyaml("https://127.0.0.1:6443", ca_pem, token, namespace))


def test_every_shape_pyyaml_resolves_renders_as_pyyaml_writes_it() -> None:
    ca_pem = b"-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    for token in [*_SHAPES, *(shape + "g" for shape in _SHAPES), *("g" + s for s in _SHAPES)]:
        assert (kubeconfig.render("https://127.0.0.1:6443", ca_pem, token)
                == _pyyaml("https://127.0.0.1:6443", ca_pem, token)), token


def test_a_token_that_starts_like_a_document_marker_is_quoted_as_pyyaml_quotes_it() -> None:
    """Emitter.analyze_scalar: a scalar starting with ``---`` or ``...`` is never written
    plain (one token of ``secrets.token_urlsafe`` in 262,144 starts with ``---``)."""
    ca_pem = issue(["127.0.0.1"], ca_name="setpoint-ca").ca_pem
    for token in ("---3Diabq1V4-uCV_j-J08e9_3sm1gQR69MML5T1AYI", "...ab", "--x", "-.-x"):
        rendered = kubeconfig.render("https://127.0.0.1:6443", ca_pem, token)
        assert rendered == _pyyaml("https://127.0.0.1:6443", ca_pem, token)
        assert yaml.safe_load(rendered)["users"][0]["user"]["token"] == token



def test_the_workloads_json_kubeconfig_is_the_same_document(tmp_path: Path) -> None:
    """``cluster up`` hands its workloads the kubeconfig as JSON (read without PyYAML:
    docs/benchmarks.md, Start-up, eighteenth pass): the document PyYAML reads from the YAML
    one, 0600 as that one."""
    ca_pem = issue(["127.0.0.1"], ca_name="setpoint-ca").ca_pem
    token = secrets.token_urlsafe(32)
    kubeconfig.write_json(tmp_path / "json", "https://127.0.0.1:6443", ca_pem, token)
    kubeconfig.write(tmp_path / "yaml", "https://127.0.0.1:6443", ca_pem, token)
    assert json.loads((tmp_path / "json").read_text()) == \
        yaml.safe_load((tmp_path / "yaml").read_text())
    assert (tmp_path / "json").stat().st_mode & 0o777 == 0o600
