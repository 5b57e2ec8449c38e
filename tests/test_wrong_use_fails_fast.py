"""Wrong use fails fast: a misconfigured informer raises a typed error at construction.

Before, such mistakes surfaced inside the reflector's loop as an error retried forever (the
caller only saw ``wait_for_sync`` time out). ``ConfigurationError`` is a ``ValueError`` and a
``TypeError``, so code catching either still works.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from conftest import FAST, NoApi

from informer import ConfigurationError
from informer.backoff import BackoffPolicy
from informer.informer import Informer, SharedInformerFactory
from informer.reflector import ReflectorOptions
from informer.resource import CONFIGMAPS, NAMESPACES, Resource
from informer.testing import ApiServer
from informer.transport import Transport


async def test_a_namespace_for_a_cluster_scoped_resource_raises_at_construction() -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        api = server.api_client()
        try:
            with pytest.raises(ConfigurationError, match="cluster-scoped"):
                Informer(api, NAMESPACES, namespace="default", options=FAST)
            factory = SharedInformerFactory(api, options=FAST)
            with pytest.raises(ConfigurationError, match="cluster-scoped"):
                factory.informer(NAMESPACES, namespace="default")
            assert factory.informers == []
            async with factory:  # nothing was registered: nothing runs
                pass
            inf = Informer(api, NAMESPACES, namespace="", options=FAST)  # "" is no namespace
            async with inf:
                await inf.wait_for_sync(timeout=10)
        finally:
            await api.close()
    assert {(r.resource, r.namespace) for r in server.requests} == {("namespaces", None)}


@pytest.mark.parametrize(
    "kwargs",
    [
        {"namespace": 3},
        {"label_selector": ["app=x"]},
        {"field_selector": b"metadata.name=a"},
    ],
)
async def test_scope_of_the_wrong_type_raises(kwargs: dict[str, Any]) -> None:
    async with ApiServer(too_large_wait=0.01) as server:
        api = server.api_client()
        try:
            with pytest.raises(ConfigurationError):
                Informer(api, CONFIGMAPS, options=FAST, **kwargs)
        finally:
            await api.close()
    assert server.requests == []


async def test_something_else_than_an_api_client_raises() -> None:
    with pytest.raises(ConfigurationError, match="ApiClient"):
        Informer("https://127.0.0.1:6443", CONFIGMAPS)
    with pytest.raises(ConfigurationError, match="ApiClient"):
        SharedInformerFactory(None)
    with pytest.raises(ConfigurationError, match="ReflectorOptions"):
        Informer(Transport(NoApi()), CONFIGMAPS, options={"page_size": 10})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="Resource"):
        Informer(Transport(NoApi()), "configmaps")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "change",
    [
        {"page_size": 0},
        {"page_size": -5},
        {"initial_list": "latest"},
        {"list_strategy": "watch"},
        {"watch_timeout": (600, 300)},
        {"watch_timeout": (0, 10)},
        {"watch_timeout": (1.5, 10)},
        {"idle_timeout": 0.0},
        {"stale_list_retries": -1},
        {"too_large_retries": -1},
        {"stream_idle_limit": 0.0},
        {"stream_initial_limit": -1.0},
        {"quick_watch_end": float("nan")},
        {"backwards_after": 0},
        {"transform": "drop managedFields"},
        {"backoff": {"initial": 1.0}},
    ],
)
def test_reflector_options_that_cannot_work_raise(change: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        replace(ReflectorOptions(), **change)


@pytest.mark.parametrize(
    "change",
    [
        {"initial": 0.0},
        {"initial": -1.0},
        {"initial": float("nan")},
        {"maximum": 0.1},  # below initial
        {"factor": 0.5},
        {"reset_after": -1.0},
        {"max_retry_after": -1.0},
    ],
)
def test_backoff_policies_that_cannot_work_raise(change: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        replace(BackoffPolicy(), **change)


def test_valid_edge_values_are_accepted() -> None:
    BackoffPolicy(initial=0.001, maximum=float("inf"), factor=1.0, reset_after=0.0)
    ReflectorOptions(page_size=1, watch_timeout=(1, 1), idle_timeout=None, stale_list_retries=0)


@pytest.mark.parametrize(
    "fields",
    [
        ("", "", "configmaps", "ConfigMap"),  # no version
        ("", "v1", "", "ConfigMap"),  # no plural
        ("", "v1", "configmaps", ""),  # no kind: every object would be ignored as wrong-kind
        ("", "v1", "config/maps", "ConfigMap"),
        ("apps/", "v1", "deployments", "Deployment"),
    ],
)
def test_resources_that_address_nothing_raise(fields: tuple[str, str, str, str]) -> None:
    with pytest.raises(ConfigurationError):
        Resource(*fields)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_line_bytes": 0},
        {"idle_margin": -1.0},
        {"request_timeout": 0.0},
        {"connect_timeout": float("nan")},
    ],
)
def test_transport_limits_that_cannot_work_raise(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        Transport(NoApi(), **kwargs)


async def test_handlers_that_are_not_callable_raise() -> None:
    inf = Informer(Transport(NoApi()), CONFIGMAPS)
    with pytest.raises(ConfigurationError, match="on_update"):
        inf.add_handler(on_update="print")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="index"):
        inf.store.add_index("by-app", None)  # type: ignore[arg-type]
