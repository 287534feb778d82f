"""
Everything that talks to git, through GitPython.

Every git process gets a restricted environment: no terminal prompts (a missing credential fails instead of
hanging), and git's own protocol allow-list limited to the transports pin.toml accepts, which also covers
redirections made by ``url.<base>.insteadOf``.
"""

from __future__ import annotations

__all__ = [
    "GIT_ENV",
    "clone_at_commit",
    "head_commit",
    "local_changes",
]

import os
import shutil
import tempfile
from pathlib import Path
from typing import List

import git

from sispin.errors import CheckoutStateError, GitError

#: environment for every git process sispin starts
GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ALLOW_PROTOCOL": "file:git:https:ssh",
}


def _message(exc: git.GitCommandError) -> str:
    """The most telling line of a failed git command's stderr, without git's 'fatal: ' prefix."""
    lines = [line.strip() for line in str(exc.stderr or "").splitlines() if line.strip()]
    lines = [line[len("stderr: ") :] if line.startswith("stderr: ") else line for line in lines]
    lines = [line.strip("'").strip() for line in lines]
    for line in lines:
        if line.startswith(("fatal:", "error:")):
            return line.split(":", 1)[1].strip()
    return lines[-1] if lines else f"git {exc.command[1] if len(exc.command) > 1 else ''} failed"


def _open(path: Path) -> git.Repo:
    try:
        repo = git.Repo(path)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise CheckoutStateError(f"{path}: exists but is not a git checkout; move it away and rerun") from None
    repo.git.update_environment(**GIT_ENV)
    return repo


def head_commit(path: Path) -> str:
    """
    :param path: a git working tree
    :return: the full SHA its HEAD points to
    :raises CheckoutStateError: when path is not a git checkout or has no commit
    """
    repo = _open(path)
    try:
        return repo.head.commit.hexsha
    except ValueError:
        raise CheckoutStateError(f"{path}: the checkout has no commit") from None


def local_changes(path: Path) -> List[str]:
    """
    :param path: a git working tree
    :return: ``git status --porcelain`` lines: modified, staged and untracked (not ignored) files
    """
    repo = _open(path)
    try:
        status = repo.git.status("--porcelain", "--untracked-files=all")
    except git.GitCommandError as exc:
        raise GitError(f"{path}: git status failed: {_message(exc)}") from None
    return [line for line in status.splitlines() if line.strip()]


def clone_at_commit(url: str, commit: str, dest: Path) -> None:
    """
    Clone url and check out commit (detached) at dest, atomically: the clone is made in a temporary sibling and
    renamed into place only when complete, so an interrupted run never leaves a half-made checkout at dest.

    :param url: repository URL (validated by the lockfile)
    :param commit: full commit SHA
    :param dest: target directory; must not exist
    :raises GitError: when the remote cannot be cloned or does not have the commit
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(dest)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=_tmp_prefix(dest)))
    try:
        try:
            repo = git.Repo.clone_from(url, tmp, no_checkout=True, env=GIT_ENV)
        except git.GitCommandError as exc:
            raise GitError(f"cannot clone {url}: {_message(exc)}") from None
        repo.git.update_environment(**GIT_ENV)
        if not _has_commit(repo, commit):
            # not reachable from any branch or tag (e.g. only under a pull-request ref): ask for it directly
            try:
                repo.git.fetch("origin", commit)
            except git.GitCommandError:
                pass
            if not _has_commit(repo, commit):
                raise GitError(f"commit {commit} does not exist in {url}")
        try:
            repo.git.checkout("--detach", commit)
        except git.GitCommandError as exc:
            raise GitError(f"cannot check out {commit} from {url}: {_message(exc)}") from None
        repo.close()
        os.rename(tmp, dest)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def _has_commit(repo: git.Repo, commit: str) -> bool:
    try:
        repo.git.cat_file("-e", f"{commit}^{{commit}}")
    except git.GitCommandError:
        return False
    return True


def _tmp_prefix(dest: Path) -> str:
    return f".{dest.name}.pin-partial-"


def _remove_leftovers(dest: Path) -> None:
    """Delete temporary clones a killed earlier run left beside dest (they are never used)."""
    for leftover in dest.parent.glob(_tmp_prefix(dest) + "*"):
        shutil.rmtree(leftover, ignore_errors=True)
