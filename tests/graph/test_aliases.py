"""
Honest overwrites: a legacy ``hash_overwrite`` of an existing setup becomes an alias that pin.toml binds to exactly
one commit (a pin's ``hash_overwrite``). The ids made with it stay; the value stands for that commit only, and dies
when the pin moves. Real Sisyphus + i6_core.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import USE_JOB, git_commit, sisyphus_entry
from results import checked, problems, snapshot_taken
from sispin.cli.main import main
from sispin.clonejob import clone_identity
from sispin.errors import LockfileError
from sispin.graph.snapshot import read_recorded, read_snapshot
from sispin.lock.loading import parse_lockfile

#: what existing setups do: a clone at a literal commit, its output's commit hidden behind a name
HAND_WRITTEN = (
    """\
from i6_core.tools.git import CloneGitRepositoryJob
from sisyphus import Job, Task, tk


"""
    + USE_JOB
    + """

def py():
    root = CloneGitRepositoryJob({url!r}, commit={commit!r}).out_repository
    root.hash_overwrite = "LEGACY_ROOT"
    tk.register_output("s/use", Use(root).out)
    tk.register_output("s/sub", Use(root.join_right("pkg")).out)
"""
)

#: the same set written with sispin: exp.repo() applies the alias the lock binds
WITH_SISPIN = (
    """\
from sisyphus import Job, Task, tk

from sispin import experiment_set


"""
    + USE_JOB
    + """

def py():
    root = experiment_set("s").repo("rc")
    tk.register_output("s/use", Use(root).out)
    tk.register_output("s/sub", Use(root.join_right("pkg")).out)
"""
)


class Setup:
    def __init__(self, root: Path, url: str, commits: list, setup_entry: str):
        self.root, self.url, self.c, self.setup_entry = root, url, commits, setup_entry

    def lock(self, pin: str, more: str = "") -> None:
        text = (self.root / "pin.toml").read_text().split("[sets.s]")[0]
        (self.root / "pin.toml").write_text(
            text + f'[sets.s]\nconfigs = ["config/s.py"]\nrc = {pin}\n{more}\n' + self.setup_entry
        )

    def config(self, text: str, commit: str = "") -> None:
        (self.root / "config" / "s.py").write_text(text.format(url=self.url, commit=commit or self.c[1]))


@pytest.fixture
def setup(real_setup, real_sisyphus, make_repo, capsys) -> Setup:
    remote = make_repo("rc")
    commits = [git_commit(remote, {"__init__.py": f"VALUE = {i}\n"}, f"value {i}") for i in range(3)]
    url = f"file://{remote}"
    root = real_setup(f'[repos.rc]\nurl = "{url}"\nbranch = "main"\n\n[sets.s]\n', {"s.py": ""})
    made = Setup(root, url, commits, sisyphus_entry(real_sisyphus))
    assert main(["status", "--fetch"]) == 0
    capsys.readouterr()
    return made


def bound(setup: Setup, commit: str) -> str:
    return f'{{ commit = "{commit}", hash_overwrite = "LEGACY_ROOT" }}'


def ids(setup: Setup) -> dict:
    assert main(["snapshot"]) == 0
    return {name: output.job for name, output in read_snapshot(setup.root / "pin.snapshot.toml")["s"].items()}


def test_an_alias_keeps_every_id_of_the_hand_written_setup_and_of_its_exp_repo_rewrite(setup, capsys):
    setup.lock(bound(setup, setup.c[1]))
    setup.config(HAND_WRITTEN)
    legacy = ids(setup)
    assert not problems(checked())
    # the config moves to exp.repo(), nothing else: sispin applies the bound overwrite itself
    setup.config(WITH_SISPIN)
    assert ids(setup) == legacy
    assert not problems(checked())


def test_without_the_alias_the_legacy_overwrite_is_one_problem_naming_its_assignment(setup, capsys):
    setup.lock(f'"{setup.c[1]}"')
    setup.config(HAND_WRITTEN)
    hidden = snapshot_taken().hidden
    assert len(hidden) == 1, hidden
    assert "hash_overwrite 'LEGACY_ROOT' set at config/s.py:16 on " in str(hidden[0])
    assert "hides the commit from 2 jobs" in str(hidden[0])


def test_the_bound_value_on_a_clone_at_another_commit_is_refused_naming_the_assignment(setup, capsys):
    # pin.toml moved by hand, the code not: the value would now hide other code
    setup.lock(bound(setup, setup.c[2]))
    setup.config(HAND_WRITTEN)
    out = problems(checked())
    assert "hash_overwrite 'LEGACY_ROOT' set at config/s.py:16 on " in out
    assert f"(pin.toml binds it to rc {setup.c[2][:7]} in sets.s)" in out


def test_a_bound_value_moved_by_hand_with_its_pin_is_refused_against_the_snapshot(setup, capsys):
    setup.lock(bound(setup, setup.c[1]))
    setup.config(WITH_SISPIN)
    ids(setup)
    setup.lock(bound(setup, setup.c[2]))  # the commit edited, the alias kept: the old ids would stand for new code
    assert f"hash_overwrite 'LEGACY_ROOT' stood for {setup.c[1][:7]} when recorded in pin.snapshot.toml" in (
        problems(checked())
    )
    assert not snapshot_taken().written, "nor is it recorded"


@pytest.mark.parametrize(
    "argument, shown",
    [
        ('patches = ["fix.diff"]', "patches=['fix.diff']"),
        ('files_to_checkout = ["pkg"]', "files_to_checkout=['pkg']"),
        ("clone_submodules = true", "clone_submodules=True"),
    ],
)
def test_a_bound_value_stands_for_the_whole_clone_not_its_commit_alone(setup, capsys, argument, shown):
    setup.lock(bound(setup, setup.c[1]))
    setup.config(WITH_SISPIN)
    recorded = ids(setup)
    # the pin gains an argument: the clone checks out other files, the jobs that use it keep their ids
    setup.lock(bound(setup, setup.c[1]).replace(" }", f", {argument} }}"))
    out = problems(checked(full=True))
    assert (
        f"hash_overwrite 'LEGACY_ROOT' stood for {setup.c[1][:7]} when recorded in pin.snapshot.toml (in this set or "
        f"another, also one renamed or removed since); pin.toml binds it to {setup.c[1][:7]} ({shown}) now"
    ) in out, out
    assert not snapshot_taken().written, "nor is it recorded"
    setup.lock(f'{{ commit = "{setup.c[1]}", {argument} }}')  # the alias removed: the ids move, as they must
    assert ids(setup) != recorded


def test_a_bound_value_recorded_as_a_bare_commit_before_is_recorded_whole_by_the_next_snapshot(setup, capsys):
    setup.lock(bound(setup, setup.c[1]))
    setup.config(WITH_SISPIN)
    ids(setup)
    snapshot = setup.root / "pin.snapshot.toml"
    text = snapshot.read_text()
    # as sispin wrote it before its history held whole clones
    legacy = text.replace(", arguments = {}}", "}").replace(f'{{commit = "{setup.c[1]}"}}]', f'"{setup.c[1]}"]')
    assert legacy != text and "arguments" not in legacy and f'LEGACY_ROOT = ["{setup.c[1]}"]' in legacy, legacy
    snapshot.write_text(legacy)
    assert not problems(checked(full=True))
    assert main(["snapshot"]) == 0
    assert snapshot.read_text() == text


def test_one_value_bound_to_two_commits_by_two_sets_is_refused(setup, capsys):
    setup.lock(bound(setup, setup.c[1]), f"\n[sets.t]\nrc = {bound(setup, setup.c[2])}\n")
    assert main(["status"]) == 3
    err = capsys.readouterr().err
    assert "sets.t.rc.hash_overwrite: 'LEGACY_ROOT' is bound to" in err and "by sets.s.rc already" in err


TWO_COMMITS = """\
from i6_core.tools.git import CloneGitRepositoryJob
from sisyphus import Job, Task, tk


class Use(Job):
    def __init__(self, thing, name):
        self.thing = thing
        self.out = self.output_path("out")

    def tasks(self):
        yield Task("run")


def root(commit):
    path = CloneGitRepositoryJob({url!r}, commit=commit).out_repository
    path.hash_overwrite = "LEGACY_ROOT"
    return path


def py():
    tk.register_output("s/a", Use(root({a!r}), "a").out)
    tk.register_output("s/b", Use(root({b!r}), {name!r}).out)
"""


@pytest.mark.parametrize("name, merged", [("b", False), ("a", True)])
def test_one_value_bound_to_two_commits_of_a_set_passes_unless_it_merges_two_jobs(setup, capsys, name, merged):
    # a real setup shares one name across three commits of a fork: adoption keeps that, and catches the day two
    # jobs of different commits become one
    more = f"rc_old = {bound(setup, setup.c[0])}\n"
    (setup.root / "pin.toml").write_text(
        (setup.root / "pin.toml").read_text().replace("[sets.s]", f'[repos.rc_old]\nurl = "{setup.url}"\n\n[sets.s]')
    )
    setup.lock(bound(setup, setup.c[1]), more)
    (setup.root / "config" / "s.py").write_text(
        TWO_COMMITS.format(url=setup.url, a=setup.c[0], b=setup.c[1], name=name)
    )
    if not merged:
        assert main(["snapshot"]) == 0, capsys.readouterr().out
        # recorded with the value standing for both commits: neither binding reads as moved against the record
        assert not problems(checked())
        assert main(["snapshot"]) == 0, capsys.readouterr().out
        return
    assert "config/s.py:22 builds " in "\n".join(map(str, snapshot_taken().hidden))


def test_an_upgrade_drops_the_alias_and_the_ids_move(setup, capsys):
    setup.lock(bound(setup, setup.c[1]))
    setup.config(WITH_SISPIN)
    before = ids(setup)
    assert main(["upgrade", "s", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "rc: drops hash_overwrite 'LEGACY_ROOT': it stands for" in out
    assert "Blast radius: 3 of 3 jobs of set 's' get new ids" in out
    assert main(["upgrade", "s"]) == 0
    assert "hash_overwrite" not in (setup.root / "pin.toml").read_text()
    after = {name: o.job for name, o in read_snapshot(setup.root / "pin.snapshot.toml")["s"].items()}
    assert all(after[name] != before[name] for name in before)
    assert not problems(checked())


def test_an_upgrade_refuses_while_code_sets_the_alias_itself(setup, capsys):
    setup.lock(bound(setup, setup.c[1]))
    setup.config(HAND_WRITTEN)
    ids(setup)
    text = (setup.root / "pin.toml").read_text()
    assert main(["upgrade", "s", "--to", setup.c[2]]) == 7
    out = capsys.readouterr()
    assert "problem: config/s.py:16 sets hash_overwrite 'LEGACY_ROOT' itself" in out.out
    assert (setup.root / "pin.toml").read_text() == text


GENERATED = """\
from i6_core.tools.git import CloneGitRepositoryJob
from sisyphus import Job, Task, tk


class Use(Job):
    def __init__(self, thing, number):
        self.thing = thing
        self.out = self.output_path("out")

    def tasks(self):
        yield Task("run")


def py():
    root = CloneGitRepositoryJob({url!r}, commit={commit!r}).out_repository
{sites}
"""


def test_a_hundred_overwrite_sites_give_a_line_each_the_same_in_every_run(setup, capsys):
    sites = "".join(
        f"    p{i} = root.join_right('d{i}')\n    p{i}.hash_overwrite = 'SITE_{i}'\n"
        + "".join(f"    tk.register_output('s/{i}_{j}', Use(p{i}, {j}).out)\n" for j in range(3))
        for i in range(120)
    )
    setup.lock(f'"{setup.c[1]}"')
    (setup.root / "config" / "s.py").write_text(GENERATED.format(url=setup.url, commit=setup.c[1], sites=sites))
    runs = []
    for _ in range(2):
        assert main(["check", "--offline"]) == 1
        runs.append(capsys.readouterr().out)
    assert runs[0] == runs[1], "byte-identical"
    problems = [line for line in runs[0].splitlines() if "hash_overwrite 'SITE_" in line]
    assert len(problems) == 120 and all(len(line) <= 300 + len("problem: ") for line in problems)
    assert all("hides the commit from 3 jobs" in line for line in problems)


def _lock(*sets: str) -> str:
    repos = '[repos.rc]\nurl = "https://github.com/rwth-i6/returnn_common"\n\n'
    repos += '[repos.rc2]\nurl = "https://github.com/rwth-i6/returnn_common"\n\n'
    return "version = 1\n\n" + repos + "\n".join(sets)


C0, C1 = "0" * 40, "1" * 40


@pytest.mark.parametrize(
    "sets, refused",
    [
        # a set whose name extends another's by a dot is another set
        (
            [
                f'[sets."exp.v2"]\nrc = {{ commit = "{C1}", hash_overwrite = "V" }}\n',
                f'[sets.exp]\nrc = {{ commit = "{C0}", hash_overwrite = "V" }}\n',
            ],
            True,
        ),
        (
            [
                f'[sets.exp]\nrc = {{ commit = "{C0}", hash_overwrite = "V" }}\n',
                f'[sets."exp.v2"]\nrc = {{ commit = "{C1}", hash_overwrite = "V" }}\n',
            ],
            True,
        ),
        # the same commit cloned otherwise (patched) is another clone
        (
            [
                f'[sets.a]\nrc = {{ commit = "{C0}", hash_overwrite = "V" }}\n',
                f'[sets.b]\nrc = {{ commit = "{C0}", hash_overwrite = "V", patches = ["x"] }}\n',
            ],
            True,
        ),
        # a set binding the value to some of the clones another set binds it to: that set keeps their jobs apart
        (
            [
                f'[sets.a]\nrc = {{ commit = "{C0}", hash_overwrite = "V" }}\n'
                f'rc2 = {{ commit = "{C1}", hash_overwrite = "V" }}\n',
                f'[sets.b]\nrc2 = {{ commit = "{C1}", hash_overwrite = "V" }}\n',
            ],
            False,
        ),
        (
            [
                f'[sets.a]\nrc = {{ commit = "{C0}", hash_overwrite = "V" }}\n',
                f'[sets.b]\nrc2 = {{ commit = "{C0}", hash_overwrite = "V" }}\n',
            ],
            False,
        ),
    ],
    ids=["dotted name after", "dotted name before", "patched", "subset", "same clone, two entries"],
)
def test_one_value_stands_for_the_same_clones_in_every_set(tmp_path, sets, refused):
    text = _lock(*sets)
    if refused:
        with pytest.raises(LockfileError, match="no set binds it to both"):
            parse_lockfile(text, tmp_path / "pin.toml")
    else:
        parse_lockfile(text, tmp_path / "pin.toml")


def test_a_bare_commit_of_before_stays_while_a_set_recorded_before_binds_the_value(tmp_path):
    commit = "c" * 40
    snapshot = tmp_path / "pin.snapshot.toml"
    # set a was recorded by an earlier sispin (its clone not known), set b since: the bare commit still speaks for a
    legacy_alias = f'{{commit = "{commit}", hash_overwrite = "V"}}'
    whole_alias = f'{{commit = "{commit}", hash_overwrite = "V", arguments = {{patches = ["p.diff"]}}}}'
    entries = {"a": legacy_alias, "b": whole_alias}
    for order in (["a", "b"], ["b", "a"]):
        sets = "".join(f"[sets.{name}.outputs]\n\n[sets.{name}.aliases]\nrc = {entries[name]}\n\n" for name in order)
        snapshot.write_text(f'version = 1\n\n{sets}[bound]\nV = ["{commit}"]\n')
        assert sorted(read_recorded(snapshot)[1]["V"]) == sorted(
            [commit, clone_identity({"commit": commit, "patches": ["p.diff"]})]
        ), order
    snapshot.write_text(
        f'version = 1\n\n[sets.b.outputs]\n\n[sets.b.aliases]\nrc = {whole_alias}\n\n[bound]\nV = ["{commit}"]\n'
    )
    assert read_recorded(snapshot)[1]["V"] == [
        clone_identity({"commit": commit, "patches": ["p.diff"]})
    ], "recorded whole"
