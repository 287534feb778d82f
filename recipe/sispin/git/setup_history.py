"""
The setup's own history: the setup directory as it was at a revision of the git repository that holds it, written
out from git's objects through a temporary index (never the user's), so that an old graph can be built again without
touching the user's working tree, index or worktree list.
"""

from __future__ import annotations

__all__ = ["export_setup"]

import os
from pathlib import Path

import git

from sispin.errors import RevisionError
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
