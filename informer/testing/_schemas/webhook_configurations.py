"""Validation of admission webhook configurations (``admissionregistration.k8s.io/v1``
Validating- and MutatingWebhookConfiguration), as ``pkg/apis/admissionregistration/validation``
of v1.36 words it, so a chart or operator that registers a malformed webhook fails its test as
it fails on a cluster (422 ``ValidatingWebhookConfiguration.admissionregistration.k8s.io "x" is
invalid: [...]``).

Checked per webhook, in the apiserver's order: a fully qualified ``name`` (three segments at
least), each rule's operations, API groups, versions, resources (wildcard combinations) and
scope, ``failurePolicy``, ``matchPolicy``, ``sideEffects`` (required: ``None`` or
``NoneOnDryRun``), ``timeoutSeconds`` (1 to 30), the namespace and object selectors'
expressions, ``reinvocationPolicy`` (mutating), ``clientConfig`` (exactly one of an ``https``
URL without user, query or fragment, or a service with name, namespace, a valid port and a path
of DNS-1123 segments), ``matchConditions`` (named, with an expression, names unique, at most
64); then ``admissionReviewVersions`` (required, no repeats, DNS-1035 labels, one of ``v1`` or
``v1beta1`` among them); then the webhook's name unique in the configuration.

Defaults are applied before validation on a cluster, so a field the defaulters fill
(``failurePolicy``, ``matchPolicy``, ``timeoutSeconds``, ``scope``, a service's ``port``) is
checked only when given. CEL match conditions are not compiled here.
"""

from __future__ import annotations

import json
import re
from typing import Any, Final
from urllib.parse import urlsplit

from informer.testing import _status as st

__all__ = ["webhook_configuration_errors"]

Error = tuple[str, str, str]

_DNS1123_LABEL: Final = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN: Final = rf"{_DNS1123_LABEL}(\.{_DNS1123_LABEL})*"
_SUBDOMAIN_MESSAGE: Final = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
    "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
    f"for validation is '{_DNS1123_SUBDOMAIN}')"
)
_DNS1035_LABEL: Final = r"[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_MESSAGE: Final = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    f"'abc-123', regex used for validation is '{_DNS1035_LABEL}')"
)
_NAME_PART: Final = r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_PART_MESSAGE: Final = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
    "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
    f"used for validation is '{_NAME_PART}')"
)
_FORM: Final = "; desired format: https://host[/path]"
_FAILURE_POLICIES: Final = ["Fail", "Ignore"]
_MATCH_POLICIES: Final = ["Equivalent", "Exact"]
_SIDE_EFFECTS: Final = ["None", "NoneOnDryRun"]
_OPERATIONS: Final = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"]
_REINVOCATION: Final = ["IfNeeded", "Never"]
_SCOPES: Final = ["*", "Cluster", "Namespaced"]
_REVIEW_VERSIONS: Final = ("v1", "v1beta1")
_SELECTOR_OPERATORS: Final = ("In", "NotIn", "Exists", "DoesNotExist")


def webhook_configuration_errors(obj: dict[str, Any], *, mutating: bool) -> list[Error]:
    """The field errors of a webhook configuration (its metadata is checked elsewhere)."""
    errors: list[Error] = []
    names: set[str] = set()
    for index, hook in enumerate(_list(obj.get("webhooks"))):
        at = f"webhooks[{index}]"
        if not isinstance(hook, dict):
            continue
        errors.extend(_webhook_errors(hook, at, mutating))
        errors.extend(_review_version_errors(hook.get("admissionReviewVersions"), at))
        name = hook.get("name")
        if isinstance(name, str) and name:
            if name in names:
                errors.append(("FieldValueDuplicate", f"{at}.name", f"Duplicate value: {_q(name)}"))
            names.add(name)
    return errors


def _webhook_errors(hook: dict[str, Any], at: str, mutating: bool) -> list[Error]:
    errors = _qualified_name_errors(hook.get("name"), f"{at}.name")
    for index, rule in enumerate(_list(hook.get("rules"))):
        if isinstance(rule, dict):
            errors.extend(_rule_errors(rule, f"{at}.rules[{index}]"))
    for key, supported in (("failurePolicy", _FAILURE_POLICIES), ("matchPolicy", _MATCH_POLICIES)):
        if key in hook and hook[key] is not None and hook[key] not in supported:
            errors.append(st.not_supported(f"{at}.{key}", str(hook[key]), supported))
    effects = hook.get("sideEffects")
    if effects is None:
        errors.append(
            st.required(f"{at}.sideEffects", f"must specify one of {', '.join(_SIDE_EFFECTS)}")
        )
    elif effects not in _SIDE_EFFECTS:
        errors.append(st.not_supported(f"{at}.sideEffects", str(effects), _SIDE_EFFECTS))
    timeout = hook.get("timeoutSeconds")
    if isinstance(timeout, int) and not 1 <= timeout <= 30:
        errors.append(
            (
                "FieldValueInvalid",
                f"{at}.timeoutSeconds",
                f"Invalid value: {timeout}: the timeout value must be between 1 and 30 seconds",
            )
        )
    for key in ("namespaceSelector", "objectSelector"):
        errors.extend(_selector_errors(hook.get(key), f"{at}.{key}"))
    if mutating:
        policy = hook.get("reinvocationPolicy")
        if policy is not None and policy not in _REINVOCATION:
            errors.append(st.not_supported(f"{at}.reinvocationPolicy", str(policy), _REINVOCATION))
    errors.extend(_client_config_errors(hook.get("clientConfig"), f"{at}.clientConfig"))
    errors.extend(_match_condition_errors(hook.get("matchConditions"), f"{at}.matchConditions"))
    return errors


def _rule_errors(rule: dict[str, Any], at: str) -> list[Error]:
    errors: list[Error] = []
    operations = _list(rule.get("operations"))
    if not operations:
        errors.append(_required(f"{at}.operations"))
    if len(operations) > 1 and "*" in operations:
        errors.append(
            _invalid(
                f"{at}.operations",
                operations,
                "if '*' is present, must not specify other operations",
            )
        )
    for index, operation in enumerate(operations):
        if operation not in _OPERATIONS:
            errors.append(
                st.not_supported(f"{at}.operations[{index}]", str(operation), _OPERATIONS)
            )
    groups = _list(rule.get("apiGroups"))
    if not groups:
        errors.append(_required(f"{at}.apiGroups"))
    if len(groups) > 1 and "*" in groups:
        errors.append(
            _invalid(
                f"{at}.apiGroups", groups, "if '*' is present, must not specify other API groups"
            )
        )
    versions = _list(rule.get("apiVersions"))
    if not versions:
        errors.append(_required(f"{at}.apiVersions"))
    if len(versions) > 1 and "*" in versions:
        errors.append(
            _invalid(
                f"{at}.apiVersions",
                versions,
                "if '*' is present, must not specify other API versions",
            )
        )
    for index, version in enumerate(versions):
        if version == "":
            errors.append(_required(f"{at}.apiVersions[{index}]"))
    errors.extend(_resource_errors(_list(rule.get("resources")), f"{at}.resources"))
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        errors.append(st.not_supported(f"{at}.scope", str(scope), _SCOPES))
    return errors


def _resource_errors(resources: list[Any], at: str) -> list[Error]:
    """``validateResources``: wildcards and subresources that contradict one another."""
    errors: list[Error] = []
    if not resources:
        errors.append(_required(at))
    wildcard_subresources: set[str] = set()  # x/*
    wildcard_resources: set[str] = set()  # */x
    double = single = plain = False
    for index, entry in enumerate(resources):
        text = str(entry)
        if text == "":
            errors.append(_required(f"{at}[{index}]"))
            continue
        double = double or text == "*/*"
        single = single or text == "*"
        resource, slash, sub = text.partition("/")
        if not slash:
            plain = text != "*"
            continue
        if resource in wildcard_subresources:
            errors.append(
                _invalid(
                    f"{at}[{index}]", text, f"if '{resource}/*' is present, must not specify {text}"
                )
            )
        if sub in wildcard_resources:
            errors.append(
                _invalid(
                    f"{at}[{index}]", text, f"if '*/{sub}' is present, must not specify {text}"
                )
            )
        if sub == "*":
            wildcard_subresources.add(resource)
        if resource == "*":
            wildcard_resources.add(sub)
    if len(resources) > 1 and double:
        errors.append(
            _invalid(at, resources, "if '*/*' is present, must not specify other resources")
        )
    if single and plain:
        errors.append(
            _invalid(
                at,
                resources,
                "if '*' is present, must not specify other resources without subresources",
            )
        )
    return errors


def _client_config_errors(config: Any, at: str) -> list[Error]:
    config = config if isinstance(config, dict) else {}
    url, service = config.get("url"), config.get("service")
    if (url is None) == (service is None):
        return [st.required(at, "exactly one of url or service is required")]
    if url is not None:
        return _url_errors(str(url), f"{at}.url")
    return _service_errors(service if isinstance(service, dict) else {}, f"{at}.service")


def _url_errors(url: str, at: str) -> list[Error]:
    """``ValidateWebhookURL`` with https forced."""
    try:
        parts = urlsplit(url)
    except ValueError as error:
        return [st.required(at, f"url must be a valid URL: {error}{_FORM}")]
    errors: list[Error] = []
    if parts.scheme != "https":
        errors.append(_invalid(at, parts.scheme, f"'https' is the only allowed URL scheme{_FORM}"))
    host = parts.netloc.rpartition("@")[2]
    if not host:
        errors.append(_invalid(at, host, f"host must be specified{_FORM}"))
    if "@" in parts.netloc:
        user = parts.netloc.rpartition("@")[0]
        errors.append(_invalid(at, user, "user information is not permitted in the URL"))
    if parts.fragment:
        errors.append(_invalid(at, parts.fragment, "fragments are not permitted in the URL"))
    if parts.query:
        errors.append(_invalid(at, parts.query, "query parameters are not permitted in the URL"))
    return errors


def _service_errors(service: dict[str, Any], at: str) -> list[Error]:
    """``ValidateWebhookService``: name, namespace, port (443 when not given), path segments."""
    errors: list[Error] = []
    if not service.get("name"):
        errors.append(_required(f"{at}.name"))
    if not service.get("namespace"):
        errors.append(_required(f"{at}.namespace"))
    port = service.get("port", 443)
    if isinstance(port, int) and not 1 <= port <= 65535:
        errors.append(
            (
                "FieldValueInvalid",
                f"{at}.port",
                f"Invalid value: {port}: port is not valid: must be between 1 and 65535, inclusive",
            )
        )
    path = service.get("path")
    if not isinstance(path, str) or path in ("", "/"):
        return errors
    if path == "//":
        return [*errors, _invalid(f"{at}.path", path, "segment[0] may not be empty")]
    if not path.startswith("/"):
        errors.append(_invalid(f"{at}.path", path, "must start with a '/'"))
    segments = path[1:].removesuffix("/").split("/")
    for index, segment in enumerate(segments):
        if not segment:
            errors.append(_invalid(f"{at}.path", path, f"segment[{index}] may not be empty"))
            continue
        for failure in _subdomain_errors(segment):
            errors.append(_invalid(f"{at}.path", path, f"segment[{index}]: {failure}"))
    return errors


def _match_condition_errors(conditions: Any, at: str) -> list[Error]:
    items = _list(conditions)
    errors: list[Error] = []
    if len(items) > 64:
        errors.append(
            ("FieldValueTooMany", at, f"Too many: {len(items)}: must have at most 64 items")
        )
    names: set[str] = set()
    for index, condition in enumerate(items):
        if not isinstance(condition, dict):
            continue
        where = f"{at}[{index}]"
        if not str(condition.get("expression") or "").strip():
            errors.append(_required(f"{where}.expression"))
        name = condition.get("name")
        if not name:
            errors.append(_required(f"{where}.name"))
        else:
            errors.extend(_qualified_name_part_errors(str(name), f"{where}.name"))
            if name in names:
                errors.append(
                    ("FieldValueDuplicate", f"{where}.name", f"Duplicate value: {_q(name)}")
                )
            names.add(str(name))
    return errors


def _review_version_errors(versions: Any, at: str) -> list[Error]:
    at = f"{at}.admissionReviewVersions"
    items = _list(versions)
    if not items:
        return [st.required(at, f"must specify one of {', '.join(_REVIEW_VERSIONS)}")]
    errors: list[Error] = []
    seen: set[str] = set()
    for index, version in enumerate(items):
        text = str(version)
        if text in seen:
            errors.append(_invalid(f"{at}[{index}]", text, "duplicate version"))
            continue
        seen.add(text)
        if len(text) > 63:
            errors.append(_invalid(f"{at}[{index}]", text, "must be no more than 63 characters"))
        if not re.fullmatch(_DNS1035_LABEL, text):
            errors.append(_invalid(f"{at}[{index}]", text, _DNS1035_MESSAGE))
    if not seen & set(_REVIEW_VERSIONS):
        errors.append(
            _invalid(at, items, f"must include at least one of {', '.join(_REVIEW_VERSIONS)}")
        )
    return errors


def _selector_errors(selector: Any, at: str) -> list[Error]:
    """``ValidateLabelSelector``'s expressions (operators and their values)."""
    if not isinstance(selector, dict):
        return []
    errors: list[Error] = []
    for index, expression in enumerate(_list(selector.get("matchExpressions"))):
        if not isinstance(expression, dict):
            continue
        where = f"{at}.matchExpressions[{index}]"
        operator, values = expression.get("operator"), _list(expression.get("values"))
        if operator in ("In", "NotIn"):
            if not values:
                errors.append(
                    st.required(
                        f"{where}.values", "must be specified when `operator` is 'In' or 'NotIn'"
                    )
                )
        elif operator in ("Exists", "DoesNotExist"):
            if values:
                errors.append(
                    st.forbidden(
                        f"{where}.values",
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    )
                )
        else:
            errors.append(
                _invalid(f"{where}.operator", str(operator), "not a valid selector operator")
            )
    return errors


def _qualified_name_errors(name: Any, at: str) -> list[Error]:
    """``IsFullyQualifiedName``: a DNS-1123 subdomain of three segments or more."""
    if not isinstance(name, str) or not name:
        return [_required(at)]
    problems = _subdomain_errors(name)
    if problems:
        return [_invalid(at, name, ",".join(problems))]
    if len(name.split(".")) < 3:
        return [
            _invalid(at, name, "should be a domain with at least three segments separated by dots")
        ]
    return []


def _qualified_name_part_errors(name: str, at: str) -> list[Error]:
    """``ValidateQualifiedName`` of a name without a prefix (match conditions' names)."""
    prefix, slash, part = name.rpartition("/")
    errors: list[Error] = []
    if slash and (not prefix or _subdomain_errors(prefix)):
        errors.append(_invalid(at, name, f"prefix part {_SUBDOMAIN_MESSAGE}"))
    if not part:
        errors.append(_invalid(at, name, "name part must be non-empty"))
    elif len(part) > 63:
        errors.append(_invalid(at, name, "name part must be no more than 63 characters"))
    elif not re.fullmatch(_NAME_PART, part):
        errors.append(_invalid(at, name, _NAME_PART_MESSAGE))
    return errors


def _subdomain_errors(value: str) -> list[str]:
    errors: list[str] = []
    if len(value) > 253:
        errors.append("must be no more than 253 characters")
    if not re.fullmatch(_DNS1123_SUBDOMAIN, value):
        errors.append(_SUBDOMAIN_MESSAGE)
    return errors


def _required(at: str) -> Error:
    return ("FieldValueRequired", at, "Required value")


def _invalid(at: str, value: Any, detail: str) -> Error:
    """``field.Invalid``: a string quoted, anything else as Go's JSON of it."""
    return ("FieldValueInvalid", at, f"Invalid value: {_q(value)}: {detail}")


def _q(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []
