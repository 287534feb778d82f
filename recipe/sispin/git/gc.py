"""
Garbage collection of the store's checkouts (``pin gc``): remove every checkout that no lockfile the store serves
pins, and count the disk space that goes with it.

Several setups can share one store, and each records its pin.toml there before it makes a checkout
(:mod:`sispin.git.registry`), so the keepers are the current lockfile and every recorded one that still exists. Each
commit directory is swept under the lock :meth:`Store.checkout` takes to make a checkout in it, and what is kept is
decided again under that lock from the lockfiles as they are then, so a checkout made, or a lockfile recorded or
changed, while gc runs is never removed. A checkout is renamed aside before it is deleted, so a half-deleted tree
never passes for a checkout; the store made its working tree read-only, so gc gives the owner's write bits back
first (a non-root user cannot remove it otherwise).

Mirrors are not touched: one per URL, they are what resolving, fetching and new checkouts read.
"""

from __future__ import annotations

__all__ = ["Removal", "Sweep", "sweep"]

import os
import secrets
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from filelock import FileLock

from sispin.git.registry import (
    StoreUsers,
    forget_lockfile,
    load_users,
    pin_uses,
    register_lockfile,
    registered_lockfiles,
)
from sispin.git.store import Store
from sispin.lock.loading import load_lockfile
from sispin.lock.lockfile import Lockfile, is_full_sha
from sispin.text import display_path

#: the name a checkout gets while gc deletes it: hidden, so nothing takes it for a checkout
_TRASH_INFIX = ".pin-gc-"


@dataclass(frozen=True)
class Removal:
    """
    A checkout gc removed (or, in a dry run, would remove).

    :param path: the checkout, ``<store>/checkouts/<repository>/<commit>/<folder>``
    :param repository: the repository's directory name in the store (name and hash of its URL)
    :param commit: the commit it holds
    :param freed: bytes on disk whose last link goes with it
    :param shared: bytes on disk of files that stay linked elsewhere (objects the checkout shares with the mirror)
    :param error: why it could not be removed (None: it was)
    """

    path: Path
    repository: str
    commit: str
    freed: int
    shared: int
    error: Optional[str] = None


@dataclass
class Sweep:
    """
    What ``pin gc`` did.

    :param users: the lockfiles whose pins were kept (the current one first)
    :param gone: recorded lockfiles that no longer exist (forgotten unless a dry run)
    :param removed: the checkouts removed, or that could not be
    :param kept: each kept checkout -> the pins that keep it, ``<lockfile>: sets.<set>.<repo>``
    :param names: store repository directory -> the repository's name in a lockfile
    """

    users: List[Path]
    gone: List[Path]
    removed: List[Removal] = field(default_factory=list)
    kept: Dict[Path, List[str]] = field(default_factory=dict)
    names: Dict[str, str] = field(default_factory=dict)


class _Keepers:
    """What the users pin in the store, read again whenever a user is recorded, forgotten or changed."""

    def __init__(self, store: Store, current: Lockfile):
        self.store = store
        self.current = current
        self.users = StoreUsers((current,), ())
        self.pins: Dict[Tuple[str, str], Dict[str, List[str]]] = {}
        self.names: Dict[str, str] = {}
        self._signature: Optional[tuple] = None

    def _signature_now(self) -> tuple:
        paths = [self.current.path, *registered_lockfiles(self.store.directory)]
        return tuple((str(path), _stat_key(path)) for path in paths)

    def refresh(self) -> None:
        """Reload the users when any of them was recorded, forgotten or changed since the last look."""
        signature = self._signature_now()
        if signature == self._signature:
            return
        self._signature = signature
        # the current lockfile too may have changed (a `pin upgrade` while gc runs)
        self.current = load_lockfile(self.current.path)
        self.users = load_users(self.store.directory, self.current)
        self.pins = {}
        checkouts = self.store.checkouts_directory
        for lockfile in self.users.lockfiles:
            for use in pin_uses(lockfile):
                if use.folder is None:
                    continue
                # where Store.checkout puts it: <checkouts>/<repository>/<commit>/<folder, possibly nested>
                parts = self.store.checkout_path(use.url, use.commit, use.folder).relative_to(checkouts).parts
                self.names.setdefault(parts[0], use.name)
                keepers = self.pins.setdefault((parts[0], parts[1]), {}).setdefault(parts[2], [])
                keepers.append(f"{display_path(lockfile.path)}: {use.key}")

    def keep(self, repository: str, commit: str) -> Dict[str, List[str]]:
        """:return: the entries of a commit directory that a user pins -> who pins them"""
        return self.pins.get((repository, commit), {})


def _stat_key(path: Path) -> Optional[Tuple[int, int, int]]:
    try:
        info = os.stat(path)
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


def sweep(store: Store, current: Lockfile, *, dry_run: bool) -> Sweep:
    """
    Remove every store checkout that neither the current lockfile nor another lockfile of the store pins.

    :param store: the store
    :param current: the lockfile of the setup running gc (recorded as a user unless a dry run)
    :param dry_run: only measure and report; change nothing in the store
    :return: what was kept and removed
    :raises LockfileError: when a recorded lockfile exists but cannot be read (nothing is removed)
    :raises StoreError: when the store's users cannot be read or recorded
    """
    if not dry_run:
        register_lockfile(store.directory, current.path)
    keepers = _Keepers(store, current)
    keepers.refresh()
    result = Sweep(users=[lockfile.path for lockfile in keepers.users.lockfiles], gone=list(keepers.users.gone))
    if not dry_run:
        for path in keepers.users.gone:
            forget_lockfile(store.directory, path)
    checkouts = store.checkouts_directory
    for repository in sorted(checkouts.iterdir()) if checkouts.is_dir() else ():
        if not repository.is_dir() or repository.is_symlink():
            continue
        for commit_dir in sorted(repository.iterdir()):
            if commit_dir.is_dir() and not commit_dir.is_symlink() and is_full_sha(commit_dir.name):
                if dry_run:
                    _sweep_commit(keepers, result, repository.name, commit_dir, dry_run=True)
                else:
                    # the lock Store.checkout holds while it makes a checkout here
                    with FileLock(str(commit_dir) + ".lock"):
                        keepers.refresh()
                        _sweep_commit(keepers, result, repository.name, commit_dir, dry_run=False)
    result.users = [lockfile.path for lockfile in keepers.users.lockfiles]
    result.names = dict(keepers.names)
    return result


def _sweep_commit(keepers: _Keepers, result: Sweep, repository: str, commit_dir: Path, *, dry_run: bool) -> None:
    if not commit_dir.is_dir():
        return  # removed by a concurrent gc
    keep = keepers.keep(repository, commit_dir.name)
    for entry in sorted(commit_dir.iterdir()):
        if entry.name in keep:
            result.kept[entry] = keep[entry.name]
            continue
        # anything else is garbage: checkouts nobody pins, clones a killed run left (Store.checkout holds this lock
        # while it makes one, so none is in progress), and trees an earlier gc could not finish deleting
        freed, shared = _disk_usage(entry)
        error = None if dry_run else _remove(entry)
        result.removed.append(Removal(entry, repository, commit_dir.name, freed, shared, error))
    if not dry_run:
        try:
            commit_dir.rmdir()  # its lock file stays beside it: see _remove
        except OSError:
            pass  # not empty: a kept checkout, or one that could not be removed


def _disk_usage(path: Path) -> Tuple[int, int]:
    """
    :return: (bytes on disk whose last link is inside path, bytes of files also linked from outside it), as du
        counts them (allocated blocks); symbolic links are not followed
    """
    own = 0
    links: Dict[Tuple[int, int], List[int]] = {}  # inode -> [links seen inside, links in all, bytes]
    for name in _walk(path):
        info = os.lstat(name)
        size = info.st_blocks * 512
        if stat.S_ISDIR(info.st_mode) or info.st_nlink == 1:
            own += size
        else:
            seen = links.setdefault((info.st_dev, info.st_ino), [0, info.st_nlink, size])
            seen[0] += 1
    for seen, total, size in links.values():
        own += size if seen >= total else 0
    shared = sum(size for seen, total, size in links.values() if seen < total)
    return own, shared


def _walk(path: Path):
    yield str(path)
    if path.is_dir() and not path.is_symlink():
        for directory, dirs, files in os.walk(path):
            for name in dirs + files:
                yield os.path.join(directory, name)


def _remove(entry: Path) -> Optional[str]:
    """
    Delete a checkout (or leftover) of a commit directory whose lock the caller holds.

    :return: None when it is gone, else why not
    """
    # renamed aside first: a tree whose deletion fails half-way must not keep the name of a checkout; the lock file
    # beside the commit directory is never deleted (a process waiting on it would lock a deleted file while the next
    # one creates and locks a new one, and both would make the same checkout)
    trash = entry
    if _TRASH_INFIX not in entry.name:
        trash = entry.with_name(f".{entry.name}{_TRASH_INFIX}{secrets.token_hex(4)}")
    try:
        if trash != entry:
            os.rename(entry, trash)
        if trash.is_dir() and not trash.is_symlink():
            # the store made the working tree read-only: without write bits on its directories, only root could
            # delete their content
            for directory, _, _ in os.walk(trash):
                mode = os.lstat(directory).st_mode
                os.chmod(directory, stat.S_IMODE(mode) | stat.S_IRWXU)
            shutil.rmtree(trash)
        else:
            trash.unlink()
    except OSError as exc:
        return exc.strerror or str(exc)
    return None
