"""Whether an informer can hold an object a controller wrote: its namespace, label selector and
field selector against the written object's namespace, name and labels.

Read-your-own-writes waits only on informers that can hold the write: an informer whose selector
excludes the object never sees its event, and its cache version moves past the write only on a
bookmark (about once a minute on a real server). Label selectors follow the Kubernetes syntax
(``k=v``, ``k==v``, ``k!=v``, ``k in (a,b)``, ``k notin (a,b)``, ``k``, ``!k``; ``!=`` and
``notin`` match objects without the label). Field selectors are judged on ``metadata.name`` and
``metadata.namespace``; any other field is unknown here (None).
"""

from __future__ import annotations

import re
from collections.abc import Mapping

__all__ = ["field_selector_matches", "label_selector_matches"]

_SET = re.compile(r"^\s*(\S+)\s+(in|notin)\s+\(([^)]*)\)\s*$")


def _requirements(selector: str) -> list[str]:
    """Split on the commas outside parentheses."""
    parts, depth, current = [], 0, ""
    for ch in selector:
        if ch == "," and depth == 0:
            parts.append(current)
            current = ""
            continue
        depth += ch == "("
        depth -= ch == ")"
        current += ch
    parts.append(current)
    return [p.strip() for p in parts if p.strip()]


def _label_matches(req: str, labels: Mapping[str, str]) -> bool | None:
    if m := _SET.match(req):
        key, op, values = m.group(1), m.group(2), {v.strip() for v in m.group(3).split(",")}
        return (labels.get(key) in values) if op == "in" else (labels.get(key) not in values)
    for op in ("!=", "==", "="):
        if op in req:
            key, _, value = (s.strip() for s in req.partition(op))
            return labels.get(key) != value if op == "!=" else labels.get(key) == value
    if req.startswith("!"):
        return req[1:].strip() not in labels
    if " " in req or "(" in req:
        return None  # not a requirement we understand
    return req in labels


def label_selector_matches(selector: str | None, labels: Mapping[str, str]) -> bool | None:
    """True/False when ``selector`` does/does not match ``labels``; None when unparseable."""
    results = [_label_matches(r, labels) for r in _requirements(selector or "")]
    if None in results:
        return None
    return all(results)


def field_selector_matches(selector: str | None, name: str, namespace: str) -> bool | None:
    """True/False on ``metadata.name``/``metadata.namespace``; None for any other field."""
    fields = {"metadata.name": name, "metadata.namespace": namespace}
    verdict = True
    for req in _requirements(selector or ""):
        for op in ("!=", "==", "="):
            if op in req:
                key, _, value = (s.strip() for s in req.partition(op))
                break
        else:
            return None
        if key not in fields:
            return None
        verdict &= (fields[key] != value) if op == "!=" else (fields[key] == value)
    return verdict
