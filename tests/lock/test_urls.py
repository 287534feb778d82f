"""
Repository identity: which spellings of a URL a forge treats as one repository (:func:`same_repository`), and every
place that compares repositories using it: lockfile validation, ``pin import``'s naming and ``pin why``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import git, git_commit
from sispin.adopt.propose import propose
from sispin.adopt.scan import scan_source
from sispin.cli.main import main
from sispin.errors import LockfileError
from sispin.lock.loading import parse_lockfile
from sispin.lock.urls import check_url, same_repository

RC = "https://github.com/rwth-i6/returnn_common"
SHA = "f7ad63a588359543e7882db517a5eb7fd99ec670"
SHA2 = "1ce99b3fb3d20e4cb49ec9ac528aa58d1cbe53cd"

SAME = {
    "verbatim": (RC, RC),
    "host case": (RC, "https://GitHub.COM/rwth-i6/returnn_common"),
    "www. on github.com": (RC, "https://www.github.com/rwth-i6/returnn_common"),
    "owner and name case on github.com": (RC, "https://github.com/RWTH-i6/Returnn_Common"),
    "owner and name case on gitlab.com": ("https://gitlab.com/grp/sub/Repo", "https://www.GitLab.com/GRP/Sub/repo"),
    "double slashes": (RC, "https://github.com//rwth-i6//returnn_common"),
    "percent-escapes": (RC, "https://github.com/rwth%2Di6/returnn%5Fcommon"),
    ".git": (RC, RC + ".git"),
    "repeated .git.git": (RC, RC + ".git.git"),
    "trailing slashes": (RC, RC + "//"),
    ".git and a trailing slash": (RC, RC + ".git/"),
    "scp-like": (RC, "git@github.com:rwth-i6/returnn_common.git"),
    "scp-like with a leading slash": (RC, "git@github.com:/rwth-i6/returnn_common"),
    "ssh://git@": (RC, "ssh://git@github.com/rwth-i6/returnn_common"),
    "ssh with a port": (RC, "ssh://git@github.com:22/rwth-i6/returnn_common.git"),
    "git://": (RC, "git://github.com/rwth-i6/returnn_common"),
    "a user in https": (RC, "https://someone@github.com/rwth-i6/returnn_common"),
    "host case on another host": ("https://git.Example.ORG/team/tool", "https://git.example.org/team/tool"),
    "scp-like on another host": ("https://git.example.org/team/tool", "me@git.example.org:team/tool.git"),
    "file URL and its path": ("file:///srv/git/repo", "/srv/git/repo.git/"),
    "a dot segment": ("file:///srv/git/repo", "file:///srv/git/./repo"),
    "a dot-dot segment": (RC, "https://github.com/rwth-i6/x/../returnn_common"),
    "a percent-escaped dot segment": ("file:///srv/git/repo", "file:///srv/git/%2E/repo"),
}
OTHER = {
    "another owner": (RC, "https://github.com/someone/returnn_common"),
    "another host": (RC, "https://gitlab.com/rwth-i6/returnn_common"),
    "another host, scp-like": (RC, "git@gitlab.com:rwth-i6/returnn_common.git"),
    "a fork's name": (RC, "https://github.com/rwth-i6/returnn_common_fork"),
    "a name that starts alike": ("https://github.com/rwth-i6/returnn", RC),
    "a subgroup": ("https://gitlab.com/group/sub/repo", "https://gitlab.com/group/repo"),
    "path case on another host": ("https://git.example.org/team/Tool", "https://git.example.org/team/tool"),
    "www. on another host": ("https://www.example.org/team/tool", "https://example.org/team/tool"),
    "github.com lookalike host": (RC, "https://github.com.evil.org/rwth-i6/returnn_common"),
    "file paths in case": ("file:///srv/git/Repo", "file:///srv/git/repo"),
}


def test_a_local_repository_is_one_through_its_symlinks(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert same_repository(f"file://{tmp_path}/real", f"file://{tmp_path}/link")
    assert same_repository(f"file://{tmp_path}/real", str(tmp_path / "link"))


@pytest.mark.parametrize("a, b", SAME.values(), ids=list(SAME))
def test_spellings_of_one_repository_are_the_same(a: str, b: str):
    assert same_repository(a, b) and same_repository(b, a)


@pytest.mark.parametrize("a, b", OTHER.values(), ids=list(OTHER))
def test_other_repositories_are_not(a: str, b: str):
    assert not same_repository(a, b) and not same_repository(b, a)


def lock_with(accepting: str, url: str) -> str:
    return f'version = 1\n\n[repos.rc]\nurl = "{RC}"\n\n[sets.exp]\n{accepting} = ["{url}"]\nrc = "{SHA}"\n'


@pytest.mark.parametrize("accepting", ["allow_unpinned", "allow_hash_overwrite"])
# an https user is refused before (it may be a token); every other spelling reaches the check of locked repositories
@pytest.mark.parametrize("name", [name for name in SAME if SAME[name][0] == RC and not check_url(SAME[name][1])])
def test_no_spelling_of_a_locked_repository_can_be_accepted(accepting: str, name: str):
    url = SAME[name][1]
    with pytest.raises(LockfileError) as info:
        parse_lockfile(lock_with(accepting, url), Path("pin.toml").absolute())
    assert str(info.value) == (
        f"pin.toml: sets.exp.{accepting}: {url!r} is the locked repository rc ({RC}): its clones must be the set's pin"
    )


@pytest.mark.parametrize("accepting", ["allow_unpinned", "allow_hash_overwrite"])
def test_another_repository_can_be_accepted(accepting: str):
    lock = parse_lockfile(lock_with(accepting, OTHER["another owner"][1]), Path("pin.toml").absolute())
    assert getattr(lock.get_set("exp"), accepting) == (OTHER["another owner"][1],)


def test_pin_check_refuses_a_case_variant_of_a_locked_url(write_lock, capsys):
    # before: only the verbatim URL was refused, so a branch-following clone of the locked repository passed
    write_lock(lock_with("allow_unpinned", "https://GitHub.com/RWTH-i6/returnn_common.git"))
    assert main(["check", "--lock-only"]) == 3
    assert "sets.exp.allow_unpinned: 'https://GitHub.com/RWTH-i6/returnn_common.git' is the locked repository rc" in (
        capsys.readouterr().out
    )


def test_pin_import_names_a_case_variant_as_a_further_entry_of_the_repository():
    source = (
        "from i6_core.tools.git import CloneGitRepositoryJob\n"
        f"a = CloneGitRepositoryJob('{RC}', commit='{SHA}')\n"
        f"b = CloneGitRepositoryJob('https://GitHub.com/RWTH-i6/Returnn_Common', commit='{SHA2}')\n"
        f"c = CloneGitRepositoryJob('https://github.com/someone/returnn_common', commit='{SHA}')\n"
    )
    proposal = propose(scan_source(source, "c.py"), None, "exp")
    assert list(proposal.repo_of_site.values()) == [
        "returnn_common",
        "returnn_common_1ce99b3",
        "someone_returnn_common",
    ]
    # the URL is hashed verbatim: each entry keeps the spelling of its call
    assert proposal.repos["returnn_common_1ce99b3"] == {"url": "https://GitHub.com/RWTH-i6/Returnn_Common"}


def test_pin_why_finds_a_finished_clone_of_another_spelling(tmp_path, make_repo, write_lock, store_dir, capsys):
    remote = make_repo("rc")
    commit = git_commit(remote, {"nn.py": "V = 1\n"})
    lock = write_lock(f'version = 1\n\n[repos.rc]\nurl = "{RC}"\n\n[sets.exp]\nrc = "{commit}"\n')
    # what a finished CloneGitRepositoryJob leaves in work/: a checkout whose origin is the URL the job was given
    job = lock.parent / "work" / "i6_core" / "tools" / "git" / "CloneGitRepositoryJob.AbCdEfGh1234"
    job.mkdir(parents=True)
    (job / "finished").write_text("")
    checkout = job / "output" / "repository"
    git(tmp_path, "clone", "-q", str(remote), str(checkout))
    git(checkout, "remote", "set-url", "origin", "git@github.com:RWTH-i6/Returnn_Common.git")
    assert main(["why", "rc"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [
        f"rc {commit}  {RC}",
        "  pinned by  sets.exp.rc  (pin.toml)",
        "  work       i6_core/tools/git/CloneGitRepositoryJob.AbCdEfGh1234  finished, 0 finished jobs built on it",
    ]


GUARDED = """\
from sisyphus import tk
from i6_core.tools.git import CloneGitRepositoryJob
from sispin import experiment_set


def py():
    tk.register_output("exp/rc", experiment_set("exp").repo("rc"))
    tk.register_output("exp/head", CloneGitRepositoryJob("https://GitHub.com/RWTH-i6/Returnn_Common.git").out_repository)
"""


def test_pin_check_catches_a_branch_following_clone_of_a_case_variant(real_setup, capsys):
    # the graph is only built, nothing is cloned: the locked URL need not be reachable
    real_setup(
        f'[repos.rc]\nurl = "{RC}"\n\n[sets.exp]\nconfigs = ["config/exp.py"]\nrc = "{SHA}"\n', {"exp.py": GUARDED}
    )
    assert main(["check", "--offline"]) == 1
    assert f"clones rc following a branch instead of the pinned {SHA[:7]}" in capsys.readouterr().out
