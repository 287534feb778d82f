"""
Is a checkout exactly its commit? HEAD must be the commit and the working tree hold its files and nothing else, as
git sees it with nothing hiding a difference: every file is hashed against the commit in a scratch index (the
checkout's own index, its skip-worktree and assume-unchanged flags and stat information play no part), replacement
objects are ignored (``git replace`` can make a commit read as another tree), the working tree is the checkout's
whatever its ``core.worktree`` says, and files git ignores count like untracked ones, but for Python's bytecode
caches of the checkout's own sources (``__pycache__/*.pyc``): those are accepted only when Python would run the
code of the source beside them.
"""

from __future__ import annotations

__all__ = ["verify_checkout", "checked_out_commit", "at_another_commit"]

import contextlib
import importlib.util
import marshal
import os
import tempfile
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence

from sispin.errors import CheckoutStateError, GitCommandError, GitError
from sispin.git.process import read_git, write_git
from sispin.git.repo import is_checkout

#: how many changed files a "local changes" error lists before it counts the rest
_LISTED_CHANGES = 10
_CHANGE_NAMES = {
    "M": "modified",
    "A": "added",
    "D": "deleted",
    "R": "renamed",
    "?": "untracked",
    "!": "ignored by git",
    "U": "conflict",
}
#: the flags of a .pyc header (PEP 552): hash-based, and whether Python checks that hash against the source
_HASH_BASED, _CHECK_SOURCE = 0b01, 0b10


def verify_checkout(
    path: Path,
    commit: str,
    where: str,
    *,
    ignored: bool = True,
    files: Optional[Sequence[str]] = None,
    patches: Optional[Sequence[str]] = None,
) -> None:
    """
    :param path: a checkout that must be exactly commit
    :param commit: full commit SHA
    :param where: how to name the checkout in messages
    :param ignored: count files git ignores (a ``.gitignore``, ``.git/info/exclude``) as local changes too
    :param files: the clone's ``files_to_checkout``: only these files of the commit are there (i6_core leaves HEAD
        at the branch's head then)
    :param patches: the clone's ``patches``: the commit's files with these applied, in order
    :raises CheckoutStateError: when it is not a checkout, HEAD is another commit, or files are modified, added,
        deleted or untracked (listed)
    """
    if not path.exists():
        raise CheckoutStateError(f"{where} does not exist (`pin sync` makes it)")
    if not is_checkout(path):
        raise CheckoutStateError(f"{where}: exists but is not a git checkout; move it away and rerun")
    honest = _honest(path)
    if files is None:
        head = checked_out_commit(path)
        if head is None:
            raise CheckoutStateError(f"{where}: the checkout has no commit")
        if head != commit:
            raise CheckoutStateError(at_another_commit(where, head, commit))
    changes = _changes(path, honest, commit, where, files, patches or (), ignored)
    if changes:
        listed = ", ".join(changes[:_LISTED_CHANGES])
        more = f" and {len(changes) - _LISTED_CHANGES} more" if len(changes) > _LISTED_CHANGES else ""
        raise CheckoutStateError(f"{where} has local changes: {listed}{more}")


def checked_out_commit(path: Path) -> Optional[str]:
    """:return: the commit the checkout's HEAD is at, as git tells it past the checkout's own settings; None for none"""
    try:
        return read_git(path, "rev-parse", "--verify", "--quiet", "HEAD^{commit}", env=_honest(path))
    except GitCommandError:
        return None


def at_another_commit(where: str, head: str, commit: str) -> str:
    """:return: how a checkout at head, not at the pinned commit, is said"""
    return f"{where} is at {head[:12]}, pin.toml pins {commit[:12]}"


def _honest(path: Path) -> Dict[str, str]:
    # what git would take from the checkout's own config or state to show something else: replacement objects, a
    # core.worktree that points elsewhere (a file-system monitor's answers: see _HONEST)
    return {"GIT_NO_REPLACE_OBJECTS": "1", "GIT_WORK_TREE": str(path)}


#: git settings of a checkout that would let it report a changed file as unchanged
_HONEST = ("-c", "core.fsmonitor=false", "-c", "core.untrackedCache=false", "-c", "core.ignoreStat=false")


def _changes(
    path: Path,
    honest: Mapping[str, str],
    commit: str,
    where: str,
    files: Optional[Sequence[str]],
    patches: Sequence[str],
    ignored: bool,
) -> List[str]:
    """
    The differences between the working tree and what the clone job made of the commit: its files (or only the
    ``files_to_checkout``) with the patches applied, in a scratch index of git's own, never the checkout's: every
    file is read and hashed (no stat information, no skip-worktree or assume-unchanged flag to trust).
    """
    with tempfile.TemporaryDirectory(prefix="sispin-verify-") as scratch:
        env = {**honest, "GIT_INDEX_FILE": os.path.join(scratch, "index")}
        try:
            write_git(path, "read-tree", commit, env=env)
            if files is not None:
                kept = set(read_git(path, "ls-files", "--", *files, env=env).splitlines()) if files else set()
                dropped = [name for name in read_git(path, "ls-files", env=env).splitlines() if name not in kept]
                for start in range(0, len(dropped), 1000):
                    write_git(path, "rm", "--cached", "--quiet", "--", *dropped[start : start + 1000], env=env)
            for patch in patches:
                write_git(path, "apply", "--cached", "-", stdin=patch, env=env)
            with contextlib.suppress(GitCommandError):  # it says which files need an update: diff-files lists them
                write_git(path, *_HONEST, "update-index", "-q", "--really-refresh", env=env)
            modified = read_git(path, *_HONEST, "diff-files", "--name-status", env=env).splitlines()
            others = read_git(path, "ls-files", "--others", "--exclude-standard", env=env).splitlines()
            ignored_files = ("--others", "--ignored", "--exclude-standard")
            hidden = read_git(path, "ls-files", *ignored_files, env=env).splitlines() if ignored else []
        except GitCommandError as exc:
            raise GitError(f"{where}: cannot compare the checkout with {commit[:12]}: {exc.reason}") from None
    changes = [f"{line[2:]} ({_CHANGE_NAMES.get(line[:1], 'changed')})" for line in modified if line.strip()]
    changes += [f"{name} (untracked)" for name in others if not _valid_bytecode(path / name)]
    changes += [f"{name} (ignored by git)" for name in hidden if not _valid_bytecode(path / name)]
    return changes


def _valid_bytecode(file: Path) -> bool:
    """
    Whether a file is Python's bytecode cache of a source beside its ``__pycache__`` that runs that source's code:
    a checked-hash .pyc (Python compares it with the source), a timestamp .pyc of this Python whose code equals the
    source compiled now, or one whose timestamp no longer matches (Python ignores it). An unchecked-hash .pyc runs
    whatever it holds, whatever the source says: it counts. A timestamp .pyc of another Python (a cluster's nodes,
    a second venv) cannot be compiled here and is taken as what it claims to be, the cache of its source.
    """
    source = _source_of(file)
    if source is None:
        return False
    header = file.read_bytes()
    flags = int.from_bytes(header[4:8], "little")
    if flags & _HASH_BASED:
        return bool(flags & _CHECK_SOURCE)
    stats = source.stat()
    stamp = (int(stats.st_mtime) & 0xFFFFFFFF, stats.st_size & 0xFFFFFFFF)
    if (int.from_bytes(header[8:12], "little"), int.from_bytes(header[12:16], "little")) != stamp:
        return True  # stale: Python compiles the source instead
    if header[:4] != importlib.util.MAGIC_NUMBER:
        return True
    optimize = {"opt-1": 1, "opt-2": 2}.get(file.name.split(".")[-2], 0)
    try:
        compiled = compile(source.read_bytes(), str(source), "exec", dont_inherit=True, optimize=optimize)
        # code objects compare by what they run (not by the file name they were compiled from)
        return marshal.loads(header[16:]) == compiled
    except (SyntaxError, ValueError, EOFError, TypeError):
        return False


def _source_of(file: Path) -> Optional[Path]:
    """The source a ``__pycache__/NAME.TAG[.opt-N].pyc`` caches, when it exists beside the ``__pycache__``."""
    if file.parent.name != "__pycache__" or file.suffix != ".pyc" or not file.is_file() or file.is_symlink():
        return None
    source = file.parent.parent / (file.name.split(".", 1)[0] + ".py")
    return source if os.path.isfile(source) else None
