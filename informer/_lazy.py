"""Modules imported when first used, not with ``informer``.

``import informer`` stays quick (a CLI command, a short script, a test process pays it on every
start) although some dependencies take a tenth of a second or more to import and only some paths
need them: aiohttp is needed by the first request, not by building an ``Informer``. A module
written as::

    if TYPE_CHECKING:
        import aiohttp
    else:
        aiohttp = lazy_module("aiohttp")

uses ``aiohttp.X`` as before (type checkers see the real module); the import happens at the first
attribute read, and each attribute read once is then a plain attribute of the stand-in.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["lazy_module"]


class _LazyModule:
    """Stands for module ``name`` until an attribute of it is read."""

    def __init__(self, name: str) -> None:
        self._name = name

    def __getattr__(self, attribute: str) -> Any:
        value = getattr(importlib.import_module(self._name), attribute)
        setattr(self, attribute, value)  # found directly next time
        return value

    def __repr__(self) -> str:
        return f"<module {self._name!r}, imported on first use>"


def lazy_module(name: str) -> Any:
    """A stand-in for module ``name`` that imports it when an attribute is first read."""
    return _LazyModule(name)
