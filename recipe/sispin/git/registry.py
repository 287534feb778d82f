"""
The lockfiles a store serves, and what they pin: the setups that use it, so that ``pin gc`` run from any one of them
keeps what the others pin, and ``pin why`` names them.

A setup records its pin.toml before it makes or uses a checkout in the store (``exp.checkout()``,
``exp.imported()``, ``pin sync SET``) and when it runs ``pin gc``: one small file ``<store>/lockfiles/<hash of the
path>`` that holds the lockfile's absolute path. The first time it is written beside and renamed in (a reader never
sees half a path); afterwards recording costs one read, once per process. No lock is needed: two processes that
record the same lockfile write the same bytes. This is the config path: no tomlkit or filelock.
"""

from __future__ import annotations

__all__ = [
    "registry_directory",
    "register_lockfile",
    "registered_lockfiles",
    "forget_lockfile",
    "PinUse",
    "pin_uses",
    "StoreUsers",
    "load_users",
]

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Set, Tuple

from sispin.clonejob import checkout_folder
from sispin.errors import LockfileError, StoreError
from sispin.lock.files import replace_file
from sispin.lock.loading import load_lockfile
from sispin.lock.lockfile import Lockfile
from sispin.text import shown_key

_REGISTRY = "lockfiles"
#: (store, lockfile) pairs this process recorded already
_recorded: Set[Tuple[Path, Path]] = set()


def registry_directory(store_dir: Path) -> Path:
    """:return: where the store records the lockfiles it serves, one file each"""
    return store_dir / _REGISTRY


def _entry(store_dir: Path, lockfile: Path) -> Path:
    digest = hashlib.sha256(str(lockfile).encode("utf-8")).hexdigest()[:16]
    return registry_directory(store_dir) / digest


def register_lockfile(store_dir: Path, lockfile: Path) -> None:
    """
    Record lockfile as a user of the store (idempotent).

    :param store_dir: the store directory
    :param lockfile: a pin.toml
    :raises StoreError: when the store cannot be written
    """
    lockfile = Path(lockfile).resolve()
    if (store_dir, lockfile) in _recorded:
        return
    entry = _entry(store_dir, lockfile)
    text = f"{lockfile}\n"
    try:
        if not (entry.is_file() and entry.read_text(encoding="utf-8") == text):
            entry.parent.mkdir(parents=True, exist_ok=True)
            # readable by every user of a shared store, whose `pin gc` must keep these pins too
            replace_file(entry, text.encode("utf-8"), 0o644)
    except OSError as exc:
        raise StoreError(
            f"cannot record {lockfile} as a user of the store {store_dir}: {exc.strerror or exc}"
        ) from None
    _recorded.add((store_dir, lockfile))


def registered_lockfiles(store_dir: Path) -> List[Path]:
    """
    :param store_dir: the store directory
    :return: every lockfile recorded in the store, sorted (some may no longer exist)
    :raises StoreError: when the registry cannot be read
    """
    registry = store_dir / _REGISTRY
    found = []
    try:
        for entry in registry.iterdir() if registry.is_dir() else ():
            if entry.name.startswith("."):
                continue  # a recording in progress
            try:
                found.append(Path(entry.read_text(encoding="utf-8").rstrip("\n")))
            except FileNotFoundError:
                continue  # forgotten meanwhile
    except OSError as exc:
        raise StoreError(f"cannot read the users of the store {store_dir}: {exc}") from None
    return sorted(found)


def forget_lockfile(store_dir: Path, lockfile: Path) -> None:
    """
    Drop a lockfile from the store's users (when it no longer exists).

    :param store_dir: the store directory
    :param lockfile: a recorded lockfile
    :raises StoreError: when the store cannot be written
    """
    try:
        _entry(store_dir, lockfile).unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise StoreError(f"cannot forget {lockfile} as a user of the store {store_dir}: {exc}") from None
    _recorded.discard((store_dir, lockfile))


@dataclass(frozen=True)
class PinUse:
    """
    One pin of one lockfile.

    :param lockfile: the pin.toml
    :param key: where in it, e.g. ``sets.demo.returnn_common`` or ``setup.i6_core``
    :param name: the repository's (or setup entry's) name in that lockfile
    :param url: repository URL
    :param commit: full commit SHA
    :param folder: the folder of its store checkout (None for ``[setup.*]``: the store holds none of those)
    """

    lockfile: Path
    key: str
    name: str
    url: str
    commit: str
    folder: Optional[str]


def pin_uses(lockfile: Lockfile) -> List[PinUse]:
    """:return: every pin of the lockfile's sets, then its ``[setup.*]`` entries, in file order"""
    uses = []
    for spec in lockfile.sets.values():
        for name, pin in spec.pins.items():
            repo = lockfile.get_repo(name)
            folder = checkout_folder(repo.checkout)
            uses.append(
                PinUse(
                    lockfile.path, f"sets.{shown_key(spec.name)}.{shown_key(name)}", name, repo.url, pin.commit, folder
                )
            )
    for entry in lockfile.setup.values():
        uses.append(PinUse(lockfile.path, f"setup.{entry.name}", entry.name, entry.url, entry.commit, None))
    return uses


@dataclass(frozen=True)
class StoreUsers:
    """
    :param lockfiles: the lockfiles whose pins count: the current one first, then the store's other users
    :param gone: lockfiles the store recorded that no longer exist
    """

    lockfiles: Tuple[Lockfile, ...]
    gone: Tuple[Path, ...]


def load_users(store_dir: Path, current: Lockfile) -> StoreUsers:
    """
    :param store_dir: the store directory
    :param current: the lockfile of the setup asking
    :return: it and every other lockfile the store recorded
    :raises LockfileError: when a recorded lockfile exists but cannot be read: what it pins cannot be known
    """
    lockfiles = [current]
    gone = []
    for path in registered_lockfiles(store_dir):
        if path == current.path.resolve():
            continue
        try:
            os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            gone.append(path)
            continue
        except OSError:
            pass  # load_lockfile says what is wrong
        try:
            lockfiles.append(load_lockfile(path))
        except LockfileError as exc:
            raise LockfileError(
                f"{exc} (the store {store_dir} serves this lockfile, so what it pins is kept: fix it, or remove it "
                "if that setup is gone)"
            ) from None
    return StoreUsers(tuple(lockfiles), tuple(gone))
