"""``x-kubernetes-validations`` CEL rules of custom resources, evaluated with ``cel-python``.

Each rule is evaluated where it is declared, with ``self`` bound to each value at that node
(array items and map values included) and, for transition rules (those naming ``oldSelf``),
``oldSelf`` bound to the value at the same place in the stored object: transition rules are not
evaluated on create nor where the old value is absent, as the apiserver does. A rule that
evaluates to false is the apiserver's error: ``<path>: Invalid value: "<schema type>": <message,
messageExpression or "failed rule: <rule>">`` (``reason`` may make it Forbidden, Required or
Duplicate; ``fieldPath`` moves it).

``cel-python`` evaluates the CEL language and its standard functions; of the Kubernetes
libraries it gets strings, lists, regular expressions, quantities and URLs (``cel_library``). A
rule using anything else (``ip``, ``cidr``, ``format``, ``semver``...), or when ``cel-python`` is
not installed (the ``cel`` extra), is not evaluated: the write is answered with a ``Warning``
naming the rule, never silently accepted as checked.
"""

from __future__ import annotations

import json
import re
from functools import cache
from typing import Any, Final

from informer.testing._schemas.openapi_validation import FieldError, path_string

__all__ = [
    "CelEvaluationError",
    "CelOutcome",
    "CelUnsupported",
    "compile_error",
    "evaluate_expression",
    "evaluate_rules",
]

Json = dict[str, Any]
_OLD_SELF: Final = re.compile(r"\boldSelf\b")
_MISSING: Final = object()
_NO_SUCH_MEMBER: Final = re.compile(r"no such member in mapping: '([^']*)'")

try:  # the optional ``cel`` extra
    import celpy
    from celpy import celtypes
    from celpy.adapter import json_to_cel

    from informer.testing._schemas.cel_library import FUNCTIONS
except ImportError:  # pragma: no cover - exercised only without the extra
    celpy = None  # type: ignore[assignment]
    celtypes = None  # type: ignore[assignment]
    json_to_cel = None  # type: ignore[assignment]
    FUNCTIONS = {}  # type: ignore[misc]


class CelOutcome:
    """The errors and warnings of one object's rules."""

    def __init__(self) -> None:
        self.errors: list[FieldError] = []
        self.warnings: list[str] = []


_CALL: Final = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(")
_STANDARD: Final = frozenset(
    {
        "size", "has", "all", "exists", "exists_one", "map", "filter", "matches", "startsWith",
        "endsWith", "contains", "int", "uint", "double", "string", "bool", "bytes", "duration",
        "timestamp", "type", "dyn", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear",
        "getFullYear", "getHours", "getMilliseconds", "getMinutes", "getMonth", "getSeconds",
    }
)  # fmt: skip


@cache
def _program(rule: str) -> Any:
    """The compiled rule, or the reason it cannot be evaluated here."""
    assert celpy is not None
    unknown = sorted(
        {name for name in _CALL.findall(_strip_strings(rule))} - _STANDARD - set(FUNCTIONS)
    )
    if unknown:
        return f"unsupported function {', '.join(unknown)}"
    env = celpy.Environment()
    try:
        return env.program(env.compile(rule), functions=FUNCTIONS)
    except Exception as error:  # a parse error of cel-python: not checkable here
        return f"{type(error).__name__}: {error}"


class CelUnsupported(Exception):
    """An expression that cannot be evaluated here (a function or variable ``cel-python`` and
    ``cel_library`` do not have, or no ``cel-python``): nothing can be said of it."""


class CelEvaluationError(Exception):
    """An expression that failed; its message as cel-go words it (``no such key: x``)."""


def evaluate_expression(expression: str, variables: dict[str, Any]) -> Any:
    """The value of ``expression`` with ``variables`` (JSON values) bound; raises
    ``CelUnsupported`` or ``CelEvaluationError``."""
    if celpy is None:
        raise CelUnsupported("install kube-informer[cel]")
    program = _program(expression)
    if isinstance(program, str):
        raise CelUnsupported(program)
    activation = {name: json_to_cel(value) for name, value in variables.items()}
    try:
        return program.evaluate(activation)
    except Exception as error:
        reason = str(error.args[0]) if getattr(error, "args", None) else str(error)
        if "undeclared reference" in reason or "no such overload" in reason.lower():
            raise CelUnsupported(reason) from None
        missing = _NO_SUCH_MEMBER.search(reason)
        raise CelEvaluationError(
            f"no such key: {missing.group(1)}" if missing else reason
        ) from None


def compile_error(rule: str) -> str | None:
    """Why ``rule`` does not compile (a CRD with it is refused), or None; None too when
    cel-python is not installed (nothing can be said)."""
    if celpy is None:
        return None
    try:
        celpy.Environment().compile(rule)
    except Exception as error:
        return f"compilation failed: ERROR: <input>: Syntax error: {str(error).strip()}"
    return None


def _strip_strings(rule: str) -> str:
    """The rule without its string literals (a call inside a string is not a call)."""
    return re.sub(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"", "''", rule)


def evaluate_rules(schema: Json, obj: Any, old: Any) -> CelOutcome:
    """Evaluate every ``x-kubernetes-validations`` rule of ``schema`` over ``obj``."""
    outcome = CelOutcome()
    _walk(schema, obj, old, [], outcome)
    return outcome


def _walk(schema: Any, value: Any, old: Any, path: list[Any], outcome: CelOutcome) -> None:
    if not isinstance(schema, dict) or value is None:
        return
    rules = schema.get("x-kubernetes-validations")
    if isinstance(rules, list) and rules:
        for rule in rules:
            if isinstance(rule, dict) and isinstance(rule.get("rule"), str):
                _check(rule, schema, value, old, path, outcome)
    if isinstance(value, dict):
        props = schema.get("properties")
        if isinstance(props, dict):
            for key, sub in props.items():
                if key in value:
                    child_old = old.get(key, _MISSING) if isinstance(old, dict) else _MISSING
                    _walk(sub, value[key], child_old, [*path, key], outcome)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key, item in value.items():
                if isinstance(props, dict) and key in props:
                    continue
                child_old = old.get(key, _MISSING) if isinstance(old, dict) else _MISSING
                _walk(extra, item, child_old, [*path, key], outcome)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        olds = _correlated(schema, old)
        for index, item in enumerate(value):
            # items of map lists are correlated with the old ones by key (sets by value); other
            # lists' items are not, so transition rules on them are not evaluated
            child_old = _MISSING
            if olds is not None:
                child_old = olds.get(_item_key(schema, item), _MISSING)
            _walk(schema["items"], item, child_old, [*path, index], outcome)


def _item_key(schema: Json, item: Any) -> str:
    if schema.get("x-kubernetes-list-type") == "map" and isinstance(item, dict):
        keys = schema.get("x-kubernetes-list-map-keys") or []
        return json.dumps([item.get(k) for k in keys])
    return json.dumps(item, sort_keys=True)


def _correlated(schema: Json, old: Any) -> dict[str, Any] | None:
    """The old items by key, for a map or set list with an old value (``CorrelatedObject``)."""
    if schema.get("x-kubernetes-list-type") not in ("map", "set") or not isinstance(old, list):
        return None
    return {_item_key(schema, item): item for item in old}


def _schema_type(schema: Json) -> str:
    if schema.get("x-kubernetes-int-or-string"):
        return "integer"
    return str(schema.get("type") or "object")


def _check(
    rule: Json, schema: Json, value: Any, old: Any, path: list[Any], outcome: CelOutcome
) -> None:
    text = str(rule["rule"])
    transition = bool(_OLD_SELF.search(text))
    if transition and old is _MISSING:
        return
    if celpy is None:
        outcome.warnings.append(
            f"x-kubernetes-validations rule not checked (install kube-informer[cel]): {text}"
        )
        return
    program = _program(text)
    if isinstance(program, str):
        outcome.warnings.append(f"x-kubernetes-validations rule not checked: {text} ({program})")
        return
    activation = {"self": json_to_cel(value)}
    if transition:
        activation["oldSelf"] = json_to_cel(old)
    try:
        result = program.evaluate(activation)
    except Exception as error:
        reason = str(error.args[0]) if getattr(error, "args", None) else str(error)
        if "undeclared reference" in reason or "no such overload" in reason.lower():
            outcome.warnings.append(f"x-kubernetes-validations rule not checked: {text}")
            return
        missing = _NO_SUCH_MEMBER.search(reason)
        if missing:
            reason = f"no such key: {missing.group(1)}"
        outcome.errors.append(
            (
                "FieldValueInvalid",
                path_string(path),
                f'Invalid value: "{_schema_type(schema)}": {reason} evaluating rule: '
                f"{_rule_text(rule)}",
            )
        )
        return
    if bool(result) is True:
        return
    message = _message(rule, activation)
    where = path_string(path)
    field_path = rule.get("fieldPath")
    if isinstance(field_path, str) and field_path:
        where = f"{where}{field_path}" if where else field_path.lstrip(".")
    reason = rule.get("reason") or "FieldValueInvalid"
    if reason == "FieldValueForbidden":
        outcome.errors.append(("FieldValueForbidden", where, f"Forbidden: {message}"))
    elif reason == "FieldValueRequired":
        outcome.errors.append(("FieldValueRequired", where, f"Required value: {message}"))
    elif reason == "FieldValueDuplicate":
        outcome.errors.append(
            ("FieldValueDuplicate", where, f'Duplicate value: "{_schema_type(schema)}": {message}')
        )
    else:
        outcome.errors.append(
            ("FieldValueInvalid", where, f'Invalid value: "{_schema_type(schema)}": {message}')
        )


def _message(rule: Json, activation: dict[str, Any]) -> str:
    expression = rule.get("messageExpression")
    if isinstance(expression, str) and expression:
        compiled = _program(expression)
        if not isinstance(compiled, str):
            try:
                text = str(compiled.evaluate(activation))
            except Exception:
                text = ""
            if text.strip():
                return text
    message = rule.get("message")
    if isinstance(message, str) and message.strip():
        return message.strip()
    return f"failed rule: {_rule_text(rule)}"


def _rule_text(rule: Json) -> str:
    """``ruleErrorString``: the rule's message, else the rule."""
    message = rule.get("message")
    if isinstance(message, str) and message.strip():
        return message.strip()
    return str(rule["rule"]).strip()
