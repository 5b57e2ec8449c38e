"""Server-side apply (``application/apply-patch+yaml``): create, or merge the applied
configuration into the live object, with field ownership per manager.

The applier owns exactly the fields of its configuration: fields it applied before and no longer
does are removed unless another manager owns them too; a field another manager owns with a
different value is a conflict (409, one cause per field) unless ``force=true``, which takes it
over. Keyed lists merge by their keys, sets of primitives by value, other lists are replaced.
"""

from __future__ import annotations

import json
from typing import Any

from informer.testing import _status as st
from informer.testing._patches.managed_fields import (
    FieldSet,
    Path,
    atomic_members,
    decode_fields,
    encode_fields,
    entry,
    field_set,
    is_missing,
    item_key,
    same_entry,
    value_at,
)
from informer.testing._query.write_options import WriteOptions
from informer.testing._registry.registry import Registry, copy, now
from informer.testing._schemas.types import TYPES, Field, root_type
from informer.testing._schemas.validation import check_applied, check_type, prune_unknown
from informer.testing._storage.store import Kind

__all__ = ["apply_patch"]

Json = dict[str, Any]
Struct = dict[str, Field]


def apply_patch(
    registry: Registry,
    kind: Kind,
    name: str,
    namespace: str | None,
    body: Json,
    options: WriteOptions,
    subresource: str = "",
) -> tuple[Json, bool]:
    """Apply ``body`` for ``options.field_manager``; returns (object, created)."""
    resource = kind.resource
    manager = options.field_manager or ""
    check_type(resource, body)
    for required in ("apiVersion", "kind"):
        if not body.get(required):
            raise st.bad_request(f"{required} must be set")
    strategy = registry.strategy(resource)
    custom = strategy.spec.custom
    if not custom:
        check_applied(resource, body, name)
    elif strategy.schema is not None:
        check_applied(resource, body, name, strategy.schema.schema)
    applied = prune_unknown(resource, copy(body), options, custom=custom)
    meta = applied.get("metadata")
    if not isinstance(meta, dict):
        meta = applied["metadata"] = {}
    if meta.get("name", name) != name:
        raise st.bad_request(
            f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
        )
    meta["name"] = name
    fields = field_set(applied, resource.group, resource.plural)
    time = now()
    ns = registry.namespace_of(resource, namespace)
    current = registry.current(resource, ns, name)
    if current is None:
        if subresource:
            raise st.not_found(resource, name)
        meta["managedFields"] = [entry(manager, "Apply", resource.api_version, fields, time)]
        _strict_yaml(options)
        return registry.create(resource, applied, namespace, options=options), True
    live: Json = json.loads(current.typed)
    entries = list(live["metadata"].get("managedFields") or [])
    prior: FieldSet = set()
    others: list[tuple[Json, FieldSet]] = []
    conflicts: list[tuple[Json, Path]] = []
    atomic = atomic_members(applied, resource.group, resource.plural)
    for existing in entries:
        owned = decode_fields(existing.get("fieldsV1"))
        if same_entry(existing, manager, "Apply", subresource):
            prior = owned
            continue
        for path in sorted(owned & fields):
            before, after = value_at(live, path), value_at(applied, path)
            leaf = not isinstance(after, dict) or path in atomic
            if not is_missing(before) and leaf and before != after:
                conflicts.append((existing, path))
        others.append((existing, owned))
    if conflicts and not options.force:
        raise _conflict_error(conflicts)
    _strict_yaml(options)
    taken = {path for _, path in conflicts}
    merged = _merge(live, applied, root_type(resource.group, resource.plural))
    still_owned: FieldSet = set()
    new_entries: list[Json] = []
    for existing, owned in others:
        kept = owned - taken
        still_owned |= kept
        if kept == owned:
            new_entries.append(existing)
        elif kept:
            new_entries.append({**existing, "fieldsV1": encode_fields(kept)})
    owned_now = still_owned | fields
    for path in sorted(prior - fields, key=len):  # a removed item takes its fields with it
        if path not in still_owned and not any(p[: len(path)] == path for p in still_owned):
            _remove(merged, path, owned_now)
    new_entries.insert(0, entry(manager, "Apply", resource.api_version, fields, time, subresource))
    merged_meta = merged["metadata"]
    merged_meta["managedFields"] = new_entries
    merged_meta.pop("resourceVersion", None)
    if meta.get("resourceVersion"):
        merged_meta["resourceVersion"] = meta["resourceVersion"]
    updated = registry.update(
        resource, merged, name, namespace, subresource=subresource, options=options
    )
    return updated, False


def _strict_yaml(options: WriteOptions) -> None:
    """Once the apply itself succeeded (its conflicts and typed conversion come first): YAML's
    strict decoding of the body, 400 under ``fieldValidation=Strict``; under ``Warn`` a warning
    that no client sees (its text has line breaks, and the apiserver drops such a warning)."""
    if not options.yaml_problems:
        return
    error = "error converting YAML to JSON: yaml: unmarshal errors:\n  " + "\n  ".join(
        options.yaml_problems
    )
    if options.field_validation == "Strict":
        raise st.bad_request(f"error strict decoding YAML: {error}")
    if options.field_validation == "Warn":
        options.warnings.append(error)


def _merge(live: Json, applied: Json, struct: Struct | None) -> Json:
    result = dict(live)
    for key, value in applied.items():
        field = struct.get(key) if struct is not None else None
        if key == "metadata" and struct is not None and "metadata" in struct:
            field = struct["metadata"]
        old = result.get(key)
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(old, dict) and not (field and field.atomic):
            sub = TYPES.get(field.type) if field is not None and field.type else None
            result[key] = _merge(old, value, sub)
        elif isinstance(value, list) and isinstance(old, list) and field is not None:
            result[key] = _merge_list(old, value, field)
        else:
            result[key] = value
    return result


def _merge_list(live: list[Any], applied: list[Any], field: Field) -> list[Any]:
    if field.list == "set":
        return live + [v for v in applied if v not in live]
    if field.list != "map" or not field.list_keys:
        return applied
    sub = TYPES.get(field.type) if field.type else None
    result = list(live)
    for item in applied:
        element = item_key(item, field)
        at = next((i for i, old in enumerate(result) if item_key(old, field) == element), None)
        if at is None or element is None:
            result.append(item)
        else:
            result[at] = _merge(result[at], item, sub)
    return result


def _remove(obj: Json, path: Path, owned: FieldSet) -> None:
    """Remove the field or item at ``path`` (absent: nothing to do), then the containers it
    leaves empty that nobody owns."""
    parent = value_at(obj, path[:-1]) if len(path) > 1 else obj
    if is_missing(parent):
        return
    kind, _, text = path[-1].partition(":")
    if kind == "f" and isinstance(parent, dict):
        parent.pop(text, None)
    elif kind == "k" and isinstance(parent, list):
        keys = json.loads(text)
        parent[:] = [
            i
            for i in parent
            if not (isinstance(i, dict) and all(i.get(k) == v for k, v in keys.items()))
        ]
    elif kind == "v" and isinstance(parent, list):
        value = json.loads(text)
        parent[:] = [i for i in parent if i != value]
    if len(path) > 1 and not parent and path[:-1] not in owned:
        _remove(obj, path[:-1], owned)


def path_string(path: Path) -> str:
    """A path as structured-merge-diff prints it: ``.spec.containers[name="c"].image``."""
    out = []
    for element in path:
        kind, _, text = element.partition(":")
        if kind == "f":
            out.append(f".{text}")
        elif kind == "k":
            keys = json.loads(text)
            out.append("[" + ",".join(f"{k}={json.dumps(v)}" for k, v in keys.items()) + "]")
        else:
            out.append(f"[={text}]")
    return "".join(out)


def _manager_text(existing: Json) -> str:
    if existing.get("operation") == "Update":
        text = f'"{existing.get("manager", "")}" using {existing.get("apiVersion", "")}'
        if existing.get("time"):
            text += f" at {existing['time']}"
        return text
    return f'"{existing.get("manager", "")}"'


def _conflict_error(conflicts: list[tuple[Json, Path]]) -> st.StatusError:
    """409 as the field manager words it (one cause per conflicting field)."""
    causes = [
        {
            "reason": "FieldManagerConflict",
            "message": f"conflict with {_manager_text(owner)}",
            "field": path_string(path),
        }
        for owner, path in conflicts
    ]
    if len(conflicts) == 1:
        owner, path = conflicts[0]
        message = (
            f"Apply failed with 1 conflict: conflict with {_manager_text(owner)}: "
            f"{path_string(path)}"
        )
    else:
        by_manager: dict[str, list[str]] = {}
        for owner, path in conflicts:
            by_manager.setdefault(_manager_text(owner), []).append(path_string(path))
        lines = []
        for manager in sorted(by_manager):
            lines.append(f"conflicts with {manager}:")
            lines.extend(f"- {p}" for p in by_manager[manager])
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return st.Conflict(st.status(409, "Conflict", message, {"causes": causes}))
