"""Fixtures of the CLI tests: the command run as a subprocess of this worktree's package."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]


def cli_env(**extra: str) -> dict[str, str]:
    """The environment of a CLI subprocess: this worktree's ``informer`` first on the path."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), **extra}
    env.pop("KUBERNETES_SERVICE_HOST", None)
    return env


def cli(*args: str) -> list[str]:
    """The command line of ``python -m informer ARGS``."""
    return [sys.executable, "-m", "informer", *args]


@dataclass
class Served:
    """``python -m informer serve`` running in a subprocess, with its kubeconfig."""

    url: str
    kubeconfig: Path
    process: subprocess.Popen[str]

    def create_configmap(self, name: str, namespace: str = "default") -> dict[str, Any]:
        """Create a ConfigMap over HTTP (and its namespace, if new: over HTTP a create into a
        missing namespace is 404); returns the object the server answered."""
        namespace_body = json.dumps({"metadata": {"name": namespace}}).encode()
        try:
            urllib.request.urlopen(
                urllib.request.Request(
                    f"{self.url}/api/v1/namespaces",
                    data=namespace_body,
                    headers={"Content-Type": "application/json"},
                    method="POST",
                ),
                timeout=10,
            ).close()
        except urllib.error.HTTPError as error:
            if error.code != 409:  # already exists
                raise
        body = json.dumps({"metadata": {"name": name, "namespace": namespace}}).encode()
        request = urllib.request.Request(
            f"{self.url}/api/v1/namespaces/{namespace}/configmaps",
            data=body,
            headers={"Content-Type": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=10) as reply:
            created: dict[str, Any] = json.load(reply)
        return created


@pytest.fixture(scope="package")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server for the CLI tests (each uses namespaces of its own, which start empty: the
    commands' object counts are the tests' own objects, without kube-root-ca.crt)."""
    kubeconfig = tmp_path_factory.mktemp("served") / "kubeconfig"
    process = subprocess.Popen(
        cli("serve", "--no-root-ca-configmaps", "--kubeconfig", str(kubeconfig)),
        cwd=REPO_ROOT,
        env=cli_env(),
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), url
        yield Served(url, kubeconfig, process)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
