"""
Repositories on disk: clones at a commit (made beside and renamed in), the store's bare mirrors (created and
fetched), and what a directory is (a checkout of its own; its HEAD and origin). Its git commands run through
:mod:`sispin.git.process`.
"""

from __future__ import annotations

__all__ = [
    "is_checkout",
    "clone_at_commit",
    "checkout_origin",
    "create_mirror",
    "update_mirror",
    "FETCHED_STAMP",
    "has_commit",
]

import contextlib
import os
import shutil
import tempfile
from pathlib import Path
from typing import FrozenSet, Iterator, Optional, Set, Tuple

from sispin.errors import CheckoutStateError, GitCommandError, GitError
from sispin.git.process import network, read_git, remote_query, write_git


def is_checkout(path: Path) -> bool:
    """
    :param path: a directory
    :return: whether it is the top of a git checkout (or a bare repository) of its own; a directory inside another
        checkout is not one (git looks for no repository above it)
    """
    own = {"GIT_CEILING_DIRECTORIES": os.path.dirname(os.path.realpath(path))}
    try:
        read_git(path, "rev-parse", "--git-dir", env=own)
    except GitCommandError:
        return False
    return True


def checkout_origin(path: Path) -> Tuple[Optional[str], Optional[str]]:
    """
    :param path: a checkout, e.g. the output of a finished CloneGitRepositoryJob
    :return: its HEAD commit and the URL of its ``origin`` remote (as configured: no ``insteadOf`` applied), each
        None when it has none
    :raises CheckoutStateError: when path is not a git checkout
    """
    if not is_checkout(path):
        raise CheckoutStateError(f"{path}: exists but is not a git checkout; move it away and rerun")
    try:
        head: Optional[str] = read_git(path, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
    except GitCommandError:
        head = None
    try:
        url: Optional[str] = read_git(path, "config", "--get", "remote.origin.url") or None
    except GitCommandError:
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
    with _clone_beside(url, dest, "clone", "--no-checkout") as clone:
        if not has_commit(clone, commit):
            # not reachable from any branch or tag (e.g. only under a pull-request ref): ask for it directly
            try:
                network(clone, url, "fetch", "fetch", "origin", commit)
            except GitError:
                pass
            if not has_commit(clone, commit):
                raise GitError(f"commit {commit} does not exist in {url}")
        try:
            write_git(clone, "checkout", "--detach", commit)
        except GitCommandError as exc:
            raise GitError(f"cannot check out {commit} from {url}: {exc.reason}") from None


@contextlib.contextmanager
def _clone_beside(url: str, dest: Path, verb: str, *clone_options: str) -> Iterator[Path]:
    """
    Clone url into a temporary sibling of dest, let the caller finish it, then rename it to dest; on any error
    (or a kill) dest stays absent and the sibling is removed (now, or by the next run). Callers hold the lock
    that serialises work on dest, so leftovers found beside it are never another process's work in progress.
    """
    dest.parent.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(dest)
    tmp = Path(tempfile.mkdtemp(dir=dest.parent, prefix=_tmp_prefix(dest)))
    try:
        network(dest.parent, url, verb, "clone", *clone_options, "--", url, str(tmp))
        yield tmp
        os.rename(tmp, dest)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def has_commit(path: Path, commit: str) -> bool:
    """
    :param path: a repository (bare or not)
    :param commit: full commit SHA
    :return: whether the repository holds that commit
    """
    try:
        read_git(path, "cat-file", "-e", f"{commit}^{{commit}}")
    except GitCommandError:
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


def create_mirror(url: str, dest: Path) -> None:
    """
    Make a bare mirror of url's branches and tags at dest, atomically (built beside dest, then renamed).

    :param url: repository URL (validated by the lockfile)
    :param dest: mirror directory; must not exist
    :raises GitError: when the remote cannot be reached
    """
    with _clone_beside(url, dest, "fetch", "--bare") as mirror:
        write_git(mirror, "config", "--replace-all", "remote.origin.fetch", _MIRROR_REFSPECS[0])
        write_git(mirror, "config", "--add", "remote.origin.fetch", _MIRROR_REFSPECS[1])
        _keep_commit_graph(mirror)


def _keep_commit_graph(mirror: Path) -> None:
    """
    Keep a commit-graph file in the mirror, written now and by every later fetch: ``pin status`` walks the whole
    history of each pinned branch (13,000 RETURNN commits: 55 ms without one, 11 ms with). A git too old for
    commit-graphs (before 2.24) ignores the setting and refuses the command, and does without.
    """
    write_git(mirror, "config", "fetch.writeCommitGraph", "true")
    try:
        write_git(mirror, "commit-graph", "write", "--reachable")
    except GitCommandError:
        pass


#: the file whose time says when a mirror was last fetched: git rewrites it at every fetch, and an update that finds
#: nothing new to fetch touches it
FETCHED_STAMP = "FETCH_HEAD"


def update_mirror(url: str, path: Path) -> None:
    """
    Bring the mirror at path to url's branches and tags; force-pushed branches follow the remote, deleted ones
    are pruned (their commits stay in the object store until git collects garbage). The remote is asked first what
    it has, and fetched from only when that differs from the mirror (or the mirror lacks an object its refs name):
    most asks find nothing new, and a fetch would ask the remote a second time (a network round trip) and start five
    processes for nothing. Either way the mirror counts as fetched now (:data:`FETCHED_STAMP`).

    :param url: repository URL, for messages
    :param path: mirror made by :func:`create_mirror`
    :raises GitError: when the remote cannot be reached
    """
    answer = remote_query(path, url, "fetch", "ls-remote", "--symref", "origin", "HEAD", "refs/heads/*", "refs/tags/*")
    advertised, head = _advertised(answer)
    if advertised != _mirrored(path):
        write_git(path, "config", "fetch.writeCommitGraph", "true")  # also in mirrors made before sispin kept one
        network(path, url, "fetch", "fetch", "--prune", "origin")
    else:
        (path / FETCHED_STAMP).touch()
        if not any((path / "objects" / "info" / name).exists() for name in ("commit-graph", "commit-graphs")):
            _keep_commit_graph(path)  # a mirror made before sispin kept one, whose remote has had nothing new since
    if head is not None:
        _follow_remote_head(path, head)


def _mirrored(path: Path) -> Optional[FrozenSet[str]]:
    """
    :return: the mirror's branches and tags as :func:`_advertised` lists them; None when an object one of them names
        is missing (git fails to tell its type), which a fetch brings back
    """
    try:
        # names below refs/heads/ and refs/tags/ at any depth (a pattern with * would leave out feature/x)
        refs = read_git(
            path, "for-each-ref", "--format=%(objecttype) %(objectname) %(refname)", "refs/heads/", "refs/tags/"
        )
    except GitCommandError:
        return None
    return frozenset(line.split(" ", 1)[1] for line in refs.splitlines())


def _advertised(answer: str) -> Tuple[FrozenSet[str], Optional[str]]:
    """
    :param answer: what ``ls-remote --symref`` printed
    :return: the branches and tags it names, each as for-each-ref writes it (``<object> <name>``), and the branch the
        remote's HEAD names (None: HEAD is no branch)
    """
    refs: Set[str] = set()
    head: Optional[str] = None
    for line in answer.splitlines():
        target, _, name = line.partition("\t")
        if target.startswith("ref: "):  # a symbolic ref: what it names is listed by its own line
            if name == "HEAD" and target.startswith("ref: refs/heads/"):
                head = target[len("ref: ") :]
        # a pattern matches a name's tail, so refs/x/refs/heads/y would match too; a peeled tag (^{}) is no ref
        elif name.startswith(("refs/heads/", "refs/tags/")) and not name.endswith("^{}"):
            refs.add(f"{target} {name}")
    return frozenset(refs), head


def _follow_remote_head(path: Path, branch: str) -> None:
    """
    Point the mirror's HEAD at the branch the remote's HEAD names now: a fetch leaves it alone, and it names the
    default branch that `pin upgrade` and `pin new` follow (a renamed default branch must not leave them on the old
    one, nor fail for good once the old one is deleted).
    """
    try:
        current: Optional[str] = read_git(path, "symbolic-ref", "--quiet", "HEAD")
    except GitCommandError:  # a detached HEAD
        current = None
    # written only when it moved: a build that read HEAD (settings.py's redirect to the store) keeps its pass
    if current != branch:
        write_git(path, "symbolic-ref", "HEAD", branch)
