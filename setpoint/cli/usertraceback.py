"""The traceback of an error the user's module raised while it was imported, as Python
shows one for a script: the frames of the user's files only.

``python my_operator.py`` shows the frames of the script; ``setpoint run
my_operator:manager`` imports it through click, Setpoint's command and importlib's
machinery, which are not the user's to read; nor are the frames inside Setpoint or a
library that checked what the user's line passed (the message says what is wrong, the
user's line says where).
"""

from __future__ import annotations

import os
import sys
import sysconfig
import traceback

_SETPOINT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _not_users(filename: str) -> bool:
    """A frame of Setpoint, the interpreter's import machinery, the standard library or an
    installed package (where the user's own code, run from its directory or installed
    with ``pip install -e``, is not)."""
    if filename.startswith("<") or filename.startswith(_SETPOINT_DIR + os.sep):
        return True
    libraries = {sysconfig.get_paths()[key] for key in ("stdlib", "purelib", "platlib")}
    return any(filename.startswith(path + os.sep) for path in libraries)


def _users_frames(stack: traceback.StackSummary) -> traceback.StackSummary:
    users = [frame for frame in stack if not _not_users(frame.filename)]
    if not users:  # the user's module itself installed as a library: all after importlib
        frozen = [i for i, frame in enumerate(stack) if frame.filename.startswith("<frozen")]
        users = list(stack)[frozen[-1] + 1:] if frozen else []
    return traceback.StackSummary.from_list(users)


def format_users_traceback(exc: BaseException) -> str:
    """``exc`` as Python prints it, each exception of its chain with the user's frames;
    an exception without any (a SyntaxError, raised while compiling) as its lines alone,
    file, line and caret included."""
    shown = traceback.TracebackException(type(exc), exc, exc.__traceback__, compact=True)
    seen: set[int] = set()
    pending = [shown]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        current.stack = _users_frames(current.stack)
        pending.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    # (format() writes no "Traceback" header above no frames, as Python does not)
    return "".join(shown.format())


def print_users_traceback(exc: BaseException) -> None:
    sys.stderr.write(format_users_traceback(exc))
    sys.stderr.flush()
