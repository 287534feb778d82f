"""
``pin why``: which sets, finished jobs and outputs use a commit, or each commit of a repository.

Answered from the lockfiles the store serves (this setup's first), pin.snapshot.toml, work/ (finished
CloneGitRepositoryJobs and the finished jobs built on them) and the store's checkouts. Needs neither Sisyphus nor
the network, and changes nothing.
"""

from __future__ import annotations

__all__ = ["WhyResult", "why"]

from dataclasses import dataclass
from pathlib import Path
from typing import List

from sispin.git.registry import load_users
from sispin.git.store import Store
from sispin.graph.snapshot import read_snapshot
from sispin.graph.usage import Usage, WorkDir, find_usages, target_matcher
from sispin.lock.files import snapshot_path
from sispin.lock.loading import load_lockfile


@dataclass(frozen=True)
class WhyResult:
    """
    :param lockfile: the pin.toml asked from
    :param target: the commit or repository asked about, as given
    :param usages: what uses each commit asked about, one commit each (none: nothing uses it)
    :param unreadable: directories of work/ that could not be read: the jobs below them are not counted
    :param other_lockfiles: how many lockfiles the store serves besides this one
    """

    lockfile: Path
    target: str
    usages: List[Usage]
    unreadable: List[Path]
    other_lockfiles: int


def why(path: Path, target: str, store: Store) -> WhyResult:
    """
    :param path: the pin.toml
    :param target: a commit SHA or prefix, or a repository name of the lockfile
    :param store: the store whose users and checkouts to consult
    :raises UnknownNameError: when the target is neither a repository of the lockfile nor a commit
    """
    lockfile = load_lockfile(path)
    matches = target_matcher(lockfile, target)
    users = load_users(store.directory, lockfile)
    work = WorkDir(lockfile.root / "work")
    snapshot = read_snapshot(snapshot_path(lockfile.path))
    usages = find_usages(users, work, snapshot, store, matches)
    return WhyResult(lockfile.path, target, usages, work.unreadable, len(users.lockfiles) - 1)
