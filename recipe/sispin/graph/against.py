"""
A set's graph as the setup's own git history had it (``pin explain --against REV``): the setup directory at the
revision is written out to a temporary directory, what git does not hold (the checkouts ``pin sync`` made, work/) is
linked in from the setup as it is now, and the set is built there with every job's record. So an explanation never
depends on records someone kept.
"""

from __future__ import annotations

__all__ = ["check_revision", "graph_at_revision"]

import os
import tempfile
from pathlib import Path, PurePosixPath
from typing import Optional, Set

from sispin.errors import LockfileError, PinError
from sispin.git.process import read_git, read_git_raw
from sispin.git.registry import forget_lockfile
from sispin.git.setup_history import export_setup, setup_revision
from sispin.git.store import Store
from sispin.graph.build import load_graph
from sispin.graph.probe.schema import SetGraph
from sispin.lock.loading import load_lockfile
from sispin.lock.lockfile import Lockfile

#: what the old build must not share with the setup now: git's own data, sispin's caches of the current graph, and
#: Python's bytecode of today's sources (the old build would write the revision's into it)
_NOT_LINKED = frozenset({".git", ".sispin-cache", "output", "alias", "__pycache__"})


def check_revision(lockfile: Lockfile, revision: str) -> None:
    """
    What makes a revision unusable that git tells without writing it out, said before any build waits (the build of
    a set now may run beside the revision's).

    :raises RevisionError: when the setup is in no git repository, the revision names no commit, or the setup
        directory is not in it
    :raises LockfileError: when the setup had no lockfile at the revision
    """
    _, commit, folder = setup_revision(lockfile.root, revision)
    if read_git_raw(lockfile.root, "cat-file", "-e", f"{commit}:{folder}{lockfile.path.name}").code != 0:
        raise _no_lockfile(lockfile, revision)


def _no_lockfile(lockfile: Lockfile, revision: str) -> LockfileError:
    return LockfileError(f"{revision}: the setup had no {lockfile.path.name} then")


def graph_at_revision(lockfile: Lockfile, set_name: str, revision: str) -> Optional[SetGraph]:
    """
    :param lockfile: the setup's lockfile now
    :param set_name: the set to build
    :param revision: a revision of the git repository that holds the setup
    :return: the set's graph at the revision, with every job's record; None when the lockfile had no such set then
    :raises RevisionError: when the revision or the setup's repository cannot be read
    :raises LockfileError: when the setup had no lockfile at the revision
    :raises SisyphusError: when the old configs do not build
    """
    with tempfile.TemporaryDirectory(prefix="sispin-against-") as temporary:
        old_root = export_setup(lockfile.root, revision, Path(temporary))
        old_path = old_root / lockfile.path.name
        if not old_path.is_file():
            raise _no_lockfile(lockfile, revision)
        tracked = set(read_git(lockfile.root, "ls-files", "-z").split("\0")) - {""}
        _link_untracked(lockfile.root, old_root, tracked | _parents(tracked))
        try:
            old = load_lockfile(old_path)
            if set_name not in old.sets:
                return None
            # a value derived from where the configs run (a root_path, a recipe folder) is no change the revision
            # made: the copy's location is recorded as the setup's own, before any digest
            relocated = {str(old_root): str(lockfile.root), str(old_root.resolve()): str(lockfile.root)}
            return load_graph(old, set_name, records="all", relocated=relocated)
        except PinError as exc:
            # the revision's files, not today's: named as git names them, not by the temporary directory
            said = str(exc).replace(f"{old_root}{os.sep}", f"{revision}:")
            error = type(exc)(f"at {revision}: {said}")
            error.details = exc.details
            raise error from None
        finally:
            # the build's exp.imported() recorded the temporary lockfile as a user of the store: it is none
            forget_lockfile(Store().directory, old_path)


def _parents(files: Set[str]) -> Set[str]:
    """:return: every folder that holds one of the files (``a/b/c.py``: ``a``, ``a/b``)"""
    return {str(parent) for name in files for parent in PurePosixPath(name).parents if str(parent) != "."}


def _link_untracked(current: Path, old: Path, tracked: Set[str], inside: str = "") -> None:
    """
    Link what git does not hold, from the setup now into the revision's copy, at any depth: the checkouts
    (``recipe/i6_core``, ``tools/sisyphus``), work/, and every untracked or ignored file inside a folder git holds (a
    compiled extension or a generated module deep in the recipe tree, which the old build would otherwise miss or
    make again). A file or folder git holds now but the revision lacks is not linked: the revision did not have it.

    :param tracked: the setup's files git holds now and the folders that hold them, relative to the setup root
    :param inside: the folder of current relative to the setup root (``""`` for the root, else ending in ``/``)
    """
    for entry in sorted(current.iterdir()):
        there, name = old / entry.name, inside + entry.name
        if entry.name in _NOT_LINKED:
            continue
        if not os.path.lexists(there):
            if name not in tracked:
                there.symlink_to(entry.absolute())
        elif entry.is_dir() and not entry.is_symlink() and there.is_dir() and not there.is_symlink():
            _link_untracked(entry, there, tracked, name + "/")
