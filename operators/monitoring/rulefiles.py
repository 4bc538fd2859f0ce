"""Rule files from PrometheusRules: one file per object, named ``<ns>-<name>.yaml`` as the
prometheus-operator names them, in ConfigMaps ``prometheus-<name>-rulefiles-<n>`` that
each stay under the ConfigMap size limit (the API server refuses more than 1 MiB of data;
we cut at half of it, as the prometheus-operator does)."""

from __future__ import annotations

from typing import Any

import yaml

from operators.monitoring.resources.prometheusrule import PrometheusRule

MAX_CONFIG_MAP_BYTES = 512 * 1024


def rule_file(rule: PrometheusRule) -> str:
    """The Prometheus rule file of one PrometheusRule (the spec as Prometheus reads it)."""
    groups: list[dict[str, Any]] = []
    for group in rule.spec.groups:
        out: dict[str, Any] = {"name": group.name}
        if group.interval:
            out["interval"] = group.interval
        if group.limit:
            out["limit"] = group.limit
        out["rules"] = [item.model_dump(by_alias=True, exclude_none=True)
                        for item in group.rules]
        groups.append(out)
    return yaml.safe_dump({"groups": groups}, sort_keys=False)


def file_name(rule: PrometheusRule) -> str:
    return f"{rule.metadata.namespace}-{rule.metadata.name}.yaml"


def shards(rules: list[PrometheusRule]) -> list[dict[str, str]]:
    """The rule files split into ConfigMap data under the size limit, in a stable order
    (always at least one, possibly empty, so that the mount exists)."""
    out: list[dict[str, str]] = [{}]
    size = 0
    for rule in rules:
        text = rule_file(rule)
        if out[-1] and size + len(text) > MAX_CONFIG_MAP_BYTES:
            out.append({})
            size = 0
        out[-1][file_name(rule)] = text
        size += len(text)
    return out
