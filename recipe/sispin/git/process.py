"""
Every git process sispin starts, and the environment it runs in. This is the one module that starts git
(tests/git/test_git_runner.py scans the package to hold it so), and it never writes ``os.environ``: each process gets an
environment of its own, built from a copy.

That environment (:func:`environment`) has no terminal prompts (a missing credential fails instead of hanging), git's
own protocol allow-list limited to the transports pin.toml accepts (which also covers redirections made by
``url.<base>.insteadOf``), and none of the repository-local ``GIT_*`` variables a caller may have set (a git hook
exports ``GIT_DIR`` and ``GIT_INDEX_FILE``; they would point every command at the caller's repository), as
pre-commit's ``no_git_env`` does.

Commands are named by what they do: :func:`read_git` only reads (git takes no optional locks then, so a
``git status`` leaves the index it reads as it is), :func:`read_git_raw` reads and hands back git's exit code and
bytes as they are (for commands whose exit code is an answer), :func:`write_git` changes a repository,
:func:`network` clones or fetches (its progress goes to the listener set by :func:`progress_to`, and it is stopped,
with what it started, when it shows none for :data:`INACTIVITY_TIMEOUT` seconds), and :func:`remote_query` asks a
remote a short question within that time. A failed command is one line: a
:class:`~sispin.errors.GitCommandError` with git's own reason.

It imports nothing beyond the standard library: the settings hook asks git which pinned commits a mirror holds in
every Sisyphus process.
"""

from __future__ import annotations

__all__ = [
    "no_git_env",
    "environment",
    "read_git",
    "read_git_raw",
    "RawAnswer",
    "write_git",
    "INACTIVITY_TIMEOUT",
    "network",
    "remote_query",
    "ProgressListener",
    "progress_to",
    "progress_listener",
    "stop_process_tree",
]

import contextlib
import os
import re
import select
import signal
import subprocess
import time
from pathlib import Path
from typing import IO, Any, Callable, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Union

from sispin.errors import GitCommandError, GitError
from sispin.lock.urls import ALLOWED_SCHEMES, name_from_url

#: what sispin sets for every git process it starts
_SISPIN_GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ALLOW_PROTOCOL": ":".join(ALLOWED_SCHEMES),
}
#: and for the commands that only read: no refreshed index written back, no lock taken that a user's git could meet
_READING_ENV = {"GIT_OPTIONAL_LOCKS": "0"}

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
    :return: a copy without the repository-local GIT_* variables; ``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n`` (the
        store and offline-mirror redirects travel in them) and the user's connection settings stay
    """
    return {
        key: value
        for key, value in environ.items()
        if not key.startswith("GIT_")
        or key.startswith(("GIT_CONFIG_KEY_", "GIT_CONFIG_VALUE_"))
        or key in _USER_GIT_VARIABLES
    }


def environment(extra: Optional[Mapping[str, str]] = None) -> Dict[str, str]:
    """
    :param extra: variables of sispin's own for this command (a scratch ``GIT_INDEX_FILE``, say)
    :return: the environment of a git process: this process's (read, never written) without the caller's
        repository variables, with sispin's settings and extra
    """
    return {**no_git_env(os.environ), **_SISPIN_GIT_ENV, **(extra or {})}


def _verb(args: Sequence[str]) -> str:
    """:return: the git command among its arguments (after options such as ``-c name=value``), for messages"""
    options = iter(args)
    for arg in options:
        if arg == "-c":
            next(options, None)
        elif not arg.startswith("-"):
            return arg
    return args[0] if args else ""


def _reason(stderr: str, fallback: str) -> str:
    """:return: the first fatal or error line of git's stderr (without the prefix), else its last line, else fallback"""
    lines = [line.strip() for line in stderr.splitlines() if line.strip() and not line.startswith("hint:")]
    for line in lines:
        if line.startswith(("fatal:", "error:")):
            return line.split(":", 1)[1].strip()
    return lines[-1] if lines else fallback


def _run(
    repository: Optional[Path],
    args: Sequence[str],
    stdin: Union[str, bytes, None],
    env: Mapping[str, str],
    raw: bool = False,
) -> subprocess.CompletedProcess[Any]:
    """
    Run git to its end; its input and output are text (UTF-8, undecodable bytes replaced; line endings as git wrote
    them: universal newlines would turn a carriage return in a commit subject or a file name into a line break), or
    bytes when raw.
    """
    data = stdin.encode("utf-8") if isinstance(stdin, str) else stdin
    try:
        answer = subprocess.run(
            ["git", *args],
            cwd=repository,
            env=environment(env),
            input=data,
            stdin=None if data is not None else subprocess.DEVNULL,
            capture_output=True,
            check=False,
        )
    except OSError as exc:
        where = f" in {repository}" if repository is not None else ""
        raise GitError(f"cannot run git {_verb(args)}{where}: {exc}") from None
    if not raw:
        answer.stdout = answer.stdout.decode("utf-8", "replace")
        answer.stderr = answer.stderr.decode("utf-8", "replace")
    return answer


def _output(answer: subprocess.CompletedProcess[str], repository: Path, args: Sequence[str]) -> str:
    if answer.returncode != 0:
        reason = _reason(answer.stderr, f"exit code {answer.returncode}")
        raise GitCommandError(f"git {_verb(args)} in {repository} failed: {reason}", reason)
    return answer.stdout[:-1] if answer.stdout.endswith("\n") else answer.stdout


def read_git(repository: Path, *args: str, stdin: Optional[str] = None, env: Optional[Mapping[str, str]] = None) -> str:
    """
    Run a git command that only reads the repository.

    :param repository: a repository (bare or not), where git runs
    :param args: the git command's arguments
    :param stdin: what git reads on its standard input (none: it reads nothing)
    :param env: variables of sispin's own for this command (see :func:`environment`)
    :return: its standard output, without the last newline
    :raises GitCommandError: when git fails (with its reason)
    :raises GitError: when git cannot be run
    """
    return _output(_run(repository, args, stdin, {**_READING_ENV, **(env or {})}), repository, args)


def write_git(
    repository: Path, *args: str, stdin: Optional[str] = None, env: Optional[Mapping[str, str]] = None
) -> str:
    """
    Run a git command that changes the repository (its configuration, refs, index or working tree); parameters,
    result and errors as :func:`read_git`.
    """
    return _output(_run(repository, args, stdin, env or {}), repository, args)


class RawAnswer(NamedTuple):
    """
    :param code: git's exit code
    :param stdout: its standard output, as it wrote it
    :param reason: its error output in one line (empty when it wrote none)
    """

    code: int
    stdout: bytes
    reason: str


def read_git_raw(repository: Optional[Path], *args: str, stdin: Optional[bytes] = None) -> RawAnswer:
    """
    Run a git command that only reads, whose exit code is part of the answer (``merge-file``'s number of conflicts,
    ``check-ignore``'s "none is ignored") and whose output is bytes (NUL-separated names, a file's text).

    :param repository: where git runs (None: the current directory, for a command that reads only files it is given)
    :param args: the git command's arguments
    :param stdin: what git reads on its standard input (none: it reads nothing)
    :return: exit code, output and reason, whatever the exit code
    :raises GitError: when git cannot be run
    """
    answer = _run(repository, args, stdin, _READING_ENV, raw=True)
    return RawAnswer(answer.returncode, answer.stdout, _reason(answer.stderr.decode("utf-8", "replace"), ""))


#: seconds a clone or fetch may go without any progress before the remote counts as hung and git is stopped. git
#: reports progress (``--progress``) at least once a second while data arrives or it works on what arrived, so a slow
#: but moving transfer of a large repository runs as long as it needs.
INACTIVITY_TIMEOUT = 300.0


def _start(repository: Path, args: Sequence[str], stdout: int) -> subprocess.Popen[bytes]:
    try:
        return subprocess.Popen(
            ["git", *args],
            cwd=repository,
            env=environment(),
            stdin=subprocess.DEVNULL,
            stdout=stdout,
            stderr=subprocess.PIPE,
        )
    except OSError as exc:
        raise GitError(f"cannot run git in {repository}: {exc}") from None


def network(repository: Path, url: str, verb: str, command: str, *args: str) -> None:
    """
    Run a git command that talks to url's remote (a clone, a fetch): its progress goes to the listener, and it is
    stopped when it shows none for :data:`INACTIVITY_TIMEOUT` seconds.

    :param repository: where git runs
    :param url: the remote's URL, for the listener and messages
    :param verb: what the command does, for messages ("cannot fetch URL: ...")
    :param command: the git command (``--progress`` is added after it)
    :param args: its arguments
    :raises GitError: when it fails or hangs (one line, git's reason)
    """
    process = _start(repository, [command, "--progress", *args], subprocess.DEVNULL)
    stderr: IO[bytes] = process.stderr  # type: ignore[assignment]
    output = _Progress()
    listener = progress_listener()
    try:
        if listener is not None:  # git says nothing until the remote answers, which can take seconds
            listener(name_from_url(url), f"git {command}: waiting for the remote")
        silent_since = time.monotonic()
        while True:
            quiet_for = time.monotonic() - silent_since
            if quiet_for >= INACTIVITY_TIMEOUT:
                raise GitError(f"cannot {verb} {url}: no progress for {INACTIVITY_TIMEOUT:g} s (git was stopped)")
            ready, _, _ = select.select([stderr], [], [], INACTIVITY_TIMEOUT - quiet_for)
            if not ready:
                continue
            chunk = os.read(stderr.fileno(), 65536)
            if not chunk:
                break
            silent_since = time.monotonic()
            line = output.add(chunk)
            if listener is not None and line:
                listener(name_from_url(url), line)
        if process.wait() != 0:
            raise GitError(f"cannot {verb} {url}: {_reason(output.text(), f'git {command} failed')}")
    finally:
        if process.poll() is None:
            stop_process_tree(process)
        stderr.close()
        if listener is not None:
            listener(name_from_url(url), "")


def remote_query(repository: Path, url: str, verb: str, *args: str) -> str:
    """
    Run a git command that asks url's remote a short question (``ls-remote``): the progress line says it waits for
    the remote (git shows no progress of it), and it is stopped when it has not answered within
    :data:`INACTIVITY_TIMEOUT` seconds.

    :param repository: where git runs
    :param url: the remote's URL, for messages
    :param verb: what the question is part of, for messages ("cannot fetch URL: ...")
    :param args: the git command's arguments
    :return: its standard output
    :raises GitError: when it fails or does not answer (one line, git's reason)
    """
    listener = progress_listener()
    with _start(repository, args, subprocess.PIPE) as process:
        try:
            if listener is not None:  # once git runs: a git that cannot start leaves no line behind
                listener(name_from_url(url), f"git {_verb(args)}: waiting for the remote")
            stdout, stderr = process.communicate(timeout=INACTIVITY_TIMEOUT)
        except subprocess.TimeoutExpired:
            raise GitError(f"cannot {verb} {url}: no answer for {INACTIVITY_TIMEOUT:g} s (git was stopped)") from None
        finally:
            if process.poll() is None:
                stop_process_tree(process)
            if listener is not None:
                listener(name_from_url(url), "")
    if process.returncode != 0:
        reason = _reason(stderr.decode("utf-8", "replace"), f"git {_verb(args)} failed")
        raise GitError(f"cannot {verb} {url}: {reason}")
    return stdout.decode("utf-8", "replace")


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

    def text(self) -> str:
        """:return: the last lines written, the unfinished one included"""
        return "\n".join(self._lines + [self._pending])


def stop_process_tree(process: subprocess.Popen) -> None:
    """
    Kill a process and what it started (git's index-pack or a remote helper holding the connection; the builds a
    probe forked), then reap it.
    """
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


#: hears what the command waits for (clones and fetches, graph builds): called with who is at work (a repository's
#: name, ``pin``) and its latest progress line, and with "" when it is done; None (the default) when nobody listens.
#: Set by the CLI for a terminal, see :func:`progress_to`.
ProgressListener = Callable[[str, str], None]
_listener: Optional[ProgressListener] = None


@contextlib.contextmanager
def progress_to(listener: Optional[ProgressListener]) -> Iterator[None]:
    """
    Report the progress of every clone, fetch and graph build in the block to listener.

    :param listener: called with (who, latest progress line), and (who, "") when it is done; None for nobody
    """
    global _listener
    previous, _listener = _listener, listener
    try:
        yield
    finally:
        _listener = previous


def progress_listener() -> Optional[ProgressListener]:
    """:return: who hears the progress of clones, fetches and graph builds now (None: nobody)"""
    return _listener
