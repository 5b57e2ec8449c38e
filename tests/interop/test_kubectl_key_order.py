"""kubectl's label and patch commands against ``python -m informer serve``: the raw answers
(``kubectl get --raw``, the server's bytes) carry a built-in's maps with sorted keys and its
metadata in ObjectMeta's field order, whatever order the writes added keys in."""

from __future__ import annotations

import json

from tests.interop.conftest import Kubectl


def test_labels_and_data_added_by_kubectl_are_read_back_sorted(
    kubectl: Kubectl, unique_name: str
) -> None:
    manifest = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": unique_name, "labels": {"mid": "1"}},
        "data": {"m": "1"},
    }
    kubectl("create", "-f", "-", input=json.dumps(manifest))
    kubectl("label", "configmap", unique_name, "zeta=1", "alpha=2")
    kubectl("patch", "configmap", unique_name, "--type=merge", "-p", '{"data":{"z":"2","a":"3"}}')

    raw = kubectl("get", "--raw", f"/api/v1/namespaces/default/configmaps/{unique_name}").stdout

    got = json.loads(raw)
    assert list(got["metadata"]["labels"]) == ["alpha", "mid", "zeta"]
    assert list(got["data"]) == ["a", "m", "z"]
    assert raw.startswith('{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":')
