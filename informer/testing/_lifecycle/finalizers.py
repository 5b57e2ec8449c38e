"""The finalizers the test server itself acts on (as the real control plane does)."""

from __future__ import annotations

from typing import Final

__all__ = ["CRD_CLEANUP", "FOREGROUND", "NAMESPACE_FINALIZER", "ORPHAN"]

FOREGROUND: Final = "foregroundDeletion"
ORPHAN: Final = "orphan"
NAMESPACE_FINALIZER: Final = "kubernetes"
CRD_CLEANUP: Final = "customresourcecleanup.apiextensions.k8s.io"
