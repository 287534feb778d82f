"""
Running git: every git process sispin starts goes through :class:`GitRunner` (GitPython's runner in the environment
:mod:`sispin.git.env` defines: no prompts, the transports pin.toml allows, none of a caller's repository variables),
and commands that talk to a remote through :func:`network`, which shows their progress and stops one that makes
none for :data:`INACTIVITY_TIMEOUT` seconds (with what it started).
"""

from __future__ import annotations

__all__ = [
    "INACTIVITY_TIMEOUT",
    "GitRunner",
    "Repository",
    "runner",
    "network",
    "message",
]

import contextlib
import os
import re
import select
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any, Dict, Iterator, List, Sequence

import git

from sispin.errors import GitError
from sispin.git.env import GIT_ENV, no_git_env, progress_listener


@contextlib.contextmanager
def _without_repository_env() -> Iterator[None]:
    # GitPython builds each process's environment from os.environ and can add variables but not remove them, so
    # the caller's repository variables are set aside while it starts the process; one thread at a time (fetches
    # run side by side), or one would put them back while another starts git
    with _ENVIRONMENT:
        removed = {key: os.environ[key] for key in os.environ.keys() - no_git_env(os.environ).keys()}
        for key in removed:
            del os.environ[key]
        try:
            yield
        finally:
            os.environ.update(removed)


#: held while os.environ is without the repository variables
_ENVIRONMENT = threading.RLock()


class GitRunner(git.Git):
    """GitPython's git runner with sispin's environment (see the module docstring); every git process starts here."""

    def __init__(self, working_dir: Any = None):
        super().__init__(working_dir)
        self.update_environment(**GIT_ENV)

    def execute(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        with _without_repository_env():
            return super().execute(*args, **kwargs)


class Repository(git.Repo):
    """A repository whose git commands (including GitPython's object reads) run through :class:`GitRunner`."""

    GitCommandWrapperType = GitRunner

    def __init__(self, path: Path):
        # GitPython reads GIT_DIR, GIT_WORK_TREE, GIT_OBJECT_DIRECTORY and GIT_COMMON_DIR while it opens a repository
        with _without_repository_env():
            super().__init__(path)


def message(exc: git.GitCommandError) -> str:
    """The most telling line of a failed git command's stderr, without git's 'fatal: ' prefix."""
    lines = [line.strip() for line in str(exc.stderr or "").splitlines() if line.strip()]
    lines = [line[len("stderr: ") :] if line.startswith("stderr: ") else line for line in lines]
    return _message_of([line.strip("'").strip() for line in lines], exc.command[1] if len(exc.command) > 1 else "")


def _message_of(lines: Sequence[str], command: str) -> str:
    """:return: the first fatal or error line of a git command's stderr lines (without the prefix), else the last"""
    for line in lines:
        if line.startswith(("fatal:", "error:")):
            return line.split(":", 1)[1].strip()
    return lines[-1] if lines else f"git {command} failed"


#: seconds a clone or fetch may go without any progress before the remote counts as hung and git is stopped. git
#: reports progress (``--progress``) at least once a second while data arrives or it works on what arrived, so a slow
#: but moving transfer of a large repository runs as long as it needs.
INACTIVITY_TIMEOUT = 300.0


def network(git_runner: git.Git, url: str, verb: str, command: str, *args: str) -> None:
    """
    Run a git command that talks to url's remote: its progress goes to the listener, and it is stopped when it shows
    none for :data:`INACTIVITY_TIMEOUT` seconds; failures become one-line GitErrors.
    """
    # GitPython stops the process when this handle goes away: it lives until the end of the function
    handle = getattr(git_runner, command)("--progress", *args, as_process=True, with_stdout=False)
    process = handle.proc
    output = _Progress()
    listener = progress_listener()
    try:
        silent_since = time.monotonic()
        while True:
            quiet_for = time.monotonic() - silent_since
            if quiet_for >= INACTIVITY_TIMEOUT:
                raise GitError(f"cannot {verb} {url}: no progress for {INACTIVITY_TIMEOUT:g} s (git was stopped)")
            ready, _, _ = select.select([process.stderr], [], [], INACTIVITY_TIMEOUT - quiet_for)
            if not ready:
                continue
            chunk = os.read(process.stderr.fileno(), 65536)
            if not chunk:
                break
            silent_since = time.monotonic()
            line = output.add(chunk)
            if listener is not None and line:
                listener(url, line)
        if process.wait() != 0:
            raise GitError(f"cannot {verb} {url}: {_message_of(output.lines(), command)}")
    finally:
        if process.poll() is None:
            _stop(process)
        process.stderr.close()
        if listener is not None:
            listener(url, "")


class _Progress:
    """What a git command wrote to stderr: progress updates end in CR, lines in LF; the last lines are kept."""

    _KEPT = 20

    def __init__(self) -> None:
        self._pending = ""
        self._lines: List[str] = []

    def add(self, chunk: bytes) -> str:
        """:return: the latest non-empty update or line in the output so far"""
        parts = re.split(r"[\r\n]", self._pending + chunk.decode("utf-8", "replace"))
        self._pending = parts.pop()
        self._lines = (self._lines + [part.strip() for part in parts if part.strip()])[-self._KEPT :]
        return self._pending.strip() or (self._lines[-1] if self._lines else "")

    def lines(self) -> List[str]:
        """:return: the last lines written, the unfinished one included"""
        return self._lines + ([self._pending.strip()] if self._pending.strip() else [])


def _stop(process: subprocess.Popen) -> None:
    """Kill a git process and what it started (index-pack, a remote helper holding the connection)."""
    try:
        children = subprocess.run(["ps", "-A", "-o", "pid=", "-o", "ppid="], capture_output=True, text=True).stdout
    except OSError:  # no ps: its children see their pipes close and end by themselves
        children = ""
    parents: Dict[int, List[int]] = {}
    for line in children.splitlines():
        fields = line.split()
        if len(fields) == 2 and all(field.isdigit() for field in fields):
            parents.setdefault(int(fields[1]), []).append(int(fields[0]))
    victims = [process.pid]
    for pid in victims:  # grows while it runs: children, then their children
        victims.extend(parents.get(pid, []))
    for pid in victims:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    process.wait()


def runner(path: Path) -> git.Git:
    """A git command runner in path with sispin's restricted environment."""
    return GitRunner(str(path))
