"""Validation of networking.k8s.io kinds (kubernetes v1.32
pkg/apis/networking/validation/validation.go) as their strategies call it
(pkg/registry/networking/{networkpolicy,ingress,ingressclass}/strategy.go).

- NetworkPolicy: selectors, ports (protocol, numbers or IANA names, endPort), peers (exactly
  one kind when one is an ipBlock; CIDRs, and ``except`` a strict subset), policy types.
  An update accepts bad selector label values when the stored policy's pod selector had
  some (1.32 has no such allowance for CIDRs yet).
- Ingress: a default backend or rules; hosts (DNS names, wildcards, never IPs); paths by
  their type; backends (a service by DNS-1035 name and port, or a resource); TLS hosts and
  secret names (an update keeps accepting a bad secret name the stored one had); on create,
  the ``kubernetes.io/ingress.class`` annotation must match ``ingressClassName``.
- IngressClass: a domain-prefixed controller, fixed at creation; the parameters reference.
"""

from __future__ import annotations

import ipaddress
import re
from typing import Any

from setpoint.cluster.registry.validation_containers import port_name_errors
from setpoint.cluster.registry.validation_serviceaccess import is_valid_cidr
from setpoint.machinery import fielderrors as fe
from setpoint.machinery import labels, names
from setpoint.machinery.errors import Cause
from setpoint.machinery.netutils import parse_ip_sloppy
from setpoint.machinery.objects import Obj

NOT_A_CIDR = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
PROTOCOLS = ("TCP", "UDP", "SCTP")
POLICY_TYPES = ("Ingress", "Egress")
PATH_TYPES = ("Exact", "ImplementationSpecific", "Prefix")
INVALID_PATH_SEQUENCES = ("//", "/./", "/../", "%2f", "%2F")
INVALID_PATH_SUFFIXES = ("/..", "/.")
SCOPES = ("Cluster", "Namespace")
INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class"
MAX_CONTROLLER_LENGTH = 250
WILDCARD_FMT = "\\*\\." + names.DNS1123_SUBDOMAIN_FMT
WILDCARD_ERR = ("a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS "
                "subdomain, which must consist of lower case alphanumeric characters, '-' or "
                "'.' and end with an alphanumeric character")
HTTP_PATH_FMT = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+"
_WILDCARD = re.compile(WILDCARD_FMT)
_HTTP_PATH = re.compile(HTTP_PATH_FMT)


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _obj(value: Any) -> Obj:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _dicts(items: Any) -> list[Obj]:
    return [i if isinstance(i, dict) else {} for i in items] if isinstance(items, list) else []


def _port_num(value: int) -> list[str]:
    """``validation.IsValidPortNum``."""
    return [] if 1 <= value <= 65535 else [names.inclusive_range_error(1, 65535)]


def is_wildcard_dns1123_subdomain(value: str) -> list[str]:
    """``validation.IsWildcardDNS1123Subdomain``."""
    errs = []
    if len(value) > 253:
        errs.append(names.max_len_error(253))
    if not _WILDCARD.fullmatch(value):
        errs.append(names.regex_error(WILDCARD_ERR, WILDCARD_FMT, "*.example.com"))
    return errs


# -- NetworkPolicy -----------------------------------------------------------------------------

def _policy_port(port: Obj, path: str) -> list[Cause]:
    """``ValidateNetworkPolicyPort``."""
    causes: list[Cause] = []
    protocol = port.get("protocol")
    if isinstance(protocol, str) and protocol not in PROTOCOLS:
        causes.append(fe.not_supported(f"{path}.protocol", protocol, PROTOCOLS))
    number, end = port.get("port"), port.get("endPort")
    if isinstance(number, int):
        causes.extend(fe.invalid(f"{path}.port", number, m) for m in _port_num(number))
        if isinstance(end, int):
            if end < number:
                causes.append(fe.invalid(f"{path}.endPort", end,
                                         "must be greater than or equal to `port`"))
            causes.extend(fe.invalid(f"{path}.endPort", end, m) for m in _port_num(end))
    elif isinstance(number, str):
        if isinstance(end, int):
            causes.append(fe.invalid(f"{path}.endPort", end,
                                     "may not be specified when `port` is non-numeric"))
        causes.extend(fe.invalid(f"{path}.port", number, m) for m in port_name_errors(number))
    elif isinstance(end, int):
        causes.append(fe.invalid(f"{path}.endPort", end,
                                 "may not be specified when `port` is not specified"))
    return causes


def _network(cidr: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    """``netutils.ParseCIDRSloppy``'s network (leading zeros allowed, host bits masked)."""
    address, _, prefix = cidr.partition("/")
    ip = parse_ip_sloppy(address)
    assert ip is not None
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None and "." in address:
        ip = ip.ipv4_mapped
    return ipaddress.ip_network(f"{ip}/{prefix}", strict=False)


def _cidr(value: str, path: str) -> list[Cause]:
    """``validation.IsValidCIDR``."""
    if is_valid_cidr(value):
        return []
    return [fe.invalid(path, value, NOT_A_CIDR)]


def _ip_block(block: Obj, path: str) -> list[Cause]:
    """``ValidateIPBlock``."""
    cidr = _str(block.get("cidr"))
    if not cidr:
        return [fe.required(f"{path}.cidr")]
    causes = _cidr(cidr, f"{path}.cidr")
    if not is_valid_cidr(cidr):
        return causes
    network = _network(cidr)
    for i, except_cidr in enumerate(block.get("except") or []):
        except_path = f"{path}.except[{i}]"
        text = except_cidr if isinstance(except_cidr, str) else ""
        causes.extend(_cidr(text, except_path))
        if not is_valid_cidr(text):
            continue
        excluded = _network(text)
        if (excluded.version != network.version
                or excluded.network_address not in network
                or network.prefixlen >= excluded.prefixlen):
            causes.append(fe.invalid(except_path, text, "must be a strict subset of `cidr`"))
    return causes


def _peer(peer: Obj, path: str, allow_invalid_values: bool) -> list[Cause]:
    """``ValidateNetworkPolicyPeer``."""
    causes: list[Cause] = []
    count = 0
    for key in ("podSelector", "namespaceSelector"):
        if isinstance(peer.get(key), dict):
            count += 1
            causes.extend(labels.validate_label_selector(peer[key], f"{path}.{key}",
                                                         allow_invalid_values))
    has_block = isinstance(peer.get("ipBlock"), dict)
    if has_block:
        count += 1
        causes.extend(_ip_block(peer["ipBlock"], f"{path}.ipBlock"))
    if count == 0:
        causes.append(fe.required(path, "must specify a peer"))
    elif count > 1 and has_block:
        causes.append(fe.forbidden(path, "may not specify both ipBlock and another peer"))
    return causes


def _policy_spec(spec: Obj, allow_invalid_values: bool) -> list[Cause]:
    """``ValidateNetworkPolicySpec``."""
    selector = _obj(spec.get("podSelector"))
    causes = labels.validate_label_selector(selector, "spec.podSelector", allow_invalid_values)
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(_dicts(spec.get(direction))):
            path = f"spec.{direction}[{i}]"
            for j, port in enumerate(_dicts(rule.get("ports"))):
                causes.extend(_policy_port(port, f"{path}.ports[{j}]"))
            for j, peer in enumerate(_dicts(rule.get(peers))):
                causes.extend(_peer(peer, f"{path}.{peers}[{j}]", allow_invalid_values))
    types = _list(spec.get("policyTypes"))
    if len(types) > len(POLICY_TYPES):
        quoted = ", ".join(fe.go_quote(str(t)) for t in types)
        causes.append(fe.invalid("spec.policyTypes",
                                 fe.GoValue(f"[]networking.PolicyType{{{quoted}}}"),
                                 "may not specify more than two policyTypes"))
        return causes
    for i, kind in enumerate(types):
        if kind not in POLICY_TYPES:
            causes.append(fe.not_supported(f"spec.policyTypes[{i}]", kind, POLICY_TYPES))
    return causes


def validate_network_policy(obj: Obj) -> list[Cause]:
    """``ValidateNetworkPolicy`` past its metadata (the caller's)."""
    return _policy_spec(obj.get("spec") or {}, False)


def validate_network_policy_update(new: Obj, old: Obj) -> list[Cause]:
    """The strategy's ``ValidateUpdate`` past metadata: ``ValidateNetworkPolicy`` then
    ``ValidateNetworkPolicyUpdate``, so a bad spec is reported twice, both with the
    options of ``ValidationOptionsForNetworking`` (label values the stored selector had
    bad are let through)."""
    old_spec = old.get("spec") or {}
    old_selector = old_spec.get("podSelector")
    allow_invalid_values = bool(labels.validate_label_selector(
        old_selector if isinstance(old_selector, dict) else {}, "spec.podSelector"))
    spec = new.get("spec") or {}
    return _policy_spec(spec, allow_invalid_values) + _policy_spec(spec, allow_invalid_values)


# -- Ingress ----------------------------------------------------------------------------------

def _reference(params: Obj, path: str) -> list[Cause]:
    """``validateIngressTypedLocalObjectReference`` (and the first half of
    ``validateIngressClassParametersReference``)."""
    causes: list[Cause] = []
    group = params.get("apiGroup")
    if isinstance(group, str):
        causes.extend(fe.invalid(f"{path}.apiGroup", group, m)
                      for m in names.is_dns1123_subdomain(group))
    for key in ("kind", "name"):
        value = params.get(key) if isinstance(params.get(key), str) else ""
        if not value:
            causes.append(fe.required(f"{path}.{key}"))
        else:
            causes.extend(fe.invalid(f"{path}.{key}", value, m)
                          for m in names.validate_path_segment_name(value, False))
    return causes


def _backend(backend: Obj, path: str) -> list[Cause]:
    """``validateIngressBackend``."""
    resource, service = backend.get("resource"), backend.get("service")
    if isinstance(resource, dict) and isinstance(service, dict):
        return [fe.invalid(path, "", "cannot set both resource and service backends")]
    if isinstance(resource, dict):
        return _reference(resource, f"{path}.resource")
    if not isinstance(service, dict):
        return [fe.invalid(path, "", "resource or service backend is required")]
    causes: list[Cause] = []
    name = _str(service.get("name"))
    if not name:
        causes.append(fe.required(f"{path}.service.name"))
    else:
        causes.extend(fe.invalid(f"{path}.service.name", name, m)
                      for m in names.name_is_dns1035_label(name, False))
    port = _obj(service.get("port"))
    port_name = _str(port.get("name"))
    number = _int(port.get("number"))
    if port_name and number:
        causes.append(fe.invalid(path, "", "cannot set both port name & port number"))
    elif port_name:
        causes.extend(fe.invalid(f"{path}.service.port.name", port_name, m)
                      for m in port_name_errors(port_name))
    elif number:
        causes.extend(fe.invalid(f"{path}.service.port.number", number, m)
                      for m in _port_num(number))
    else:
        causes.append(fe.required(path, "port name or number is required"))
    return causes


def _http_path(http_path: Obj, path: str) -> list[Cause]:
    """``validateHTTPIngressPath``."""
    path_type = http_path.get("pathType")
    if not isinstance(path_type, str):
        return [fe.required(f"{path}.pathType", "pathType must be specified")]
    value = _str(http_path.get("path"))
    causes: list[Cause] = []
    if path_type in ("Exact", "Prefix"):
        if not value.startswith("/"):
            causes.append(fe.invalid(f"{path}.path", value, "must be an absolute path"))
        if value:
            causes.extend(fe.invalid(f"{path}.path", value, f"must not contain '{seq}'")
                          for seq in INVALID_PATH_SEQUENCES if seq in value)
            causes.extend(fe.invalid(f"{path}.path", value, f"cannot end with '{suffix}'")
                          for suffix in INVALID_PATH_SUFFIXES if value.endswith(suffix))
    elif path_type == "ImplementationSpecific":
        if value and not value.startswith("/"):
            causes.append(fe.invalid(f"{path}.path", value, "must be an absolute path"))
    else:
        causes.append(fe.not_supported(f"{path}.pathType", path_type, PATH_TYPES))
    backend = _obj(http_path.get("backend"))
    return causes + _backend(backend, f"{path}.backend")


def _rule_value(rule: Obj, path: str) -> list[Cause]:
    """``validateIngressRuleValue``."""
    http = rule.get("http")
    if not isinstance(http, dict):
        return []
    paths = _dicts(http.get("paths"))
    causes = [] if paths else [fe.required(f"{path}.http.paths")]
    for i, http_path in enumerate(paths):
        causes.extend(_http_path(http_path, f"{path}.http.paths[{i}]"))
    return causes


def _host(host: str) -> list[str]:
    return (is_wildcard_dns1123_subdomain(host) if "*" in host
            else names.is_dns1123_subdomain(host))


def _rules(rules: list[Obj], allow_invalid_wildcard_rule: bool) -> list[Cause]:
    """``validateIngressRules``."""
    causes: list[Cause] = []
    for i, rule in enumerate(rules):
        path = f"spec.rules[{i}]"
        host = _str(rule.get("host"))
        if host:
            if parse_ip_sloppy(host) is not None:
                causes.append(fe.invalid(f"{path}.host", host,
                                         "must be a DNS name, not an IP address"))
            causes.extend(fe.invalid(f"{path}.host", host, m) for m in _host(host))
        if "*" not in host or not allow_invalid_wildcard_rule:
            causes.extend(_rule_value(rule, path))
    return causes


def _tls_secret_name(name: str) -> list[str]:
    """``validateTLSSecretName``: empty, or a Secret's name."""
    return names.name_is_dns_subdomain(name, False) if name else []


def _tls(tls: list[Obj], allow_invalid_secret_name: bool) -> list[Cause]:
    """``validateIngressTLS``."""
    causes: list[Cause] = []
    for i, item in enumerate(tls):
        for j, host in enumerate(item.get("hosts") or []):
            text = host if isinstance(host, str) else ""
            causes.extend(fe.invalid(f"spec.tls[{i}].hosts[{j}]", text, m)
                          for m in _host(text))
        if not allow_invalid_secret_name:
            name = _str(item.get("secretName"))
            causes.extend(fe.invalid(f"spec.tls[{i}].secretName", name, m)
                          for m in _tls_secret_name(name))
    return causes


def _ingress_spec(spec: Obj, allow_invalid_secret_name: bool,
                  allow_invalid_wildcard_rule: bool) -> list[Cause]:
    """``ValidateIngressSpec``."""
    causes: list[Cause] = []
    rules = _dicts(spec.get("rules"))
    default = spec.get("defaultBackend")
    if not rules and not isinstance(default, dict):
        text = ("[]networking.IngressRule(nil)" if spec.get("rules") is None
                else "[]networking.IngressRule{}")
        causes.append(fe.invalid("spec", fe.GoValue(text),
                                 "either `defaultBackend` or `rules` must be specified"))
    if isinstance(default, dict):
        causes.extend(_backend(default, "spec.defaultBackend"))
    causes.extend(_rules(rules, allow_invalid_wildcard_rule))
    causes.extend(_tls(_dicts(spec.get("tls")), allow_invalid_secret_name))
    class_name = spec.get("ingressClassName")
    if isinstance(class_name, str):
        causes.extend(fe.invalid("spec.ingressClassName", class_name, m)
                      for m in names.name_is_dns_subdomain(class_name, False))
    return causes


def validate_ingress(obj: Obj) -> list[Cause]:
    """``ValidateIngressCreate`` past its metadata: the annotation naming a class must agree
    with ``ingressClassName``."""
    spec = obj.get("spec") or {}
    causes = _ingress_spec(spec, False, False)
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    class_name = spec.get("ingressClassName")
    if INGRESS_CLASS_ANNOTATION in annotations and isinstance(class_name, str) and \
            annotations[INGRESS_CLASS_ANNOTATION] != class_name:
        causes.append(fe.invalid(f"annotations.{INGRESS_CLASS_ANNOTATION}",
                                 annotations[INGRESS_CLASS_ANNOTATION],
                                 "must match `ingressClassName` when both are specified"))
    return causes


def validate_ingress_update(new: Obj, old: Obj) -> list[Cause]:
    """``ValidateIngressUpdate`` past its metadata: what the stored Ingress already had wrong
    (a TLS secret name, the rules of a wildcard host) is let through."""
    old_spec = old.get("spec") or {}
    allow_secret = any(_tls_secret_name(str(t.get("secretName") or ""))
                       for t in _dicts(old_spec.get("tls")))
    allow_wildcard = any("*" in str(r.get("host") or "") and _rule_value(r, "")
                         for r in _dicts(old_spec.get("rules")))
    return _ingress_spec(new.get("spec") or {}, allow_secret, allow_wildcard)


# -- IngressClass -----------------------------------------------------------------------------

def _domain_prefixed_path(path: str, value: str) -> list[Cause]:
    """``validation.IsDomainPrefixedPath``."""
    if not value:
        return [fe.required(path)]
    host, slash, rest = value.partition("/")
    if not slash or not host or not rest:
        return [fe.invalid(path, value,
                           'must be a domain-prefixed path (such as "acme.io/foo")')]
    causes = [fe.invalid(path, host, m) for m in names.is_dns1123_subdomain(host)]
    if not _HTTP_PATH.fullmatch(rest):
        causes.append(fe.invalid(path, rest,
                                 names.regex_error("must be a valid path", HTTP_PATH_FMT)))
    return causes


def validate_ingress_class(obj: Obj) -> list[Cause]:
    """``ValidateIngressClass`` past its metadata."""
    spec = obj.get("spec") or {}
    controller = _str(spec.get("controller"))
    causes: list[Cause] = []
    if len(controller.encode()) > MAX_CONTROLLER_LENGTH:
        causes.append(fe.too_long("spec.controller", MAX_CONTROLLER_LENGTH))
    causes.extend(_domain_prefixed_path("spec.controller", controller))
    params = spec.get("parameters")
    if not isinstance(params, dict):
        return causes
    path = "spec.parameters"
    causes.extend(_reference(params, path))
    scope = params.get("scope")
    if not isinstance(scope, str):
        return [*causes, fe.required(f"{path}.scope")]
    namespace = params.get("namespace")
    if scope not in SCOPES:
        causes.append(fe.not_supported(f"{path}.scope", scope, SCOPES))
    elif scope == "Namespace":
        if not isinstance(namespace, str):
            causes.append(fe.required(f"{path}.namespace",
                                      "`parameters.scope` is set to 'Namespace'"))
        else:
            causes.extend(fe.invalid(f"{path}.namespace", namespace, m)
                          for m in names.name_is_dns_label(namespace, False))
    elif isinstance(namespace, str):
        causes.append(fe.forbidden(f"{path}.namespace", "`parameters.scope` is set to 'Cluster'"))
    return causes


def validate_ingress_class_update(new: Obj, old: Obj) -> list[Cause]:
    """``validateIngressClassSpecUpdate``: the controller is fixed at creation (the new
    class is validated whole by the caller)."""
    controller = (new.get("spec") or {}).get("controller") or ""
    if controller != ((old.get("spec") or {}).get("controller") or ""):
        return [fe.invalid("spec.controller", controller, "field is immutable")]
    return []
