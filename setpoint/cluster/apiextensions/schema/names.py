"""Name rules (DNS-1123, DNS-1035) with the messages ``k8s.io/apimachinery`` gives."""

from __future__ import annotations

import re

DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN_FMT = DNS1123_LABEL_FMT + "(\\." + DNS1123_LABEL_FMT + ")*"
DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"

_SUBDOMAIN = re.compile(f"^{DNS1123_SUBDOMAIN_FMT}$")
_LABEL_1123 = re.compile(f"^{DNS1123_LABEL_FMT}$")
_LABEL_1035 = re.compile(f"^{DNS1035_LABEL_FMT}$")


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def is_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value) > 253:
        errs.append("must be no more than 253 characters")
    if not _SUBDOMAIN.match(value):
        errs.append(regex_error(
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
            "'-' or '.', and must start and end with an alphanumeric character",
            DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_1123.match(value):
        errs.append(regex_error(
            "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or "
            "'-', and must start and end with an alphanumeric character",
            DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


def is_dns1035_label(value: str) -> list[str]:
    errs = []
    if len(value) > 63:
        errs.append("must be no more than 63 characters")
    if not _LABEL_1035.match(value):
        errs.append(regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start "
            "with an alphabetic character, and end with an alphanumeric character",
            DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


def name_is_dns_subdomain(name: str, prefix: bool) -> list[str]:
    """``NameIsDNSSubdomain``: a generateName prefix may end with a dash."""
    if prefix and len(name) > 1 and name.endswith("-"):
        name = name[:-1] + "a"
    return is_dns1123_subdomain(name)
