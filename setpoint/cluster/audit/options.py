"""kube-apiserver's audit flags, read and checked as k8s.io/apiserver
pkg/server/options/audit.go reads and checks them (``AuditOptions``, ``Validate``); the
backends they build are ``backends.py``'s.

Flag values come as the text given on the command line and are parsed as pflag parses
them, so that a value it refuses is refused in its words (``invalid argument "x" for
"--audit-log-maxage" flag: strconv.ParseInt: parsing "x": invalid syntax``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from setpoint.machinery.gofmt import go_quote
from setpoint.machinery.gotime import parse_duration

MODE_BATCH = "batch"
MODE_BLOCKING = "blocking"
MODE_BLOCKING_STRICT = "blocking-strict"
ALLOWED_MODES = (MODE_BATCH, MODE_BLOCKING, MODE_BLOCKING_STRICT)
FORMAT_LEGACY = "legacy"
FORMAT_JSON = "json"
ALLOWED_FORMATS = (FORMAT_LEGACY, FORMAT_JSON)
GROUP_VERSION = "audit.k8s.io/v1"
DEFAULT_INITIAL_BACKOFF_S = 10.0  # webhook.DefaultInitialBackoffDelay
_MAX_INT64 = (1 << 63) - 1


class AuditOptionsError(ValueError):
    """Flags kube-apiserver would refuse: the message is Go's (several joined as
    ``utilerrors.NewAggregate`` joins them)."""


@dataclass
class BatchConfig:
    """plugin/pkg/audit/buffered ``BatchConfig``."""

    buffer_size: int = 10000
    max_batch_size: int = 400
    max_batch_wait: float = 30.0
    throttle_enable: bool = True
    throttle_qps: float = 10.0
    throttle_burst: int = 15
    async_delegate: bool = True


def log_batch_config() -> BatchConfig:
    """``defaultLogBatchConfig``: batching is no use to a file (one event a batch, no
    wait, no throttle, written in order)."""
    return BatchConfig(max_batch_size=1, max_batch_wait=0.0, throttle_enable=False,
                       throttle_qps=0.0, throttle_burst=0, async_delegate=False)


@dataclass
class BatchOptions:
    mode: str
    config: BatchConfig


@dataclass
class TruncateOptions:
    """``NewAuditTruncateOptions``: 10 MB batches, 100 KB events, off."""

    enabled: bool = False
    max_batch_size: int = 10 * 1024 * 1024
    max_event_size: int = 100 * 1024


@dataclass
class LogOptions:
    path: str = ""
    max_age: int = 0
    max_backups: int = 0
    max_size: int = 0
    format: str = FORMAT_JSON
    compress: bool = False
    batch: BatchOptions = field(
        default_factory=lambda: BatchOptions(MODE_BLOCKING, log_batch_config()))
    truncate: TruncateOptions = field(default_factory=TruncateOptions)
    group_version: str = GROUP_VERSION

    def validate(self) -> list[str]:
        """``AuditLogOptions.Validate``: only when the log backend is on (a path)."""
        if not self.path:
            return []
        found = _batch_errors("log", self.batch) + _truncate_errors("log", self.truncate)
        found += _group_version_errors(self.group_version)
        if self.format not in ALLOWED_FORMATS:
            found.append(f"invalid audit log format {self.format}, allowed formats are "
                         f"{go_quote(','.join(ALLOWED_FORMATS))}")
        for flag, value in (("maxage", self.max_age), ("maxbackup", self.max_backups),
                            ("maxsize", self.max_size)):
            if value < 0:
                found.append(f"--audit-log-{flag} {value} can't be a negative number")
        return found


@dataclass
class WebhookOptions:
    config_file: str = ""
    initial_backoff: float = DEFAULT_INITIAL_BACKOFF_S
    batch: BatchOptions = field(default_factory=lambda: BatchOptions(MODE_BATCH, BatchConfig()))
    truncate: TruncateOptions = field(default_factory=TruncateOptions)
    group_version: str = GROUP_VERSION

    def validate(self) -> list[str]:
        """``AuditWebhookOptions.Validate``: only when the webhook is on (a config file)."""
        if not self.config_file:
            return []
        return (_batch_errors("webhook", self.batch)
                + _truncate_errors("webhook", self.truncate)
                + _group_version_errors(self.group_version))


@dataclass
class AuditOptions:
    policy_file: str = ""
    log: LogOptions = field(default_factory=LogOptions)
    webhook: WebhookOptions = field(default_factory=WebhookOptions)

    def validate(self) -> None:
        """``AuditOptions.Validate``: AuditOptionsError with every error found."""
        found = self.log.validate() + self.webhook.validate()
        if found:
            raise AuditOptionsError(found[0] if len(found) == 1
                                    else "[" + ", ".join(found) + "]")


def _batch_errors(plugin: str, options: BatchOptions) -> list[str]:
    """``validateBackendBatchOptions``: the first problem only, as Go returns it."""
    if options.mode not in ALLOWED_MODES:
        return [f"invalid audit {plugin} mode {options.mode}, allowed modes are "
                f"{go_quote(','.join(ALLOWED_MODES))}"]
    if options.mode != MODE_BATCH:
        return []  # (unused options are not checked)
    c = options.config
    if c.buffer_size <= 0:
        return [f"invalid audit batch {plugin} buffer size {c.buffer_size}, must be a "
                "positive number"]
    if c.max_batch_size <= 0:
        return [f"invalid audit batch {plugin} max batch size {c.max_batch_size}, must be a "
                "positive number"]
    if c.throttle_enable:
        if c.throttle_qps <= 0:
            return [f"invalid audit batch {plugin} throttle QPS {_go_float(c.throttle_qps)}, "
                    "must be a positive number"]
        if c.throttle_burst <= 0:
            return [f"invalid audit batch {plugin} throttle burst {c.throttle_burst}, must "
                    "be a positive number"]
    return []


def _truncate_errors(plugin: str, options: TruncateOptions) -> list[str]:
    """``AuditTruncateOptions.Validate`` (checked whether truncation is on or not)."""
    if options.max_event_size <= 0:
        return [f"invalid audit truncate {plugin} max event size {options.max_event_size}, "
                "must be a positive number"]
    if options.max_batch_size < options.max_event_size:
        return [f"invalid audit truncate {plugin} max batch size {options.max_batch_size}, "
                f"must be greater than max event size ({options.max_event_size})"]
    return []


def _group_version_errors(text: str) -> list[str]:
    """``validateGroupVersionString``: schema.ParseGroupVersion, then only audit.k8s.io/v1."""
    if text.count("/") > 1:
        return [f"unexpected GroupVersion string: {text}"]
    if text != GROUP_VERSION:
        return ['invalid group version, allowed versions are ["audit.k8s.io/v1"]']
    return []


def _go_float(value: float) -> str:
    """``%v`` of a float32."""
    return str(int(value)) if value == int(value) else repr(value)


# -- flag values, parsed as pflag parses them ------------------------------------------------

def _invalid(flag: str, value: str, reason: str) -> AuditOptionsError:
    return AuditOptionsError(f"invalid argument {go_quote(value)} for "
                             f"{go_quote('--' + flag)} flag: {reason}")


def parse_int(flag: str, value: str) -> int:
    """pflag's ``IntVar``/``Int64Var``: strconv.ParseInt(s, 0, 64) (a 0x, 0o, 0b or 0
    prefix names the base)."""
    s, negative = value, value[:1] == "-"
    if s[:1] in ("+", "-"):
        s = s[1:]
    base, digits = 10, s
    if s[:2].lower() in ("0x", "0o", "0b"):
        base, digits = {"x": 16, "o": 8, "b": 2}[s[1].lower()], s[2:]
    elif len(s) > 1 and s[0] == "0":
        base, digits = 8, s[1:]
    try:
        if not digits or not digits.isascii() or not digits.isalnum():
            raise ValueError
        number = int(digits, base)
    except ValueError:
        raise _invalid(flag, value,
                       f"strconv.ParseInt: parsing {go_quote(value)}: invalid syntax") from None
    if number > _MAX_INT64 + negative:
        raise _invalid(flag, value,
                       f"strconv.ParseInt: parsing {go_quote(value)}: value out of range")
    return -number if negative else number


def parse_bool(flag: str, value: str) -> bool:
    """pflag's ``BoolVar``: strconv.ParseBool."""
    if value in ("1", "t", "T", "TRUE", "true", "True"):
        return True
    if value in ("0", "f", "F", "FALSE", "false", "False"):
        return False
    raise _invalid(flag, value, f"strconv.ParseBool: parsing {go_quote(value)}: invalid syntax")


def parse_float(flag: str, value: str) -> float:
    """pflag's ``Float32Var``: strconv.ParseFloat(s, 32)."""
    try:
        number = float(value)
    except ValueError:
        raise _invalid(flag, value, f"strconv.ParseFloat: parsing {go_quote(value)}: "
                                    "invalid syntax") from None
    return number


def parse_go_duration(flag: str, value: str) -> float:
    """pflag's ``DurationVar``: time.ParseDuration, in seconds."""
    try:
        return parse_duration(value)
    except ValueError as exc:
        raise _invalid(flag, value, str(exc)) from None
