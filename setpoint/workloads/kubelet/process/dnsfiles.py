"""A pod's ``/etc/resolv.conf`` and ``/etc/hosts``, as the kubelet writes them.

The process runtime bind-mounts both files over the machine's in the container's private
mount namespace, so ``getaddrinfo`` in the program asks the cluster DNS server
(:mod:`setpoint.workloads.clusterdns`) and finds the pod's own name.

- resolv.conf: pkg/kubelet/network/dns/dns.go (``GetPodDNS``): ``ClusterFirst`` (the
  default) gives the cluster DNS server, the search path ``<ns>.svc.<domain>
  svc.<domain> <domain>`` and ``ndots:5``; ``Default`` keeps the node's file; ``None``
  uses only ``dnsConfig``; ``dnsConfig`` is appended to the others (nameservers,
  searches, options by name, the pod's value winning). A ``hostNetwork`` pod with
  ``ClusterFirst`` gets the node's file (``ClusterFirstWithHostNet`` is the cluster's).
- hosts: pkg/kubelet/kubelet_pods.go (``managedHostsFileContent``): the localhost lines,
  the pod's IP with its FQDN when it has a ``subdomain``, then ``hostAliases``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

CLUSTER_DNS = "127.53.1.10"
"""Where the cluster DNS server of the first loopback network listens (port 53); each
process-runtime cluster has its own (:mod:`setpoint.workloads.loopbacknet`)."""
CLUSTER_DOMAIN = "cluster.local"
NDOTS = 5

_HOSTS_HEADER = """# Kubernetes-managed hosts file.
127.0.0.1\tlocalhost
::1\tlocalhost ip6-localhost ip6-loopback
fe00::0\tip6-localnet
fe00::0\tip6-mcastprefix
fe00::1\tip6-allnodes
fe00::2\tip6-allrouters
"""


def hostname_of(pod: Mapping[str, Any]) -> str:
    """``spec.hostname``, else the pod's name cut to 63 characters (a DNS label)."""
    spec = pod.get("spec") or {}
    name = str(spec.get("hostname") or (pod.get("metadata") or {}).get("name") or "")
    return name[:63].rstrip("-.")


def hosts_file(pod: Mapping[str, Any], pod_ip: str, domain: str = CLUSTER_DOMAIN) -> str:
    spec = pod.get("spec") or {}
    namespace = (pod.get("metadata") or {}).get("namespace") or "default"
    hostname = hostname_of(pod)
    lines = [_HOSTS_HEADER]
    if spec.get("subdomain"):
        lines.append(f"{pod_ip}\t{hostname}.{spec['subdomain']}.{namespace}.svc.{domain}"
                     f"\t{hostname}\n")
    else:
        lines.append(f"{pod_ip}\t{hostname}\n")
    aliases = spec.get("hostAliases") or []
    if aliases:
        lines.append("\n# Entries added by HostAliases.\n")
        for alias in aliases:
            names = "\t".join(str(h) for h in alias.get("hostnames") or ())
            lines.append(f"{alias.get('ip')}\t{names}\n")
    return "".join(lines)


def _read_host_resolv(path: Path) -> tuple[list[str], list[str], list[str]]:
    servers: list[str] = []
    searches: list[str] = []
    options: list[str] = []
    try:
        text = path.read_text()
    except OSError:
        return servers, searches, options
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if words[0] == "nameserver" and len(words) > 1:
            servers.append(words[1])
        elif words[0] in ("search", "domain"):
            searches = words[1:]
        elif words[0] == "options":
            options += words[1:]
    return servers, searches, options


def _merge_options(base: list[str], extra: list[Mapping[str, Any]]) -> list[str]:
    merged: dict[str, str] = {}
    for text in base:
        merged[text.partition(":")[0]] = text
    for option in extra:
        name = str(option.get("name") or "")
        if name:
            value = option.get("value")
            merged[name] = f"{name}:{value}" if value is not None else name
    return list(merged.values())


def resolv_conf(pod: Mapping[str, Any], cluster_dns: str = CLUSTER_DNS,
                domain: str = CLUSTER_DOMAIN,
                host_resolv: Path = Path("/etc/resolv.conf")) -> str | None:
    """The pod's resolv.conf, or None when it keeps the node's (``dnsPolicy: Default``)."""
    spec = pod.get("spec") or {}
    namespace = (pod.get("metadata") or {}).get("namespace") or "default"
    policy = spec.get("dnsPolicy") or "ClusterFirst"
    if policy == "ClusterFirst" and spec.get("hostNetwork"):
        policy = "Default"
    host_servers, host_searches, host_options = _read_host_resolv(host_resolv)
    if policy in ("ClusterFirst", "ClusterFirstWithHostNet"):
        servers = [cluster_dns]
        searches = [f"{namespace}.svc.{domain}", f"svc.{domain}", domain, *host_searches]
        options = [f"ndots:{NDOTS}"]
    elif policy == "None":
        servers, searches, options = [], [], []
    else:
        if not spec.get("dnsConfig"):
            return None
        servers, searches, options = host_servers, host_searches, host_options
    config = spec.get("dnsConfig") or {}
    servers += [str(s) for s in config.get("nameservers") or () if str(s) not in servers]
    searches += [str(s) for s in config.get("searches") or () if str(s) not in searches]
    options = _merge_options(options, list(config.get("options") or ()))
    lines = [f"nameserver {s}" for s in servers[:3]]  # glibc reads three (MAXNS)
    if searches:
        lines.append("search " + " ".join(searches[:32]))
    if options:
        lines.append("options " + " ".join(options))
    return "\n".join(lines) + "\n"
