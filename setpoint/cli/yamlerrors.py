"""One line for a configuration file that is not YAML, as kube-apiserver prints one.

PyYAML's message spans five lines (the context, a caret under the text, the problem);
Go's YAML decoder says ``yaml: line 5: did not find expected key`` in one. The readers
under ``setpoint.cluster`` keep PyYAML's error as the context of theirs; the CLI words
it here, adding the column, which PyYAML knows and Go's does not.
"""

from __future__ import annotations

from typing import Any


def yaml_cause(exc: BaseException) -> Any | None:
    """The PyYAML error ``exc`` was raised while handling, if any (``raise ... from None``
    hides the context from tracebacks but keeps it)."""
    import yaml

    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, yaml.YAMLError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def one_line(error: Any) -> str:
    """``yaml: line L, column C: problem`` (Go's ``yaml: line L: problem`` and the column)."""
    mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
    problem = getattr(error, "problem", None) or str(error).splitlines()[0]
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return f"yaml: {where}{problem}"


def reworded(exc: BaseException) -> str:
    """``exc``'s message with the PyYAML error it embeds put on one line."""
    error = yaml_cause(exc)
    message = str(exc)
    if error is None:
        return message
    return message.replace(str(error), one_line(error)).replace("\n", " ")
