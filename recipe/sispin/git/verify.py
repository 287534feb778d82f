"""
Is a checkout exactly its commit? HEAD must be the commit and the working tree hold its files and nothing else, as
git sees it with nothing hiding a difference: replacement objects are ignored (``git replace`` can make HEAD read as
another tree), index entries marked skip-worktree or assume-unchanged (``git status`` does not look at those files)
are reported, and files git ignores count like untracked ones, but for Python's bytecode caches of the checkout's own
sources (``__pycache__/*.pyc``): those are accepted only when Python would run the code of the source beside them.
"""

from __future__ import annotations

__all__ = ["verify_checkout"]

import importlib.util
import marshal
import os
import tempfile
from pathlib import Path
from typing import Any, List, Optional, Sequence

import git

from sispin.errors import CheckoutStateError, GitError
from sispin.git.process import Repository, message

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
        deleted, untracked or hidden from git status (listed)
    """
    if not path.exists():
        raise CheckoutStateError(f"{where} does not exist (`pin sync` makes it)")
    try:
        repo = Repository(path)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise CheckoutStateError(f"{where}: exists but is not a git checkout; move it away and rerun") from None
    runner = repo.git
    runner.update_environment(GIT_NO_REPLACE_OBJECTS="1")
    if files is not None or patches:
        changes = _expected_tree_changes(path, runner, commit, where, files, patches or ())
    else:
        try:
            head = runner.rev_parse("--verify", "--quiet", "HEAD^{commit}")
        except git.GitCommandError:
            raise CheckoutStateError(f"{where}: the checkout has no commit") from None
        if head != commit:
            raise CheckoutStateError(f"{where} is at {head[:12]}, pin.toml pins {commit[:12]}")
        try:
            changes = _changes(path, runner, ignored)
        except git.GitCommandError as exc:
            raise GitError(f"{where}: git status failed: {message(exc)}") from None
    if changes:
        listed = ", ".join(changes[:_LISTED_CHANGES])
        more = f" and {len(changes) - _LISTED_CHANGES} more" if len(changes) > _LISTED_CHANGES else ""
        raise CheckoutStateError(f"{where} has local changes: {listed}{more}")


def _changes(path: Path, runner: git.Git, ignored: bool) -> List[str]:
    """:return: every difference from HEAD, as ``file (what)``"""
    options = ["--porcelain", "--untracked-files=all"] + (["--ignored=traditional"] if ignored else [])
    changes = []
    for line in runner.status(*options).splitlines():
        if not line.strip():
            continue
        kind, name = line[:2].strip()[:1], line[3:]
        if kind in "?!" and _valid_bytecode(path / name):
            continue
        changes.append(f"{name} ({_CHANGE_NAMES.get(kind, 'changed')})")
    for line in runner.ls_files("-v").splitlines():
        tag, _, name = line.partition(" ")
        if tag == "S":
            changes.append(f"{name} (marked skip-worktree: git status does not look at it)")
        elif tag.islower():
            changes.append(f"{name} (marked assume-unchanged: git status does not look at it)")
    if runner.for_each_ref("refs/replace/", "--count=1"):
        changes.append("refs/replace (replacement objects: git would show other content for some object)")
    return changes


def _expected_tree_changes(
    path: Path, runner: git.Git, commit: str, where: str, files: Optional[Sequence[str]], patches: Sequence[str]
) -> List[str]:
    """
    The differences between the working tree and what the clone job made of the commit: its files (or only the
    ``files_to_checkout``) with the patches applied, built in a scratch index of git's own, never the checkout's.
    """
    with tempfile.TemporaryDirectory(prefix="sispin-verify-") as scratch:
        runner.update_environment(GIT_INDEX_FILE=os.path.join(scratch, "index"))
        try:
            runner.read_tree(commit)
            if files is not None:
                kept = set(runner.ls_files("--", *files).splitlines()) if files else set()
                dropped = [name for name in runner.ls_files().splitlines() if name not in kept]
                for start in range(0, len(dropped), 1000):
                    runner.rm("--cached", "--quiet", "--", *dropped[start : start + 1000])
            for patch in patches:
                runner.apply("--cached", "-", istream=_text_stream(patch))
            runner.update_index("-q", "--refresh", with_exceptions=False)
            modified = runner.diff_files("--name-status").splitlines()
            others = runner.ls_files("--others", "--exclude-standard").splitlines()
            ignored = runner.ls_files("--others", "--ignored", "--exclude-standard").splitlines()
        except git.GitCommandError as exc:
            raise CheckoutStateError(f"{where}: cannot rebuild what its clone job made: {message(exc)}") from None
        finally:
            runner.update_environment(GIT_INDEX_FILE=None)
    changes = [f"{line[2:]} ({_CHANGE_NAMES.get(line[:1], 'changed')})" for line in modified if line.strip()]
    changes += [f"{name} (untracked)" for name in others if not _valid_bytecode(path / name)]
    changes += [f"{name} (ignored by git)" for name in ignored if not _valid_bytecode(path / name)]
    return changes


def _text_stream(text: str) -> Any:
    import io

    return io.BytesIO(text.encode("utf-8"))


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
