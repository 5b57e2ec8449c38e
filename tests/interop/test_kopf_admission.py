"""A kopf operator with admission webhooks (``@kopf.on.mutate``, ``@kopf.on.validate``, a
``kopf.WebhookServer`` on 127.0.0.1 with a certificate of a self-signed CA) against ``informer
serve``: kopf writes its webhook configurations, and objects created with kubectl are mutated
and refused as its handlers declare."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from informer.testing._tls.certificates import CertificateAuthority
from tests.interop.conftest import REPO_ROOT, Kubectl, Served
from tests.interop.test_kopf_operator import CRD

GUARD = 60  # seconds: a hung client fails the test instead of hanging it (not a timing check)
CONFIGURATIONS = (
    "mutatingwebhookconfiguration/admission.kopf.dev",
    "validatingwebhookconfiguration/admission.kopf.dev",
)


def test_kopf_admission_webhooks_mutate_and_refuse(
    served: Served, kubectl: Kubectl, namespace: str, tmp_path: Path
) -> None:
    kubectl("apply", "-f", "-", input=json.dumps(CRD))
    ca = CertificateAuthority()
    serving = ca.issue()
    files = {"KOPF_TEST_CERT": serving.cert_pem, "KOPF_TEST_KEY": serving.key_pem}
    files["KOPF_TEST_CA"] = ca.pem
    env = {**os.environ, "KUBECONFIG": str(served.kubeconfig), "PYTHONPATH": str(REPO_ROOT)}
    for variable, content in files.items():
        path = tmp_path / variable.lower()
        path.write_bytes(content)
        env[variable] = str(path)
    operator = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kopf",
            "run",
            "--standalone",
            "-n",
            namespace,
            str(Path(__file__).with_name("kopf_admission_operator.py")),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        for configuration in CONFIGURATIONS:
            kubectl("wait", "--for=create", configuration, f"--timeout={GUARD}s")
        hooks = kubectl.json("get", CONFIGURATIONS[1])["webhooks"]
        assert hooks[0]["clientConfig"]["url"].startswith("https://127.0.0.1:")

        example = {
            "apiVersion": "kopf.dev/v1",
            "kind": "KopfExample",
            "metadata": {"name": "admitted", "namespace": namespace},
            "spec": {"field": "value"},
        }
        kubectl("create", "-f", "-", input=json.dumps(example))
        created = kubectl.json("get", "kex", "admitted", "-n", namespace)
        assert created["spec"] == {"field": "value", "owner": "kopf"}

        refused = {**example, "metadata": {"name": "refused", "namespace": namespace}}
        refused["spec"] = {"field": "forbidden"}
        done = kubectl("create", "-f", "-", input=json.dumps(refused), check=False)
        assert done.returncode != 0
        assert "denied the request: field may not be forbidden" in done.stderr, done.stderr
        missing = kubectl("get", "kex", "refused", "-n", namespace, check=False)
        assert missing.returncode != 0 and "NotFound" in missing.stderr
    finally:
        operator.terminate()
        try:
            operator.communicate(timeout=GUARD)
        except subprocess.TimeoutExpired:
            operator.kill()
            operator.communicate()
        # the shared server outlives the operator: its webhooks must not refuse later tests
        kubectl("delete", "--ignore-not-found", *CONFIGURATIONS)
