"""goautoneg's ParseAccept (github.com/munnerz/goautoneg a7dc8b61c822 autoneg.go, vendored by
kube-apiserver 1.32): clause parsing, q, and the order its non-strict Less gives under Go's
insertion sort."""

from __future__ import annotations

import math

import pytest

from setpoint.machinery.acceptheader import parse_accept


def _order(header: str) -> list[str]:
    return [f"{c.type}/{c.subtype}" for c in parse_accept(header)]


@pytest.mark.parametrize(("header", "order"), [
    ("application/yaml;q=0.5, application/json", ["application/json", "application/yaml"]),
    ("application/json;q=0.1,application/yaml", ["application/yaml", "application/json"]),
    # Less ranks a concrete type before "*/*" whatever their q (then insertion sort keeps it)
    ("*/*;q=1, application/yaml;q=0.9", ["application/yaml", "*/*"]),
    ("application/*, application/json", ["application/json", "application/*"]),
    # equal clauses keep their order (insertion sort is stable)
    ("application/yaml, application/json", ["application/yaml", "application/json"]),
    # a bare type, or a media range with two slashes, is dropped; "*" alone is */*
    ("json, a/b/c, *", ["*/*"]),
])
def test_clauses_come_in_goautonegs_order(header: str, order: list[str]) -> None:
    assert _order(header) == order


def test_q_is_parse_float_of_the_raw_value() -> None:
    q = {c.subtype: c.q for c in parse_accept(
        "a/spaced;q= 0.5, a/word;q=high, a/zero;q=0, a/big;q=1e50, a/third;q=0.333")}
    assert q["spaced"] == 0.0 and q["word"] == 0.0 and q["zero"] == 0.0  # errors leave 0
    assert math.isinf(q["big"])  # ErrRange leaves ±Inf
    assert q["third"] != 0.333 and abs(q["third"] - 0.333) < 1e-7  # rounded to float32


def test_params_are_trimmed_and_q_is_not_one_of_them() -> None:
    (clause,) = parse_accept(" application/json ; as = Table;g=meta.k8s.io;novalue;q=0.5")
    assert (clause.type, clause.subtype, clause.q) == ("application", "json", 0.5)
    assert clause.params == (("as", "Table"), ("g", "meta.k8s.io"))
