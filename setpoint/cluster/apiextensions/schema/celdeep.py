"""Deeply nested CEL, compiled and evaluated on a thread with room for it.

cel-go takes rules nested up to its parser's limits (250 levels, parser/options.go
``maxRecursionDepth``) and walks them with Go's growable stacks. The checker and celpy's
evaluator here walk the parse tree recursively, a few Python frames a node and about ten
nodes a level of parentheses: 250 levels need some 10,000 frames, past Python's default
limit of 1,000 and, through the C frames of lark's and celpy's calls, past what the 8 MiB
stack of the server's threads holds. So a tree deeper than ``SHALLOW_DEPTH`` nodes is
walked on one worker thread started with a ``STACK_BYTES`` stack (reserved, touched only as
deep as a walk goes), under a recursion limit raised to ``RECURSION_LIMIT`` while it runs.
The parse tree itself is bounded before it gets here (celprogram.parse: the code point
limit, the listener's and the visitor's depth limits, balanced ``&&``/``||``), so the work
is bounded; a walk that still passes the raised limit is a RecursionError, which the
callers turn into a refusal, never a crash of the process.

Python's recursion limit is one for the interpreter: while a deep walk runs, other threads
may also recurse that deep before a RecursionError (the server bounds what it recurses on
by itself: bodies to 200 levels, docs/reliability.md).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

# deeper trees than this are walked on the worker: at about four frames a node, well within
# the default limit from wherever a request's handler stands
SHALLOW_DEPTH = 120
# the deepest tree the parser's limits let through is about 250 levels of 13 nodes, some
# 3,500 nodes (248 nested map literals: between 16,000 and 30,000 frames to evaluate); the
# stack holds 100,000 frames even of calls through C (measured: recursive __getattr__,
# sort keys, json.loads), so a walk past the limit is a RecursionError, never an overflow
RECURSION_LIMIT = 50_000
STACK_BYTES = 256 * 1024 * 1024
_WORKER_NAME = "cel-deep"

_T = TypeVar("_T")
_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
_unavailable = False


def _worker() -> ThreadPoolExecutor | None:
    """The worker, its thread started now with the large stack (threading.stack_size
    applies to the threads started after it; it is set back at once); None when no such
    thread can start (an address-space limit below the stack)."""
    global _executor, _unavailable
    with _lock:
        if _executor is None and not _unavailable:
            previous = threading.stack_size(STACK_BYTES)
            executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=_WORKER_NAME)
            try:
                executor.submit(lambda: None).result()
            except RuntimeError:  # "can't start new thread"
                executor.shutdown(wait=False)
                _unavailable = True
            else:
                _executor = executor
            finally:
                threading.stack_size(previous)
        return _executor


def run(function: Callable[..., _T], *args: object) -> _T:
    """``function(*args)`` on the deep worker (here when already on it, or when it cannot
    start: then a deep walk ends in a RecursionError, which the callers refuse), its
    exceptions raised here."""
    if threading.current_thread().name.startswith(_WORKER_NAME):
        return function(*args)
    worker = _worker()
    if worker is None:
        return function(*args)
    return worker.submit(_with_raised_limit, function, args).result()


def run_if(deep: bool, function: Callable[..., _T], *args: object) -> _T:
    return run(function, *args) if deep else function(*args)


def _with_raised_limit(function: Callable[..., _T], args: tuple[object, ...]) -> _T:
    previous = sys.getrecursionlimit()
    sys.setrecursionlimit(max(previous, RECURSION_LIMIT))
    try:
        return function(*args)
    finally:
        sys.setrecursionlimit(previous)
