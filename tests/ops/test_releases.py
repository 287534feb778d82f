"""
Releases and tags: ``pin upgrade --to TAG`` keeps the tag's name beside the pin, ``--release`` moves to the newest
release tag on the branch (the repository's own pattern, ``releases = "GLOB"``), and ``pin status`` counts the
releases a pin is behind. Real git.
"""

from __future__ import annotations

import json

from conftest import git, git_commit
from results import upgraded
from sispin.cli.main import main


def _setup(make_repo, write_lock, releases=None):
    remote = make_repo("rc")
    c = [git_commit(remote, {"x.py": f"X = {i}\n"}, f"change {i}") for i in range(5)]
    for tag, commit in (("v1", c[1]), ("v1.10", c[3]), ("v1.9", c[2]), ("nightly", c[4])):
        git(remote, "tag", tag, commit)
    git(remote, "checkout", "-q", "-b", "side", c[0])
    git(remote, "tag", "v2", git_commit(remote, {"side.py": ""}, "off the branch"))
    git(remote, "checkout", "-q", "main")
    pattern = f'releases = "{releases}"\n' if releases else ""
    lock = write_lock(f'version = 1\n\n[repos.rc]\nurl = "file://{remote}"\n{pattern}\n[sets.a]\nrc = "{c[0]}"\n')
    return lock, c


def test_a_move_to_a_tag_keeps_its_name_until_the_pin_moves_elsewhere(make_repo, write_lock, store_dir, capsys):
    lock, c = _setup(make_repo, write_lock)
    assert main(["upgrade", "a", "rc", "--to", "v1"]) == 0
    assert f"rc  {c[0][:7]} -> {c[1][:7]}  (+1 commit, tag v1)" in capsys.readouterr().out
    assert f'rc = "{c[1]}"  # tag v1\n' in lock.read_text()
    assert upgraded(lock, ["a"], ["rc"], to=c[2][:7]).sets[0].moves[0].move.tag is None  # a SHA: the tag's name goes
    assert lock.read_text().endswith(f'rc = "{c[2]}"\n')
    lock.write_text(lock.read_text().replace(f'"{c[2]}"', f'"{c[2]}"  # checked by hand'))
    assert upgraded(lock, ["a"], ["rc"], to="v1.10").sets[0].moves[0].move.tag == "v1.10"  # the user's comment stays
    assert lock.read_text().endswith(f'rc = "{c[3]}"  # checked by hand\n')


def test_release_moves_to_the_newest_release_tag_on_the_branch(make_repo, write_lock, store_dir, capsys):
    lock, c = _setup(make_repo, write_lock, releases="v*")
    # v2 is newer but on another branch; nightly is no release; v1.10 is newer than v1.9
    move = upgraded(lock, ["a"], release=True).sets[0].moves[0].move
    assert (move.new, move.tag, move.added) == (c[3], "v1.10", 3)
    assert lock.read_text().endswith(f'rc = "{c[3]}"  # tag v1.10\n')
    summary, body = upgraded(lock, ["a"], ["rc"], to="v1", downgrade=True).commit_message()
    assert (summary, body) == (
        f"pin upgrade a: rc {c[3][:7]} -> {c[1][:7]}",
        [f"rc {c[3][:7]} -> {c[1][:7]} (downgrade: 2 commits back, tag v1)", "--to v1"],
    )


def test_status_counts_the_releases_a_pin_is_behind(make_repo, write_lock, store_dir, capsys):
    lock, c = _setup(make_repo, write_lock, releases="v*")
    assert main(["status", "--fetch"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[4:7] == ["4", "(3", "releases)"]
    upgraded(lock, ["a"], release=True)
    assert main(["status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pins"][0]["releases_behind"] == 0
    # a repository without release tags shows none
    lock.write_text(lock.read_text().replace('releases = "v*"', 'releases = "r*"'))
    assert main(["status", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pins"][0]["releases_behind"] is None
    assert main(["upgrade", "a", "--release"]) == 5
    assert "the default branch has no release tag matching 'r*'" in capsys.readouterr().err


def test_a_bad_release_pattern_is_one_line(make_repo, write_lock, store_dir, capsys):
    _setup(make_repo, write_lock, releases="v..*")
    assert main(["status"]) == 3
    assert "repos.rc.releases: 'v..*' is not a tag name pattern (a tag name with * and ?)" in capsys.readouterr().err


def test_a_pre_release_is_older_than_its_release(make_repo, write_lock, store_dir, capsys):
    lock, c = _setup(make_repo, write_lock, releases="v*")
    remote = lock.parent.parent / "remotes" / "rc"
    for tag, commit in (("v2.0-rc1", c[3]), ("v2.0", c[4])):
        git(remote, "tag", tag, commit)
    move = upgraded(lock, ["a"], release=True).sets[0].moves[0].move
    assert (move.new, move.tag, move.added) == (c[4], "v2.0", 4)


def test_no_tag_comment_where_none_can_stand(make_repo, write_lock, store_dir, capsys):
    # inside an inline table of a set written inline, a comment would end the table: the pin moves without it
    lock, c = _setup(make_repo, write_lock)
    inline = f'version = 1\nsets = {{ a = {{ rc = "{c[0]}" }} }}\n\n[repos.rc]\nurl = "{_url(lock)}"\n'
    lock.write_text(inline)
    upgraded(lock, ["a"], ["rc"], to="v1")
    assert lock.read_text() == inline.replace(c[0], c[1])


def test_status_measures_each_repository_against_its_own_branch(make_repo, write_lock, store_dir, capsys):
    # two [repos] of one URL that follow other branches: each pin is behind its own branch
    lock, c = _setup(make_repo, write_lock, releases="v*")
    text = lock.read_text().replace("[sets.a]", f'[repos.side]\nurl = "{_url(lock)}"\nbranch = "side"\n\n[sets.a]')
    lock.write_text(text + f'side = "{c[0]}"\n')
    assert main(["status", "--fetch", "--json"]) == 0
    pins = {pin["repo"]: (pin["behind"], pin["releases_behind"]) for pin in json.loads(capsys.readouterr().out)["pins"]}
    assert pins == {"rc": (4, 3), "side": (1, 1)}


def _url(lock):
    """The URL of [repos.rc]."""
    return lock.read_text().split('url = "', 1)[1].split('"', 1)[0]
