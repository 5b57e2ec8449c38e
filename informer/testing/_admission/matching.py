"""Which webhooks a request meets: ``rules`` (operations, apiGroups, apiVersions, resources with
subresources, scope), ``namespaceSelector`` and ``objectSelector``, as the apiserver's
``webhook/predicates`` match them (``matchPolicy`` is Exact: a rule naming another version of
the same resource does not match)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from informer.resource import Resource

__all__ = ["Attributes", "matches_rules", "selector_matches"]

Json = dict[str, Any]


@dataclass(frozen=True)
class Attributes:
    """What admission knows of one request (the apiserver's ``admission.Attributes``)."""

    resource: Resource
    subresource: str
    operation: str  # CREATE, UPDATE, DELETE
    namespace: str | None
    name: str
    dry_run: bool
    options: Json
    user_info: Json


def _any(values: Any, wanted: str) -> bool:
    values = list(values or [])
    return "*" in values or wanted in values


def _resource_matches(patterns: list[str], plural: str, subresource: str) -> bool:
    for pattern in patterns:
        res, _, sub = pattern.partition("/")
        if not sub:  # "pods" or "*": the resource itself, never a subresource
            if not subresource and res in ("*", plural):
                return True
        elif res in ("*", plural) and sub in ("*", subresource) and subresource:
            return True
        elif res in ("*", plural) and sub == "*" and not subresource:
            return True  # "pods/*" and "*/*" also match the resource itself
    return False


def matches_rules(rules: Any, attrs: Attributes) -> bool:
    """Whether one of ``rules`` (a RuleWithOperations list) covers the request."""
    resource = attrs.resource
    for rule in rules or []:
        if not isinstance(rule, Mapping):
            continue
        if not _any(rule.get("operations"), attrs.operation):
            continue
        if not _any(rule.get("apiGroups"), resource.group):
            continue
        if not _any(rule.get("apiVersions"), resource.version):
            continue
        if not _resource_matches(
            list(rule.get("resources") or []), resource.plural, attrs.subresource
        ):
            continue
        scope = rule.get("scope") or "*"
        if scope == "Cluster" and resource.namespaced:
            continue
        if scope == "Namespaced" and not resource.namespaced:
            continue
        return True
    return False


def selector_matches(selector: Any, labels: Mapping[str, str]) -> bool:
    """A ``metav1.LabelSelector`` (matchLabels, matchExpressions) against ``labels``; an
    empty or absent selector matches everything."""
    if not isinstance(selector, Mapping):
        return True
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key = expression.get("key", "")
        operator = expression.get("operator", "")
        values = list(expression.get("values") or [])
        present = key in labels
        if operator == "In" and not (present and labels[key] in values):
            return False
        if operator == "NotIn" and present and labels[key] in values:
            return False
        if operator == "Exists" and not present:
            return False
        if operator == "DoesNotExist" and present:
            return False
    return True
