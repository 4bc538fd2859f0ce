"""An audit.k8s.io/v1 Event made for a request and carried through its stages
(k8s.io/apiserver pkg/audit/request.go ``LogRequestMetadata``, ``LogResponseObject``;
pkg/endpoints/filters/audit.go ``processAuditEvent``)."""

from __future__ import annotations

import functools
import ipaddress
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson

from setpoint.cluster.audit.context import AuditContext
from setpoint.machinery import gojson
from setpoint.machinery.gofmt import go_quote

MAX_USER_AGENT_LENGTH = 1024
USER_AGENT_TRUNCATE_SUFFIX = "...TRUNCATED"
EventSink = Callable[[dict[str, Any]], Any]
# the Event's fields in the order of its Go struct (apis/audit/v1/types.go), as it is written
FIELD_ORDER = ("kind", "apiVersion", "level", "auditID", "stage", "requestURI", "verb", "user",
               "impersonatedUser", "sourceIPs", "userAgent", "objectRef", "responseStatus",
               "requestObject", "responseObject", "requestReceivedTimestamp",
               "stageTimestamp", "annotations")


def user_info(user: dict[str, Any]) -> dict[str, Any]:
    """authentication/v1 UserInfo as the event holds it (empty fields omitted)."""
    info: dict[str, Any] = {"username": user.get("username", "")}
    for key in ("uid", "groups", "extra"):
        if user.get(key):
            info[key] = user[key]
    return info


def source_ips(headers: dict[str, str], remote: str) -> list[str]:
    """apimachinery utilnet ``SourceIPs``: X-Forwarded-For, then X-Real-Ip, then the
    connection's address, each address once."""
    found: list[str] = []
    forwarded = headers.get("x-forwarded-for")
    if forwarded:
        for part in forwarded.split(","):
            _add_ip(found, part.strip())
    real = headers.get("x-real-ip")
    if real:
        _add_ip(found, real.strip())
    _add_ip(found, remote)
    return found


@functools.lru_cache(maxsize=256)
def _ip_text(text: str) -> str | None:
    """An address as Go's ``net.IP.String`` writes it, or None when it is none."""
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


def _add_ip(found: list[str], text: str) -> None:
    ip = _ip_text(text) if text else None
    if ip is not None and ip not in found:
        found.append(ip)


def new_event(audit_id: str, level: str, *, request_uri: str, verb: str,
              user: dict[str, Any] | None, ips: list[str], user_agent: str,
              object_ref: dict[str, str] | None, received: float) -> dict[str, Any]:
    """``LogRequestMetadata``: the event's fields known when the request comes."""
    if len(user_agent) > MAX_USER_AGENT_LENGTH:
        user_agent = user_agent[:MAX_USER_AGENT_LENGTH] + USER_AGENT_TRUNCATE_SUFFIX
    event: dict[str, Any] = {
        "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": level,
        "auditID": audit_id, "stage": "", "requestURI": request_uri, "verb": verb,
        "user": user_info(user) if user is not None else {}}
    if ips:
        event["sourceIPs"] = ips
    if user_agent:
        event["userAgent"] = user_agent
    if object_ref is not None:
        event["objectRef"] = {k: v for k, v in object_ref.items() if v}
    event["requestReceivedTimestamp"] = received
    return event


def response_status(code: int, status: dict[str, Any] | None = None) -> dict[str, Any]:
    """The event's bounded copy of the answer's Status (``LogResponseObject``), or only its
    code (``auditResponseWriter.processCode``)."""
    out: dict[str, Any] = {"metadata": {}}
    if status is not None:
        for key in ("status", "message", "reason", "details"):
            if status.get(key):
                out[key] = status[key]
    out["code"] = code
    return out


def emit(ac: AuditContext, stage: str, sink: EventSink) -> Any:
    """``processAuditEvent``: the event at ``stage`` handed to the sink unless the policy
    omits that stage. RequestReceived is stamped with the time the request came. The
    timestamps stay numbers: the backend writes them as ``metav1.MicroTime``
    (:func:`micro_times`) when it encodes the event, off the request's path."""
    if stage in ac.config.omit_stages:
        return True
    event = ac.event
    snapshot = dict(event)  # later stages change the event: this stage's view is kept
    snapshot["stage"] = stage
    if "annotations" in event:
        snapshot["annotations"] = dict(event["annotations"])
    snapshot["stageTimestamp"] = event["requestReceivedTimestamp"] \
        if stage == "RequestReceived" else time.time()
    return sink(snapshot)


_seconds: dict[int, str] = {}


def micro_time(ts: float) -> str:
    """``metav1.MicroTime`` (RFC 3339, microseconds, UTC) of a Unix time; the text of its
    whole second is kept, as events come many a second."""
    whole = int(ts)
    prefix = _seconds.get(whole)
    if prefix is None:
        if len(_seconds) > 64:
            _seconds.clear()
        prefix = _seconds[whole] = datetime.fromtimestamp(whole, UTC).strftime(
            "%Y-%m-%dT%H:%M:%S")
    return f"{prefix}.{int((ts - whole) * 1e6):06d}Z"


def audit_context(audit_id: str, config: Any, **fields: Any) -> AuditContext:
    """An :class:`AuditContext` for a request the policy audits at ``config.level``."""
    return AuditContext(new_event(audit_id, config.level, **fields), config)


def ordered(event: dict[str, Any], *, typed: bool = True) -> dict[str, Any]:
    """The event's fields in Go's order, its timestamps as ``metav1.MicroTime``; without
    kind and apiVersion as an item of an EventList (the conversion of each item carries
    no TypeMeta)."""
    out = {k: event[k] for k in FIELD_ORDER if k in event}
    if not typed:
        del out["kind"], out["apiVersion"]
    out["requestReceivedTimestamp"] = micro_time(event["requestReceivedTimestamp"])
    out["stageTimestamp"] = micro_time(event["stageTimestamp"])
    return out


def encoded(event: dict[str, Any]) -> bytes:
    """The event as the ``json`` log format writes it: Go's JSON and a newline
    (the json serializer's ``Encode``)."""
    return gojson.go_text(orjson.dumps(ordered(event)) + b"\n")


def legacy_line(event: dict[str, Any]) -> str:
    """``audit.EventString`` (pkg/audit/format.go), the ``legacy`` log format's line."""
    user = event.get("user") or {}
    username, groups = "<none>", "<none>"
    if user.get("username"):
        username = user["username"]
        if user.get("groups"):
            groups = ",".join(go_quote(g) for g in user["groups"])
    as_user, as_groups = "<self>", "<lookup>"
    impersonated = event.get("impersonatedUser")
    if impersonated is not None:
        as_user = impersonated.get("username", "")
        if impersonated.get("groups") is not None:
            as_groups = ",".join(go_quote(g) for g in impersonated["groups"])
    namespace = (event.get("objectRef") or {}).get("namespace") or "<none>"
    status = event.get("responseStatus")
    response = str(status.get("code", 0)) if status is not None else "<deferred>"
    ips = event.get("sourceIPs") or ["<unknown>"]
    q = go_quote
    return (f"{rfc3339_nano(event['requestReceivedTimestamp'])} AUDIT: "
            f"id={q(event['auditID'])} stage={q(event['stage'])} ip={q(ips[0])} "
            f"method={q(event['verb'])} user={q(username)} groups={q(groups)} "
            f"as={q(as_user)} asgroups={q(as_groups)} user-agent={q(event.get('userAgent', ''))} "
            f"namespace={q(namespace)} uri={q(event['requestURI'])} response=\"{response}\"\n")


def rfc3339_nano(ts: float) -> str:
    """``time.RFC3339Nano`` of a Unix time in UTC: the fraction without its trailing
    zeros, none at all when it is zero."""
    whole = int(ts)
    fraction = f"{int((ts - whole) * 1e6):06d}".rstrip("0")
    text = datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{fraction}Z" if fraction else f"{text}Z"
