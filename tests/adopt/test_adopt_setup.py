"""
Adopting an existing setup in one command (``pin import PATH --set NAME --config CONFIG --write``): every clone of
the graph its configs build becomes pin.toml's, every legacy hash_overwrite an alias bound to its commit, and no job
id changes (counted by a plain Sisyphus load of the same configs); from then on `pin check` holds the set to its pins.
Real Sisyphus (on PYTHONPATH, as many users have it) + i6_core, real git repositories.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Dict, List

import pytest

from conftest import PROJECT_ROOT, RECIPE_DIR, USE_JOB, commit_setup, git, git_commit, run
from sispin.cli.main import main
from sispin.graph.probe.schema import RecordedOutput
from sispin.graph.snapshot import read_snapshot
from sispin.lock.loading import load_lockfile
from sispin.ops.import_pins import ImportResult, import_pins

#: shared code that hands out a cached clone and names its commit in place, as i6_experiments' vocab helpers do
HELPERS = """\
from i6_core.tools.git import CloneGitRepositoryJob

TOOL = {tool!r}
_CACHE = {{}}


def get_tool(commit, name):
    if commit not in _CACHE:
        _CACHE[commit] = CloneGitRepositoryJob(TOOL, commit=commit, checkout_folder_name="tool").out_repository
        _CACHE[commit].hash_overwrite = name
    return _CACHE[commit]
"""

CONFIG = """\
from i6_core.tools.git import CloneGitRepositoryJob
from sisyphus import Job, Task, tk

from helpers.tools import get_tool


class Use(Job):
    def __init__(self, thing, number):
        self.thing = thing
        self.out = self.output_path("out")

    def tasks(self):
        yield Task("run")


def py():
    old, new = get_tool({tool0!r}, "TOOL_OLD"), get_tool({tool1!r}, "TOOL_NEW")
    rc = CloneGitRepositoryJob({rc!r}, commit={rc0!r}).out_repository
    lm = CloneGitRepositoryJob({lm!r}).out_repository
    lm.hash_overwrite = "KENLM"
    sctk = CloneGitRepositoryJob({sctk!r}, branch="main").out_repository
    uses = [old, new, rc, lm, sctk, old.join_right("bin"), new.copy(), {{"rc": rc}}]
    for number, thing in enumerate(uses):
        tk.register_output(f"exp/{{number}}", Use(thing, number).out)
"""

#: a plain Sisyphus load of configs, as `sis manager` does it: output name -> the ids of the jobs creating it
PLAIN_IDS = """\
import asyncio, json, sys
import sisyphus.toolkit as tk
from sisyphus.loader import config_manager
tk._sis_running_in_manager = True
asyncio.set_event_loop(asyncio.new_event_loop())
config_manager.load_configs(sys.argv[1:])
print(json.dumps({t.name: sorted(p.creator._sis_id() for p in t.required_full_list) for t in tk.sis_graph.targets}))
"""


class Existing:
    """A setup with finished work and no pin.toml: clones at literal commits, legacy overwrites, unpinned clones."""

    def __init__(self, root: Path, urls: Dict[str, str], commits: Dict[str, List[str]]):
        self.root, self.urls, self.commits = root, urls, commits

    def plain_ids(self) -> Dict[str, List[str]]:
        result = run([sys.executable, "-c", PLAIN_IDS, "config/exp.py"], self.root, dict(os.environ))
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout.splitlines()[-1])

    def snapshot_ids(self) -> Dict[str, List[str]]:
        recorded = read_snapshot(self.root / "pin.snapshot.toml")["exp"]
        return {name: [output.job] for name, output in recorded.items()}


@pytest.fixture
def existing(real_sisyphus, make_repo, tmp_path, monkeypatch, store_dir, capsys) -> Existing:
    urls, commits = {}, {}
    for name in ("tool", "rc", "lm", "sctk"):
        remote = make_repo(name)
        commits[name] = [git_commit(remote, {"VERSION": f"{i}\n"}, f"{name} {i}") for i in range(3)]
        urls[name] = f"file://{remote}"
    root = tmp_path / "setup"
    for folder in ("config", "recipe/helpers", "work"):
        (root / folder).mkdir(parents=True)
    shutil.copy(PROJECT_ROOT / "settings.py", root)
    (root / "recipe" / "i6_core").symlink_to(RECIPE_DIR / "i6_core")
    (root / "recipe" / "helpers" / "__init__.py").write_text("")
    (root / "recipe" / "helpers" / "tools.py").write_text(HELPERS.format(tool=urls["tool"]))
    (root / "config" / "exp.py").write_text(
        CONFIG.format(
            tool0=commits["tool"][0],
            tool1=commits["tool"][1],
            rc=urls["rc"],
            rc0=commits["rc"][0],
            lm=urls["lm"],
            sctk=urls["sctk"],
        )
    )
    monkeypatch.setenv("PYTHONPATH", str(real_sisyphus))
    monkeypatch.chdir(root)
    return Existing(root, urls, commits)


def adopt(*more: str) -> int:
    return main(["import", "config", "recipe", "--set", "exp", "--config", "config/exp.py", *more])


def adopted(*, write: bool = True, accept_unpinned: bool = True) -> ImportResult:
    """``pin import config recipe --set exp --config config/exp.py``'s use case: the whole setup adopted"""
    paths = [Path("config"), Path("recipe")]
    return import_pins(paths, set_name="exp", write=write, configs=["config/exp.py"], accept_unpinned=accept_unpinned)


def test_unpinned_clones_are_listed_with_the_entry_that_accepts_them_and_nothing_is_written(existing):
    result = adopted(accept_unpinned=False)
    for name in ("lm", "sctk"):
        url = existing.urls[name]
        accept = f"{url} is cloned without a full commit: accept it with allow_unpinned = [{url!r}]"
        assert any(str(problem).startswith(accept) for problem in result.problems)
    assert result.written is None and not (existing.root / "pin.toml").exists()


def test_adoption_keeps_every_id_and_the_set_passes_check_and_snapshot(existing, capsys):
    plain = existing.plain_ids()
    assert len(plain) == 8
    assert adopt("--accept-unpinned", "--write") == 0
    out = capsys.readouterr().out
    assert "8 of 8 outputs keep their job id" in out
    assert "pin.toml: sets.exp adopted (3 new pins, 2 hash_overwrite aliases); pin.snapshot.toml: 8 outputs" in out
    assert "hash_overwrite 'TOOL_OLD' bound to it" in out and "hash_overwrite 'TOOL_NEW' bound to it" in out
    lock = load_lockfile(existing.root / "pin.toml")
    pins = lock.get_set("exp").pins
    assert {pin.commit for pin in pins.values()} == {*existing.commits["tool"][:2], existing.commits["rc"][0]}
    assert sorted(pin.hash_overwrite for pin in pins.values() if pin.hash_overwrite) == ["TOOL_NEW", "TOOL_OLD"]
    assert lock.get_set("exp").allow_unpinned == (existing.urls["lm"], existing.urls["sctk"])
    assert lock.get_set("exp").allow_hash_overwrite == (existing.urls["lm"],), "the one carrying an overwrite"
    assert existing.snapshot_ids() == plain, "the recorded ids are the ones plain Sisyphus computes"
    assert main(["check", "--offline"]) == 0, capsys.readouterr().out
    assert main(["snapshot"]) == 0
    assert "exp: 8 outputs, " in capsys.readouterr().out
    assert existing.plain_ids() == plain, "no config changed"
    assert existing.snapshot_ids() == plain


def test_git_status_stays_clean_after_every_command(existing, capsys):
    # a setup in git as they are kept: work/ ignored, everything else tracked
    (existing.root / ".gitignore").write_text("work/\n")
    commit_setup(existing.root)

    def status() -> str:
        return git(existing.root, "status", "--porcelain", "--untracked-files=all")

    assert adopt("--accept-unpinned", "--write") == 0
    assert status() == "?? pin.snapshot.toml\n?? pin.toml", "what the adoption wrote, and nothing of sispin's own"
    git(existing.root, "add", "pin.toml", "pin.snapshot.toml")
    git(existing.root, "commit", "-q", "-m", "adopted")
    for command in (["sync"], ["snapshot"], ["check", "--offline"], ["status"], ["upgrade", "exp", "rc", "--dry-run"]):
        assert main(command) in (0, 3), (command, capsys.readouterr())
        assert status() == "", command
    assert main(["upgrade", "exp", "rc"]) == 0, capsys.readouterr()
    # (status() is stripped: " M pin.toml" reads "M pin.toml")
    changed = status().splitlines()
    assert "M pin.toml" in changed and set(changed) <= {"M pin.toml", " M pin.snapshot.toml"}, "no lock file beside"


def test_a_bound_commit_moved_in_pin_toml_alone_fails_check_naming_the_assignment(existing, capsys):
    assert adopted().written
    lock = existing.root / "pin.toml"
    old, newer = existing.commits["tool"][0], existing.commits["tool"][2]
    lock.write_text(lock.read_text().replace(old, newer))
    assert main(["check", "--offline"]) == 1
    out = capsys.readouterr().out
    assert "recipe/helpers/tools.py:10" in out, out


def test_a_call_moved_to_exp_repo_later_keeps_its_ids(existing, capsys):
    assert adopt("--accept-unpinned", "--write") == 0
    out = capsys.readouterr().out
    plain = existing.plain_ids()
    rc = load_lockfile(existing.root / "pin.toml").get_set("exp").pins
    name = next(name for name, pin in rc.items() if pin.commit == existing.commits["rc"][0])
    config = existing.root / "config" / "exp.py"
    text = config.read_text()
    call = next(line for line in text.splitlines() if "rc = CloneGitRepositoryJob(" in line)
    config.write_text(
        text.replace(call, f'    rc = experiment_set("exp").repo("{name}")').replace(
            "from helpers.tools", "from sispin import experiment_set\nfrom helpers.tools"
        )
    )
    assert f'replace with: experiment_set("exp").repo("{name}")' in out
    assert main(["check", "--offline"]) == 0, capsys.readouterr().out
    assert existing.plain_ids() == plain


def test_an_adoption_that_would_change_an_id_writes_nothing(existing):
    # one clone carries two overwrite values at one commit: no single alias keeps the ids of both
    config = existing.root / "config" / "exp.py"
    second = 'other = old.copy()\n    other.hash_overwrite = "SECOND"\n    uses = [other, '
    config.write_text(config.read_text().replace("uses = [", second))
    result = adopted()
    assert f"{existing.commits['tool'][0][:7]} carries 2 hash_overwrite values (set at config/exp.py:" in "\n".join(
        map(str, result.problems)
    )
    assert result.written is None and not (existing.root / "pin.toml").exists()


def test_one_value_at_two_commits_that_merges_two_jobs_is_not_adopted(existing):
    # the ids are the same before and after, and wrong in both: two commits' jobs are one job
    config = existing.root / "config" / "exp.py"
    merged = '"TOOL_OLD")\n    tk.register_output("exp/merged", Use(new, 0).out)'
    config.write_text(config.read_text().replace('"TOOL_NEW")', merged))
    result = adopted()
    assert (result.whole.kept, result.whole.outputs) == (9, 9)
    (problem,) = map(str, result.problems)
    assert problem.startswith("sets.exp: config/exp.py:") and "hides: one job would stand for both" in problem
    assert result.written is None and not (existing.root / "pin.toml").exists()


def test_a_value_another_set_binds_to_another_commit_is_not_adopted(existing):
    other = existing.commits["tool"][2]
    (existing.root / "pin.toml").write_text(
        f'version = 1\n\n[repos.t]\nurl = "{existing.urls["tool"]}"\n\n'
        f'[sets.other]\nt = {{ commit = "{other}", hash_overwrite = "TOOL_OLD" }}\n'
    )
    text = (existing.root / "pin.toml").read_text()
    (problem,) = map(str, adopted().problems)
    assert problem.startswith("the adopted pins would not make a valid pin.toml: ") and "'TOOL_OLD'" in problem
    assert (existing.root / "pin.toml").read_text() == text


def test_an_output_whose_id_the_adopted_lock_would_change_is_named_and_nothing_written(existing, monkeypatch, capsys):
    # the pins never change a hand-written clone's id; should a build against them differ (a defect of sispin's own),
    # the adoption must refuse: simulated on the real second build, one output's job renamed
    from sispin.adopt import setup

    builds = []

    def load_graph(*args, **kwargs):
        graph = real_load_graph(*args, **kwargs)
        builds.append(graph)
        if len(builds) % 2 == 0:  # the build against the adopted lock
            graph.outputs["exp/2"] = RecordedOutput("i6_core/other/Job.x", graph.outputs["exp/2"].path)
        return graph

    real_load_graph = setup.load_graph
    monkeypatch.setattr(setup, "load_graph", load_graph)
    result = adopted()
    assert (result.whole.kept, result.whole.outputs) == (7, 8)
    assert [str(problem) for problem in result.problems] == ["1 of 8 outputs would get another job id: exp/2"]
    assert main(["import", "config", "--set", "exp", "--config", "config/exp.py", "--accept-unpinned", "-v"]) == 1
    assert f"    output exp/2: {builds[2].outputs['exp/2'].job} -> i6_core/other/Job.x" in capsys.readouterr().out
    assert not (existing.root / "pin.toml").exists()


def test_json_carries_the_adoption(existing, capsys):
    assert adopt("--accept-unpinned", "--json") == 0
    report = json.loads(capsys.readouterr().out)["setup"]
    assert (report["outputs"], report["kept"], report["clones"], report["problems"]) == (8, 8, 5, [])
    assert sorted(report["aliases"].values()) == ["TOOL_NEW", "TOOL_OLD"]
    assert report["unpinned"] == sorted([existing.urls["lm"], existing.urls["sctk"]]) and report["accepted"]
    assert not (existing.root / "pin.toml").exists(), "nothing written without --write"


def test_a_call_no_config_builds_is_not_pinned(existing):
    unused = existing.commits["rc"][2]
    (existing.root / "recipe" / "helpers" / "unused.py").write_text(
        "from i6_core.tools.git import CloneGitRepositoryJob\n\n"
        f"OLD = CloneGitRepositoryJob({existing.urls['rc']!r}, commit={unused!r})\n"
    )
    result = adopted()
    assert not result.problems and result.written
    (call,) = [call for call in result.calls if call.site.where == "recipe/helpers/unused.py:3"]
    assert call.unbuilt and call.entry is not None, "it has an entry of its own, which no config builds"
    assert unused not in (existing.root / "pin.toml").read_text()


def test_running_it_again_adds_nothing_and_never_records_a_changed_id(existing, capsys):
    assert adopted().written
    lock, snapshot = existing.root / "pin.toml", existing.root / "pin.snapshot.toml"
    written = lock.read_text(), snapshot.read_text()
    assert adopted().written == "pin.toml: sets.exp pins what its configs build already; nothing to add"
    assert (lock.read_text(), snapshot.read_text()) == written
    # a change of the configs since the set was recorded is the user's to review, never the adoption's to record
    config = existing.root / "config" / "exp.py"
    config.write_text(config.read_text().replace("Use(thing, number)", "Use(thing, number + 1)"))
    assert adopt("--accept-unpinned", "--write") == 1
    out = capsys.readouterr().out
    assert "problem: sets.exp already differs from pin.snapshot.toml in 8 outputs (exp/0, " in out
    assert "pin.toml: nothing written (1 problem above)" in out
    assert (lock.read_text(), snapshot.read_text()) == written


MOVING = (
    """\
from i6_core.tools.git import CloneGitRepositoryJob
from sisyphus import Job, Task, tk


"""
    + USE_JOB
    + """

def py():
    own = CloneGitRepositoryJob({lm!r}, commit={lm0!r}).out_repository
    own.hash_overwrite = "OWN"
    tk.register_output("m/own", Use(own).out)
    rc = CloneGitRepositoryJob({rc!r}, commit={rc0!r}).out_repository
    legacy = rc.copy()
    legacy.hash_overwrite = "ON_A_COPY"
    tk.register_output("m/legacy", Use(legacy).out)
    tk.register_output("m/plain", Use(rc).out)
"""
)


def test_moving_a_call_to_exp_repo_is_advised_only_where_it_keeps_the_ids(existing, capsys):
    (existing.root / "config" / "exp.py").write_text(
        MOVING.format(
            lm=existing.urls["lm"], lm0=existing.commits["lm"][0], rc=existing.urls["rc"], rc0=existing.commits["rc"][0]
        )
    )
    result = import_pins([Path("config")], set_name="exp", write=False, configs=["config/exp.py"])
    assert not result.problems
    notes = [note for note in result.notes if "pin.toml binds its hash_overwrite" in note]
    assert len(notes) == 2, notes
    assert notes[0].startswith("config/exp.py:15: ") and "exp.repo() applies the same (same ids" in notes[0]
    assert notes[1].startswith("config/exp.py:18: ") and "keep this call as written" in notes[1]
    messages = {call.site.line: [reason.message for reason in call.reasons] for call in result.calls}
    assert messages[15] == [notes[0].split(": ", 1)[1]] and messages[18] == [notes[1].split(": ", 1)[1]]
    # one advice per call, in its line, its note and --json: the call kept as written is never offered a replacement
    assert {call.site.line: call.kept for call in result.calls} == {15: False, 18: True}
    capsys.readouterr()
    assert main(["import", "config", "--set", "exp", "--config", "config/exp.py"]) == 0
    report = capsys.readouterr().out
    moved, kept = (report.split("\nconfig/exp.py:")[index].split("\n\n")[0].splitlines()[-1] for index in (1, 2))
    assert moved.startswith('    replace with: experiment_set("exp").repo("lm")  (same job id '), report
    assert kept == "    keep as written until the pin is upgraded (pin.toml binds its hash_overwrite)", report
    assert report.count("replace with") == 1
    assert main(["import", "config", "--set", "exp", "--config", "config/exp.py", "--json"]) == 0
    calls = {call["line"]: call for call in json.loads(capsys.readouterr().out)["call_sites"]}
    assert (calls[15]["replacement"], calls[15]["kept_as_written"]) == ('exp.repo("lm")', False)
    assert (calls[18]["replacement"], calls[18]["kept_as_written"]) == (None, True)


@pytest.mark.parametrize(
    "call, expected",
    [
        ("CloneGitRepositoryJob({rc!r}, commit={upper!r})", "a full SHA in uppercase"),
        ("CloneGitRepositoryJob({rc!r}, branch='main')", "is cloned both at a pinned commit and without one"),
    ],
    ids=["uppercase SHA", "pinned and unpinned"],
)
def test_a_clone_that_cannot_be_adopted_is_said_and_not_accepted_unpinned(existing, call, expected):
    config = existing.root / "config" / "exp.py"
    more = call.format(rc=existing.urls["rc"], upper=existing.commits["rc"][0].upper())
    config.write_text(config.read_text().replace("uses = [", f"other = {more}.out_repository\n    uses = [other, "))
    result = adopted()
    assert expected in "\n".join(map(str, result.problems))
    assert result.written is None and not (existing.root / "pin.toml").exists()


def test_an_existing_pin_without_the_alias_is_named_with_the_edit_it_needs(existing):
    # the calls adopted first without --config: their pins bind no overwrite
    calls_alone = import_pins([Path("config"), Path("recipe")], set_name="exp", write=True)
    assert calls_alone.problems and calls_alone.written, "the unpinned calls are blocked, the others written"
    problems = "\n".join(map(str, adopted().problems))
    tool0 = existing.commits["tool"][0]
    assert "without binding hash_overwrite 'TOOL_OLD' (set at recipe/helpers/tools.py:10): write it as " in problems
    assert f'= {{ commit = "{tool0}", hash_overwrite = "TOOL_OLD" }}' in problems


def test_json_with_write_is_one_document_that_says_what_was_written(existing, capsys):
    assert adopt("--accept-unpinned", "--write", "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["written"].startswith("pin.toml: sets.exp adopted (")
    assert sorted(pin["hash_overwrite"] for pin in report["pins"].values() if isinstance(pin, dict)) == [
        "TOOL_NEW",
        "TOOL_OLD",
    ]
    assert not any("refuses" in note for note in report["notes"])


def test_configs_are_given_relative_to_the_setup_root(existing, capsys):
    assert main(["import", "config", "--set", "exp", "--config", str(existing.root / "config/exp.py")]) == 2
    assert "give it relative to the setup root" in capsys.readouterr().err
    normalized = import_pins(
        [Path("config")], set_name="exp", write=True, configs=["./config/exp.py"], accept_unpinned=True
    )
    assert normalized.whole.configs == ["config/exp.py"] and normalized.written
    assert load_lockfile(existing.root / "pin.toml").get_set("exp").configs == ("config/exp.py",)
