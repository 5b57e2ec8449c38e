"""The ``/scale`` subresource (``autoscaling/v1`` Scale) of resources that declare one.

A Scale shows the object's ``metadata`` (name, namespace, uid, resourceVersion,
creationTimestamp), ``spec.replicas`` from the spec replicas path and ``status.replicas`` and
``status.selector`` (a string) from the status paths, 0 and "" when absent, as the apiextensions
server's scale subresource reads them. Writing a Scale writes only the spec replicas path of
the object (through the registry's update rules: a new resourceVersion, generation, a
``managedFields`` entry with ``subresource: scale``).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Final

from informer.resource import Resource
from informer.testing import _status as st
from informer.testing._catalog.specs import ScalePaths
from informer.testing._query.write_options import WriteOptions
from informer.testing._registry.registry import Registry, copy
from informer.testing._schemas.validation import check_type, prune_unknown

__all__ = ["SCALE", "read_scale", "selector_string", "write_scale"]

Json = dict[str, Any]
SCALE: Final = Resource("autoscaling", "v1", "scales", "Scale")


def _get(obj: Any, path: str) -> Any:
    node = obj
    for key in path.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def _set(obj: Json, path: str, value: Any) -> None:
    keys = path.split(".")
    node = obj
    for key in keys[:-1]:
        child = node.get(key)
        if not isinstance(child, dict):
            child = {}
            node[key] = child
        node = child
    node[keys[-1]] = value


def selector_string(selector: Json) -> str:
    """A label selector as its string form (``LabelSelectorAsSelector(...).String()``): a
    LabelSelector (``matchLabels``, ``matchExpressions``) or a plain map (ReplicationController),
    requirements sorted by key, values sorted."""
    if "matchLabels" in selector or "matchExpressions" in selector:
        labels = selector.get("matchLabels") or {}
        expressions = selector.get("matchExpressions") or []
    else:
        labels, expressions = selector, []
    requirements = [(str(key), f"{key}={value}") for key, value in labels.items()]
    for expression in expressions:
        if not isinstance(expression, dict):
            continue
        key, operator = str(expression.get("key", "")), expression.get("operator")
        values = ",".join(sorted(str(v) for v in expression.get("values") or []))
        if operator == "In":
            requirements.append((key, f"{key} in ({values})"))
        elif operator == "NotIn":
            requirements.append((key, f"{key} notin ({values})"))
        elif operator == "Exists":
            requirements.append((key, key))
        elif operator == "DoesNotExist":
            requirements.append((key, f"!{key}"))
    return ",".join(text for _, text in sorted(requirements, key=lambda r: r[0]))


def read_scale(paths: ScalePaths, obj: Json) -> Json:
    """The Scale of ``obj``."""
    meta = obj.get("metadata") or {}
    scale_meta: Json = {"name": meta.get("name")}
    for key in ("namespace", "uid", "resourceVersion", "creationTimestamp"):
        if key in meta:
            scale_meta[key] = meta[key]
    replicas = _get(obj, paths.spec_replicas)
    status_replicas = _get(obj, paths.status_replicas) if paths.status_replicas else None
    selector = _get(obj, paths.label_selector) if paths.label_selector else None
    status: Json = {"replicas": status_replicas if isinstance(status_replicas, int) else 0}
    if isinstance(selector, dict):
        selector = selector_string(selector)
    if isinstance(selector, str) and selector:
        status["selector"] = selector
    return {
        "kind": SCALE.kind,
        "apiVersion": SCALE.api_version,
        "metadata": scale_meta,
        "spec": {"replicas": replicas if isinstance(replicas, int) else 0},
        "status": status,
    }


def write_scale(
    registry: Registry,
    resource: Resource,
    paths: ScalePaths,
    name: str,
    namespace: str | None,
    scale: Any,
    options: WriteOptions,
) -> Json:
    """Set the object's replicas to the Scale's ``spec.replicas``; the new Scale.

    The Scale is decoded as the typed ``autoscaling/v1`` Scale it is: unknown and duplicate
    fields follow ``fieldValidation`` (400 ``Scale in version "v1" cannot be handled as a
    Scale: strict decoding error: ...`` under Strict, 422 ``patch: Invalid value`` for a patch,
    a ``Warning`` each under Warn, the default); 422 for a Scale without a non-negative integer
    ``spec.replicas``; 409 when its ``metadata.resourceVersion`` is not the object's."""
    if not isinstance(scale, dict):
        raise st.bad_request("the request body must be a Scale object")
    if options.validate:
        check_type(SCALE, scale)
        scale = prune_unknown(SCALE, scale, options)
        # the object behind the Scale is written with the Scale's problems already answered
        options = dataclasses.replace(
            options,
            document=None,
            duplicate_fields=[],
            patch_type="",
            patch=None,
            patch_problems=[],
        )
    replicas = (
        (scale.get("spec") or {}).get("replicas") if isinstance(scale.get("spec"), dict) else None
    )
    if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
        shown = replicas if isinstance(replicas, int) else 0
        raise st.invalid_object(
            SCALE,
            SCALE.kind,
            name,
            [
                (
                    "FieldValueInvalid",
                    "spec.replicas",
                    f"Invalid value: {shown}: must be greater than or equal to 0",
                )
            ],
        )
    current = registry.get(resource, name, namespace)
    if current is None:
        raise st.not_found(resource, name)
    wanted = (scale.get("metadata") or {}).get("resourceVersion")
    if wanted and wanted != current["metadata"].get("resourceVersion"):
        raise st.conflict(resource, name)
    updated = copy(current)
    _set(updated, paths.spec_replicas, replicas)
    result = registry.update(
        resource, updated, name, namespace, subresource="scale", options=options
    )
    return read_scale(paths, result)
