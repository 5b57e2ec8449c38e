"""The personality of a test server and the tunables every part of it reads.

A personality is a kube-apiserver generation or deployment shape (see ``informer.testing``);
``ServerOptions`` derives from it the switches the list, watch and HTTP parts consult, so none of
them needs to know the server object.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Final, Literal

__all__ = ["PERSONALITIES", "Personality", "ServerOptions", "ShardSelectorMode"]

Personality = Literal["modern", "legacy", "no-watch-list", "stale-replica", "opaque-rv", "restored"]
PERSONALITIES: Final[tuple[str, ...]] = (
    "modern",
    "legacy",
    "no-watch-list",
    "stale-replica",
    "opaque-rv",
    "restored",
)


class ShardSelectorMode(enum.Enum):
    """How the server treats ``shardSelector`` (KEP-5866; see ``_query.sharding``)."""

    ON = "on"
    OFF = "off"
    NO_WATCH_CACHE = "no-watch-cache"


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
    shard_selectors: ShardSelectorMode = ShardSelectorMode.OFF
    root_ca_configmaps: bool = False
    """Whether every namespace has its ``kube-root-ca.crt`` (the root CA publisher runs)."""

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
        shard_selectors: ShardSelectorMode | str | None = None,
        root_ca_configmaps: bool = False,
    ) -> ServerOptions:
        """Options for ``personality``; raises ValueError for an unknown one.

        ``shard_selectors`` defaults to ``on`` (a v1.36 server with ``ShardedListAndWatch``)
        for the personalities that stream lists, ``off`` for the older ones; ``no-watch-cache``
        also turns the watch cache's quirks off unless ``watch_cache_quirks`` says otherwise.
        """
        if personality not in PERSONALITIES:
            raise ValueError(f"unknown personality {personality!r}; one of {PERSONALITIES}")
        if shard_selectors is None:
            old = personality in ("legacy", "no-watch-list")
            shard_selectors = ShardSelectorMode.OFF if old else ShardSelectorMode.ON
        shard_mode = ShardSelectorMode(shard_selectors)
        if watch_cache_quirks is None and shard_mode is ShardSelectorMode.NO_WATCH_CACHE:
            watch_cache_quirks = False
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
            shard_selectors=shard_mode,
            root_ca_configmaps=root_ca_configmaps,
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
