"""
A mirror of the store follows its remote's branches, tags and default branch, and is fetched from only when the
remote has something it does not: the remote is asked once, and an ask that finds nothing new starts no fetch.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Callable, Dict, List

import pytest

from conftest import git, git_commit
from sispin.git.process import progress_to
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
    """Update the mirror; :return: whether that fetched (as the progress line tells)"""
    heard: List[str] = []
    with progress_to(lambda who, line: heard.append(line)):
        update_mirror(f"file://{mirrored['remote']}", mirrored["mirror"])
    assert _refs(mirrored["mirror"]) == _refs(mirrored["remote"]), "the mirror has the remote's branches and tags"
    assert git(mirrored["mirror"], "fsck", "--no-dangling") == "", "and every object they name"
    return "git fetch: waiting for the remote" in heard


def test_a_remote_with_nothing_new_is_asked_and_not_fetched_from(mirrored):
    assert not _updated(mirrored)
    assert not _updated(mirrored)
    # refs a mirror does not keep, whose names end as the asked patterns do (ls-remote matches a name's tail)
    git(mirrored["remote"], "update-ref", "refs/remotes/origin/HEAD", "HEAD")
    git(mirrored["remote"], "update-ref", "refs/x/refs/heads/y", "HEAD")
    assert not _updated(mirrored)


@pytest.mark.parametrize(
    "change",
    [
        "a commit",
        "a new branch",
        "a deleted branch",
        "a deleted branch of a folder",
        "a deleted tag",
        "a force-push",
        "a new tag",
        "a tag moved",
        "an annotated tag",
    ],
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
    elif change == "a deleted branch of a folder":
        git(remote, "branch", "feature/x")
        git(remote, "tag", "release/1")
        assert _updated(mirrored)
        git(remote, "branch", "-D", "feature/x")
    elif change == "a deleted tag":
        git(remote, "tag", "v1")
        assert _updated(mirrored)
        git(remote, "tag", "-d", "v1")
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


def test_the_mirror_counts_as_fetched_when_its_remote_had_nothing_new(mirrored, tmp_path):
    store, url = Store(tmp_path / "store"), f"file://{mirrored['remote']}"
    before = store.last_fetched(url)
    time.sleep(0.05)
    assert not _updated(mirrored)
    assert store.last_fetched(url) > before


def test_a_mirror_that_lost_an_object_its_refs_name_fetches_it_again(mirrored):
    mirror = mirrored["mirror"]
    git(mirror, "repack", "-q", "-a", "-d")
    for pack in (mirror / "objects" / "pack").iterdir():
        pack.unlink()
    assert _updated(mirrored)


def test_a_mirror_made_before_sispin_kept_a_commit_graph_gets_one_while_its_remote_stays(make_repo, tmp_path):
    remote = make_repo("old")
    git_commit(remote, {"a.py": "a = 1\n"}, "first")
    mirror = tmp_path / "old.git"
    git(tmp_path, "clone", "-q", "--bare", str(remote), str(mirror))
    git(mirror, "config", "--replace-all", "remote.origin.fetch", "+refs/heads/*:refs/heads/*")
    git(mirror, "config", "--add", "remote.origin.fetch", "+refs/tags/*:refs/tags/*")
    assert not _updated({"remote": remote, "mirror": mirror})
    assert (mirror / "objects" / "info" / "commit-graph").exists()
    assert git(mirror, "config", "fetch.writeCommitGraph") == "true"
