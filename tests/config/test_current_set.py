"""``sispin.current_set()``: shared recipe code gets the pins of the set whose config is being loaded."""

from __future__ import annotations

import pytest

from conftest import git_commit
from sispin.cli.main import main
from sispin.errors import SisyphusError, UnknownNameError
from sispin.graph.build import load_graph, run_probe
from sispin.lock.loading import load_lockfile
from sispin.sets import current_set

SHARED = """\
from sispin import current_set


def returnn_root():
    return current_set().repo("rc")
"""

CONFIG = """\
from sisyphus import tk

import shared_tools


def py():
    tk.register_output("{name}/rc", shared_tools.returnn_root())
"""


@pytest.fixture
def shared(real_setup, make_repo):
    remote = make_repo("rc")
    commits = [git_commit(remote, {"__init__.py": f"X = {i}\n"}) for i in range(2)]

    def build(lock_sets: str, configs: dict):
        root = real_setup(f'[repos.rc]\nurl = "file://{remote}"\n\n{lock_sets}', configs)
        (root / "recipe" / "shared_tools.py").write_text(SHARED)
        return root

    build.commits = commits
    return build


def test_two_sets_sharing_a_module_each_get_their_own_pins(shared):
    c = shared.commits
    root = shared(
        f'[sets.a]\nconfigs = ["config/a.py"]\nrc = "{c[0]}"\n\n[sets.b]\nconfigs = ["config/b.py"]\nrc = "{c[1]}"\n',
        {"a.py": CONFIG.format(name="a"), "b.py": CONFIG.format(name="b")},
    )
    lockfile = load_lockfile(root / "pin.toml")
    a, b = load_graph(lockfile, "a"), load_graph(lockfile, "b")
    assert {clone.commit for clone in a.clones} == {c[0]} and {clone.commit for clone in b.clones} == {c[1]}
    # both configs in one process, as one manager loads them: the module is imported once, each call follows its config
    request = {"set": "a", "configs": ["config/a.py", "config/b.py"]}
    both = run_probe(lockfile, ["graph"], "loading both", request=request)
    assert sorted(clone["commit"] for clone in both["clones"]) == sorted(c)
    assert main(["snapshot"]) == 0 and main(["check", "--offline"]) == 0


@pytest.mark.parametrize(
    "sets, message",
    [
        (
            '[sets.a]\nrc = "{c0}"\n',
            "current_set(): config config/a.py belongs to no set of pin.toml (add it to a set's configs)",
        ),
        (
            '[sets.a]\nconfigs = ["config/a.py"]\nrc = "{c0}"\n\n[sets.b]\nconfigs = ["config/a.py"]\nrc = "{c0}"\n',
            "current_set(): config config/a.py belongs to several sets (a, b): use experiment_set(NAME)",
        ),
    ],
)
def test_a_config_of_no_set_or_of_several_is_one_line(shared, sets, message):
    root = shared(sets.format(c0=shared.commits[0]), {"a.py": CONFIG.format(name="a")})
    with pytest.raises(SisyphusError) as failure:
        request = {"set": "a", "configs": ["config/a.py"]}
        run_probe(load_lockfile(root / "pin.toml"), ["graph"], "loading config/a.py", request=request)
    assert str(failure.value) == f"loading config/a.py failed: recipe/shared_tools.py:5: UnknownNameError: {message}"


def test_module_level_use_in_a_shared_module_is_refused(shared):
    c = shared.commits
    root = shared(f'[sets.a]\nconfigs = ["config/a.py"]\nrc = "{c[0]}"\n', {"a.py": CONFIG.format(name="a")})
    (root / "recipe" / "shared_tools.py").write_text(SHARED + "\nROOT = current_set().repo('rc')\n")
    with pytest.raises(Exception) as failure:
        load_graph(load_lockfile(root / "pin.toml"), "a")
    assert "current_set() at module level of recipe/shared_tools.py: a module runs once per process" in str(
        failure.value
    )


def test_outside_a_config_it_says_so(real_sisyphus):
    with pytest.raises(UnknownNameError, match=r"current_set\(\) is called outside a Sisyphus config"):
        current_set()
