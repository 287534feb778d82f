"""
Everything that talks to git, through GitPython, in the environment :mod:`sispin.gitenv` defines (no prompts, the
transports pin.toml allows, none of a caller's repository variables): every call here goes through :class:`_Git`.
"""

from __future__ import annotations

__all__ = [
    "INACTIVITY_TIMEOUT",
    "ProgressListener",
    "progress_to",
    "PinFacts",
    "clone_at_commit",
    "verify_checkout",
    "checkout_origin",
    "create_mirror",
    "update_mirror",
    "has_commit",
    "missing_commits",
    "on_a_ref",
    "resolve_revision",
    "branch_commit",
    "count_commits",
    "log_oneline",
    "pin_facts",
]

import contextlib
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import git

from sispin.errors import CheckoutStateError, GitError, RevisionError
from sispin.gitenv import GIT_ENV, missing_commits, no_git_env


@contextlib.contextmanager
def _without_repository_env() -> Iterator[None]:
    # GitPython builds each process's environment from os.environ and can add variables but not remove them, so
    # the caller's repository variables are set aside while it starts the process (sispin starts git from one
    # thread at a time)
    removed = {key: os.environ[key] for key in os.environ.keys() - no_git_env(os.environ).keys()}
    for key in removed:
        del os.environ[key]
    try:
        yield
    finally:
        os.environ.update(removed)


class _Git(git.Git):
    """GitPython's git runner with sispin's environment (see the module docstring); every git process starts here."""

    def __init__(self, working_dir: Any = None):
        super().__init__(working_dir)
        self.update_environment(**GIT_ENV)

    def execute(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        with _without_repository_env():
            return super().execute(*args, **kwargs)


class _Repo(git.Repo):
    """A repository whose git commands (including GitPython's object reads) run through :class:`_Git`."""

    GitCommandWrapperType = _Git

    def __init__(self, path: Path):
        # GitPython reads GIT_DIR, GIT_WORK_TREE, GIT_OBJECT_DIRECTORY and GIT_COMMON_DIR while it opens a repository
        with _without_repository_env():
            super().__init__(path)


def _message(exc: git.GitCommandError) -> str:
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


def _open(path: Path) -> git.Repo:
    try:
        return _Repo(path)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise CheckoutStateError(f"{path}: exists but is not a git checkout; move it away and rerun") from None


#: how many changed files a "local changes" error lists before it counts the rest
_LISTED_CHANGES = 10


def verify_checkout(path: Path, commit: str, where: str) -> None:
    """
    :param path: a checkout that must be exactly commit
    :param commit: full commit SHA
    :param where: how to name the checkout in messages
    :raises CheckoutStateError: when it is not a checkout, HEAD is another commit, or files are modified, added,
        deleted or untracked (listed)
    """
    repo = _open(path)
    try:
        head = repo.head.commit.hexsha
    except ValueError:
        raise CheckoutStateError(f"{where}: the checkout has no commit") from None
    if head != commit:
        raise CheckoutStateError(f"{where} is at {head[:12]}, pin.toml pins {commit[:12]}")
    try:
        status = repo.git.status("--porcelain", "--untracked-files=all")
    except git.GitCommandError as exc:
        raise GitError(f"{where}: git status failed: {_message(exc)}") from None
    changes = [line for line in status.splitlines() if line.strip()]
    if changes:
        listed = ", ".join(
            f"{line[3:]} ({_CHANGE_NAMES.get(line[:2].strip()[:1], 'changed')})" for line in changes[:_LISTED_CHANGES]
        )
        more = f" and {len(changes) - _LISTED_CHANGES} more" if len(changes) > _LISTED_CHANGES else ""
        raise CheckoutStateError(f"{where} has local changes: {listed}{more}")


_CHANGE_NAMES = {"M": "modified", "A": "added", "D": "deleted", "R": "renamed", "?": "untracked", "U": "conflict"}


def checkout_origin(path: Path) -> Tuple[Optional[str], Optional[str]]:
    """
    :param path: a checkout, e.g. the output of a finished CloneGitRepositoryJob
    :return: its HEAD commit and the URL of its ``origin`` remote, each None when it has none
    :raises CheckoutStateError: when path is not a git checkout
    """
    repo = _open(path)
    try:
        head: Optional[str] = repo.head.commit.hexsha
    except ValueError:
        head = None
    try:
        url: Optional[str] = repo.remotes.origin.url
    except (AttributeError, ValueError):
        url = None
    return head, url


def clone_at_commit(url: str, commit: str, dest: Path) -> None:
    """
    Clone url and check out commit (detached) at dest, atomically: the clone is made in a temporary sibling and
    renamed into place only when complete, so an interrupted run never leaves a half-made checkout at dest.

    :param url: repository URL (validated by the lockfile)
    :param commit: full commit SHA
    :param dest: target directory; must not exist
    :raises GitError: when the remote cannot be cloned or does not have the commit
    """
    with _clone_beside(url, dest, "clone", "--no-checkout") as repo:
        if not has_commit(Path(repo.working_tree_dir), commit):
            # not reachable from any branch or tag (e.g. only under a pull-request ref): ask for it directly
            try:
                _network(repo.git, url, "fetch", "fetch", "origin", commit)
            except GitError:
                pass
            if not has_commit(Path(repo.working_tree_dir), commit):
                raise GitError(f"commit {commit} does not exist in {url}")
        try:
            repo.git.checkout("--detach", commit)
        except git.GitCommandError as exc:
            raise GitError(f"cannot check out {commit} from {url}: {_message(exc)}") from None


@contextlib.contextmanager
def _clone_beside(url: str, dest: Path, verb: str, *clone_options: str) -> Iterator[git.Repo]:
    """
    Clone url into a temporary sibling of dest, let the caller finish it, then rename it to dest; on any error
    (or a kill) dest stays absent and the sibling is removed (now, or by the next run). Callers hold the lock
    that serialises work on dest, so leftovers found beside it are never another process's work in progress.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(dest)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=_tmp_prefix(dest)))
    try:
        _network(_git(dest.parent), url, verb, "clone", *clone_options, "--", url, str(tmp))
        repo = _Repo(tmp)
        yield repo
        repo.close()
        os.rename(tmp, dest)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


#: seconds a clone or fetch may go without any progress before the remote counts as hung and git is stopped. git
#: reports progress (``--progress``) at least once a second while data arrives or it works on what arrived, so a slow
#: but moving transfer of a large repository runs as long as it needs.
INACTIVITY_TIMEOUT = 300.0

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


def _network(runner: git.Git, url: str, verb: str, command: str, *args: str) -> None:
    """
    Run a git command that talks to url's remote: its progress goes to the listener, and it is stopped when it shows
    none for :data:`INACTIVITY_TIMEOUT` seconds; failures become one-line GitErrors.
    """
    # GitPython stops the process when this handle goes away: it lives until the end of the function
    handle = getattr(runner, command)("--progress", *args, as_process=True, with_stdout=False)
    process = handle.proc
    output = _Progress()
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
            if _listener is not None and line:
                _listener(url, line)
        if process.wait() != 0:
            raise GitError(f"cannot {verb} {url}: {_message_of(output.lines(), command)}")
    finally:
        if process.poll() is None:
            _stop(process)
        process.stderr.close()
        if _listener is not None:
            _listener(url, "")


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


def _git(path: Path) -> git.Git:
    """A git command runner in path with sispin's restricted environment."""
    return _Git(str(path))


def has_commit(path: Path, commit: str) -> bool:
    """
    :param path: a repository (bare or not)
    :param commit: full commit SHA
    :return: whether the repository holds that commit
    """
    try:
        _git(path).cat_file("-e", f"{commit}^{{commit}}")
    except git.GitCommandError:
        return False
    return True


def _tmp_prefix(dest: Path) -> str:
    return f".{dest.name}.pin-partial-"


def _remove_leftovers(dest: Path) -> None:
    """Delete temporary clones a killed earlier run left beside dest (they are never used)."""
    for leftover in dest.parent.glob(_tmp_prefix(dest) + "*"):
        shutil.rmtree(leftover, ignore_errors=True)


#: branch heads and tags are mirrored; pull-request and other refs are not
_MIRROR_REFSPECS = ("+refs/heads/*:refs/heads/*", "+refs/tags/*:refs/tags/*")
# what `pin upgrade --to` accepts: ref-name characters only, so that no revision syntax (a..b, @{...}, :path)
# and no option can get through (matched with fullmatch: "$" would also match before a trailing newline)
_REVISION_RE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9._/-]*")
_HEX_PREFIX_RE = re.compile(r"[0-9a-f]{4,40}")


@dataclass(frozen=True)
class PinFacts:
    """
    :param date: committer date of the pinned commit, ISO 8601
    :param behind: commits on the branch head that the pin lacks (None: unknown)
    :param off_branch: commits of the pin that are not on the branch head (None: unknown)
    """

    date: str
    behind: Optional[int]
    off_branch: Optional[int]


def create_mirror(url: str, dest: Path) -> None:
    """
    Make a bare mirror of url's branches and tags at dest, atomically (built beside dest, then renamed).

    :param url: repository URL (validated by the lockfile)
    :param dest: mirror directory; must not exist
    :raises GitError: when the remote cannot be reached
    """
    with _clone_beside(url, dest, "fetch", "--bare") as repo:
        repo.git.config("--replace-all", "remote.origin.fetch", _MIRROR_REFSPECS[0])
        repo.git.config("--add", "remote.origin.fetch", _MIRROR_REFSPECS[1])


def update_mirror(url: str, path: Path) -> None:
    """
    Fetch url's branches and tags into the mirror at path; force-pushed branches follow the remote, deleted ones
    are pruned (their commits stay in the object store until git collects garbage).

    :param url: repository URL, for messages
    :param path: mirror made by :func:`create_mirror`
    :raises GitError: when the remote cannot be reached
    """
    _network(_git(path), url, "fetch", "fetch", "--prune", "origin")
    _follow_remote_head(url, path)


def _follow_remote_head(url: str, path: Path) -> None:
    """
    Point the mirror's HEAD where the remote's HEAD points now: a fetch leaves it alone, and it names the default
    branch that `pin upgrade` and `pin new` follow (a renamed default branch must not leave them on the old one, nor
    fail for good once the old one is deleted). A remote whose HEAD is no branch leaves it as it is.
    """
    try:
        # a short answer, without progress: the time-out is the inactivity one, for the whole command
        answer = _git(path).ls_remote("--symref", "origin", "HEAD", kill_after_timeout=INACTIVITY_TIMEOUT)
    except git.GitCommandError as exc:
        raise GitError(f"cannot fetch {url}: {_message(exc)}") from None
    for line in answer.splitlines():
        target, _, name = line.partition("\t")
        if name == "HEAD" and target.startswith("ref: refs/heads/"):
            _git(path).symbolic_ref("HEAD", target[len("ref: ") :])
            return


def _rev_parse(path: Path, ref: str) -> Optional[str]:
    try:
        return _git(path).rev_parse("--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}")
    except git.GitCommandError:
        return None


def branch_commit(path: Path, branch: Optional[str]) -> str:
    """
    :param path: a mirror
    :param branch: branch name; None for the remote's default branch
    :return: the commit the branch points to
    :raises RevisionError: when the branch does not exist
    """
    ref = f"refs/heads/{branch}" if branch else "HEAD"
    sha = _rev_parse(path, ref)
    if sha is None:
        raise RevisionError(f"branch {branch!r} does not exist" if branch else "the remote has no default branch")
    return sha


def resolve_revision(path: Path, revision: str) -> str:
    """
    Resolve a tag, branch or (possibly short) commit SHA to a full SHA, refusing ambiguity.

    :param path: a mirror
    :param revision: tag, branch or hex SHA prefix (at least 4 digits)
    :raises RevisionError: when the revision is malformed, unknown, or names different commits
    """
    if not _REVISION_RE.fullmatch(revision) or ".." in revision:
        raise RevisionError(f"{revision!r} is not a tag, branch or commit SHA")
    found: List[Tuple[str, str]] = []
    for kind, ref in (("tag", f"refs/tags/{revision}"), ("branch", f"refs/heads/{revision}")):
        sha = _rev_parse(path, ref)
        if sha:
            found.append((kind, sha))
    if _HEX_PREFIX_RE.fullmatch(revision):
        found.extend(("commit", sha) for sha in _commits_with_prefix(path, revision))
    commits = sorted({sha for _, sha in found})
    if not commits:
        raise RevisionError(f"no tag, branch or commit {revision!r}")
    if len(commits) > 1:
        named = ", ".join(f"{kind} {sha[:12]}" for kind, sha in found)
        raise RevisionError(f"{revision!r} is ambiguous: {named}; give more of the SHA")
    return commits[0]


def on_a_ref(path: Path, commit: str) -> bool:
    """:return: whether some branch or tag of the repository contains commit (it may hold unreachable ones too)"""
    try:
        return bool(_git(path).for_each_ref("--count=1", f"--contains={commit}", "refs/heads", "refs/tags"))
    except git.GitCommandError:
        return False


def _commits_with_prefix(path: Path, prefix: str) -> List[str]:
    if len(prefix) == 40:
        candidates = [prefix]
    else:
        try:
            candidates = _git(path).rev_parse(f"--disambiguate={prefix}").split()
        except git.GitCommandError:
            return []
    missing = set(missing_commits(path, candidates))  # blobs and trees share the prefix space
    return [sha for sha in candidates if sha not in missing]


def count_commits(path: Path, exclude: str, include: str) -> int:
    """:return: how many commits are reachable from include but not from exclude"""
    return int(_git(path).rev_list("--count", f"{exclude}..{include}"))


def log_oneline(path: Path, exclude: str, include: str, limit: int) -> List[str]:
    """:return: up to limit lines "<short sha> <subject>" of exclude..include, newest first"""
    out = _git(path).log(f"--max-count={limit}", "--format=%h %s", f"{exclude}..{include}")
    return out.splitlines()


def pin_facts(path: Path, head: Optional[str], commits: Sequence[str]) -> Dict[str, PinFacts]:
    """
    Date and distance to the branch head of many commits at once: a few git processes per repository, however
    many sets pin it (``pin status`` over many sets stays fast).

    :param path: a mirror
    :param head: the branch head to measure against (None: distances unknown)
    :param commits: pinned commits
    :return: facts for each commit the repository holds (missing ones are left out)
    """
    missing = set(missing_commits(path, commits))
    present = [commit for commit in dict.fromkeys(commits) if commit not in missing]
    if not present:
        return {}
    lines = _git(path).show("-s", "--format=%H %cI", *present).splitlines()
    dates = dict(line.split(" ", 1) for line in lines if line)
    if head is None:
        return {commit: PinFacts(dates[commit], None, None) for commit in present}
    history = _git(path).rev_list("--topo-order", "--reverse", "--parents", head, *present).splitlines()
    if len(history) > _MAX_BITSET_HISTORY:
        return {c: PinFacts(dates[c], count_commits(path, c, head), count_commits(path, head, c)) for c in present}
    reachable = _ancestor_sets(history)
    return {
        commit: PinFacts(
            dates[commit],
            _bit_count(reachable[head] & ~reachable[commit]),
            _bit_count(reachable[commit] & ~reachable[head]),
        )
        for commit in present
    }


#: above this many commits, per-commit ``rev-list --count`` replaces the in-memory ancestor sets (N^2/16 bytes)
_MAX_BITSET_HISTORY = 50_000


def _ancestor_sets(history: List[str]) -> Dict[str, int]:
    """
    :param history: ``rev-list --reverse --topo-order --parents`` lines: every commit after its parents
    :return: commit -> its ancestors (itself included) as a bit set over the listed commits
    """
    reachable: Dict[str, int] = {}
    for position, line in enumerate(history):
        commit, *parents = line.split()
        mask = 1 << position
        for parent in parents:
            mask |= reachable[parent]
        reachable[commit] = mask
    return reachable


def _bit_count(value: int) -> int:
    return bin(value).count("1")
