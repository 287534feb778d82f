"""
A setup shaped like a real pipeline: one set cloning its RETURNN fork at three commits through three entries that
share a URL, a shared recipe module used by two sets through ``current_set()``, a toolkit cloned at a branch that the
sets accept deliberately, and one that they do not. ``pin check`` passes exactly when it should.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import List

import pytest

from conftest import git, git_commit
from sispin.cli.main import main

SHARED = """\
from i6_core.tools.git import CloneGitRepositoryJob

from sispin import current_set

FORK = ("MiniReturnn", "MiniReturnn_2023", "MiniReturnn_2024")


def returnn_roots():
    exp = current_set()
    return [exp.repo(name) for name in FORK if name in exp.spec.pins]


def clone(url, commit=None, branch=None):
    return CloneGitRepositoryJob(url, commit=commit, branch=branch).out_repository
"""

CONFIG = """\
from sisyphus import tk

import shared_tools


def py():
    for i, root in enumerate(shared_tools.returnn_roots()):
        tk.register_output(f"{name}/returnn{{i}}", root)
    tk.register_output("{name}/toolkit", shared_tools.clone("{toolkit}", branch="v2.4.12"))
"""


@dataclass
class Pipeline:
    root: Path
    fork: str
    commits: List[str]
    toolkit: str
    other: str

    def add_to_config(self, name: str, line: str) -> None:
        config = self.root / "config" / f"{name}.py"
        config.write_text(config.read_text() + f"    {line}\n")


@pytest.fixture
def pipeline(real_setup, make_repo) -> Pipeline:
    fork = make_repo("MiniReturnn")
    commits = [git_commit(fork, {"__init__.py": f"V = {i}\n"}) for i in range(3)]
    urls = {}
    for name in ("toolkit", "other_toolkit"):
        repo = make_repo(name)
        git_commit(repo, {"x": "x\n"})
        git(repo, "branch", "v2.4.12")
        urls[name] = f"file://{repo}"
    url = f"file://{fork}"
    accept = f'allow_unpinned = ["{urls["toolkit"]}"]\n'
    tables = (
        f'[repos.MiniReturnn]\nurl = "{url}"\n\n'
        f'[repos.MiniReturnn_2023]\nurl = "{url}"\n\n'
        f'[repos.MiniReturnn_2024]\nurl = "{url}"\n\n'
        f'[sets.ls]\nconfigs = ["config/ls.py"]\n{accept}MiniReturnn = "{commits[0]}"\n'
        f'MiniReturnn_2023 = "{commits[1]}"\nMiniReturnn_2024 = "{commits[2]}"\n\n'
        f'[sets.small]\nconfigs = ["config/small.py"]\n{accept}MiniReturnn = "{commits[2]}"\n'
    )
    configs = {f"{name}.py": CONFIG.format(name=name, toolkit=urls["toolkit"]) for name in ("ls", "small")}
    root = real_setup(tables, configs)
    (root / "recipe" / "shared_tools.py").write_text(SHARED)
    return Pipeline(root, url, commits, urls["toolkit"], urls["other_toolkit"])


def test_the_pipeline_passes_the_check_and_shows_what_it_accepts(pipeline, capsys):
    assert main(["snapshot"]) == 0
    capsys.readouterr()
    assert main(["check", "--offline"]) == 0, capsys.readouterr().out
    capsys.readouterr()
    assert main(["status", "--json"]) == 0
    accepted = json.loads(capsys.readouterr().out)["accepted"]
    assert accepted["ls"] == {"allow_unpinned": [pipeline.toolkit], "allow_hash_overwrite": []}
    assert main(["status"]) == 0
    assert f"sets.small accepts (allow_unpinned): {pipeline.toolkit}" in capsys.readouterr().out


def test_a_clone_of_the_shared_url_at_any_entrys_pin_passes_another_commit_fails(pipeline, capsys):
    assert main(["snapshot"]) == 0
    pipeline.add_to_config(
        "ls", f'tk.register_output("ls/by_hand", shared_tools.clone("{pipeline.fork}", "{pipeline.commits[1]}"))'
    )
    pipeline.add_to_config(
        "small", f'tk.register_output("small/by_hand", shared_tools.clone("{pipeline.fork}", "{pipeline.commits[1]}"))'
    )
    capsys.readouterr()
    assert main(["check", "--offline"]) == 1
    out = capsys.readouterr().out
    problems = [line for line in out.splitlines() if "clones" in line]
    assert len(problems) == 1, out
    assert (
        "sets.small: " in problems[0]
        and f"clones MiniReturnn at {pipeline.commits[1][:7]}, the set pins {pipeline.commits[2][:7]}" in problems[0]
    )


def test_an_unaccepted_unpinned_clone_fails_the_check(pipeline, capsys):
    pipeline.add_to_config("ls", f'tk.register_output("ls/other", shared_tools.clone("{pipeline.other}"))')
    assert main(["check", "--offline", "ls"]) == 1
    out = capsys.readouterr().out
    assert (
        f"clones {pipeline.other} with no commit: it follows its branch, so its content changes under the same id"
        in out
    )
    assert f"clones {pipeline.toolkit}" not in out, "the accepted one is not reported"


def test_a_locked_url_cannot_be_accepted_unpinned(pipeline, capsys):
    lock = pipeline.root / "pin.toml"
    lock.write_text(
        lock.read_text().replace(
            f'allow_unpinned = ["{pipeline.toolkit}"]\nMiniReturnn = "{pipeline.commits[2]}"',
            f'allow_unpinned = ["{pipeline.fork}"]\nMiniReturnn = "{pipeline.commits[2]}"',
        )
    )
    assert main(["check", "--offline"]) == 3
    assert "sets.small.allow_unpinned: " in capsys.readouterr().out
