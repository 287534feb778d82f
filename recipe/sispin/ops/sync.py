"""
``pin sync``: checkouts made at their pinned commits.

The setup's own: every ``[setup.*]`` checkout; absent ones are cloned (atomically), present ones must already be at
the pinned commit with a clean tree (sync never moves or overwrites a checkout somebody may be working in). The
sets': the store's read-only checkouts of their pins, for manager-side imports (``exp.checkout()``,
``exp.imported()``).
"""

from __future__ import annotations

__all__ = ["SetupSync", "SetupSyncResult", "StoreSync", "sync_setup", "sync_sets"]

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, List, Optional, Sequence

from sispin.clonejob import checkout_folder
from sispin.errors import CheckoutStateError, FileSystemError, GitError, PinError, UnsupportedVersionError
from sispin.git.registry import register_lockfile
from sispin.git.repo import clone_at_commit
from sispin.git.store import Store
from sispin.git.verify import verify_checkout
from sispin.git.versions import unsupported_setup
from sispin.lock.files import file_lock
from sispin.lock.lockfile import Lockfile, SetupCheckout, inside_setup
from sispin.text import display_path, shown_key


@dataclass(frozen=True)
class SetupSync:
    """
    :param entry: the ``[setup.*]`` entry
    :param outcome: ``cloned``, or ``ok`` when it was at its commit with a clean tree already; None when it failed
    :param error: why it failed; None when it did not
    """

    entry: SetupCheckout
    outcome: Optional[str]
    error: Optional[PinError]


@dataclass(frozen=True)
class SetupSyncResult:
    """
    :param lockfile: the pin.toml synced
    :param checkouts: every ``[setup.*]`` checkout, in file order
    :param unsupported: why sispin does not support the Sisyphus or i6_core checked out, if it does not
    """

    lockfile: Path
    checkouts: List[SetupSync]
    unsupported: Optional[str] = None

    @property
    def exit_code(self) -> int:
        """0 when every checkout is at its commit and supported, else the code of the first failure."""
        failed = next((synced.error.exit_code for synced in self.checkouts if synced.error is not None), 0)
        return failed or (UnsupportedVersionError.exit_code if self.unsupported else 0)


@dataclass(frozen=True)
class StoreSync:
    """
    :param set_name: the set that pins it
    :param repo: the repository
    :param commit: the pinned commit
    :param path: the store's checkout
    :param made: whether it was made now (False: it was there)
    """

    set_name: str
    repo: str
    commit: str
    path: Path
    made: bool


def sync_sets(
    lockfile: Lockfile, set_names: Sequence[str], store: Store, synced: Callable[[StoreSync], None]
) -> List[StoreSync]:
    """
    :param lockfile: the validated pin.toml
    :param set_names: sets whose pins to check out in the store
    :param store: the store
    :param synced: told of each checkout once it is there
    :return: every checkout of the sets' pins, in order
    :raises GitError: naming the pin whose checkout could not be made
    """
    specs = lockfile.select_sets(set_names)
    register_lockfile(store.directory, lockfile.path)  # first: `pin gc` keeps what a recorded lockfile pins
    done = []
    for set_name, repo, commit in [(spec.name, repo, pin.commit) for spec in specs for repo, pin in spec.pins.items()]:
        spec = lockfile.get_repo(repo)
        folder = checkout_folder(spec.checkout)
        existed = (store.checkout_path(spec.url, commit, folder) / ".git").is_dir()
        try:
            path = store.checkout(spec.url, commit, folder)
        except GitError as exc:
            raise GitError(f"sets.{shown_key(set_name)}.{shown_key(repo)}: {exc}") from None
        done.append(StoreSync(set_name, repo, commit, path, not existed))
        synced(done[-1])
    return done


def sync_setup(lockfile: Lockfile, synced: Callable[[SetupSync], None]) -> SetupSyncResult:
    """
    :param lockfile: the validated pin.toml
    :param synced: told of each checkout once it is done with (also when it failed)
    :return: every ``[setup.*]`` checkout; one failure does not stop the others
    """
    done = []
    if lockfile.setup:
        # one sync at a time per setup, so that concurrent runs neither clone twice nor remove each other's clones
        with file_lock(lockfile.root / ".pin-sync"):
            for entry in lockfile.setup.values():
                try:
                    done.append(SetupSync(entry, _sync_one(lockfile.root, entry), None))
                except PinError as exc:
                    done.append(SetupSync(entry, None, exc))
                synced(done[-1])
    return SetupSyncResult(lockfile.path, done, unsupported_setup(lockfile))


def _sync_one(root: Path, entry: SetupCheckout) -> str:
    target = root / entry.path
    if not target.exists():
        where = entry.path  # as pin.toml names it: display_path would resolve the very symlinks that matter here
        if target.is_symlink():
            raise CheckoutStateError(
                f"{where} is a symlink to {os.readlink(target)}, which does not exist; fix or remove the link and rerun"
            )
        if not inside_setup(root, entry.path):
            # an existing checkout reached through a symlink is only read (verified); a clone is only ever written
            # inside the setup
            raise CheckoutStateError(
                f"{where} leads out of the setup through a symlink (to {os.path.realpath(target)}); pin sync clones "
                "only inside the setup: remove the link or clone there yourself"
            )
        try:
            clone_at_commit(entry.url, entry.commit, target)
        except OSError as exc:
            raise FileSystemError(f"{where}: cannot create the checkout: {exc.strerror} ({exc.filename})") from None
        return "cloned"
    where = display_path(target)
    try:
        verify_checkout(target, entry.commit, where, ignored=False)
    except CheckoutStateError as exc:
        # sync never moves or cleans a checkout somebody may be working in: say how to resolve it
        raise CheckoutStateError(
            f"{exc}; check out the pinned commit, commit or remove the changes, or move the directory away and rerun"
        ) from None
    return "ok"
