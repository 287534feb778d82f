"""
``pin gc``: remove the store checkouts that no lockfile the store serves pins, and count the disk space that frees
(:mod:`sispin.git.gc` sweeps).
"""

from __future__ import annotations

__all__ = ["GcResult", "gc"]

from dataclasses import dataclass
from pathlib import Path
from typing import List

from sispin.git.gc import Removal, Sweep, sweep
from sispin.git.store import Store
from sispin.lock.loading import load_lockfile


@dataclass(frozen=True)
class GcResult:
    """
    :param sweep: what was removed (or, in a dry run, would be), kept and forgotten
    :param dry_run: whether nothing was changed
    :param store: the store's directory
    """

    sweep: Sweep
    dry_run: bool
    store: Path

    @property
    def failed(self) -> List[Removal]:
        """The checkouts that could not be removed."""
        return [removal for removal in self.sweep.removed if removal.error is not None]

    @property
    def freed(self) -> int:
        """Bytes on disk freed (in a dry run: that would be) by the checkouts that went."""
        return sum(removal.freed for removal in self.sweep.removed if removal.error is None)

    def name_of(self, repository: str) -> str:
        """
        :param repository: a repository's directory name in the store
        :return: its name in a lockfile; for one no lockfile declares any more, the directory's name less the hash of
            its URL
        """
        return self.sweep.names.get(repository) or repository.rsplit("-", 1)[0]


def gc(path: Path, store: Store, *, dry_run: bool) -> GcResult:
    """
    :param path: the pin.toml of the setup running gc
    :param store: the store to clean
    :param dry_run: change nothing, only find out
    """
    return GcResult(sweep(store, load_lockfile(path), dry_run=dry_run), dry_run, store.directory)
