"""``informer serve`` options: ``--resources`` (CRDs), ``--seed`` (objects), ``--faults``
(declarative fault rules), checked over HTTP against the subprocess."""

from __future__ import annotations

import json
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tests.cli.conftest import REPO_ROOT, cli, cli_env

CRD = """
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
"""
SEED = """
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: team}
data: {a: "1"}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w, namespace: team}
spec: {size: 3}
"""
FAULTS = '[{"verb": "get", "resource": "configmaps", "status": 503, "times": 1}]'


def get(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            return reply.status, json.load(reply)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_serve_loads_resources_seed_and_faults(tmp_path: Path) -> None:
    (tmp_path / "crds.yaml").write_text(CRD)
    (tmp_path / "seed.yaml").write_text(SEED)
    (tmp_path / "faults.json").write_text(FAULTS)
    process = subprocess.Popen(
        cli(
            "serve",
            "--resources",
            str(tmp_path / "crds.yaml"),
            "--seed",
            str(tmp_path / "seed.yaml"),
            "--faults",
            str(tmp_path / "faults.json"),
        ),
        cwd=REPO_ROOT,
        env=cli_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        status, widget = get(f"{url}/apis/example.com/v1/namespaces/team/widgets/w")
        assert status == 200 and widget["spec"] == {"size": 3}
        path = f"{url}/api/v1/namespaces/team/configmaps/settings"
        assert get(path)[0] == 503  # the declared fault, once
        status, settings = get(path)
        assert status == 200 and settings["data"] == {"a": "1"}
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_serve_refuses_a_file_it_cannot_use(tmp_path: Path) -> None:
    (tmp_path / "faults.yaml").write_text("- {verb: get, bogus: 1}\n")
    done = subprocess.run(
        cli("serve", "--faults", str(tmp_path / "faults.yaml")),
        cwd=REPO_ROOT,
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert done.returncode == 2
    assert "unknown fields ['bogus']" in done.stderr
