"""
``pin upgrade`` lists the commits between old and new that change what the set uses, measured on a real build: the
files the manager read of the pinned checkout, the clone jobs' files_to_checkout, and the packages of a checkout a
job takes. Real Sisyphus, real git.
"""

from __future__ import annotations

import json

from conftest import commit_setup, git, git_commit
from sispin.cli.main import main

IMPORTS = """\
from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
from sisyphus import tk

from sispin import experiment_set


def py():
    exp = experiment_set("imports")
    with exp.imported("rc"):
        import pkg.a

        value = pkg.a.VALUE
    tk.register_output("imports/config", WriteReturnnConfigJob(ReturnnConfig({"value": value})).out_returnn_config_file)
"""

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
        "    1 of the 3 new commits change what set 'imports' uses of rc (2 files the manager read):",
        "    uses pkg/__init__.py",
        "    uses pkg/a.py",
        f"    + {date} {c[1]} change a  (pkg/a.py)",
    ]
    # a job takes the checkout: it may run any of its packages, not its docs or setup.py
    assert main(["upgrade", "takes", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert (
        "    2 of the 3 new commits change what set 'takes' uses of rc (the package pkg: a job takes the checkout):"
        in out
    )
    assert f"{c[2]} change b  (pkg/b.py)" in out and f"{c[1]} change a  (pkg/a.py)" in out and "docs" not in out
    assert main(["upgrade", "lists", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "    1 of the 3 new commits change what set 'lists' uses of rc (1 files_to_checkout):" in out
    assert f"{c[3]} change the docs  (docs/x.md)" in out
    # the count goes into the commit of the move
    assert main(["snapshot"]) == 0
    commit_setup(root, "pin.toml", "pin.snapshot.toml")
    assert main(["upgrade", "imports", "--commit"]) == 0
    body = git(root, "log", "-1", "--format=%b").splitlines()
    assert body[0] == f"rc {c[0]} -> {c[3]} (+3 commits, 1 change what imports uses)", body


def test_without_a_graph_the_whole_log_is_shown(history, capsys):
    assert main(["upgrade", "demo", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"    + {history.c[4][:7]} change 4" in out and "change what set" not in out


def test_a_checkout_that_is_a_package_itself_is_used_whole(real_setup, make_repo, capsys):
    # returnn_common's layout: the top of the repository is the package
    remote = make_repo("rc")
    old = git_commit(remote, {"__init__.py": "", "nn/__init__.py": "", "README.md": "0\n"})
    git_commit(remote, {"README.md": "1\n"}, "readme")
    sets = f'[sets.takes]\nconfigs = ["config/takes.py"]\nrc = "{old}"\n\n'
    real_setup(f'[repos.rc]\nurl = "file://{remote}"\n\n{sets}', {"takes.py": TAKES})
    assert main(["upgrade", "takes", "--dry-run"]) == 0
    assert "    1 of the 1 new commit change what set 'takes' uses of rc (all of it: a job takes the checkout):" in (
        capsys.readouterr().out
    )


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
