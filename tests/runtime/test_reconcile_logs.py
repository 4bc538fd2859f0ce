"""What an operator logs: each reconcile at DEBUG, each write, event and condition change
at INFO, with the reconciled object's namespace/name and controller-runtime's field names
(controller, namespace, name, reconcileID: sigs.k8s.io/controller-runtime
pkg/internal/controller/controller.go, reconcileHandler); nothing for a reconcile that
finds everything as wanted."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from setpoint.client import Client
from setpoint.runtime._logs import BoundLogger
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


async def test_writes_events_and_condition_changes_are_info_reconciles_debug(
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
    namespace = setpoint_cluster.namespace
    for _, fields in info:
        assert fields["controller"] == "gadget" and fields["namespace"] == namespace
        assert fields["reconcileID"]
    assert [(e, f.get("verb"), f.get("kind"), f.get("object")) for e, f in info
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
