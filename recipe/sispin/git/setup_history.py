"""
The setup's own history: the setup directory as it was at a revision of the git repository that holds it, written
out from git's objects through a temporary index (never the user's), so that an old graph can be built again without
touching the user's working tree, index or worktree list.
"""

from __future__ import annotations

__all__ = ["setup_revision", "export_setup", "check_committable", "commit_files"]

import os
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

from sispin.errors import GitCommandError, GitError, RevisionError
from sispin.git.process import read_git, read_git_raw, write_git


def setup_revision(root: Path, revision: str) -> Tuple[Path, str, str]:
    """
    :param root: the setup directory (where pin.toml is), inside a git repository
    :param revision: any revision git names a commit by (``HEAD~1``, ``main``, a tag, a SHA)
    :return: the top of the repository, the commit the revision names, and the setup directory in it as git
        names a path (``""`` at the top, else ``folder/``)
    :raises RevisionError: when the setup is in no git repository, the revision names no commit, or the setup
        directory is not in that commit
    """
    try:
        top = Path(read_git(root, "rev-parse", "--show-toplevel"))
    except GitCommandError:
        raise RevisionError(f"{root} is in no git repository: --against needs the setup's history") from None
    try:
        commit = read_git(root, "rev-parse", "--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}")
    except GitCommandError:
        raise RevisionError(f"no commit {revision!r} in the setup's repository ({top})") from None
    prefix = root.resolve().relative_to(top.resolve()).as_posix()
    folder = "" if prefix == "." else f"{prefix}/"
    answer = read_git_raw(root, "cat-file", "-t", f"{commit}:{folder}")
    if answer.code != 0 or answer.stdout.strip() != b"tree":
        raise RevisionError(f"{revision}: the setup directory {prefix} is not in that commit")
    return top, commit, folder


def export_setup(root: Path, revision: str, target: Path) -> Path:
    """
    :param root: the setup directory (where pin.toml is), inside a git repository
    :param revision: any revision git names a commit by (``HEAD~1``, ``main``, a tag, a SHA)
    :param target: an empty directory to work in
    :return: the setup directory as it was at the revision, under target
    :raises RevisionError: when the setup is in no git repository, the revision names no commit, or the setup
        directory is not in that commit
    """
    top, commit, folder = setup_revision(root, revision)
    # a temporary index of the commit's tree, checked out into target: every file as committed (git archive would
    # leave out what .gitattributes marks export-ignore, and the setup's current file would stand in for it)
    index = target / ".sispin-index"
    files = target / "setup"
    try:
        # the index named by GIT_INDEX_FILE, not --index-output: that one is written as the repository's index.lock and
        # moved, which takes the user's index lock (a git command of theirs fails meanwhile) and fails outright where
        # the temporary directory is on another filesystem (a cluster's local TMPDIR)
        write_git(root, "read-tree", "--end-of-options", f"{commit}:{folder}", env={"GIT_INDEX_FILE": str(index)})
        write_git(top, "checkout-index", "--all", f"--prefix={files}{os.sep}", env={"GIT_INDEX_FILE": str(index)})
    except GitCommandError as exc:
        raise RevisionError(f"{revision}: the setup directory could not be written out ({exc.reason})") from None
    finally:
        index.unlink(missing_ok=True)
    return files


def _top(root: Path) -> Path:
    try:
        return Path(read_git(root, "rev-parse", "--show-toplevel"))
    except GitError:
        raise GitError(f"--commit: {root} is in no git repository") from None


def _names(top: Path, files: Sequence[Path]) -> List[str]:
    """:return: the files (through symlinks) relative to the repository's top"""
    names = []
    for file in files:
        real = os.path.realpath(file)
        if not real.startswith(os.path.join(os.path.realpath(top), "")):
            raise GitError(f"--commit: {file} is outside the repository {top}")
        names.append(os.path.relpath(real, os.path.realpath(top)))
    return names


def check_committable(root: Path, files: Sequence[Path]) -> None:
    """
    Before a command writes with ``--commit``: the setup is in a repository, and its files hold no changes that are
    not committed (they would go into the commit under the command's message).

    :raises GitError: saying which
    """
    top = _top(root)
    names = _names(top, [file for file in files if os.path.lexists(file)])
    changed = [
        line[3:] for line in read_git(top, "status", "--porcelain", "--", *names).splitlines() if line[:2] != "??"
    ]
    if names and changed:
        raise GitError(
            f"--commit: {', '.join(changed)} has changes not committed: commit them first, or leave out --commit"
        )
    # an ignored file that git does not track would never be committed: say so, not "nothing to commit"
    tracked = set(read_git(top, "ls-files", "--", *names).splitlines()) if names else set()
    untracked = [name for name in names if name not in tracked]
    ignored = _ignored_by_git(top, untracked)
    if ignored:
        raise GitError(
            f"--commit: {', '.join(ignored)} is ignored by git (`git check-ignore -v {ignored[0]}` says why): add it "
            "once with `git add -f`, or leave out --commit"
        )


def _ignored_by_git(top: Path, names: Sequence[str]) -> List[str]:
    """:return: those of the files (relative to the repository's top) that git ignores"""
    if not names:
        return []
    answer = read_git_raw(top, "check-ignore", "--stdin", "-z", stdin="\0".join(names).encode())
    # 1: none is ignored; 0: some are (listed)
    if answer.code not in (0, 1):
        raise GitError(f"git check-ignore in {top} failed: {answer.reason}")
    return [name for name in answer.stdout.decode().split("\0") if name]


def commit_files(root: Path, files: Sequence[Path], summary: str, body: Sequence[str] = ()) -> Optional[str]:
    """
    Commit exactly these files of the setup as they are on disk (``git commit --only``): whatever else is staged
    stays staged and out of the commit, and a refused commit leaves the index as it was. The repository's hooks run
    as for any commit.

    :param root: the setup directory, inside a git repository
    :param files: files below it that exist (new ones are added; symlinks are followed)
    :param summary: the message's first line
    :param body: the lines after it
    :return: the new commit's SHA, or None when the files are as committed already
    :raises GitError: when the setup is in no git repository, or git refuses the commit (its reason)
    """
    top = _top(root)
    names = _names(top, files)
    if not read_git(top, "status", "--porcelain", "--", *names):
        return None
    new = [name for name in names if not read_git(top, "ls-files", "--", name)]
    text = "\n".join([summary, "", *body]) if body else summary
    try:
        if new:
            write_git(top, "add", "--intent-to-add", "--", *new)
        write_git(top, "commit", "--only", "--quiet", "-m", text, "--", *names)
    except GitError as exc:
        if new:
            write_git(top, "reset", "--quiet", "--", *new)
        raise GitError(f"--commit: {exc} (the files are written; nothing was committed)") from None
    return read_git(top, "rev-parse", "HEAD")
