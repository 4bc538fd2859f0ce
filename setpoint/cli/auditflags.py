"""kube-apiserver's audit flags on ``cluster up`` (k8s.io/apiserver
pkg/server/options/audit.go ``AddFlags``: the log backend's, the webhook's, and for each
its mode, batching and truncation), taken as the text given and handed to
``setpoint.cluster.audit.options`` to be parsed and checked in pflag's and Go's words.

Only click is imported here: ``cluster up`` starts its child before the server is imported.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from setpoint.cluster.audit.options import AuditOptions, BatchOptions, TruncateOptions

_BATCH_HELP = {
    "mode": "Strategy for sending audit events: blocking (the answer waits for the event "
            "to be stored), blocking-strict (and a RequestReceived event that cannot be "
            "stored fails the request), batch (buffered, written asynchronously).",
    "batch-buffer-size": "The size of the buffer to store events before batching and "
                         "writing. Only used in batch mode.",
    "batch-max-size": "The maximum size of a batch. Only used in batch mode.",
    "batch-max-wait": "The amount of time to wait before force writing the batch that "
                      "hadn't reached the max size (a Go duration). Only used in batch mode.",
    "batch-throttle-enable": "Whether batching throttling is enabled. Only used in batch "
                             "mode.",
    "batch-throttle-qps": "Maximum average number of batches per second. Only used in "
                          "batch mode.",
    "batch-throttle-burst": "Maximum number of requests sent at the same moment if "
                            "ThrottleQPS was not utilized before. Only used in batch mode.",
    "truncate-enabled": "Whether event and batch truncating is enabled.",
    "truncate-max-batch-size": "Maximum size of the batch sent to the underlying backend.",
    "truncate-max-event-size": "Maximum size of the audit event sent to the underlying "
                               "backend; larger events lose their request and response "
                               "objects, or are dropped.",
    "version": "API group and version used for serializing audit events.",
}
_BOOLS = {"batch-throttle-enable", "truncate-enabled", "log-compress"}
_LOG_FLAGS = {
    "maxage": "The maximum number of days to retain old audit log files based on the "
              "timestamp encoded in their filename.",
    "maxbackup": "The maximum number of old audit log files to retain (0: no limit).",
    "maxsize": "The maximum size in megabytes of the audit log file before it gets rotated "
               "(0: 100).",
    "format": "Format of saved audits: \"legacy\" (one line of text for each event) or "
              "\"json\" (structured json).",
    "compress": "If set, the rotated log files will be compressed using gzip.",
}
_WEBHOOK_FLAGS = {
    "config-file": "Path to a kubeconfig formatted file that defines the audit webhook "
                   "configuration.",
    "initial-backoff": "The amount of time to wait before retrying the first failed "
                       "request (a Go duration, 10s unless given).",
    "batch-initial-backoff": "Deprecated, use --audit-webhook-initial-backoff instead.",
}


def _names() -> list[tuple[str, str]]:
    """Every flag (without ``--audit-``) and its help."""
    flags = [(f"log-{name}", text) for name, text in _LOG_FLAGS.items()]
    flags += [(f"webhook-{name}", text) for name, text in _WEBHOOK_FLAGS.items()]
    for plugin in ("log", "webhook"):
        flags += [(f"{plugin}-{name}", text) for name, text in _BATCH_HELP.items()]
    return flags


def _key(name: str) -> str:
    return "audit_" + name.replace("-", "_")


def audit_flags(command: Callable[..., Any]) -> Callable[..., Any]:
    """Add the flags to ``command``; it gets their values (the text given, None for a flag
    not given) as one ``audit_flags`` dict."""
    keys = {_key(name) for name, _ in _names()}

    @functools.wraps(command)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        given = {k: kwargs.pop(k) for k in list(kwargs) if k in keys}
        return command(*args, audit_flags=given, **kwargs)

    decorated: Callable[..., Any] = wrapped
    for name, text in reversed(_names()):
        short = name.split("-", 1)[1]
        if short in _BOOLS or name in _BOOLS:
            # pflag's bool: alone is true, or =true/=false
            option = click.option(f"--audit-{name}", _key(name), is_flag=False,
                                  flag_value="true", default=None, metavar="[=BOOL]",
                                  help=text)
        else:
            option = click.option(f"--audit-{name}", _key(name), default=None, help=text,
                                  metavar="VALUE")
        decorated = option(decorated)
    return decorated


def audit_options(policy_file: str, log_path: str, flags: dict[str, str | None]
                  ) -> AuditOptions:
    """The options the flags give (``NewAuditOptions``' defaults for those not given):
    AuditOptionsError in pflag's words for a value it cannot parse."""
    from setpoint.cluster.audit import options as o

    def given(name: str) -> str | None:
        return flags.get(_key(name))

    def text(name: str, default: str) -> str:
        value = given(name)
        return default if value is None else value

    def integer(name: str, default: int) -> int:
        value = given(name)
        return default if value is None else o.parse_int(f"audit-{name}", value)

    def boolean(name: str, default: bool) -> bool:
        value = given(name)
        return default if value is None else o.parse_bool(f"audit-{name}", value)

    def batch(plugin: str, base: BatchOptions) -> BatchOptions:
        c = base.config
        p = f"{plugin}-"
        wait = given(p + "batch-max-wait")
        qps = given(p + "batch-throttle-qps")
        return o.BatchOptions(text(p + "mode", base.mode), o.BatchConfig(
            buffer_size=integer(p + "batch-buffer-size", c.buffer_size),
            max_batch_size=integer(p + "batch-max-size", c.max_batch_size),
            max_batch_wait=c.max_batch_wait if wait is None
            else o.parse_go_duration(f"audit-{p}batch-max-wait", wait),
            throttle_enable=boolean(p + "batch-throttle-enable", c.throttle_enable),
            throttle_qps=c.throttle_qps if qps is None
            else o.parse_float(f"audit-{p}batch-throttle-qps", qps),
            throttle_burst=integer(p + "batch-throttle-burst", c.throttle_burst),
            async_delegate=c.async_delegate))

    def truncate(plugin: str) -> TruncateOptions:
        base = o.TruncateOptions()
        return o.TruncateOptions(
            enabled=boolean(f"{plugin}-truncate-enabled", base.enabled),
            max_batch_size=integer(f"{plugin}-truncate-max-batch-size", base.max_batch_size),
            max_event_size=integer(f"{plugin}-truncate-max-event-size", base.max_event_size))

    log, hook = o.LogOptions(), o.WebhookOptions()
    log = o.LogOptions(
        path=log_path, max_age=integer("log-maxage", 0), max_backups=integer("log-maxbackup", 0),
        max_size=integer("log-maxsize", 0), format=text("log-format", log.format),
        compress=boolean("log-compress", False), batch=batch("log", log.batch),
        truncate=truncate("log"), group_version=text("log-version", log.group_version))
    if given("webhook-batch-initial-backoff") is not None:  # (pflag's MarkDeprecated)
        click.echo("Flag --audit-webhook-batch-initial-backoff has been deprecated, "
                   "Deprecated, use --audit-webhook-initial-backoff instead.", err=True)
    backoff = given("webhook-initial-backoff") or given("webhook-batch-initial-backoff")
    flag = "audit-webhook-initial-backoff" if given("webhook-initial-backoff") \
        else "audit-webhook-batch-initial-backoff"
    hook = o.WebhookOptions(
        config_file=text("webhook-config-file", ""),
        initial_backoff=hook.initial_backoff if backoff is None
        else o.parse_go_duration(flag, backoff),
        batch=batch("webhook", hook.batch), truncate=truncate("webhook"),
        group_version=text("webhook-version", hook.group_version))
    return o.AuditOptions(policy_file=policy_file, log=log, webhook=hook)
