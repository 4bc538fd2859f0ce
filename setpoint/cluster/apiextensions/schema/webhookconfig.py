"""A webhook's client config as k8s.io/apiserver pkg/util/webhook/validation.go checks it
(``ValidateWebhookURL``, ``ValidateWebhookService``): shared by admission webhook
configurations and CRD conversion webhooks."""

from __future__ import annotations

import base64
import binascii
from urllib.parse import urlsplit

from setpoint.machinery import fielderrors as fe
from setpoint.machinery import names
from setpoint.machinery.cabundle import ca_bundle_error
from setpoint.machinery.errors import Cause
from setpoint.machinery.objects import Obj

URL_FORM = "; desired format: https://host[/path]"


def validate_webhook_url(path: str, url: str) -> list[Cause]:
    try:
        parts = urlsplit(url)
    except ValueError as exc:
        return [fe.required(path, f"url must be a valid URL: {exc}{URL_FORM}")]
    causes: list[Cause] = []
    if parts.scheme != "https":
        causes.append(fe.invalid(path, parts.scheme,
                                 f"'https' is the only allowed URL scheme{URL_FORM}"))
    if not parts.netloc:
        causes.append(fe.invalid(path, "", f"host must be specified{URL_FORM}"))
    if "@" in parts.netloc:
        user = parts.netloc.rsplit("@", 1)[0]
        causes.append(fe.invalid(path, user, "user information is not permitted in the URL"))
    if parts.fragment:
        causes.append(fe.invalid(path, parts.fragment,
                                 "fragments are not permitted in the URL"))
    if parts.query:
        causes.append(fe.invalid(path, parts.query,
                                 "query parameters are not permitted in the URL"))
    return causes


def validate_webhook_service(path: str, service: Obj) -> list[Cause]:
    causes: list[Cause] = []
    if not service.get("name"):
        causes.append(fe.required(f"{path}.name", "service name is required"))
    if not service.get("namespace"):
        causes.append(fe.required(f"{path}.namespace", "service namespace is required"))
    port = service.get("port", 443)
    if not isinstance(port, int) or not 1 <= port <= 65535:
        causes.append(fe.invalid(f"{path}.port", port,
                                 "port is not valid: must be between 1 and 65535, inclusive"))
    url_path = service.get("path")
    if url_path in (None, "", "/"):
        return causes
    if url_path == "//":
        return [*causes, fe.invalid(f"{path}.path", url_path, "segment[0] may not be empty")]
    if not url_path.startswith("/"):
        causes.append(fe.invalid(f"{path}.path", url_path, "must start with a '/'"))
    check = url_path[1:]
    if check.endswith("/"):
        check = check[:-1]
    for i, step in enumerate(check.split("/")):
        if not step:
            causes.append(fe.invalid(f"{path}.path", url_path,
                                     f"segment[{i}] may not be empty"))
            continue
        causes.extend(fe.invalid(f"{path}.path", url_path, f"segment[{i}]: {failure}")
                      for failure in names.is_dns1123_subdomain(step))
    return causes


# a PEM block as Go's encoding/pem.Decode finds it: a BEGIN line at the start of a line,
# optional "Key: value" headers, base64 lines, the matching END line
def validate_ca_bundle(path: str, bundle: str) -> list[Cause]:
    """``ValidateCABundle``: the bundle must load as TLS root certificates. The value is a
    []byte, which field.Error prints with ``%#v``."""
    try:
        data = base64.b64decode(bundle)
    except (ValueError, binascii.Error):
        data = bundle.encode()
    detail = ca_bundle_error(data)
    if not detail:
        return []
    shown = "[]byte{" + ", ".join(hex(b) for b in data) + "}"
    return [fe.invalid(path, fe.GoValue(shown), detail)]
