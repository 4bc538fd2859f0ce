"""Generate setpoint/cluster/apiextensions/schema/celgrammar.json from cel-go's generated parser.

cel-go (v0.22.0, the version kube-apiserver 1.32 vendors) parses with the ANTLR 4 lexer and
parser generated from parser/gen/CEL.g4: parser/gen/cel_lexer.go and cel_parser.go hold each
recognizer's serialized ATN (the grammar's state machine, the same numbers in every ANTLR
target) and its token and rule names. The table keeps them, so that the server runs the very
state machine cel-go runs (with the ANTLR Python runtime) when it reports a rule's syntax
errors (``celsyntax.py``).

Usage: ``.venv/bin/python tools/cel_grammar.py --cel-go DIR [--out PATH]`` where DIR is a
checkout of github.com/google/cel-go at v0.22.0.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

OUT = (Path(__file__).resolve().parent.parent
       / "setpoint/cluster/apiextensions/schema/celgrammar.json")


def _strings(source: str, field: str) -> list[str]:
    """The Go string slice ``staticData.<field> = []string{...}``."""
    match = re.search(rf"staticData\.{field} = \[\]string\{{(.*?)\n  \}}", source, re.S)
    assert match, field
    return [json.loads(s) for s in re.findall(r'"(?:[^"\\]|\\.)*"', match.group(1))]


def _atn(source: str) -> list[int]:
    match = re.search(r"staticData\.serializedATN = \[\]int32\{(.*?)\}", source, re.S)
    assert match
    return [int(n) for n in re.findall(r"-?\d+", match.group(1))]


def recognizer(path: Path, *, lexer: bool) -> dict[str, object]:
    source = path.read_text()
    table: dict[str, object] = {
        "literalNames": _strings(source, "LiteralNames"),
        "symbolicNames": _strings(source, "SymbolicNames"),
        "ruleNames": _strings(source, "RuleNames"),
        "serializedATN": _atn(source),
    }
    if lexer:
        table["channelNames"] = _strings(source, "ChannelNames")
        table["modeNames"] = _strings(source, "ModeNames")
    return table


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--cel-go", type=Path, required=True)
    args.add_argument("--out", type=Path, default=OUT)
    options = args.parse_args()
    gen = options.cel_go / "parser" / "gen"
    table = {"source": "github.com/google/cel-go v0.22.0 parser/gen",
             "lexer": recognizer(gen / "cel_lexer.go", lexer=True),
             "parser": recognizer(gen / "cel_parser.go", lexer=False)}
    options.out.write_text(json.dumps(table, separators=(",", ":")) + "\n")


if __name__ == "__main__":
    main()
