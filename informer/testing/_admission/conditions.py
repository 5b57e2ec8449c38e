"""A webhook's ``matchConditions``: CEL expressions (``cel-python``) over ``object``,
``oldObject`` (null when there is none) and ``request`` (the AdmissionRequest without its
objects), evaluated once its rules and selectors matched, as the apiserver's
``matchconditions`` matcher does:

- every condition true: the webhook is called;
- a condition false: it is not, whatever the others gave (errors included);
- otherwise, a condition that failed to evaluate: with ``failurePolicy: Fail`` (the default)
  the request is refused, 403 ``<resource> "<name>" is forbidden: expression '<expression>'
  resulted in error: <error>`` (several: ``[..., ...]``); with ``Ignore`` the webhook is
  skipped.

An expression that cannot be evaluated here (``authorizer``, a function ``cel-python`` lacks,
or without the ``cel`` extra) does not decide: the webhook is called as if it were true and the
response carries a ``Warning`` naming it, never a silent pass.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from informer.testing import _status as st
from informer.testing._admission.matching import Attributes
from informer.testing._schemas.cel_rules import (
    CelEvaluationError,
    CelUnsupported,
    evaluate_expression,
)

__all__ = ["conditions_met"]

Json = dict[str, Any]


def conditions_met(
    hook: Json,
    attrs: Attributes,
    variables: Json,
    warnings: list[str],
) -> bool:
    """Whether ``hook`` is to be called; raises 403 when its conditions failed to evaluate
    and its failure policy is Fail. ``variables``: ``object``, ``oldObject``, ``request``."""
    conditions = hook.get("matchConditions")
    if not conditions:
        return True
    errors: list[str] = []
    for condition in conditions:
        if not isinstance(condition, Mapping):
            continue
        expression = str(condition.get("expression") or "")
        try:
            result = evaluate_expression(expression, variables)
        except CelUnsupported as unsupported:
            warnings.append(
                f'matchCondition "{condition.get("name", "")}" of webhook "{hook.get("name")}" '
                f"not evaluated (called as if true): {expression} ({unsupported})"
            )
            continue
        except CelEvaluationError as error:
            errors.append(f"expression '{expression}' resulted in error: {error}")
            continue
        if not bool(result):
            return False
    if not errors:
        return True
    if hook.get("failurePolicy") == "Ignore":
        return False
    why = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    raise st.forbidden_object(attrs.resource, attrs.name, why)
