"""Structured logs: one event name and ``key=value`` fields, bound to what is reconciled.

    ctx.log.info("configmap_applied", name=cm_name)
    # -> configmap_applied controller=widget namespace=default name=w1 reconcileID=3f2a...

Fields also travel in the record's ``extra`` (``record.fields``), so a JSON formatter can
emit them as they are.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from types import FrameType
from typing import Any

import orjson

_NEEDS_QUOTES = re.compile(r'[\s"=]')
"""A value with whitespace (``str.isspace``'s, which ``\\s`` matches), a quote or an equals
sign is quoted; one regex search, not a Python loop over the characters of each value."""


def _format_value(value: Any) -> str:
    text = value if type(value) is str else str(value)
    if not text or _NEEDS_QUOTES.search(text) is not None:
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return text


_needs_quotes = _NEEDS_QUOTES.search


def format_fields(fields: Mapping[str, Any]) -> str:
    # a loop with the plain string inline, not a generator calling _format_value per
    # field: every write's log line formats its fields here (issue 12, eighth pass)
    parts = []
    for key, value in fields.items():
        if value is None:
            continue
        if type(value) is not str or not value or _needs_quotes(value) is not None:
            value = _format_value(value)
        parts.append(f"{key}={value}")
    return " ".join(parts)


_PLAIN_LOGGERS: set[type[logging.Logger]] = set()


def _is_plain(cls: type) -> bool:
    """Whether ``cls`` logs as ``logging.Logger`` does (its subclasses may change how a
    record is made or where its caller is found; those get ``Logger.log`` itself)."""
    plain = isinstance(cls, type) and issubclass(cls, logging.Logger) and all(
        getattr(cls, name) is getattr(logging.Logger, name)
        for name in ("log", "_log", "findCaller"))
    if plain:
        _PLAIN_LOGGERS.add(cls)
    return plain


_INTERNAL_FILES: dict[str, bool] = {}
"""Per source file, logging's answer for it (a handful of files; asked twice a line)."""


def _is_internal_frame(frame: FrameType) -> bool:
    # logging's own test (logging._is_internal_frame): its module and the import system
    raw = frame.f_code.co_filename
    internal = _INTERNAL_FILES.get(raw)
    if internal is None:
        filename = os.path.normcase(raw)
        internal = filename == logging._srcfile or ("importlib" in filename
                                                    and "_bootstrap" in filename)
        if len(_INTERNAL_FILES) < 4096:
            _INTERNAL_FILES[raw] = internal
    return internal


def _caller(frame: FrameType, stacklevel: int) -> tuple[str, int, str]:
    """``Logger.findCaller``'s walk from ``frame`` (BoundLogger.log's own, the first
    frame outside logging that walk meets, so ``stacklevel`` is one less than given)."""
    f = frame
    while stacklevel > 0:
        next_f = f.f_back
        if next_f is None:
            break
        f = next_f
        if not _is_internal_frame(f):
            stacklevel -= 1
    code = f.f_code
    return code.co_filename, f.f_lineno, code.co_name


class BoundLogger:
    """A logger that prefixes every event with bound ``key=value`` fields."""

    def __init__(self, logger: logging.Logger, **fields: Any) -> None:
        self.logger = logger
        self.fields = fields
        self._text: str | None = None
        """The bound fields formatted, once (a reconcile's logger logs a line per write)."""

    def __repr__(self) -> str:
        return f"BoundLogger({self.logger.name!r}, {format_fields(self.fields)})"

    def bind(self, **fields: Any) -> BoundLogger:
        """A logger with more bound fields."""
        # __init__'s work without passing the fields as keywords once more (every
        # reconcile binds its own logger)
        bound = object.__new__(BoundLogger)
        bound.logger = self.logger
        bound.fields = {**self.fields, **fields}
        bound._text = None
        return bound

    def log(self, level: int, event: str, /, exc_info: Any = None, **fields: Any) -> None:
        if not self.logger.isEnabledFor(level):
            return
        merged = {**self.fields, **fields}
        if self.fields.keys().isdisjoint(fields):
            # the bound fields come first and are formatted once per logger
            if self._text is None:
                self._text = format_fields(self.fields)
            own = format_fields(fields)
            text = f"{self._text} {own}" if self._text and own else self._text or own
        else:  # a field given again takes the bound one's place
            text = format_fields(merged)
        extra = {"fields": merged, "event": event}
        logger = self.logger
        if type(logger) not in _PLAIN_LOGGERS and not _is_plain(type(logger)):
            logger.log(level, "%s %s", event, text, exc_info=exc_info, extra=extra,
                       stacklevel=3)
            return
        # what Logger.log(..., stacklevel=3) does, without its two frames and their
        # internal-frame checks: the record names the same caller (see _caller)
        if logging._srcfile:
            fn, lno, func = _caller(sys._getframe(), 2)
        else:
            fn, lno, func = "(unknown file)", 0, "(unknown function)"
        if exc_info:
            if isinstance(exc_info, BaseException):
                exc_info = (type(exc_info), exc_info, exc_info.__traceback__)
            elif not isinstance(exc_info, tuple):
                exc_info = sys.exc_info()
        logger.handle(logger.makeRecord(logger.name, level, fn, lno, "%s %s", (event, text),
                                        exc_info, func, extra, None))

    def debug(self, event: str, /, **fields: Any) -> None:
        self.log(logging.DEBUG, event, **fields)

    def info(self, event: str, /, **fields: Any) -> None:
        self.log(logging.INFO, event, **fields)

    def warning(self, event: str, /, **fields: Any) -> None:
        self.log(logging.WARNING, event, **fields)

    def error(self, event: str, /, **fields: Any) -> None:
        self.log(logging.ERROR, event, **fields)

    def exception(self, event: str, /, **fields: Any) -> None:
        self.log(logging.ERROR, event, exc_info=True, **fields)


class TextFormatter(logging.Formatter):
    """``logging.Formatter`` with the text of each second's local time made once: the same
    lines, without a ``localtime`` and a ``strftime`` per record (an operator logs a line
    per write, hundreds a second). A ``datefmt`` or a ``converter`` of its own is left to
    ``logging.Formatter``.

        handler.setFormatter(TextFormatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._second: int | None = None
        self._second_text = ""

    def formatTime(self, record: logging.LogRecord,
                   datefmt: str | None = None) -> str:
        if datefmt is not None or self.converter is not time.localtime \
                or not self.default_msec_format:
            return super().formatTime(record, datefmt)
        second = int(record.created)
        if second != self._second:
            self._second_text = time.strftime(self.default_time_format,
                                              self.converter(second))
            self._second = second
        return self.default_msec_format % (self._second_text, record.msecs)


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``time`` (RFC 3339, UTC), ``level``, ``logger``,
    ``message`` and the record's ``key=value`` fields as keys of their own (``controller``,
    ``namespace``, ``name``, ``reconcileID`` ...), as a log stack indexes them; a
    traceback goes in ``error``.

        handler.setFormatter(JsonFormatter())     # what ``setpoint run --log-format json`` uses
    """

    _RESERVED = frozenset({"time", "level", "logger", "message"})

    def format(self, record: logging.LogRecord) -> str:
        fields = getattr(record, "fields", None)
        event = getattr(record, "event", None)
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(
                timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": event if isinstance(event, str) else record.getMessage(),
        }
        if isinstance(fields, Mapping):
            for key, value in fields.items():
                if value is not None:
                    line[f"field.{key}" if key in self._RESERVED else key] = value
        if record.exc_info:
            line["error"] = self.formatException(record.exc_info)
        return orjson.dumps(line, default=str).decode()
