"""The demo's controller: every ConfigMap gets a Secret mirror (same name and namespace, owned).

A small level-triggered reconcile, as an operator author would write it: read the ConfigMap and
the Secret from the caches, create, update or delete the Secret through the writes ``Client``.
The ``Controller`` makes it safe: its next reconcile of a key waits until the caches show the
Secret it just wrote (read-your-own-writes), so it never creates a mirror twice.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from informer.client import Client
from informer.controller import Controller, Request
from informer.errors import NotFound
from informer.informer import Informer
from informer.ownership import set_controller_reference
from informer.resource import SECRETS

__all__ = ["mirror_controller", "mirror_data", "mirrors_converged"]


def mirror_data(configmap: Mapping[str, Any]) -> dict[str, str]:
    """The Secret data that mirrors a ConfigMap's data."""
    data = configmap.get("data") or {}
    return {k: base64.b64encode(str(v).encode()).decode() for k, v in sorted(data.items())}


def mirror_controller(client: Client, configmaps: Informer, secrets: Informer) -> Controller:
    """The mirror controller over these informers (all namespaces), with 2 workers."""

    async def reconcile(request: Request) -> None:
        source = configmaps.store.get(request.name, request.namespace)
        mirror = secrets.store.get(request.name, request.namespace)
        try:
            if source is None:
                if mirror is not None:
                    await client.delete(SECRETS, request.name, request.namespace)
                return
            wanted = mirror_data(source)
            if mirror is None:
                secret: dict[str, Any] = {
                    "metadata": {"name": request.name, "namespace": request.namespace},
                    "data": wanted,
                }
                set_controller_reference(secret, source)
                await client.create(SECRETS, secret)
            elif dict(mirror.get("data") or {}) != wanted:
                await client.patch(
                    SECRETS,
                    request.name,
                    {"data": wanted},
                    namespace=request.namespace,
                    resource_version=mirror.resource_version,
                )
        except NotFound:
            return  # deleted meanwhile: the delete's event brings the key back if needed

    return Controller(
        reconcile,
        for_=configmaps,
        owns=[secrets],
        workers=2,
        client=client,
        name="mirror",
        shutdown_timeout=5.0,
    )


def _key(obj: Mapping[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name"))


def mirrors_converged(
    configmaps: list[dict[str, Any]], secrets: list[dict[str, Any]]
) -> tuple[int, int]:
    """(ConfigMaps whose mirror is right, ConfigMaps) on the server's current objects."""
    by_key = {_key(s): s for s in secrets}
    good = 0
    for cm in configmaps:
        secret = by_key.get(_key(cm))
        if secret is not None and dict(secret.get("data") or {}) == mirror_data(cm):
            good += 1
    return good, len(configmaps)
