"""``present``: a test's claim that an optional field of an API object is set.

Every field of a Kubernetes object is optional on the wire (and so in the models), but a
test knows which ones the server or the operator must have filled in. ``present(x)`` says
so where the test reads the field: it fails the test with the field's absence, and the
type checker narrows ``T | None`` to ``T`` from there on.
"""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def present(value: T | None, what: str = "value") -> T:
    """*value*, which must not be None (an AssertionError naming *what* if it is)."""
    if value is None:
        raise AssertionError(f"expected a {what}, got None")
    return value
