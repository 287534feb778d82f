"""
A mirror of the store follows its remote's branches, tags and default branch, and is fetched from only when the
remote has something it does not: the remote is asked once, and an ask that finds nothing new starts no fetch.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict

import pytest

from conftest import git, git_commit
from sispin.git.repo import update_mirror
from sispin.git.store import Store


@pytest.fixture
def mirrored(make_repo: Callable[..., Path], tmp_path: Path) -> Dict[str, Path]:
    """A remote with one commit on main, and the store's mirror of it."""
    remote = make_repo("rc")
    git_commit(remote, {"a.py": "a = 1\n"}, "first")
    mirror = Store(tmp_path / "store").fetch(f"file://{remote}")
    return {"remote": remote, "mirror": mirror}


def _refs(repository: Path) -> str:
    return git(repository, "for-each-ref", "--format=%(objectname) %(refname)", "refs/heads", "refs/tags")


def _updated(mirrored: Dict[str, Path]) -> bool:
    """Update the mirror; :return: whether that fetched (git writes FETCH_HEAD at every fetch)"""
    fetch_head = mirrored["mirror"] / "FETCH_HEAD"
    fetch_head.unlink(missing_ok=True)
    update_mirror(f"file://{mirrored['remote']}", mirrored["mirror"])
    assert _refs(mirrored["mirror"]) == _refs(mirrored["remote"]), "the mirror has the remote's branches and tags"
    return fetch_head.exists()


def test_a_remote_with_nothing_new_is_asked_and_not_fetched_from(mirrored):
    assert not _updated(mirrored)
    assert not _updated(mirrored)


@pytest.mark.parametrize(
    "change",
    ["a commit", "a new branch", "a deleted branch", "a force-push", "a new tag", "a tag moved", "an annotated tag"],
)
def test_whatever_the_remote_changed_of_its_branches_and_tags_is_fetched(mirrored, change):
    remote = mirrored["remote"]
    git(remote, "branch", "side")
    assert _updated(mirrored)
    if change == "a commit":
        git_commit(remote, {"a.py": "a = 2\n"}, "second")
    elif change == "a new branch":
        git(remote, "branch", "other")
    elif change == "a deleted branch":
        git(remote, "branch", "-D", "side")
    elif change == "a force-push":
        git_commit(remote, {"a.py": "a = 2\n"}, "second")
        git(remote, "reset", "-q", "--hard", "HEAD~1")
        git_commit(remote, {"a.py": "a = 3\n"}, "rewritten")
    elif change == "a new tag":
        git(remote, "tag", "v1")
    elif change == "a tag moved":
        git(remote, "tag", "v1", "side")
        assert _updated(mirrored)
        git_commit(remote, {"a.py": "a = 2\n"}, "second")
        git(remote, "tag", "-f", "v1")
    else:
        git(remote, "tag", "-a", "-m", "release", "v1")
    assert _updated(mirrored)
    assert not _updated(mirrored), "and then there is nothing new again"


def test_the_remotes_default_branch_is_followed_without_a_fetch(mirrored):
    remote, mirror = mirrored["remote"], mirrored["mirror"]
    git(remote, "branch", "stable")
    assert _updated(mirrored)
    git(remote, "symbolic-ref", "HEAD", "refs/heads/stable")  # its branches stay as they were
    assert not _updated(mirrored)
    assert git(mirror, "symbolic-ref", "HEAD") == "refs/heads/stable"
