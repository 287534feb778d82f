"""
A set's graph as the setup's own git history had it (``pin explain --against REV``): the setup directory at the
revision is written out to a temporary directory, what git does not hold (the checkouts ``pin sync`` made, work/) is
linked in from the setup as it is now, and the set is built there with every job's record. So an explanation never
depends on records someone kept.
"""

from __future__ import annotations

__all__ = ["check_revision", "Revision", "read_revision", "same_graph_at", "graph_at_revision"]

import os
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any, Mapping, NamedTuple, Optional, Sequence, Set

from sispin.errors import LockfileError, PinError
from sispin.git.process import read_git, read_git_raw
from sispin.git.registry import forget_lockfile
from sispin.git.setup_history import TreeChanges, changes_since, export_setup, file_at, setup_revision
from sispin.git.store import Store
from sispin.graph.build import load_graph
from sispin.graph.incremental import KeptPass, standing_pass
from sispin.graph.probe.schema import RecordedOutput, SetGraph
from sispin.lock.loading import load_lockfile, parse_lockfile
from sispin.lock.lockfile import Lockfile

#: what the old build must not share with the setup now: git's own data, sispin's caches of the current graph, and
#: Python's bytecode of today's sources (the old build would write the revision's into it)
_NOT_LINKED = frozenset({".git", ".sispin-cache", "output", "alias", "__pycache__"})
#: of those, what the revision's build reads differently (Python's bytecode it compiles again from the same source)
_NOT_COPIED = _NOT_LINKED - {"__pycache__"}


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


class Revision(NamedTuple):
    """
    What a revision holds of the setup that needs no build: enough to tell a set whose graph it cannot change.

    :param lockfile: its pin.toml, read as if it were the setup's now (its paths resolve here)
    :param changes: how the setup's files differ from it
    """

    lockfile: Lockfile
    changes: TreeChanges


def read_revision(lockfile: Lockfile, revision: str) -> Optional[Revision]:
    """
    :param lockfile: the setup's lockfile now
    :param revision: a revision that :func:`check_revision` accepted
    :return: what the revision holds of the setup; None when its pin.toml cannot be read here (its build says why)
    """
    _, commit, folder = setup_revision(lockfile.root, revision)
    try:
        then = parse_lockfile(file_at(lockfile.root, commit, folder, lockfile.path.name) or "", lockfile.path)
    except PinError:
        return None
    return Revision(then, changes_since(lockfile.root, commit))


def same_graph_at(
    lockfile: Lockfile,
    set_name: str,
    recorded: Mapping[str, RecordedOutput],
    bound: Mapping[str, Sequence[str]],
    revision: Revision,
) -> Optional[KeptPass]:
    """
    :param recorded: the set's outputs in the snapshot now
    :param bound: the snapshot's alias history now
    :return: the set's kept pass (:mod:`sispin.graph.incremental`) when the set's graph at the revision is its graph
        now: the pass stands, the revision's pin.toml gives it the same key, and no file its builds read
        below the setup differs at the revision (a directory they listed has the same entries); else None. Built in
        place, the revision's graph would be today's: no copy of the setup needs building
    """
    standing = standing_pass(lockfile, set_name, recorded, bound, revision.lockfile)
    if standing is None:
        return None
    kept, ledgers = standing
    return None if any(_read_differs(ledger, lockfile.root, revision.changes) for ledger in ledgers) else kept


def _read_differs(ledger: Mapping[str, Any], root: Path, changes: TreeChanges) -> bool:
    """:return: whether the revision's setup holds something else where the build read (a ledger's paths below root)"""
    prefixes = {os.path.join(str(root.absolute()), ""), os.path.join(os.path.realpath(root), "")}
    # a file added or gone changes the entries of every folder above it, and whether each of them exists
    folders = {
        "" if str(parent) == "." else str(parent) for name in changes.present for parent in PurePosixPath(name).parents
    }
    files = set(ledger["files"])
    for path in [*files, *ledger["paths"], *ledger["absent"], *ledger["directories"]]:
        name = (
            ""
            if os.path.join(path, "") in prefixes
            else next((path[len(p) :] for p in prefixes if path.startswith(p)), None)
        )
        if name is None:
            continue  # outside the setup: the revision's build reads the same
        if name.split("/", 1)[0] in _NOT_COPIED:
            return True  # the revision's copy does not have it
        if name in changes.changed or name in changes.present or (path not in files and name in folders):
            return True
    return False


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
