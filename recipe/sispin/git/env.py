"""
The environment of every git process sispin starts, who hears their progress, and the one git call that must stay
light.

Every git process gets no terminal prompts (a missing credential fails instead of hanging), git's own protocol
allow-list limited to the transports pin.toml accepts (which also covers redirections made by
``url.<base>.insteadOf``), and none of the repository-local ``GIT_*`` variables a caller may have set (a git hook
exports ``GIT_DIR`` and ``GIT_INDEX_FILE``; they would point every command at the caller's repository).
:mod:`sispin.git.process` runs its commands through GitPython in this environment, and reports the progress of
clones and fetches to the listener set here (the CLI's, on a terminal: :func:`progress_to`); :func:`missing_commits`
runs git directly, because the settings hook calls it in every Sisyphus process, where GitPython's import would cost
each one.
"""

from __future__ import annotations

__all__ = [
    "GIT_ENV",
    "no_git_env",
    "read_git",
    "missing_commits",
    "ProgressListener",
    "progress_to",
    "progress_listener",
]

import contextlib
import os
import subprocess
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Mapping, Optional, Sequence

from sispin.errors import GitError
from sispin.lock.urls import ALLOWED_SCHEMES

#: environment for every git process sispin starts
GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ALLOW_PROTOCOL": ":".join(ALLOWED_SCHEMES),
}

#: the GIT_* variables that are the user's choices about how git connects and which configuration it reads, and
#: so pass through (pre-commit's rule); every other GIT_* variable names a repository, index, object store or work
#: tree of the caller's
_USER_GIT_VARIABLES = frozenset(
    {
        # who commits (`--commit`)
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_AUTHOR_DATE",
        "GIT_COMMITTER_DATE",
        "GIT_EXEC_PATH",
        "GIT_SSH",
        "GIT_SSH_COMMAND",
        "GIT_SSL_CAINFO",
        "GIT_SSL_NO_VERIFY",
        "GIT_CONFIG_COUNT",
        "GIT_CONFIG_GLOBAL",
        "GIT_CONFIG_NOSYSTEM",
        "GIT_CONFIG_SYSTEM",
        "GIT_HTTP_PROXY_AUTHMETHOD",
        "GIT_ASKPASS",
    }
)


def no_git_env(environ: Mapping[str, str]) -> Dict[str, str]:
    """
    :param environ: an environment
    :return: it without the repository-local GIT_* variables; ``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n`` (the
        store and offline-mirror redirects travel in them) and the user's connection settings stay
    """
    return {
        key: value
        for key, value in environ.items()
        if not key.startswith("GIT_")
        or key.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))
        or key in _USER_GIT_VARIABLES
    }


def read_git(repository: Path, *args: str, stdin: Optional[str] = None) -> str:
    """
    Run a git command that only reads a local repository, in sispin's git environment, without GitPython (whose
    import alone costs ~45 ms, more than ``pin status`` may take).

    :param repository: a repository (bare or not)
    :param args: the git command's arguments
    :param stdin: what git reads on its standard input
    :return: its standard output, without the last newline
    :raises GitError: when git cannot be run or fails (its last line of error output)
    """
    try:
        answer = subprocess.run(
            ["git", *args],
            cwd=repository,
            env={**no_git_env(os.environ), **GIT_ENV},
            input=stdin,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as exc:
        raise GitError(f"cannot run git in {repository}: {exc}") from None
    if answer.returncode != 0:
        lines = [line for line in answer.stderr.splitlines() if line.strip() and not line.startswith("hint:")]
        raise GitError(f"git {args[0]} in {repository} failed: {lines[-1] if lines else answer.returncode}")
    return answer.stdout[:-1] if answer.stdout.endswith("\n") else answer.stdout


def missing_commits(repository: Path, commits: Sequence[str]) -> List[str]:
    """
    :param repository: a repository (bare or not)
    :param commits: full commit SHAs
    :return: those the repository does not hold, or all of them when git cannot read it (one git process)
    """
    if not commits:
        return []
    try:
        answer = read_git(
            repository, "cat-file", "--batch-check=%(objecttype)", stdin="".join(f"{c}\n" for c in commits)
        ).splitlines()
    except GitError:
        return list(commits)
    return [sha for sha, kind in zip(commits, answer) if kind.strip() != "commit"]


#: hears what clones and fetches are doing: called with the URL and git's latest progress line, and with "" when the
#: command is over; None (the default) when nobody listens. Set by the CLI for a terminal, see :func:`progress_to`.
ProgressListener = Callable[[str, str], None]
_listener: Optional[ProgressListener] = None


@contextlib.contextmanager
def progress_to(listener: Optional[ProgressListener]) -> Iterator[None]:
    """
    Report the progress of every clone and fetch in the block to listener.

    :param listener: called with (url, latest progress line), and (url, "") when a command is over; None for nobody
    """
    global _listener
    previous, _listener = _listener, listener
    try:
        yield
    finally:
        _listener = previous


def progress_listener() -> Optional[ProgressListener]:
    """:return: who hears the progress of clones and fetches now (None: nobody)"""
    return _listener
