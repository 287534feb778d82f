"""New sets and their configs: sets without configs are skipped, starter configs, `pin configs` (issue 16, point 1)."""

from __future__ import annotations

import pytest

from conftest import git_commit
from sispin.cli.main import main
from sispin.errors import NameConflictError
from sispin.git.store import Store
from sispin.graph.snapshot import read_snapshot
from sispin.lock.loading import load_lockfile
from sispin.ops.configs import configs_of, edit_configs
from sispin.ops.new import new_set

CONFIG = """\
from sisyphus import tk

from sispin import experiment_set


def py():
    tk.register_output("exp/rc", experiment_set("exp").repo("rc"))
"""


@pytest.fixture
def setup(real_setup, make_repo):
    remote = make_repo("rc")
    head = git_commit(remote, {"__init__.py": "VERSION = 1\n"})
    tables = (
        f'[repos.rc]\nurl = "file://{remote}"\nbranch = "main"\n\n'
        f'[sets.exp]\nconfigs = ["config/exp.py"]  # the first set\nrc = "{head}"\n\n'
        f'[sets.empty]\nconfigs = []\nrc = "{head}"\n'
    )
    return real_setup(tables, {"exp.py": CONFIG})


def test_a_set_without_configs_is_skipped_by_snapshot_and_check(setup, capsys):
    assert main(["snapshot"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "sets.empty: skipped (no configs: add one with `pin configs empty --add PATH`)",
        "exp: 1 output, 1 job (new in the snapshot)",
        "pin.snapshot.toml: written",
    ]
    assert main(["check", "--offline"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "sets.empty: skipped (no configs: add one with `pin configs empty --add PATH`)",
        "pin check: ok (1 set, 1 output, 1 skipped)",
    ]
    assert main(["check", "--offline", "--json"]) == 0
    assert '"skipped": [\n    "empty"\n  ]' in capsys.readouterr().out


def test_new_with_a_starter_config_builds_and_records_its_graph(setup):
    result = new_set(setup / "pin.toml", "exp3", from_set=None, configs=[], store=Store(), starter="config/exp3.py")
    assert (result.starter, result.configs, list(result.graph.outputs)) == (
        "config/exp3.py",
        ("config/exp3.py",),
        ["exp3/rc"],
    )
    starter = (setup / "config" / "exp3.py").read_text()
    assert 'exp = experiment_set("exp3")' in starter
    assert load_lockfile(setup / "pin.toml").get_set("exp3").configs == ("config/exp3.py",)
    assert list(read_snapshot(setup / "pin.snapshot.toml")["exp3"]) == ["exp3/rc"]
    assert main(["check", "--offline", "exp3"]) == 0


def test_new_refuses_to_overwrite_a_config_and_to_list_a_missing_one(setup, capsys):
    before = (setup / "pin.toml").read_text()
    assert main(["new", "x", "--config", "config/exp.py"]) == 2
    assert "--config config/exp.py: the file exists; refusing to overwrite it" in capsys.readouterr().err
    assert main(["new", "x", "--configs", "config/x.py"]) == 2
    assert "--configs config/x.py: no such file (write it first, or let --config config/x.py write a starter)" in (
        capsys.readouterr().err
    )
    assert (setup / "config" / "exp.py").read_text() == CONFIG
    assert (setup / "pin.toml").read_text() == before


def test_a_starter_is_removed_when_the_set_is_not_added(setup, capsys):
    with pytest.raises(NameConflictError):  # the set exists
        new_set(setup / "pin.toml", "exp", from_set=None, configs=[], store=Store(), starter="config/again.py")
    assert not (setup / "config" / "again.py").exists()
    assert main(["new", "y", "--config", "/abs/y.py"]) == 2
    assert "--config /abs/y.py: not inside the setup" in capsys.readouterr().err


def test_pin_configs_adds_and_removes_keeping_the_file(setup, capsys):
    (setup / "config" / "more.py").write_text(CONFIG)
    before = (setup / "pin.toml").read_text()
    assert main(["configs", "empty", "--add", "config/exp.py", "config/more.py"]) == 0
    assert capsys.readouterr().out == "pin.toml: sets.empty.configs = ['config/exp.py', 'config/more.py']\n"
    after = (setup / "pin.toml").read_text()
    assert after == before.replace(
        "[sets.empty]\nconfigs = []", '[sets.empty]\nconfigs = ["config/exp.py", "config/more.py"]'
    )
    assert main(["configs", "exp", "--remove", "config/exp.py"]) == 0
    assert "configs = []  # the first set\n" in (setup / "pin.toml").read_text(), "the comment stays"
    assert main(["configs", "empty"]) == 0
    assert capsys.readouterr().out.splitlines()[-2:] == ["config/exp.py", "config/more.py"]


def test_pin_configs_adds_the_key_to_a_set_without_it(setup):
    (setup / "pin.toml").write_text(
        (setup / "pin.toml").read_text().replace("[sets.empty]\nconfigs = []\n", "[sets.empty]\n")
    )
    assert edit_configs(setup / "pin.toml", "empty", add=["config/exp.py"], remove=[]).configs == ("config/exp.py",)
    assert load_lockfile(setup / "pin.toml").get_set("empty").configs == ("config/exp.py",)


def test_pin_configs_removes_from_a_multi_line_array(setup):
    path = setup / "pin.toml"
    path.write_text(
        path.read_text().replace(
            'configs = ["config/exp.py"]  # the first set',
            'configs = [\n  "config/exp.py",  # old\n  "config/b.py",\n]',
        )
    )
    edited = edit_configs(path, "exp", add=[], remove=["config/exp.py"])
    assert (edited.removed, edited.configs, configs_of(path, "exp")) == (
        ("config/exp.py",),
        ("config/b.py",),
        ("config/b.py",),
    )
    assert 'configs = [\n  "config/b.py",\n]\n' in path.read_text()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["configs", "exp", "--add", "config/nope.py"], "--add config/nope.py: no such file"),
        (["configs", "exp", "--add", "config/exp.py"], "--add config/exp.py: already listed in sets.exp.configs"),
        (
            ["configs", "exp", "--remove", "config/b.py"],
            "--remove config/b.py: not in sets.exp.configs (config/exp.py)",
        ),
    ],
)
def test_pin_configs_refuses(setup, capsys, argv, message):
    before = (setup / "pin.toml").read_text()
    assert main(argv) == 2
    assert message in capsys.readouterr().err
    assert (setup / "pin.toml").read_text() == before


def test_pin_configs_takes_a_path_relative_to_where_you_stand_and_says_so(setup, capsys, monkeypatch):
    monkeypatch.chdir(setup / "config")
    assert main(["configs", "exp", "--add", "config/exp.py"]) == 2  # from inside config/: config/config/exp.py
    assert capsys.readouterr().err == (
        "pin: error: --add config/exp.py: no such file (paths are relative to the directory you are in, "
        f"{setup / 'config'})\n"
    )
    (setup / "config" / "more.py").write_text("")
    assert main(["configs", "exp", "--add", "more.py"]) == 0
    assert '"config/more.py"' in (setup / "pin.toml").read_text()
