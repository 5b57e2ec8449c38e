"""An ``ApiClient`` for the cluster this process should talk to, via ``kubernetes_asyncio``.

In a pod (``KUBERNETES_SERVICE_HOST`` set, no kubeconfig asked for): the in-cluster service
account. Otherwise a kubeconfig (``$KUBECONFIG`` or ``~/.kube/config``, or the file given), with
its exec plugins and token refresh. Nothing here parses kubeconfig itself.
"""

from __future__ import annotations

import os
from typing import Any

__all__ = ["connect"]


async def connect(kubeconfig: str | None = None, context: str | None = None) -> Any:
    """A ready ``kubernetes_asyncio.client.ApiClient`` (close it when done), whose connection pool
    is not bounded: each informer's watch holds one connection."""
    # imported here, not with the package: kubernetes_asyncio's generated client (every model and
    # API class) takes most of a second to import, and only a connection needs it
    from kubernetes_asyncio import config
    from kubernetes_asyncio.client import ApiClient, Configuration

    cfg = Configuration()
    if kubeconfig is None and context is None and os.environ.get("KUBERNETES_SERVICE_HOST"):
        config.load_incluster_config(client_configuration=cfg)  # type: ignore[no-untyped-call]
    else:
        await config.load_kube_config(
            config_file=kubeconfig, context=context, client_configuration=cfg
        )
    # Over HTTP/1.1 every watch holds a connection for minutes (client-go multiplexes them over
    # HTTP/2): a bounded pool (kubernetes_asyncio's default is 100) cannot serve more informers.
    cfg.connection_pool_maxsize = 0  # aiohttp: no limit
    return ApiClient(cfg)
