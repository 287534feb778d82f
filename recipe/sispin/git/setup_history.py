"""
The setup's own history: the setup directory as it was at a revision of the git repository that holds it, written
out from git's objects through a temporary index (never the user's), so that an old graph can be built again without
touching the user's working tree, index or worktree list.
"""

from __future__ import annotations

__all__ = ["export_setup", "commit_files"]

import os
from pathlib import Path
from typing import Optional, Sequence

import git

from sispin.errors import GitError, RevisionError
from sispin.git.env import read_git
from sispin.git.process import message, runner


def export_setup(root: Path, revision: str, target: Path) -> Path:
    """
    :param root: the setup directory (where pin.toml is), inside a git repository
    :param revision: any revision git names a commit by (``HEAD~1``, ``main``, a tag, a SHA)
    :param target: an empty directory to work in
    :return: the setup directory as it was at the revision, under target
    :raises RevisionError: when the setup is in no git repository, or the revision names no commit
    """
    run = runner(root)
    try:
        top = Path(run.rev_parse("--show-toplevel"))
    except git.GitCommandError:
        raise RevisionError(f"{root} is in no git repository: --against needs the setup's history") from None
    try:
        commit = run.rev_parse("--verify", "--quiet", "--end-of-options", f"{revision}^{{commit}}")
    except git.GitCommandError:
        raise RevisionError(f"no commit {revision!r} in the setup's repository ({top})") from None
    prefix = root.resolve().relative_to(top.resolve()).as_posix()
    tree = commit if prefix == "." else f"{commit}:{prefix}"
    # a temporary index of the commit's tree, checked out into target: every file as committed (git archive would
    # leave out what .gitattributes marks export-ignore, and the setup's current file would stand in for it)
    index = target / ".sispin-index"
    files = target / "setup"
    try:
        run.execute(["git", "read-tree", f"--index-output={index}", "--end-of-options", tree])
        runner(top).execute(
            ["git", "checkout-index", "--all", f"--prefix={files}{os.sep}"], env={"GIT_INDEX_FILE": str(index)}
        )
    except git.GitCommandError as exc:
        raise RevisionError(
            f"{revision}: the setup directory {prefix} is not in that commit ({message(exc)})"
        ) from None
    finally:
        index.unlink(missing_ok=True)
    return files


def commit_files(root: Path, files: Sequence[Path], summary: str, body: Sequence[str] = ()) -> Optional[str]:
    """
    Commit exactly these files of the setup as they are on disk (``git commit --only``): whatever else is staged
    stays staged and out of the commit. The repository's hooks run as for any commit.

    :param root: the setup directory, inside a git repository
    :param files: files below it that exist (new ones are added)
    :param summary: the message's first line
    :param body: the lines after it
    :return: the new commit's SHA, or None when the files are as committed already
    :raises GitError: when the setup is in no git repository, or git refuses the commit (its reason)
    """
    try:
        read_git(root, "rev-parse", "--show-toplevel")
    except GitError:
        raise GitError(f"--commit: {root} is in no git repository") from None
    names = [os.path.relpath(file, root) for file in files]
    if not read_git(root, "status", "--porcelain", "--", *names):
        return None
    text = "\n".join([summary, "", *body]) if body else summary
    try:
        read_git(root, "add", "--", *names)
        read_git(root, "commit", "--only", "--quiet", "-m", text, "--", *names)
    except GitError as exc:
        raise GitError(f"--commit: {exc} (the files are written; nothing was committed)") from None
    return read_git(root, "rev-parse", "HEAD")
