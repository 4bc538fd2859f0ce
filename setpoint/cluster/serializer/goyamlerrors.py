"""The error go-yaml v2 reports for a YAML text, from the error libyaml gave us.

kube-apiserver 1.32 reads YAML with sigs.k8s.io/yaml v1.4.0, whose ``goyaml.v2`` is a Go port
of libyaml: its scanner and parser refuse the same texts with the same problem strings
("mapping values are not allowed in this context", "did not find expected key"), so
PyYAML's libyaml binding (``CSafeLoader``, which ``decodelimits.check_yaml`` parses with)
gives the problem, and only go-yaml's wording around it is rebuilt here:

- ``decode.go`` ``parser.fail``: "yaml: line N: <problem>", where N is the problem mark's
  line counted from 0, plus one for a scanner error only ("Scanner errors don't iterate
  line before returning error"), or, when that is 0, the context mark's line from 0, and
  no "line N: " when both are 0. A parser error is thus reported a line early.
- ``decode.go`` ``parser.alias``/``decoder.alias``: "unknown anchor 'x' referenced", no line.
- the reader's problems ("invalid leading UTF-8 octet", "control characters are not
  allowed") have no mark: "yaml: <problem>".
"""

from __future__ import annotations

import re
from typing import Any

_UNDEFINED_ALIAS = re.compile(r"found undefined alias '(.*)'")


def go_yaml_error(exc: Exception) -> str:
    """go-yaml v2's error text ("yaml: ...") for ``exc``, a ``yaml.YAMLError`` raised while
    reading a YAML text; the first line of PyYAML's own text for anything go-yaml words
    differently and is not rebuilt here."""
    import yaml  # loaded with the YAML body that failed

    if isinstance(exc, yaml.reader.ReaderError):
        return f"yaml: {exc.reason}"
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        if isinstance(exc, yaml.scanner.ScannerError | yaml.parser.ParserError):
            return f"yaml: {_where(exc, scanner=isinstance(exc, yaml.scanner.ScannerError))}" \
                   f"{exc.problem}"
        alias = _UNDEFINED_ALIAS.fullmatch(exc.problem)
        if alias is not None:
            return f"yaml: unknown anchor '{alias.group(1)}' referenced"
    return str(exc).splitlines()[0]


def _where(exc: Any, *, scanner: bool) -> str:
    problem_line = exc.problem_mark.line if exc.problem_mark is not None else 0
    context_line = exc.context_mark.line if exc.context_mark is not None else 0
    if problem_line:
        line = problem_line + 1 if scanner else problem_line
    else:
        line = context_line
    return f"line {line}: " if line else ""
