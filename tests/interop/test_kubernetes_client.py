"""The official ``kubernetes`` client against ``informer serve``: VersionApi and the dynamic
client (discovery, create, get, list, delete)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client, config, dynamic

from tests.interop.conftest import Served


@pytest.fixture
def api(served: Served) -> Iterator[client.ApiClient]:
    with config.new_client_from_config(config_file=str(served.kubeconfig)) as api_client:
        yield api_client


def test_version_api(api: client.ApiClient) -> None:
    info = client.VersionApi(api).get_code()
    assert info.major == "1" and info.git_version.startswith("v1.")
    assert info.go_version and info.build_date and info.platform


def test_dynamic_client(api: client.ApiClient, namespace: str) -> None:
    dyn = dynamic.DynamicClient(api)
    configmaps = dyn.resources.get(api_version="v1", kind="ConfigMap")
    made = configmaps.create(
        body={
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "dyn"},
            "data": {"a": "1"},
        },
        namespace=namespace,
    )
    assert made.metadata.name == "dyn"
    assert configmaps.get(name="dyn", namespace=namespace).data.a == "1"
    names = [i.metadata.name for i in configmaps.get(namespace=namespace).items]
    assert names == ["dyn", "kube-root-ca.crt"]  # the root CA publisher's, as on a cluster
    deployments = dyn.resources.get(api_version="apps/v1", kind="Deployment")
    assert deployments.namespaced and "status" in deployments.subresources
    configmaps.delete(name="dyn", namespace=namespace)
    left = [i.metadata.name for i in configmaps.get(namespace=namespace).items]
    assert left == ["kube-root-ca.crt"]
