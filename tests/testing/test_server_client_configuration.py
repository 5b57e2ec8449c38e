"""``ApiServer.configuration()`` / ``api_client()``: clients for the test server that cost what
they need. kubernetes_asyncio builds a TLS context for every ApiClient, plain-HTTP ones included;
the configuration names the CA it trusts so that context never parses the system's trust store."""

from __future__ import annotations

import ssl

from kubernetes_asyncio import client

from informer.testing import ApiServer


def _trusted(config: client.Configuration) -> list[dict[str, object]]:
    """The CAs the TLS context kubernetes_asyncio builds from ``config`` trusts
    (``ssl.create_default_context(cafile=config.ssl_ca_cert)``, spelled out: the suite's
    conftest replaces the system store in that function)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    if config.ssl_ca_cert is None:
        context.load_default_certs()
    else:
        context.load_verify_locations(cafile=config.ssl_ca_cert)
    return context.get_ca_certs()


async def test_a_plain_http_client_works_and_does_not_load_the_system_trust_store() -> None:
    async with ApiServer() as server:
        config = server.configuration()
        trusted = _trusted(config)
        assert len(trusted) == 1  # not the system's store
        subject = ((("commonName", "informer tests: no certificate authority"),),)
        assert trusted[0]["subject"] == subject
        async with server.api_client() as api:
            await client.CoreV1Api(api).create_namespaced_config_map(
                "default", {"metadata": {"name": "over-http"}, "data": {"a": "1"}}
            )
            got = await client.CoreV1Api(api).read_namespaced_config_map("over-http", "default")
            assert got.data == {"a": "1"}


async def test_a_tls_client_verifies_against_the_servers_own_ca() -> None:
    async with ApiServer(tls=True) as server:
        assert server.ca_pem is not None
        config = server.configuration()
        assert config.verify_ssl
        expected = ssl.create_default_context(cadata=server.ca_pem.decode()).get_ca_certs()
        assert _trusted(config) == expected
        async with client.ApiClient(configuration=config) as api:
            namespaces = await client.CoreV1Api(api).list_namespace()
            assert "default" in {ns.metadata.name for ns in namespaces.items}
