"""
The lockfiles a store serves: the setups that use it, so that ``pin gc`` run from any one of them keeps what the
others pin.

A setup records its pin.toml before it makes or uses a checkout in the store (``exp.checkout()``,
``exp.imported()``, ``pin sync SET``) and when it runs ``pin gc``: one small file ``<store>/lockfiles/<hash of the
path>`` that holds the lockfile's absolute path. The first time it is written beside and renamed in (a reader never
sees half a path); afterwards recording costs one read, once per process. No lock is needed: two processes that
record the same lockfile write the same bytes. This is the config path: no GitPython, tomlkit or filelock.
"""

from __future__ import annotations

__all__ = ["register_lockfile", "registered_lockfiles", "forget_lockfile"]

import hashlib
import os
import tempfile
from pathlib import Path
from typing import List, Set, Tuple

from sispin.errors import StoreError

_REGISTRY = "lockfiles"
#: (store, lockfile) pairs this process recorded already
_recorded: Set[Tuple[Path, Path]] = set()


def _entry(store_dir: Path, lockfile: Path) -> Path:
    digest = hashlib.sha256(str(lockfile).encode("utf-8")).hexdigest()[:16]
    return store_dir / _REGISTRY / digest


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
            handle, tmp = tempfile.mkstemp(dir=entry.parent, prefix=".", suffix=".tmp")
            try:
                with os.fdopen(handle, "w", encoding="utf-8") as out:
                    out.write(text)
                # readable by every user of a shared store, whose `pin gc` must keep these pins too
                os.chmod(tmp, 0o644)
                os.replace(tmp, entry)
            except BaseException:
                os.unlink(tmp)
                raise
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
