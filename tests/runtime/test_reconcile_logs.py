"""What an operator logs: each reconcile and each write at DEBUG (controller-runtime logs
its per-reconcile lines at V(5), "Reconcile successful": sigs.k8s.io/controller-runtime
pkg/internal/controller/controller.go, reconcileHandler), each event and condition change
at INFO, with the reconciled object's namespace/name and controller-runtime's field names
(controller, namespace, name, reconcileID: the same reconcileHandler); nothing at INFO for
a reconcile that only writes, nor for one that finds everything as wanted."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from setpoint.client import Client
from setpoint.runtime._logs import BoundLogger, format_fields
from setpoint.testing import SetpointCluster
from setpoint.testing.plugin import ManagerLauncher, Waiter
from tests.cli.logging_target import Gadget, GadgetSpec, manager


def _fields(record: logging.LogRecord) -> dict[str, Any] | None:
    """The structured fields a BoundLogger put in the record's ``extra`` (None elsewhere)."""
    fields: dict[str, Any] | None = getattr(record, "fields", None)
    return fields


def _records(caplog: pytest.LogCaptureFixture, name: str) -> list[tuple[int, str, Any]]:
    return [(r.levelno, getattr(r, "event", ""), fields) for r in caplog.records
            if r.name.startswith("setpoint.runtime") and (fields := _fields(r)) is not None
            and fields.get("name") == name]


async def test_events_and_condition_changes_are_info_writes_and_reconciles_debug(
        setpoint_cluster: SetpointCluster, k8s: Client, run_manager: ManagerLauncher,
        wait_for: Waiter, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="setpoint.runtime")
    await setpoint_cluster.install(Gadget)
    await run_manager(manager)
    await k8s.create(Gadget(name="g", spec=GadgetSpec(message="hi")))
    await wait_for(Gadget, "g", lambda g: g.status.conditions)
    await wait_for(lambda: any(e == "reconciled" for _, e, _ in _records(caplog, "g")))

    records = _records(caplog, "g")
    info = [(event, fields) for level, event, fields in records if level == logging.INFO]
    debug_fields = [(event, fields) for level, event, fields in records
                    if level == logging.DEBUG]
    namespace = setpoint_cluster.namespace
    for _, fields in info + debug_fields:
        assert fields["controller"] == "gadget" and fields["namespace"] == namespace
        assert fields["reconcileID"]
    assert [e for e, _ in info] == ["event_recorded", "condition_changed"]
    assert [(e, f.get("verb"), f.get("kind"), f.get("object")) for e, f in debug_fields
            if e == "object_written"] == [
        ("object_written", "create", "ConfigMap", f"{namespace}/g-cfg"),
        ("object_written", "update_status", "Gadget", f"{namespace}/g")]
    assert [(f["type"], f["reason"]) for e, f in info if e == "event_recorded"] == \
        [("Normal", "ConfigMapWritten")]
    assert [(f["type"], f["status"], f["reason"]) for e, f in info
            if e == "condition_changed"] == [("Ready", "True", "ConfigMapWritten")]
    debug = [e for level, e, _ in records if level == logging.DEBUG]
    assert "reconciling" in debug and "reconciled" in debug


async def test_a_reconcile_that_changes_nothing_logs_nothing_at_info(
        setpoint_cluster: SetpointCluster, k8s: Client, run_manager: ManagerLauncher,
        wait_for: Waiter, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="setpoint.runtime")
    await setpoint_cluster.install(Gadget)
    runner = await run_manager(manager)
    await k8s.create(Gadget(name="g", spec=GadgetSpec(message="hi")))
    await wait_for(Gadget, "g", lambda g: g.status.conditions)
    await runner.crash()
    caplog.clear()

    await runner.restart()  # reconciles g again: everything already as wanted
    await wait_for(lambda: any(e == "reconciled" for _, e, _ in _records(caplog, "g")))
    assert [e for level, e, _ in _records(caplog, "g") if level >= logging.INFO] == []


def test_bound_fields_are_formatted_once_and_a_field_given_again_takes_their_place(
        caplog: pytest.LogCaptureFixture) -> None:
    """The line a BoundLogger writes: bound fields first (formatted once per logger, as a
    reconcile logs a line per write), values with whitespace of any kind (``str.isspace``,
    here a no-break space), quotes or ``=`` quoted, None left out; a call field with a bound
    field's name replaces it in its place."""
    log = BoundLogger(logging.getLogger("test.bound"), controller="widget").bind(
        namespace="default", name="w\u00a01", reconcileID=None)
    with caplog.at_level(logging.INFO, logger="test.bound"):
        log.info("object_written", verb="create", object='a"b=c')
        log.info("object_written", verb="update", object="")
        log.info("renamed", name="w2", extra=1)
    assert [r.getMessage() for r in caplog.records] == [
        'object_written controller=widget namespace=default name="w\u00a01" verb=create '
        'object="a\\"b=c"',
        'object_written controller=widget namespace=default name="w\u00a01" verb=update '
        'object=""',
        "renamed controller=widget namespace=default name=w2 extra=1",
    ]
    assert _fields(caplog.records[2]) == {"controller": "widget", "namespace": "default",
                                          "name": "w2", "reconcileID": None, "extra": 1}


def test_the_text_formatter_writes_what_logging_formatter_writes() -> None:
    """``setpoint run``'s text lines (TextFormatter: each second's local time made once)
    are exactly ``logging.Formatter``'s, across second boundaries, for every millisecond,
    and with a ``datefmt`` of its own."""
    from setpoint.runtime import TextFormatter

    fmt = "%(asctime)s %(levelname)s %(name)s %(message)s"
    for datefmt in (None, "%H:%M:%S"):
        ours, stdlib = TextFormatter(fmt, datefmt), logging.Formatter(fmt, datefmt)
        for created in (1_764_180_000.0, 1_764_180_000.999, 1_764_180_001.0005,
                        1_764_180_001.25, 1_764_180_000.5, 1_764_266_399.9999):
            record = logging.LogRecord("setpoint.runtime", logging.INFO, __file__, 1,
                                       "%s %s", ("object_written", "verb=update"), None)
            record.created, record.msecs = created, (created - int(created)) * 1000
            assert ours.format(record) == stdlib.format(record)


class _RecordsFromLog(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def _written_through(log: BoundLogger) -> None:
    log.info("object_written", verb="update")  # the caller a record must name: this line


def test_a_bound_loggers_record_is_the_one_logger_log_makes() -> None:
    """BoundLogger makes its record without ``Logger.log`` (one walk of two frames for
    the caller, not ``findCaller``'s five checks): every attribute but the times, thread
    and process ids is the one ``Logger.log(..., stacklevel=3)`` gives, the caller's file,
    line and function above all, with and without an exception, and a Logger subclass
    with its own ``findCaller`` is still asked."""
    logger = logging.getLogger("test.bound.record")
    handler = _RecordsFromLog()
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    try:
        log = BoundLogger(logger, controller="widget")
        _written_through(log)
        original = BoundLogger.log

        def through_logger_log(self: BoundLogger, level: int, event: str, /,
                               exc_info: Any = None, **fields: Any) -> None:
            merged = {**self.fields, **fields}
            self.logger.log(level, "%s %s", event, format_fields(merged), exc_info=exc_info,
                            extra={"fields": merged, "event": event}, stacklevel=3)

        BoundLogger.log = through_logger_log  # type: ignore[method-assign]
        try:
            _written_through(log)
        finally:
            BoundLogger.log = original  # type: ignore[method-assign]
        try:
            raise ValueError("boom")
        except ValueError:
            log.exception("failed")
            logger.exception("%s %s", "failed", "controller=widget",
                             extra={"fields": {"controller": "widget"}, "event": "failed"})
        ours, stdlib = handler.records[0], handler.records[1]
        volatile = {"created", "msecs", "relativeCreated", "thread", "process"}
        assert {k: v for k, v in vars(ours).items() if k not in volatile} == \
            {k: v for k, v in vars(stdlib).items() if k not in volatile}
        assert ours.funcName == "_written_through" and ours.pathname == __file__
        raised, logged = handler.records[2], handler.records[3]
        assert raised.exc_info == logged.exc_info and raised.funcName == logged.funcName
        assert raised.pathname == logged.pathname and raised.lineno < logged.lineno
        assert raised.getMessage() == logged.getMessage()

        class OwnCaller(logging.Logger):
            def findCaller(self, stack_info: bool = False, stacklevel: int = 1,
                           ) -> tuple[str, int, str, str | None]:
                return "own.py", 7, "own", None

        own = OwnCaller("test.bound.own")
        own.addHandler(handler)
        BoundLogger(own).info("object_written")
        assert (handler.records[-1].pathname, handler.records[-1].lineno) == ("own.py", 7)
    finally:
        logger.removeHandler(handler)
