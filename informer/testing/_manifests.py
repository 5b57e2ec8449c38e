"""Files ``informer serve`` reads: manifests (seed objects, CRDs) and declarative faults.

Manifests are YAML (several documents separated by ``---``) or JSON (one object, a list, or a
``kind: List`` whose ``items`` are the objects), as ``kubectl apply -f`` reads them. Faults are a
YAML or JSON list of mappings whose keys are ``Fault`` fields (``predicate`` excepted: code
cannot be declared)::

    - {verb: watch, resource: configmaps, nth: 2, status: 410}
    - {verb: list, status: 429, retry_after: 1, times: null}
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import yaml

from informer.testing.faults import Fault

__all__ = ["ManifestError", "load_faults", "load_manifests", "read_documents"]

Json = dict[str, Any]

_FAULT_FIELDS = frozenset(
    f.name for f in dataclasses.fields(Fault) if f.init and f.name != "predicate"
)


class ManifestError(ValueError):
    """A file that is not a manifest or fault list (its path and what is wrong, no data)."""


def read_documents(path: str | Path) -> list[Any]:
    """The YAML/JSON documents of ``path`` (JSON is YAML), empty documents dropped."""
    path = Path(path)
    try:
        text = path.read_text()
        documents = [d for d in yaml.safe_load_all(text) if d is not None]
    except (OSError, yaml.YAMLError) as error:
        raise ManifestError(f"{path}: {type(error).__name__}") from None
    return documents


def load_manifests(path: str | Path) -> list[Json]:
    """The Kubernetes objects in ``path`` (lists and ``kind: List`` expanded)."""
    objects: list[Json] = []

    def add(doc: Any, where: str) -> None:
        if isinstance(doc, list):
            for index, item in enumerate(doc):
                add(item, f"{where}[{index}]")
            return
        if not isinstance(doc, dict):
            raise ManifestError(f"{path}: {where} is not an object")
        if doc.get("kind") == "List" or str(doc.get("kind", "")).endswith("List"):
            add(doc.get("items") or [], f"{where}.items")
            return
        if not doc.get("apiVersion") or not doc.get("kind"):
            raise ManifestError(f"{path}: {where} has no apiVersion and kind")
        objects.append(doc)

    for number, document in enumerate(read_documents(path)):
        add(document, f"document {number + 1}")
    return objects


def load_faults(path: str | Path) -> list[Fault]:
    """The ``Fault`` rules declared in ``path`` (a list of mappings of Fault fields)."""
    faults: list[Fault] = []
    for document in read_documents(path):
        rules = document if isinstance(document, list) else [document]
        for index, rule in enumerate(rules):
            if not isinstance(rule, dict):
                raise ManifestError(f"{path}: fault {index + 1} is not a mapping")
            unknown = sorted(set(rule) - _FAULT_FIELDS)
            if unknown:
                raise ManifestError(
                    f"{path}: fault {index + 1}: unknown fields {unknown}; "
                    f"known: {sorted(_FAULT_FIELDS)}"
                )
            try:
                faults.append(Fault(**rule))
            except TypeError as error:
                raise ManifestError(f"{path}: fault {index + 1}: {error}") from None
    return faults
