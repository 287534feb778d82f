"""
The setup's own history: the setup directory as it was at a revision of the git repository that holds it, written
out read-only from git's objects (``git archive``), so that an old graph can be built again without touching the
user's working tree, index or worktree list.
"""

from __future__ import annotations

__all__ = ["export_setup"]

import io
import tarfile
from pathlib import Path

import git

from sispin.errors import RevisionError
from sispin.git.process import message, runner


def export_setup(root: Path, revision: str, target: Path) -> Path:
    """
    :param root: the setup directory (where pin.toml is), inside a git repository
    :param revision: any revision git names a commit by (``HEAD~1``, ``main``, a tag, a SHA)
    :param target: an empty directory to write the files into
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
    paths = [] if prefix == "." else ["--", prefix]
    try:
        archive = runner(top).execute(["git", "archive", "--format=tar", commit, *paths], stdout_as_string=False)
    except git.GitCommandError as exc:
        raise RevisionError(
            f"{revision}: the setup directory {prefix} is not in that commit ({message(exc)})"
        ) from None
    with tarfile.open(fileobj=io.BytesIO(archive)) as files:
        # the user's own files: their symlinks and modes as committed
        if hasattr(tarfile, "tar_filter"):
            files.extractall(target, filter="tar")
        else:  # pragma: no cover - Pythons before the extraction filters
            files.extractall(target)
    return target if prefix == "." else target / prefix
