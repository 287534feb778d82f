"""
``pin explain``, the explanations in ``pin check`` and the upgrade advisor, on real Sisyphus + i6_core: each change
is explained by argument path, old -> new, from a live old graph and from pin.snapshot.toml alone.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from conftest import commit_setup, git, git_commit
from results import checked, differences, explained
from scenarios import age_files
from sispin.cli.main import main
from sispin.graph import against
from sispin.graph.build import load_graph, processors
from sispin.graph.explain import RecordsCompared, argument_order, compare_set
from sispin.graph.probe.schema import Arg, JobRecord, RecordedOutput, SetGraph
from sispin.lock.loading import load_lockfile
from sispin.ops import explain as ops_explain

CONFIG = """\
from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
from i6_core.text.processing import WriteToTextFileJob
from sisyphus import Job, Task, tk

from sispin import experiment_set

LEARNING_RATE = 1e-3
VERBOSE = False
SIZE = 4


class Excluding(Job):
    # verbose=False is left out of the hash, so that adding the argument kept the ids of existing jobs
    __sis_hash_exclude__ = {"verbose": False}

    def __init__(self, size, verbose=False):
        self.size = size
        self.verbose = verbose
        self.out = self.output_path("out")

    def tasks(self):
        yield Task("run")


class OwnHash(Job):
    def __init__(self, size, comment):
        self.size = size
        self.comment = comment
        self.out = self.output_path("out")

    @classmethod
    def hash(cls, parsed_args):
        return super().hash({"size": parsed_args["size"]})

    def tasks(self):
        yield Task("run")


def py():
    exp = experiment_set("exp")
    root = exp.repo("rc")
    with exp.imported("rc"):
        import rc

        network = rc.network()
    config = WriteReturnnConfigJob(
        ReturnnConfig({"learning_rate": LEARNING_RATE, "network": network, "rc_root": root}, black_formatting=False)
    )
    tk.register_output("exp/config", config.out_returnn_config_file)
    tk.register_output("exp/copy", WriteToTextFileJob(config.out_returnn_config_file).out_file)
    tk.register_output("exp/excluding", Excluding(SIZE, verbose=VERBOSE).out)
    tk.register_output("exp/own_hash", OwnHash(SIZE, "a comment").out)
"""


def network_code(layers: int, note: str = "") -> dict:
    return {"__init__.py": f"# {note}\ndef network():\n    return {{'layers': {layers}, 'activation': 'relu'}}\n"}


class Setup:
    def __init__(self, root: Path, commits: list):
        self.root = root
        self.c = commits

    @property
    def config(self) -> Path:
        return self.root / "config" / "exp.py"

    def edit(self, old: str, new: str) -> None:
        self.config.write_text(self.config.read_text().replace(old, new))

    def graph(self):
        return load_graph(load_lockfile(self.root / "pin.toml"), "exp", records="all")

    def pin(self, commit: str) -> None:
        lock = self.root / "pin.toml"
        lock.write_text(lock.read_text().replace(self.c[0], commit))


@pytest.fixture
def setup(real_setup, make_repo) -> Setup:
    remote = make_repo("rc")
    commits = [
        git_commit(remote, network_code(1, "first"), "first"),
        git_commit(remote, network_code(1, "same network, other comment"), "cosmetic"),
        git_commit(remote, network_code(2, "deeper"), "deeper"),
    ]
    tables = (
        f'[repos.rc]\nurl = "file://{remote}"\nbranch = "main"\ncheckout = "rc"\n\n'
        f'[sets.exp]\nconfigs = ["config/exp.py"]\nrc = "{commits[0]}"\n'
    )
    root = real_setup(tables, {"exp.py": CONFIG})
    return Setup(root, commits)


def _lines(explanation) -> list:
    return [
        (cause.new.rsplit("/", 1)[-1].split(".")[0], d.path, d.old and d.old.value, d.new and d.new.value)
        for cause in explanation.causes
        for d in cause.differences
    ]


CASES = {
    # name: (edit of the config, output, expected (job class, argument path, old, new))
    "learning rate": (
        ("LEARNING_RATE = 1e-3", "LEARNING_RATE = 2e-3"),
        "exp/config",
        ("WriteReturnnConfigJob", "returnn_config.config['learning_rate']", "0.001", "0.002"),
    ),
    "two jobs deep": (
        ("LEARNING_RATE = 1e-3", "LEARNING_RATE = 2e-3"),
        "exp/copy",
        ("WriteReturnnConfigJob", "returnn_config.config['learning_rate']", "0.001", "0.002"),
    ),
    "hash exclude": (("VERBOSE = False", "VERBOSE = True"), "exp/excluding", ("Excluding", "verbose", None, "True")),
    "own hash": (("SIZE = 4", "SIZE = 5"), "exp/own_hash", ("OwnHash", "size", "4", "5")),
}


def test_outputs_that_reach_one_changed_job_are_explained_as_each_alone(setup):
    before = setup.graph()
    setup.edit("LEARNING_RATE = 1e-3", "LEARNING_RATE = 2e-3")
    after = setup.graph()
    compared = RecordsCompared(before.records, after.records)
    outputs = ["exp/copy", "exp/config"]  # the copy first: the config's job is compared on the way down to it
    shared = [compared.explain(name, before.outputs[name].job, after.outputs[name].job) for name in outputs]
    alone = [
        RecordsCompared(before.records, after.records).explain(name, before.outputs[name].job, after.outputs[name].job)
        for name in outputs
    ]
    assert shared == alone
    assert [len(e.causes[0].via) for e in shared] == [1, 0], "each output's path down to the cause is its own"


@pytest.mark.parametrize("case", list(CASES))
def test_a_change_is_explained_from_a_live_graph_and_from_the_snapshot(setup, capsys, case):
    (old_text, new_text), output, expected = CASES[case]
    assert main(["snapshot"]) == 0
    before = setup.graph()
    setup.edit(old_text, new_text)
    after = setup.graph()
    compared = RecordsCompared(before.records, after.records)
    live = compared.explain(output, before.outputs[output].job, after.outputs[output].job)
    assert _lines(live) == [expected], case

    capsys.readouterr()
    assert main(["explain", "--output", output]) == 1
    out = capsys.readouterr().out.splitlines()
    old_value = expected[2] if expected[2] is not None else "(absent)"
    assert f"  because  {expected[1]}: {old_value} -> {expected[3]}" in out, out
    if case == "two jobs deep":
        assert any(line.startswith("  via      content: WriteReturnnConfigJob.") for line in out), out
    if case == "own hash":
        assert "  note     OwnHash defines its own hash(): these are its arguments, what it hashes may differ" in out


def test_a_pin_move_is_named_with_its_set_and_repository(setup, capsys):
    assert main(["snapshot"]) == 0
    setup.pin(setup.c[1])
    capsys.readouterr()
    assert main(["explain", "--json"]) == 1
    report = {entry["output"]: entry for entry in json.loads(capsys.readouterr().out)}
    assert sorted(report) == ["exp/config", "exp/copy"], "the outputs that do not use rc keep their ids"
    [cause] = report["exp/config"]["causes"]
    assert cause["pin_moved"] == "sets.exp.rc"
    assert [(d["path"], d["old"]["value"], d["new"]["value"]) for d in cause["differences"]] == [
        ("commit", repr(setup.c[0]), repr(setup.c[1]))
    ]
    assert main(["check", "--offline"]) == 1
    out = capsys.readouterr().out
    assert f"because commit: {setup.c[0][:7]} -> {setup.c[1][:7]} in CloneGitRepositoryJob." in out


def test_advisor_tells_a_commit_only_move_from_a_content_change(setup, capsys):
    assert main(["snapshot"]) == 0
    capsys.readouterr()
    assert main(["upgrade", "exp", "--to", setup.c[1][:10], "rc", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "  2 outputs (exp/config, exp/copy): only the pinned commit changes" in out, out
    assert main(["upgrade", "exp", "--to", setup.c[1], "rc"]) == 0
    capsys.readouterr()
    assert main(["upgrade", "exp", "rc", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert (
        "outputs (exp/config, exp/copy): content changes too\n"
        "      returnn_config.config['network']['layers']: 1 -> 2\n" in out
    ), out
    assert main(["upgrade", "exp", "rc", "--dry-run", "--verbose"]) == 0
    assert "    exp/copy: returnn_config.config['network']['layers']: 1 -> 2\n" in capsys.readouterr().out


def test_upgrade_refuses_to_absorb_an_unrecorded_change(setup, capsys):
    assert main(["snapshot"]) == 0
    setup.edit("LEARNING_RATE = 1e-3", "LEARNING_RATE = 2e-3")
    before = (setup.root / "pin.toml").read_text()
    capsys.readouterr()
    assert main(["upgrade", "exp", "--to", setup.c[2], "rc"]) == 8
    captured = capsys.readouterr()
    assert "drift: output/exp/config: " in captured.out
    assert "because returnn_config.config['learning_rate']: 0.001 -> 0.002" in captured.out
    assert "already differs from pin.snapshot.toml before the move" in captured.err
    assert (setup.root / "pin.toml").read_text() == before
    assert main(["upgrade", "exp", "--to", setup.c[2], "rc", "--accept-drift"]) == 0
    assert main(["check", "--offline"]) == 0, "the accepted difference is in the new snapshot"


def test_a_dry_run_of_a_downgrade_shows_the_move_and_the_flag_it_needs(setup, capsys):
    setup.pin(setup.c[2])
    assert main(["snapshot"]) == 0
    capsys.readouterr()
    assert main(["upgrade", "exp", "--to", setup.c[0], "rc", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "(downgrade: 2 commits back)" in out and "Blast radius: " in out
    assert "the real move needs --allow-downgrade" in out


def test_snapshot_says_unchanged_and_a_new_output_hints_at_snapshot(setup, capsys):
    assert main(["snapshot"]) == 0
    capsys.readouterr()
    assert main(["snapshot"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "pin.snapshot.toml: unchanged"
    setup.edit(
        '    tk.register_output("exp/own_hash"',
        '    tk.register_output("exp/extra", OwnHash(9, "x").out)\n    tk.register_output("exp/own_hash"',
    )
    assert main(["check", "--offline"]) == 1
    assert "new outputs not in the snapshot (run `pin snapshot` to record them): exp/extra" in capsys.readouterr().out
    assert main(["explain"]) == 1
    assert "(new output: run `pin snapshot` to record it)" in capsys.readouterr().out


def test_the_advisor_says_one_argument_change_once_however_many_jobs_carry_it(setup, capsys):
    # the changed network reaches exp/twice through two jobs that both hash it
    setup.edit(
        '    tk.register_output("exp/excluding"',
        '    again = ReturnnConfig({"network": network, "prev": config.out_returnn_config_file})\n'
        "    twice = WriteReturnnConfigJob(again)\n"
        '    tk.register_output("exp/twice", twice.out_returnn_config_file)\n'
        '    tk.register_output("exp/excluding"',
    )
    assert main(["upgrade", "exp", "--to", setup.c[1], "rc"]) == 0
    capsys.readouterr()
    assert main(["upgrade", "exp", "rc", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "3 outputs (exp/config, exp/copy, exp/twice): content changes too\n" in out, out
    assert out.count("returnn_config.config['network']['layers']: 1 -> 2\n") == 1, out


def test_list_positions_are_explained_in_numeric_order():
    paths = ["config['lr'][10]", "config['lr'][2]", "config['lr'][1]", "config['b']", "config['lr'][1][20]"]
    assert sorted(paths, key=argument_order) == [
        "config['b']",
        "config['lr'][1]",
        "config['lr'][1][20]",
        "config['lr'][2]",
        "config['lr'][10]",
    ]


def test_against_a_revision_the_old_graph_is_built_from_the_setups_own_history(setup, capsys):
    # no snapshot and no records at all: the committed configs are the baseline; the checkouts are not in git
    (setup.root / ".gitignore").write_text("/tools/\n/recipe/i6_core\n/recipe/sispin\n")
    commit_setup(setup.root)
    setup.edit("LEARNING_RATE = 1e-3", "LEARNING_RATE = 2e-3")
    assert main(["explain", "--against", "HEAD"]) == 1
    out = capsys.readouterr().out
    assert "  because  returnn_config.config['learning_rate']: 0.001 -> 0.002" in out, out
    assert not (setup.root / "pin.snapshot.toml").exists()
    git(setup.root, "commit", "-q", "-am", "faster")
    same = explained(against="HEAD")
    assert not same.outputs and same.baseline == "it had at HEAD"
    changed = explained(against="HEAD~1", output="exp/copy")
    assert [e.explanation.output for e in changed.outputs] == ["exp/copy"]
    assert differences(changed) == ["returnn_config.config['learning_rate']: 0.001 -> 0.002"]
    assert git(setup.root, "status", "--porcelain") == "", "the working tree, index and worktrees are untouched"


def test_against_a_revision_a_change_read_through_a_tracked_symlink_is_explained(setup, capsys):
    # the config reads config/data/lr.txt, a folder linked to shared/: git names the change shared/lr.txt; a pass that
    # took git's word for what differs at the revision said "every output has the job id it had at HEAD"
    (setup.root / "shared").mkdir()
    (setup.root / "shared" / "lr.txt").write_text("0.001\n")
    (setup.root / "config" / "data").symlink_to(Path("..") / "shared")
    setup.edit("LEARNING_RATE = 1e-3", 'LEARNING_RATE = float(open("config/data/lr.txt").read())')
    (setup.root / ".gitignore").write_text("/tools/\n/recipe/i6_core\n/recipe/sispin\n")
    commit_setup(setup.root)
    (setup.root / "shared" / "lr.txt").write_text("0.002\n")
    assert main(["snapshot"]) == 0
    age_files(setup.root)
    assert not checked().problems and not checked().built, "the set's pass kept, with what it read now"
    capsys.readouterr()
    assert main(["explain", "--against", "HEAD"]) == 1
    assert "because  returnn_config.config['learning_rate']: 0.001 -> 0.002" in capsys.readouterr().out


def test_against_a_revision_the_old_build_has_every_file_git_does_not_hold_at_any_depth(setup, capsys):
    # a generated module (or compiled extension) deep in the recipe tree, ignored by git, imported by the config
    deep = setup.root / "recipe" / "tools_of_mine" / "a" / "b" / "c"
    deep.mkdir(parents=True)
    for folder in (deep, *list(deep.parents)[:3]):
        (folder / "__init__.py").write_text("")
    (deep / "generated.py").write_text("SCALE = 1\n")
    (setup.root / ".gitignore").write_text("/tools/\n/recipe/i6_core\n/recipe/sispin\ngenerated.py\n")
    setup.edit("LEARNING_RATE = 1e-3", "from tools_of_mine.a.b.c.generated import SCALE\nLEARNING_RATE = 1e-3")
    commit_setup(setup.root)
    setup.edit("LEARNING_RATE = 1e-3", "LEARNING_RATE = 2e-3")
    assert differences(explained(against="HEAD", output="exp/config")) == [
        "returnn_config.config['learning_rate']: 0.001 -> 0.002"
    ]


def test_against_a_revision_a_file_git_holds_now_but_not_then_stays_out_of_the_old_build(setup, capsys):
    mine = setup.root / "recipe" / "mine"
    mine.mkdir()
    (mine / "__init__.py").write_text("")
    (mine / "scale.py").write_text("SCALE = 1\n")
    setup.edit("LEARNING_RATE = 1e-3", "from mine.scale import SCALE\nLEARNING_RATE = 1e-3 * SCALE")
    (setup.root / ".gitignore").write_text("/tools/\n/recipe/i6_core\n/recipe/sispin\n")
    commit_setup(setup.root)
    # the module became a package since: linked into the old copy, it would shadow the revision's module there
    (mine / "scale.py").unlink()
    (mine / "scale").mkdir()
    (mine / "scale" / "__init__.py").write_text("SCALE = 2\n")
    git(setup.root, "add", "-A")
    assert differences(explained(against="HEAD", output="exp/config")) == [
        "returnn_config.config['learning_rate']: 0.001 -> 0.002"
    ]


def _committed_with_outputs(setup, registrations: str) -> None:
    """Add the registrations (lines of py(), which may use os) to the config, and commit the setup as it is."""
    setup.edit("from sispin import experiment_set", "import os\n\nfrom sispin import experiment_set")
    setup.edit('    tk.register_output("exp/own_hash"', registrations + '    tk.register_output("exp/own_hash"')
    (setup.root / ".gitignore").write_text("/tools/\n/recipe/i6_core\n/recipe/sispin\n")
    commit_setup(setup.root)


def test_against_a_revision_a_value_derived_from_where_the_config_runs_is_no_change(setup, capsys):
    # the job hashes its size only and keeps the folder of the config (as i6_core keeps a root_path): the old build
    # runs in a temporary copy, whose location must not read as a change the revision made
    _committed_with_outputs(
        setup,
        "    here = os.path.dirname(os.path.abspath(__file__))\n"
        '    tk.register_output("exp/located", OwnHash(LEARNING_RATE, here).out)\n'
        # a value too long for a record to keep its text (only its digest): the location is written before it
        '    tk.register_output("exp/deep", OwnHash(LEARNING_RATE * 3, os.path.join(here, "d" * 130)).out)\n',
    )
    setup.edit("LEARNING_RATE = 1e-3", "LEARNING_RATE = 2e-3")
    assert differences(explained(against="HEAD", output="exp/located")) == ["size: 0.001 -> 0.002"]
    assert differences(explained(against="HEAD", output="exp/deep")) == ["size: 0.003 -> 0.006"]


@pytest.mark.parametrize(
    "reads",
    [
        "os.path.join(os.path.dirname(os.path.realpath(__file__)), '..', '..', 'data', 'scale.txt')",
        "os.path.join(os.path.dirname(__file__), 'data', 'scale.txt')",  # through a relative symlink git holds
    ],
    ids=["its own location resolved", "a tracked relative symlink"],
)
def test_against_a_revision_recipe_code_reads_the_revisions_files_however_it_reaches_them(setup, capsys, reads):
    # a module that reads a data file of the setup next to it, the way recipe code finds its own files: the old
    # build must read the file as the revision had it, never today's through a link back into the setup
    mine = setup.root / "recipe" / "mine"
    mine.mkdir()
    (mine / "__init__.py").write_text(f"import os\n\nSCALE = float(open({reads}).read())\n")
    os.symlink("../../data", mine / "data")
    (setup.root / "data").mkdir()
    (setup.root / "data" / "scale.txt").write_text("1\n")
    setup.edit("LEARNING_RATE = 1e-3", "from mine import SCALE\nLEARNING_RATE = 1e-3 * SCALE")
    (setup.root / ".gitignore").write_text("/tools/\n/recipe/i6_core\n/recipe/sispin\n")
    commit_setup(setup.root)
    (setup.root / "data" / "scale.txt").write_text("2\n")
    assert differences(explained(against="HEAD", output="exp/config")) == [
        "returnn_config.config['learning_rate']: 0.001 -> 0.002"
    ]


def test_against_a_revision_a_job_that_hashes_the_setups_location_is_said_to_differ_there_alone(setup, capsys):
    _committed_with_outputs(
        setup,
        '    tk.register_output("exp/here", WriteToTextFileJob(os.path.dirname(os.path.abspath(__file__))).out_file)\n',
    )
    # nothing changed: only the temporary copy the old graph is built in is elsewhere, and this job hashes where
    (changed,) = explained(against="HEAD").outputs
    assert changed.explanation.output == "exp/here"
    assert [cause.reason for cause in changed.explanation.causes] == [
        "every recorded argument is equal once the setup's location is written as its own: the job hashes where the "
        "setup is (a path of it, as text), and the old graph was built in a temporary copy of the setup; its id "
        "differs there alone"
    ]


def test_against_a_revision_git_does_not_know_is_one_line(setup, capsys):
    assert main(["explain", "--against", "HEAD"]) == 5
    assert "is in no git repository: --against needs the setup's history" in capsys.readouterr().err
    commit_setup(setup.root)
    assert main(["explain", "--against", "nosuchbranch"]) == 5
    err = capsys.readouterr().err
    assert err == f"pin: error: no commit 'nosuchbranch' in the setup's repository ({setup.root.resolve()})\n", err


def test_against_a_revision_of_a_repository_that_holds_the_setup_in_a_folder(setup, capsys):
    top = setup.root.parent
    git(top, "init", "-q", "-b", "main")
    git(top, "add", "setup")
    git(top, "commit", "-q", "-m", "setup in a folder")
    setup.edit("LEARNING_RATE = 1e-3", "LEARNING_RATE = 3e-3")
    assert "returnn_config.config['learning_rate']: 0.001 -> 0.003" in differences(explained(against="main"))


def test_without_the_local_records_explain_points_to_the_history(setup, capsys):
    assert main(["snapshot"]) == 0
    shutil.rmtree(setup.root / ".sispin-cache")
    setup.edit("LEARNING_RATE = 1e-3", "LEARNING_RATE = 2e-3")
    capsys.readouterr()
    assert main(["explain", "--output", "exp/config"]) == 1
    assert "because  no record of the old job's arguments here (`pin explain --against REV` builds" in (
        capsys.readouterr().out
    )


def test_a_snapshot_records_what_a_job_holds_now_even_where_its_id_stayed(setup, capsys):
    # OwnHash leaves its comment out of its id: the record of the same id must still be the one of the last snapshot
    assert main(["snapshot"]) == 0
    setup.edit('OwnHash(SIZE, "a comment")', 'OwnHash(SIZE, "new comment")')
    assert main(["snapshot"]) == 0
    setup.edit("SIZE = 4", "SIZE = 5")
    capsys.readouterr()
    assert main(["explain", "--output", "exp/own_hash"]) == 1
    out = capsys.readouterr().out
    assert "because  size: 4 -> 5" in out and "comment" not in out.split("because", 1)[1].split("note")[0], out


def test_against_a_revision_every_committed_file_is_used_and_its_errors_name_the_revision(setup, capsys):
    # export-ignore (a packaging rule) must not make today's config stand in for the committed one
    (setup.root / ".gitattributes").write_text("config/** export-ignore\n")
    commit_setup(setup.root)
    setup.edit("LEARNING_RATE = 1e-3", "LEARNING_RATE = 2e-3")
    assert differences(explained(against="HEAD", output="exp/config")) == [
        "returnn_config.config['learning_rate']: 0.001 -> 0.002"
    ]
    config = setup.root / "config" / "exp.py"
    good = config.read_text()
    config.write_text(good.replace("def py():", "def py():\n    raise RuntimeError('boom')"))
    git(setup.root, "commit", "-q", "-am", "broken")
    config.write_text(good)
    assert main(["explain", "--against", "HEAD"]) == 9
    err = capsys.readouterr().err
    assert "pin: error: at HEAD: loading the configs of set 'exp' failed: config/exp.py:" in err and "boom" in err, err
    lock = setup.root / "pin.toml"
    text = lock.read_text()
    lock.write_text("[broken\n")
    git(setup.root, "commit", "-q", "-am", "broken lock")
    lock.write_text(text)
    assert main(["explain", "--against", "HEAD"]) == 3
    assert "pin: error: at HEAD: HEAD:pin.toml: invalid TOML" in capsys.readouterr().err


#: config code that makes each build where SISPIN_TEST_MEETING names a folder wait (at most 20 s) until a second
#: build started too, and note whether it did: two builds one after the other never meet
MEETING = """\
def py():
    import os, time
    from pathlib import Path

    if os.environ.get("SISPIN_TEST_MEETING"):
        meeting = Path(os.environ["SISPIN_TEST_MEETING"])
        (meeting / str(os.getpid())).write_text("waiting")
        deadline = time.time() + 20
        while len(list(meeting.iterdir())) < 2 and time.time() < deadline:
            time.sleep(0.05)
        (meeting / str(os.getpid())).write_text("met" if len(list(meeting.iterdir())) >= 2 else "alone")
"""


def test_against_a_revision_the_revisions_build_and_todays_run_side_by_side(setup, monkeypatch, tmp_path):
    if len(processors()) < 2:
        pytest.skip("one processor: the two builds run one after the other")
    setup.edit("def py():\n", MEETING)
    (setup.root / ".gitignore").write_text("/tools/\n/recipe/i6_core\n/recipe/sispin\n")
    assert main(["snapshot"]) == 0
    commit_setup(setup.root)
    setup.edit("LEARNING_RATE = 1e-3", "LEARNING_RATE = 2e-3")
    meeting = tmp_path / "meeting"
    meeting.mkdir()
    monkeypatch.setenv("SISPIN_TEST_MEETING", str(meeting))
    assert differences(explained(against="HEAD", output="exp/config")) == [
        "returnn_config.config['learning_rate']: 0.001 -> 0.002"
    ]
    assert sorted(note.read_text() for note in meeting.iterdir()) == ["met", "met"]


def test_against_a_revision_without_the_lockfile_is_said_before_any_build(setup, monkeypatch, tmp_path, capsys):
    # no build may start: today's would otherwise run to its end (here: wait 20 s) before the error could be said
    setup.edit("def py():\n", MEETING)
    assert main(["snapshot"]) == 0
    commit_setup(setup.root, "config/exp.py")  # the lockfile is not in the commit
    meeting = tmp_path / "meeting"
    meeting.mkdir()
    monkeypatch.setenv("SISPIN_TEST_MEETING", str(meeting))
    capsys.readouterr()
    assert main(["explain", "--against", "HEAD"]) == 3
    assert "pin: error: HEAD: the setup had no pin.toml then" in capsys.readouterr().err
    assert not list(meeting.iterdir()), "no build started"


def test_against_a_revision_whose_ids_are_not_the_snapshots_today_is_built_for_the_revisions_ids(setup):
    # the committed snapshot holds the ids of an edit never committed: today's build, asked for the records below
    # what differs from the snapshot, has none below what differs from the revision, and is built again for them
    (setup.root / ".gitignore").write_text("/tools/\n/recipe/i6_core\n/recipe/sispin\n")
    setup.edit("LEARNING_RATE = 1e-3", "LEARNING_RATE = 2e-3")
    assert main(["snapshot"]) == 0
    setup.edit("LEARNING_RATE = 2e-3", "LEARNING_RATE = 1e-3")
    commit_setup(setup.root)
    setup.edit("LEARNING_RATE = 1e-3", "LEARNING_RATE = 2e-3")
    assert differences(explained(against="HEAD", output="exp/copy")) == [
        "returnn_config.config['learning_rate']: 0.001 -> 0.002"
    ]


def test_root_causes_are_one_only_when_every_argument_changed_the_same_way(tmp_path):
    # x and y share five changed arguments; the sixth differs (p6 in x, q in y): two causes, not one
    def args(value: int, last: str) -> dict:
        names = [f"thing['p{i}']" for i in range(1, 6)] + [f"thing['{last}']"]
        return {name: Arg(str(value), str(value)) for name in names}

    old = {"m/Use.x1": JobRecord(args(1, "p6")), "m/Use.y1": JobRecord(args(1, "q"))}
    new = {"m/Use.x2": JobRecord(args(2, "p6")), "m/Use.y2": JobRecord(args(2, "q"))}
    recorded = {"x": RecordedOutput("m/Use.x1", "out"), "y": RecordedOutput("m/Use.y1", "out")}
    graph = SetGraph(
        "s",
        {"x": RecordedOutput("m/Use.x2", "out"), "y": RecordedOutput("m/Use.y2", "out")},
        {"m/Use.x2": False, "m/Use.y2": False},
        (),
        records=new,
    )
    changes = compare_set(recorded, old, graph, tmp_path)
    assert [group.outputs for group in changes.groups] == [
        [("x", "m/Use.x1", "m/Use.x2")],
        [("y", "m/Use.y1", "m/Use.y2")],
    ]
    assert all(
        "(+5 more arguments: pin explain) in Use.x1" in g.cause or "in Use.y1" in g.cause for g in changes.groups
    )


def test_outputs_reaching_one_root_cause_through_other_chains_are_explained_once(setup, capsys):
    # exp/config is the changed job's own output, exp/copy reaches it through a copy: one root cause
    assert main(["snapshot"]) == 0
    setup.edit("LEARNING_RATE = 1e-3", "LEARNING_RATE = 2e-3")
    capsys.readouterr()
    assert main(["explain"]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "2 outputs changed for the same root causes: exp/config, exp/copy (each: --verbose)", lines
    assert sum(line.startswith("output/") for line in lines) == 1, lines


#: a second set's config, which registers whether a folder of the setup lists a file
LISTING = """\
import os

from i6_core.text.processing import WriteToTextFileJob
from sisyphus import tk


def py():
    found = "a.txt" in os.listdir("config/data")
    tk.register_output("listed/found", WriteToTextFileJob(f"found: {found}").out_file)
"""


def test_explain_builds_no_set_whose_kept_pass_found_the_snapshots_ids(real_setup, make_repo, monkeypatch):
    remote = make_repo("rc")
    commit = git_commit(remote, network_code(1), "first")
    git_commit(remote, network_code(2), "deeper")  # another commit of it, for the moved-commit check
    tables = (
        f'[repos.rc]\nurl = "file://{remote}"\nbranch = "main"\ncheckout = "rc"\n\n'
        f'[sets.exp]\nconfigs = ["config/exp.py"]\nrc = "{commit}"\n\n[sets.listed]\nconfigs = ["config/listed.py"]\n'
    )
    root = real_setup(tables, {"exp.py": CONFIG, "listed.py": LISTING})
    (root / "config" / "data").mkdir()
    (root / "config" / "data" / "a.txt").write_text("a\n")
    (root / ".gitignore").write_text("/tools/\n/recipe/i6_core\n/recipe/sispin\n/work/\n")
    commit_setup(root)
    assert main(["snapshot"]) == 0
    age_files(root)
    assert not checked().problems and not checked().built, "each set's pass kept"
    builds = []
    for module in (ops_explain, against):
        monkeypatch.setattr(
            module,
            "load_graph",
            lambda lockfile, name, load=module.load_graph, **how: builds.append(name) or load(lockfile, name, **how),
        )

    def built(**explaining) -> list:
        builds.clear()
        assert set(differences(explained(**explaining))) == {"returnn_config.config['learning_rate']: 0.001 -> 0.002"}
        return sorted(builds)

    exp = root / "config" / "exp.py"
    exp.write_text(exp.read_text().replace("LEARNING_RATE = 1e-3", "LEARNING_RATE = 2e-3"))
    # nothing set 'listed' read changed since its pass, which found the snapshot's ids: none of them can differ
    assert built() == ["exp"]
    assert explained(output="listed/found").outputs == []
    # against a revision, both sides of every set are built (git's word that a file is as it was is not enough)
    assert built(against="HEAD") == ["exp", "exp", "listed", "listed"]
    # a file in a folder the set listed: its pass no longer stands, and it is built
    (root / "config" / "data" / "b.txt").write_text("b\n")
    age_files(root)
    assert built() == ["exp", "listed"]
