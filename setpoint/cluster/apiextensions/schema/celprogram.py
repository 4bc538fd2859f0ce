"""CEL programs: a rule's text parsed with cel-go's grammar and compiled with the Kubernetes
CEL libraries (apiserver pkg/cel/environment/base.go), and the errors of doing so.

The checker (celcheck.py) and the rules of custom resources (cel.py) and of admission
(admission/policy, admission/webhook) all compile through here, so the environment is built
once and the same functions are bound everywhere."""

from __future__ import annotations

import functools
import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import celpy
import lark
from celpy.celparser import CELParser

from . import celdeep, celformat, celnesting, celoptional, celshape
from .cellib import FUNCTIONS
from .celruntime import KubernetesRunner

# what celpy's parser produces: branches of rules, leaves of tokens
ParseTree = lark.Tree[lark.Token]


class CheckError(Exception):
    """A rule that does not compile; ``detail`` is worded like cel-go's ``ERROR: ...``."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


class ProgramError(CheckError):
    """A rule that compiles but whose program cannot be built (cel-go's ``env.Program``
    error): a constant find/findAll pattern Go's regexp refuses."""


@functools.cache
def _environment() -> celpy.Environment:
    """The CEL environment, built on first use: building it compiles celpy's grammar
    (0.1-0.5 s of CPU), which a server whose CRDs declare no rules never needs; it used to
    be paid on the event loop by the first CRD created (docs/benchmarks.md, start-up).
    celpy's environment builds celpy's own parser for its ``compile``, which nothing here
    calls (rules are parsed by celoptional's superset of that grammar): it is handed the
    parser already built (or loaded from the user's cache) instead of building a second."""
    if CELParser.CEL_PARSER is None:
        CELParser.CEL_PARSER = celoptional.parser()
    return celpy.Environment(runner_class=KubernetesRunner)


_RUNTIME_FUNCTIONS: dict[str, Any] = {
    **FUNCTIONS,
    **celoptional.FUNCTIONS,
    **celformat.FUNCTIONS,
    "dyn": lambda v: v,
}


# cel-go parser.go NewParser's defaults, which Kubernetes keeps (apiserver
# pkg/cel/environment/base.go sets no parser option): an expression of more code points
# is refused before it is parsed, and no grammar rule may nest deeper (celsyntax.py)
EXPRESSION_SIZE_CODE_POINT_LIMIT = 100_000
MAX_RECURSION_DEPTH = celshape.MAX_RECURSION_DEPTH
# The Python ANTLR runtime takes 5-30 us a code point of ASCII and about 200 us of any
# other (its lexer's DFA caches edges for ASCII only): run on every rule, one CRD of
# 100,000-code-point rules would hold the server's loop for minutes. cel-go's own parser
# (celsyntax.py) runs only on rules of at most this many code points; longer ones are
# measured by celnesting's linear scan and parsed by celpy alone.
CEL_GO_SYNTAX_CHECK_CODE_POINTS = 2_000
# how close to the recursion limit celnesting's count sends a short rule through cel-go's
# parser (the count is exact on what the grammar takes; on what it does not, ANTLR's error
# recovery decides which rules it still opens)
_NEAR_RECURSION_LIMIT = 10
# a rule past the recursion limit: cel-go's parse ends there, so the ANTLR pass (for the
# syntax errors reported before it) reads only the text up to that point, run when that
# costs at most this many ASCII code points' worth (another code point counting as 20)
_ANTLR_PREFIX_BUDGET = 20_000
_NON_ASCII_WEIGHT = 20


def _antlr_cost(text: str) -> int:
    return len(text) + (_NON_ASCII_WEIGHT - 1) * (len(text) - len(text.encode("ascii", "ignore")))


def _cel_go_parse_errors(text: str) -> None:
    from . import celsyntax  # (the ANTLR runtime, loaded on first use)

    reported = celsyntax.syntax_errors(text)
    if reported:
        raise CheckError(celsyntax.display(text, reported))


# A CRD's write compiles each rule to validate the definition, and serving it compiles the
# same rules again (once a schema that holds them): the latest trees are kept, bounded in
# their rules' total size, so a long rule is parsed once. A tree is never changed after its
# parse (the checker and evaluator only read it), so one serves every compile of its text.
_PARSED_CODE_POINTS = 400_000
_PARSED_TREES = 1_024
_parsed: OrderedDict[str, ParseTree] = OrderedDict()
_parsed_size = [0]  # the code points of the texts in _parsed
_parsed_lock = threading.Lock()


def parse(text: str) -> ParseTree:
    """``_parse(text)``, the tree of a recent parse of the same text when there is one."""
    with _parsed_lock:
        tree = _parsed.get(text)
        if tree is not None:
            _parsed.move_to_end(text)
            return tree
    tree = _parse(text)
    with _parsed_lock:
        if text not in _parsed:
            _parsed[text] = tree
            _parsed_size[0] += len(text)
        while len(_parsed) > 1 and (_parsed_size[0] > _PARSED_CODE_POINTS
                                    or len(_parsed) > _PARSED_TREES):
            oldest, _ = _parsed.popitem(last=False)
            _parsed_size[0] -= len(oldest)
    return tree


def _parse(text: str) -> ParseTree:
    """The parse tree of ``text``; CheckError worded as cel-go's syntax errors: every one
    its ANTLR parser reports (celsyntax.py), in its order, and its parse-time limits
    (parser.go ``Parse``): the expression's size in code points, the nesting of its rules."""
    if len(text) > EXPRESSION_SIZE_CODE_POINT_LIMIT:  # (Python's len counts code points)
        raise CheckError("ERROR: <input>:-1:0: expression code point size exceeds limit: "
                         f"size: {len(text)}, limit {EXPRESSION_SIZE_CODE_POINT_LIMIT}")
    short = len(text) <= CEL_GO_SYNTAX_CHECK_CODE_POINTS
    nesting, past_limit_at = celnesting.listener_depth(text, MAX_RECURSION_DEPTH)
    if past_limit_at >= 0 and _antlr_cost(text[:past_limit_at]) > _ANTLR_PREFIX_BUDGET:
        # (too far in to read with ANTLR: without the syntax errors reported before it)
        raise CheckError("ERROR: <input>:-1:0: expression recursion limit exceeded: "
                         f"{MAX_RECURSION_DEPTH}")
    if past_limit_at >= 0 or (short and nesting > MAX_RECURSION_DEPTH - _NEAR_RECURSION_LIMIT):
        _cel_go_parse_errors(text)
    try:
        tree = celoptional.parse_unexpanded(text)
    except Exception as exc:  # celpy raises CELParseError with the caret drawing
        if short:  # cel-go's words, where ANTLR's time is bounded
            _cel_go_parse_errors(text)
        # what cel-go's grammar takes and celpy's does not: celpy's words
        line = getattr(exc, "line", None) or 1
        column = getattr(exc, "column", None) or 1
        src = text.splitlines()[line - 1] if text.splitlines() else text
        raise CheckError(f"ERROR: <input>:{line}:{column}: Syntax error: "
                         f"{str(exc).splitlines()[0] if str(exc) else 'invalid syntax'}\n"
                         f" | {src}\n | {'.' * (column - 1)}^") from exc
    try:
        deepest = celshape.shape(tree)
    except celshape.VisitorDepthExceeded as exc:
        raise CheckError(f"ERROR: <input>:-1:0: {exc}") from None
    expanded = celdeep.run_if(deepest > celdeep.SHALLOW_DEPTH, celoptional.expand, tree)
    setattr(expanded, _DEEP, celshape.depth(expanded) > celdeep.SHALLOW_DEPTH)
    return expanded


# the attribute by which parse marks its tree as needing the deep worker or not: a rule's
# tree is checked and programmed after its parse, and its depth is measured only once
_DEEP = "setpoint_deep"


def is_deep(tree: ParseTree) -> bool:
    """Whether walking ``tree`` (checking, evaluating) needs the deep worker (celdeep.py)."""
    known = getattr(tree, _DEEP, None)
    if known is None:
        known = celshape.depth(tree) > celdeep.SHALLOW_DEPTH
        setattr(tree, _DEEP, known)
    return bool(known)


class DeepProgram:
    """A program of a deep tree: each evaluation runs on the deep worker."""

    def __init__(self, runner: Any) -> None:
        self.runner = runner

    def evaluate(self, activation: Any) -> Any:
        return celdeep.run(self.runner.evaluate, activation)

    def evaluate_costed(self, activation: Any) -> tuple[Any, Exception | None, int]:
        result: tuple[Any, Exception | None, int] = celdeep.run(
            self.runner.evaluate_costed, activation)
        return result


def program(tree: ParseTree) -> Any:
    """The CEL program of an already parsed (and checked) ``tree``."""
    return _program(tree, _RUNTIME_FUNCTIONS)


def _program(tree: ParseTree, functions: dict[str, Any]) -> Any:
    runner = _environment().program(tree, functions=functions)
    return DeepProgram(runner) if is_deep(tree) else runner


@functools.lru_cache(maxsize=512)
def compile_expression(text: str) -> Any:
    """A CEL program for ``text`` (compiled once per distinct expression), with the
    Kubernetes CEL libraries; CheckError worded as cel-go's when it does not parse."""
    return program(parse(text))


def compile_with_library(text: str, functions: Mapping[str, Any]) -> Any:
    """A CEL program for ``text`` with the Kubernetes CEL libraries and a caller's own
    functions (the admission plugins' authorizer library); CheckError as compile_expression's.
    Not cached here: the caller keeps its programs."""
    return _program(parse(text), {**_RUNTIME_FUNCTIONS, **functions})
