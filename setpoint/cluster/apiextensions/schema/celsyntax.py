"""Every syntax error of a CEL expression, as cel-go's parser reports them.

cel-go (v0.22.0) parses with an ANTLR 4 lexer and parser generated from parser/gen/CEL.g4, with
ANTLR's DefaultErrorStrategy: on an error it reports and recovers (deleting or conjuring a
token, or skipping to what may follow) and goes on, so one expression may report many
errors. Here the same recognizers run: their serialized ATNs and names, taken from
parser/gen/cel_lexer.go and cel_parser.go (``celgrammar.json``, tools/cel_grammar.py), driven
by the ANTLR Python runtime's lexer, prediction and error strategy, the rules walked as the
generated parser walks them (a loop's ``sync`` at its loop-back state, as the generated
code's ``setState(loopBack); sync``). cel-go's parser.go then shapes what is reported:

- ``SyntaxError``: every report is ``Syntax error: <ANTLR's message>`` at the offending
  token's line and column; "no viable alternative at input '.true'" (or false, null) becomes
  "mismatched input 'true' expecting IDENTIFIER"; past 100 reports, one more saying "More
  than 100 syntax errors" ends the parse.
- ``recoveryLimitErrorStrategy``: the 31st recovery reports "error recovery attempt limit
  exceeded: 30" and ends the parse; a recovery consuming more than 256 tokens ends it with
  an error at no location ("error recovery token lookahead limit exceeded: 256").
- ``recursionListener``: a parse listener counting, per grammar rule, how deeply the rule
  is entered (a left-recursive rule's every operator entering it once more, as ANTLR's
  ``PushNewRecursionContext`` does, after the generated code's ``TriggerExitRuleEvent``
  has left the previous operand: a chain of operators stays at its first operand's depth);
  past 250 the parse ends with "expression recursion limit exceeded: 250" at no location,
  the errors reported before it kept.

Loaded only when celpy's parser refuses an expression, when an expression may nest past
the recursion limit (celprogram.parse), or when a CRD's write adds or changes a rule
(cel.compile_rule): a server that only serves objects never imports the ANTLR runtime.
"""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

from antlr4 import CommonTokenStream, InputStream, Lexer, Parser, Token
from antlr4.atn.ATN import ATN
from antlr4.atn.ATNDeserializer import ATNDeserializer
from antlr4.atn.ATNState import ATNState, LoopEndState, StarLoopEntryState
from antlr4.atn.LexerATNSimulator import LexerATNSimulator
from antlr4.atn.ParserATNSimulator import ParserATNSimulator
from antlr4.atn.Transition import Transition
from antlr4.dfa.DFA import DFA
from antlr4.error.ErrorListener import ErrorListener
from antlr4.error.Errors import FailedPredicateException, RecognitionException
from antlr4.error.ErrorStrategy import DefaultErrorStrategy
from antlr4.ParserRuleContext import InterpreterRuleContext, ParserRuleContext
from antlr4.PredictionContext import PredictionContextCache
from antlr4.tree.Tree import ParseTreeListener

from .celprogram import MAX_RECURSION_DEPTH
from .celsource import format_error

_GRAMMAR = Path(__file__).with_name("celgrammar.json")

# parser.go's defaults (cel-go's parser options; Kubernetes sets none of them)
ERROR_REPORTING_LIMIT = 100
ERROR_RECOVERY_LIMIT = 30
LOOKAHEAD_TOKEN_LIMIT = 256
# common/errors.go NewErrors: maxErrorsToReport
_MAX_ERRORS_TO_REPORT = 100

_RESERVED = re.compile(r"no viable alternative at input '.(true|false|null)'")


@functools.cache
def _tables() -> tuple[dict[str, Any], ATN, dict[str, Any], ATN]:
    grammar = json.loads(_GRAMMAR.read_text())
    lexer, parser = grammar["lexer"], grammar["parser"]
    return (lexer, ATNDeserializer().deserialize(lexer["serializedATN"]),
            parser, ATNDeserializer().deserialize(parser["serializedATN"]))


class _Stop(Exception):
    """The parse ends here (parser.go's panics: too many errors, the recovery limits)."""


class _CELLexer(Lexer):
    def __init__(self, text: str) -> None:
        super().__init__(InputStream(text))
        names, atn, _, _ = _tables()
        self.ruleNames = names["ruleNames"]
        self.literalNames = names["literalNames"]
        self.symbolicNames = names["symbolicNames"]
        self.channelNames = names["channelNames"]
        self.modeNames = names["modeNames"]
        self.grammarFileName = "CEL.g4"
        self.atn = atn
        self._interp = LexerATNSimulator(self, atn, _lexer_dfa(), PredictionContextCache())


@functools.cache
def _lexer_dfa() -> list[DFA]:
    atn = _tables()[1]
    return [DFA(state, i) for i, state in enumerate(atn.decisionToState)]


@functools.cache
def _parser_dfa() -> list[DFA]:
    atn = _tables()[3]
    return [DFA(state, i) for i, state in enumerate(atn.decisionToState)]


class _Strategy(DefaultErrorStrategy):
    """parser.go recoveryLimitErrorStrategy: DefaultErrorStrategy with cel-go's two limits
    (the recoveries counted, and the tokens each consumes: its lookaheadConsumer)."""

    def __init__(self) -> None:
        super().__init__()
        self.attempts = 0

    def recover(self, recognizer: Any, e: RecognitionException) -> None:
        self._check_attempts(recognizer)
        recognizer.lookahead = 0
        try:
            super().recover(recognizer, e)
        finally:
            recognizer.lookahead = -1

    def recoverInline(self, recognizer: Any) -> Token:
        self._check_attempts(recognizer)
        recognizer.lookahead = 0
        base: Any = DefaultErrorStrategy
        try:
            token: Token = base.recoverInline(self, recognizer)
        finally:
            recognizer.lookahead = -1
        return token

    def _check_attempts(self, recognizer: Any) -> None:
        if self.attempts == ERROR_RECOVERY_LIMIT:
            self.attempts += 1
            recognizer.notifyErrorListeners(
                f"error recovery attempt limit exceeded: {ERROR_RECOVERY_LIMIT}", None, None)
            raise _Stop
        self.attempts += 1


class _CELParser(Parser):
    """The CEL parser of cel_parser.go, its rules walked over the ATN as the generated
    code walks them (Java's ParserInterpreter, with the generated code's loop syncs)."""

    def __init__(self, tokens: CommonTokenStream) -> None:
        super().__init__(tokens)
        _, _, names, atn = _tables()
        self.ruleNames = names["ruleNames"]
        self.literalNames = names["literalNames"]
        self.symbolicNames = names["symbolicNames"]
        self.grammarFileName = "CEL.g4"
        self.atn = atn
        self._interp = ParserATNSimulator(self, atn, _parser_dfa(), PredictionContextCache())
        self._errHandler = _Strategy()
        self._parents: list[tuple[Any, int]] = []
        self.lookahead = -1  # tokens the recovery under way consumed; -1 outside one
        self._looped = False  # a loop's iteration ended, synced at its loop-back state

    def consume(self) -> Any:
        if self.lookahead >= 0:  # parser.go lookaheadConsumer
            if self.lookahead >= LOOKAHEAD_TOKEN_LIMIT:
                raise _LookaheadLimit
            self.lookahead += 1
        base: Any = Parser
        return base.consume(self)

    def parse_start(self) -> None:
        """ParserInterpreter.parse of the rule ``start``."""
        atn = self.atn
        handler: Any = self._errHandler
        root = InterpreterRuleContext(None, ATNState.INVALID_STATE_NUMBER, 0)  # type: ignore[arg-type]
        self.enterRule(root, atn.ruleToStartState[0].stateNumber, 0)
        while True:
            p: Any = atn.states[self.state]
            ctx: Any = self._ctx
            if p.stateType == ATNState.RULE_STOP:
                if ctx.invokingState == -1:
                    self.exitRule()
                    return
                self._rule_stop(p)
                continue
            try:
                self._visit(p)
            except RecognitionException as e:
                self.state = atn.ruleToStopState[p.ruleIndex].stateNumber
                self._ctx.exception = e  # type: ignore[union-attr]
                handler.reportError(self, e)
                handler.recover(self, e)

    def _visit(self, p: Any) -> None:
        """Java's ParserInterpreter.visitState."""
        handler: Any = self._errHandler
        ctx: Any = self._ctx
        stream: Any = self._input
        edge = 1
        if p.stateType == ATNState.STAR_LOOP_BACK:
            # the generated code syncs a (...)* loop at its loop-back state after each
            # iteration (the entry decision below then predicts without a sync)
            handler.sync(self)
            self._looped = True
        elif len(p.transitions) > 1:
            if not (isinstance(p, StarLoopEntryState) and self._looped):
                handler.sync(self)
            self._looped = False
            edge = self._interp.adaptivePredict(stream, p.decision, ctx)
        transition: Any = p.transitions[edge - 1]
        kind = transition.serializationType
        if kind == Transition.EPSILON:
            if isinstance(p, StarLoopEntryState) and p.isPrecedenceDecision \
                    and not isinstance(transition.target, LoopEndState):
                # the generated code (gen/cel_parser.go relation, calc, member) ends the
                # rule's context for the listeners before each operator pushes a new one,
                # so a chain of operators never nests deeper than its first operand
                self.triggerExitRuleEvent()
                parent, invoking = self._parents[-1]
                self.pushNewRecursionContext(
                    InterpreterRuleContext(parent, invoking, p.ruleIndex),
                    self.atn.ruleToStartState[p.ruleIndex].stateNumber, p.ruleIndex)
        elif kind == Transition.ATOM:
            self.match(transition.label_)
        elif kind in (Transition.RANGE, Transition.SET, Transition.NOT_SET):
            if not transition.matches(stream.LA(1), Token.MIN_USER_TOKEN_TYPE, 0xFFFF):
                handler.recoverInline(self)
            self.matchWildcard()
        elif kind == Transition.WILDCARD:
            self.matchWildcard()
        elif kind == Transition.RULE:
            target = transition.target
            child = InterpreterRuleContext(ctx, p.stateNumber, target.ruleIndex)
            if target.isPrecedenceRule:
                self._parents.append((ctx, p.stateNumber))
                self.enterRecursionRule(child, target.stateNumber, target.ruleIndex,
                                        transition.precedence)
            else:
                self.enterRule(child, target.stateNumber, target.ruleIndex)
        elif kind == Transition.PRECEDENCE and not self.precpred(ctx, transition.precedence):
            raise FailedPredicateException(self, f"precpred(_ctx, {transition.precedence})")
        self.state = transition.target.stateNumber

    def _rule_stop(self, p: Any) -> None:
        """Java's ParserInterpreter.visitRuleStopState."""
        if self.atn.ruleToStartState[p.ruleIndex].isPrecedenceRule:
            parent, invoking = self._parents.pop()
            self.unrollRecursionContexts(parent)
            self.state = invoking
        else:
            self.exitRule()
        rule_transition: Any = self.atn.states[self.state].transitions[0]
        self.state = rule_transition.followState.stateNumber


class _LookaheadLimit(Exception):
    """parser.go lookaheadLimitError."""


class _RecursionLimit(Exception):
    """parser.go recursionError."""


class _RecursionListener(ParseTreeListener):
    """parser.go recursionListener: each rule's depth of entry, at most MAX_RECURSION_DEPTH."""

    def __init__(self) -> None:
        self.depths: dict[int, int] = {}

    # (an InterpreterRuleContext keeps its rule in ``ruleIndex``; its getRuleIndex is -1)
    def enterEveryRule(self, ctx: ParserRuleContext) -> None:
        rule: int = getattr(ctx, "ruleIndex", -1)
        depth = self.depths.get(rule, 0) + 1
        self.depths[rule] = depth
        if depth > MAX_RECURSION_DEPTH:
            raise _RecursionLimit

    def exitEveryRule(self, ctx: ParserRuleContext) -> None:
        rule: int = getattr(ctx, "ruleIndex", -1)
        if self.depths.get(rule, 0) > 0:
            self.depths[rule] -= 1


class _Reports(ErrorListener):
    """parser.go ``SyntaxError``: each report as cel-go words and counts it."""

    def __init__(self) -> None:
        self.errors: list[tuple[int, int, str]] = []  # (line, 1-based column, message)

    def syntaxError(self, recognizer: Any, offendingSymbol: Any, line: int,
                    column: int, msg: str, e: Any) -> None:
        if "no viable alternative" in msg:
            msg = _RESERVED.sub(r"mismatched input '\1' expecting IDENTIFIER", msg)
        if len(self.errors) < ERROR_REPORTING_LIMIT:
            self.errors.append((line, column + 1, f"Syntax error: {msg}"))
            return
        self.errors.append((line, column + 1,
                            f"Syntax error: More than {ERROR_REPORTING_LIMIT} syntax errors"))
        raise _Stop


def syntax_errors(text: str) -> list[tuple[int, int, str]]:
    """The errors cel-go's parser reports for ``text``, in the order reported: (line,
    column from 1, message); (-1, 0, message) for one at no location."""
    reports = _Reports()
    lexer = _CELLexer(text)
    lexer.removeErrorListeners()
    lexer.addErrorListener(reports)
    parser = _CELParser(CommonTokenStream(lexer))
    parser.removeErrorListeners()
    parser.addErrorListener(reports)
    parser.addParseListener(_RecursionListener())
    try:
        parser.parse_start()
    except _Stop:
        pass
    except _LookaheadLimit:
        reports.errors.append((-1, 0, "error recovery token lookahead limit exceeded: "
                                      f"{LOOKAHEAD_TOKEN_LIMIT}"))
    except _RecursionLimit:
        reports.errors.append((-1, 0, "expression recursion limit exceeded: "
                                      f"{MAX_RECURSION_DEPTH}"))
    return reports.errors


class _At:
    """A place as format_error reads it."""

    def __init__(self, line: int, column: int) -> None:
        self.line, self.column = line, column


def display(text: str, errors: list[tuple[int, int, str]]) -> str:
    """common/errors.go ToDisplayString: the first 100 errors, sorted stably by line then
    column, each with its source line and caret (none for an error at no location), then
    how many more were left out."""
    shown = sorted(errors[:_MAX_ERRORS_TO_REPORT], key=lambda e: (e[0], e[1]))
    lines = [f"ERROR: <input>:{line}:{column}: {message}" if line < 1
             else format_error(text, _At(line, column), message)
             for line, column, message in shown]
    if len(errors) > _MAX_ERRORS_TO_REPORT:
        lines.append(f"{len(errors) - _MAX_ERRORS_TO_REPORT} more errors were truncated")
    return "\n".join(lines)
