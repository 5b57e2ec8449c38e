"""The personality of a test server and the tunables every part of it reads.

A personality is a kube-apiserver generation or deployment shape (see ``informer.testing``);
``ServerOptions`` derives from it the switches the list, watch and HTTP parts consult, so none of
them needs to know the server object.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["PERSONALITIES", "Personality", "ServerOptions"]

Personality = Literal["modern", "legacy", "no-watch-list", "stale-replica", "opaque-rv", "restored"]
PERSONALITIES: Final[tuple[str, ...]] = (
    "modern",
    "legacy",
    "no-watch-list",
    "stale-replica",
    "opaque-rv",
    "restored",
)


@dataclass(slots=True)
class ServerOptions:
    """What the personality and the ``ApiServer`` arguments make the server do."""

    personality: str
    compaction_window: int | None
    history_max_age: float | None
    too_large_wait: float
    bookmark_interval: float
    bookmark_before_timeout: float
    stale_lag: int
    watch_cache_quirks: bool

    @classmethod
    def of(
        cls,
        personality: str,
        *,
        compaction_window: int | None,
        history_max_age: float | None,
        too_large_wait: float,
        bookmark_interval: float,
        bookmark_before_timeout: float,
        stale_lag: int,
        watch_cache_quirks: bool | None,
    ) -> ServerOptions:
        """Options for ``personality``; raises ValueError for an unknown one."""
        if personality not in PERSONALITIES:
            raise ValueError(f"unknown personality {personality!r}; one of {PERSONALITIES}")
        return cls(
            personality=personality,
            compaction_window=compaction_window,
            history_max_age=history_max_age,
            too_large_wait=too_large_wait,
            bookmark_interval=bookmark_interval,
            bookmark_before_timeout=bookmark_before_timeout,
            stale_lag=stale_lag if personality == "stale-replica" else 0,
            watch_cache_quirks=(
                personality in ("modern", "no-watch-list")
                if watch_cache_quirks is None
                else watch_cache_quirks
            ),
        )

    @property
    def legacy(self) -> bool:
        """Pre-1.19: resourceVersionMatch and sendInitialEvents are ignored entirely."""
        return self.personality == "legacy"

    @property
    def watch_list(self) -> bool:
        """Whether sendInitialEvents (streaming lists) is understood."""
        return self.personality not in ("legacy", "no-watch-list")

    @property
    def opaque(self) -> bool:
        """Whether resource versions are opaque (``"x"`` + hex) rather than decimal."""
        return self.personality == "opaque-rv"
