"""``import informer`` imports what building informers needs, not what only some paths need.

A CLI command, a short script and every test process pay the import at each start: the generated
client of kubernetes_asyncio (every model and API class, imported by a connection), aiohttp (by
the first request), structlog (by the first log record) and the command line's rich and PyYAML
come when used. Checked in a fresh interpreter's ``sys.modules``, not by timing it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
LEFT_ALONE = (
    "kubernetes_asyncio",
    "kubernetes_asyncio.client.models",
    "aiohttp",
    "structlog",
    "rich",
    "yaml",
    "prometheus_client",
    "jsonschema",  # the optional extras (schemas, cel, compression) too
    "celpy",
    "zstandard",
)


def modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``code``."""
    done = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_importing_informer_leaves_the_heavy_dependencies_unimported() -> None:
    loaded = modules_after("import informer")
    assert "informer.informer" in loaded  # the library itself is there
    assert not loaded & set(LEFT_ALONE), sorted(loaded & set(LEFT_ALONE))


def test_an_informer_built_without_a_connection_imports_none_of_them_either() -> None:
    loaded = modules_after(
        "from informer import CONFIGMAPS, Informer, Transport\n"
        "class Api:  # what Transport reads of an ApiClient before a request\n"
        "    async def call_api(self, *args, **kwargs): ...\n"
        "Informer(Transport(Api()), CONFIGMAPS, namespace='default')"
    )
    assert not loaded & set(LEFT_ALONE), sorted(loaded & set(LEFT_ALONE))
