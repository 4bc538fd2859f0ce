"""goautoneg's ParseAccept (github.com/munnerz/goautoneg a7dc8b61c822 autoneg.go, vendored by
kube-apiserver 1.32): clause parsing, q, and the order its non-strict Less gives under Go's
insertion sort."""

from __future__ import annotations

import itertools
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


# Go's sort.Sort (src/sort/sort.go Sort: pdqsort with limit bits.Len(n); zsortinterface.go),
# which ParseAccept calls, is an insertion sort up to 12 elements only (pdqsort's
# maxInsertion); past it the non-strict Less orders clauses another way.
YAML_LOW, ANY = "application/yaml;q=0.5", "*/*"


def test_up_to_twelve_clauses_are_insertion_sorted() -> None:
    """A concrete q=0.5 clause first: each */* (q 1) is Less than it and passes it, so
    insertion sort moves it to the end."""
    header = ",".join([YAML_LOW] + [f"{ANY};i={i}" for i in range(1, 12)])
    got = parse_accept(header)
    assert [c.param("i") for c in got] == [str(i) for i in range(1, 12)] + [""]


def test_past_twelve_clauses_are_pdqsorted() -> None:
    """The same with 13 clauses, traced by hand through pdqsort (Go 1.23): choosePivot
    takes the median of 3, 6, 9 (all */*, no swap: increasing hint, pivot 6);
    partialInsertionSort stops at once (Less(1, 0) holds) and gives up (13 < 50); partition
    swaps the pivot to 0, the yaml clause from 6 to 1 and then to 0 (j stops at 1), so
    it leads and */*;i=6 follows it; the remaining 11 are insertion-sorted and equal."""
    header = ",".join([YAML_LOW] + [f"{ANY};i={i}" for i in range(1, 13)])
    got = parse_accept(header)
    assert [c.param("i") for c in got] == ["", "6", "2", "3", "4", "5", "1",
                                           "7", "8", "9", "10", "11", "12"]
    assert (got[0].type, got[0].subtype, got[0].q) == ("application", "yaml", 0.5)


@pytest.mark.parametrize(("header", "kept"), [
    # nextSplitElement: "type/" has nothing after its slash (dropped unless "*/"), and a
    # third part must be non-empty to drop "a/b/"
    ("a/, */, a/b/, a/b/c", ["*/*", "a/b"]),
])
def test_media_ranges_split_as_next_split_element(header: str, kept: list[str]) -> None:
    assert sorted(_order(header)) == sorted(kept)


# 0.5 + 2**-25 + 2**-61, exactly: just above the midpoint of the float32s 0.5 and
# 0.5 + 2**-24, and within half a float64 step of it
ABOVE_A_MIDPOINT = "0.5000000298023223881289933689942017736029811203479766845703125"


@pytest.mark.parametrize(("header", "order"), [
    # float64 has 0.30000001 > 0.3; float32 has them equal (0.300000011920929), and equal
    # clauses keep their order
    ("a/first;q=0.3, a/second;q=0.30000001", ["a/first", "a/second"]),
    # rounded to float64 first, the text would fall on the float32 midpoint and round to
    # even (0.5); ParseFloat rounds the decimal once, up to 0.50000006
    (f"a/first;q=0.5, a/second;q={ABOVE_A_MIDPOINT}", ["a/second", "a/first"]),
    # a text exactly on the midpoint is a tie: to even, 0.5
    ("a/first;q=0.5, a/second;q=0x1.000001p-1", ["a/first", "a/second"]),
])
def test_q_is_a_float32_rounded_once(header: str, order: list[str]) -> None:
    """autoneg.go ParseAccept: ``strconv.ParseFloat(sp[1], 32)``, the decimal rounded to
    the nearest float32 in one step (strconv/atof.go), so two q values float64 tells apart
    may be equal, and the order falls to the next rule (here: none, order kept)."""
    assert _order(header) == order


def test_a_parameter_needs_one_equals_sign_and_a_value() -> None:
    """ParseAccept: "k" and "k=" are dropped (nothing after the first "="), "k=v=w" too (a
    second "=" with text after it), "k=v=" is k=v."""
    (clause,) = parse_accept("x/y;a;b=;c=v=w;d=v=;e=1")
    assert clause.params == (("d", "v"), ("e", "1"))


@pytest.mark.parametrize(("raw", "q"), [
    ("0x1p-2", 0.25),  # ParseFloat takes a hex mantissa with its binary exponent
    ("0x1", 0.0),  # and refuses one without
    ("\uff11", 0.0),  # Go's digits are ASCII (a fullwidth one is no digit)
    ("+nan", 0.0),  # NaN takes no sign
    ("+0.5", 0.5),
])
def test_q_follows_parse_float_syntax(raw: str, q: float) -> None:
    (clause,) = parse_accept(f"a/b;q={raw}")
    assert clause.q == q


def test_a_header_as_large_as_the_server_takes_is_parsed() -> None:
    """The work is bounded: parsing is linear (a repeated part is parsed once) and the sort
    makes O(n log n) comparisons (pdqsort's heapsort fallback), so a 1 MiB header (the
    server's MaxHeaderBytes) of distinct clauses is sorted, not left to a quadratic
    insertion sort. The result is checked for goautoneg's order where Less is a strict
    order (q alone: all clauses concrete): q descending."""
    clause = len("a/b;q=0.000,")
    header = ",".join(f"a/b;q=0.{(i * 7919) % 1000:03d}"
                      for i in range((1 << 20) // clause))
    got = parse_accept(header)
    assert len(got) == header.count(",") + 1
    assert all(a.q >= b.q for a, b in itertools.pairwise(got))
