"""
``pin upgrade`` lists the commits between old and new that change what the set uses, measured on a real build: the
files the manager read of the pinned checkout, the clone jobs' files_to_checkout, and the packages of a checkout a
job takes. Real Sisyphus, real git.
"""

from __future__ import annotations

import json

from conftest import git, git_commit
from results import upgraded
from scenarios import IMPORTS
from sispin.cli.main import main
from sispin.git.history import Change

TAKES = """\
from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
from sisyphus import tk

from sispin import experiment_set


def py():
    config = ReturnnConfig({"rc": experiment_set("takes").repo("rc")})
    tk.register_output("takes/config", WriteReturnnConfigJob(config).out_returnn_config_file)
"""

LISTS = """\
from sisyphus import tk

from sispin import experiment_set


def py():
    tk.register_output("lists/rc", experiment_set("lists").repo("rc"))
"""


def _setup(real_setup, make_repo):
    remote = make_repo("rc")
    files = {"pkg/__init__.py": "", "pkg/a.py": "VALUE = 0\n", "pkg/b.py": "", "docs/x.md": "0\n", "setup.py": ""}
    commits = [git_commit(remote, files, "start")]
    for name, content, subject in (
        ("pkg/a.py", "VALUE = 1\n", "change a"),
        ("pkg/b.py", "X = 1\n", "change b"),
        ("docs/x.md", "1\n", "change the docs"),
    ):
        commits.append(git_commit(remote, {name: content}, subject))
    pin = f'"{commits[0]}"'
    listing = f'{{ commit = "{commits[0]}", files_to_checkout = ["docs/x.md"] }}'
    sets = "".join(
        f'[sets.{name}]\nconfigs = ["config/{name}.py"]\nrc = {value}\n\n'
        for name, value in (("imports", pin), ("takes", pin), ("lists", listing))
    )
    configs = {"imports.py": IMPORTS, "takes.py": TAKES, "lists.py": LISTS}
    root = real_setup(f'[repos.rc]\nurl = "file://{remote}"\n\n{sets}', configs)
    return root, [commit[:7] for commit in commits]


def test_the_commits_that_change_what_each_set_uses(real_setup, make_repo, tmp_path, capsys):
    root, c = _setup(real_setup, make_repo)
    date = git(tmp_path / "remotes" / "rc", "log", "-1", "--format=%ad", "--date=short", c[1])
    assert main(["upgrade", "imports", "--dry-run", "--verbose"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:5] == [
        f"rc  {c[0]} -> {c[3]}  (+3 commits)",
        "    1 of the 3 new commits changes what set 'imports' uses of rc (2 files the manager read):",
        "    uses pkg/__init__.py",
        "    uses pkg/a.py",
        f"    + {date} {c[1]} change a  (pkg/a.py)",
    ]
    # a job takes the checkout: it may run any of its packages, not its docs or setup.py
    used = upgraded(root / "pin.toml", ["takes"], dry_run=True).sets[0].moves[0].used
    assert (used.number, used.commits, used.code.described) == (2, 3, "the package pkg: a job takes the checkout")
    assert [(change.commit, change.files) for change in used.listed] == [(c[2], ("pkg/b.py",)), (c[1], ("pkg/a.py",))]
    used = upgraded(root / "pin.toml", ["lists"], dry_run=True).sets[0].moves[0].used
    assert (used.number, used.code.described, used.code.paths) == (1, "1 files_to_checkout", ["docs/x.md"])
    assert used.listed == (Change(c[3], used.listed[0].date, "change the docs", ("docs/x.md",)),)
    # the count goes into the commit of the move
    result = upgraded(root / "pin.toml", ["imports"])
    assert result.sets[0].touching == {"rc": 1} and result.written.snapshot_sets == ("imports",)
    body = result.commit_message()[1]
    assert body[0] == f"rc {c[0]} -> {c[3]} (+3 commits, 1 change what imports uses)", body


def test_without_a_graph_the_whole_log_is_shown(history):
    report = upgraded(history.lock, ["demo"], dry_run=True).sets[0]
    assert report.unbuilt is not None and report.moves[0].used is None, "not measured: the move's whole log is shown"


def test_a_checkout_that_is_a_package_itself_is_used_whole(real_setup, make_repo):
    # returnn_common's layout: the top of the repository is the package
    remote = make_repo("rc")
    old = git_commit(remote, {"__init__.py": "", "nn/__init__.py": "", "README.md": "0\n"})
    git_commit(remote, {"README.md": "1\n"}, "readme")
    sets = f'[sets.takes]\nconfigs = ["config/takes.py"]\nrc = "{old}"\n\n'
    root = real_setup(f'[repos.rc]\nurl = "file://{remote}"\n\n{sets}', {"takes.py": TAKES})
    used = upgraded(root / "pin.toml", ["takes"], dry_run=True).sets[0].moves[0].used
    assert (used.number, used.commits, used.code.described) == (1, 1, "all of it: a job takes the checkout")


def test_status_counts_the_commits_behind_that_change_what_each_set_uses(real_setup, make_repo, tmp_path, capsys):
    _setup(real_setup, make_repo)
    assert main(["status", "--fetch"]) == 0
    assert "TOUCHING" not in capsys.readouterr().out
    assert main(["status", "--changes", "--json"]) == 0
    pins = json.loads(capsys.readouterr().out)["pins"]
    assert {pin["set"]: (pin["behind"], pin["touching"]) for pin in pins} == {
        "imports": (3, 1),
        "takes": (3, 2),
        "lists": (3, 1),
    }
    assert main(["status", "imports", "--changes"]) == 0
    assert capsys.readouterr().out.splitlines()[:2][0].split() == [
        "SET", "REPO", "COMMIT", "DATE", "BEHIND", "TOUCHING", "BRANCH"
    ]  # fmt: skip
    (tmp_path / "setup" / "config" / "lists.py").unlink()
    assert main(["status", "--changes"]) == 9
    captured = capsys.readouterr()
    assert "pin: error: sets.lists: TOUCHING unknown: sets.lists.configs: config/lists.py does not exist" in (
        captured.err
    )
    assert [line.split()[5] for line in captured.out.splitlines()[1:4]] == ["1", "2", "?"]
