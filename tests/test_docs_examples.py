"""Every Python example of the documentation (``docs/*.md``) runs, as printed, on the test API
server, so the docs cannot rot.

A page's ```` ```python ```` block is one of:

- a program (``async def main()`` ... ``asyncio.run(main())``): run with ``KUBECONFIG`` pointing
  at a fresh test server, so its own, unchanged ``connect()`` reaches it; a program that builds a
  ``Manager`` (served on a free loopback port instead of 8080) runs until the manager is ready,
  then is stopped as SIGTERM would stop it and must return cleanly; any other program must end;
- a test module (``async def test_...``): each test runs with the fixtures it names
  (``api_server``, ``tmp_path``);
- an include of a file the suite runs itself (``--8<-- "examples/..."``, or an operator of
  ``tests/interop/``).

Anything else fails here, so no example escapes. The server starts with the namespaces ``a`` and
``mirror``, a ConfigMap ``default/my-config`` (label ``app=web``) for the examples to find, and
``events.k8s.io/v1`` Events served.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from kubernetes_asyncio.config import kube_config

import informer
from informer import CONFIGMAPS, EVENTS, NAMESPACES, Manager, ManagerState
from informer.testing import ApiServer
from informer.testing.pytest_plugin import TEST_DEFAULTS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
_INCLUDE = re.compile(r'^--8<-- "([^"]+)"$')


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    code: str

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def examples() -> list[Example]:
    found = []
    for page in sorted(DOCS.rglob("*.md")):
        text = page.read_text()
        for match in _BLOCK.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(Example(str(page.relative_to(DOCS)), line, match.group(1)))
    return found


EXAMPLES = examples()


def test_the_docs_have_examples() -> None:
    assert len(EXAMPLES) >= 12


def seed(server: ApiServer) -> None:
    server.register(EVENTS)  # served by every cluster; the test server serves it on request
    for ns in ("a", "mirror"):
        server.create(NAMESPACES, {"metadata": {"name": ns}})
    meta = {"name": "my-config", "namespace": "default", "labels": {"app": "web"}}
    server.create(CONFIGMAPS, {"metadata": meta, "data": {"greeting": "hello"}})


class _Managers:
    """``informer.Manager`` as the examples import it: on a free loopback port, recorded."""

    def __init__(self) -> None:
        self.built: list[Manager] = []

    def __call__(self, *args: Any, **kwargs: Any) -> Manager:
        kwargs.setdefault("host", "127.0.0.1")
        if kwargs.get("port", 0) is not None:
            kwargs["port"] = 0
        manager = Manager(*args, **kwargs)
        self.built.append(manager)
        return manager


async def _ready(manager: Manager, http: aiohttp.ClientSession) -> bool:
    if manager.port in (None, 0) or manager.state is not ManagerState.RUNNING:
        return False
    try:
        async with http.get(f"http://127.0.0.1:{manager.port}/readyz") as resp:
            return resp.status == 200
    except aiohttp.ClientError:
        return False


async def run_program(code: str, namespace: dict[str, Any], managers: _Managers) -> None:
    exec(compile(code.replace("asyncio.run(main())", ""), "<docs>", "exec"), namespace)
    main = asyncio.create_task(namespace["main"]())
    async with asyncio.timeout(30), aiohttp.ClientSession() as http:
        while not main.done():  # until it ends, or its manager is ready (a condition, polled)
            if managers.built and await _ready(managers.built[-1], http):
                for manager in managers.built:
                    manager.request_stop()  # as SIGTERM does
                break
            await asyncio.wait([main], timeout=0.02)
        await main  # returns cleanly (exit status 0), or raises what failed


async def run_tests(code: str, namespace: dict[str, Any], fixtures: dict[str, Any]) -> None:
    exec(compile(code, "<docs>", "exec"), namespace)
    tests = [f for name, f in namespace.items() if name.startswith("test_")]
    assert tests, "a test module with no test"
    for test in tests:
        wanted = inspect.signature(test).parameters
        async with asyncio.timeout(30):
            await test(**{name: fixtures[name] for name in wanted})


@pytest.mark.parametrize("example", EXAMPLES, ids=[e.id for e in EXAMPLES])
async def test_docs_example_runs(
    example: Example, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    include = _INCLUDE.match(example.code.strip())
    if include is not None:  # a file the suite runs as it is (an example with its own test)
        assert (ROOT / include.group(1)).is_file()
        assert include.group(1).startswith(("examples/", "tests/interop/"))
        return
    managers = _Managers()
    monkeypatch.setattr(informer, "Manager", managers)
    async with ApiServer("modern", **TEST_DEFAULTS) as server:
        seed(server)
        kubeconfig = str(server.write_kubeconfig(tmp_path / "kubeconfig"))
        monkeypatch.setenv("KUBECONFIG", kubeconfig)  # read once, at import: set it there too
        monkeypatch.setattr(kube_config, "KUBE_CONFIG_DEFAULT_LOCATION", kubeconfig)
        namespace: dict[str, Any] = {"__name__": "docs_example"}
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            if "asyncio.run(main())" in example.code:
                await run_program(example.code, namespace, managers)
            elif "def test_" in example.code:
                fixtures = {"api_server": server, "tmp_path": tmp_path}
                await run_tests(example.code, namespace, fixtures)
            else:
                pytest.fail("a docs example must be a program, a test module or an include")
