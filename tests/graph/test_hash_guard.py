"""
The hash guard with real Sisyphus + i6_core on a small setup built in a temp dir: ``pin snapshot``, ``pin check``
and the blast radius of ``pin upgrade``.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import pprint
import py_compile
import tarfile
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from conftest import git, git_commit, run_manager
from results import upgraded
from sispin.cli.main import main
from sispin.graph.price import Cost, Price, price_of
from sispin.graph.snapshot import read_snapshot

CONFIG = """\
from sisyphus import tk
from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
from i6_core.text.processing import WriteToTextFileJob
from sispin import experiment_set

LEARNING_RATE = 1e-3


def py():
    exp = experiment_set("exp")
    root = exp.repo("rc")
    config = WriteReturnnConfigJob(
        ReturnnConfig({"learning_rate": LEARNING_RATE, "rc_root": root}, black_formatting=False)
    )
    tk.register_output("exp/config", config.out_returnn_config_file)
    tk.register_output("exp/copy", WriteToTextFileJob(config.out_returnn_config_file).out_file)
    tk.register_output("exp/independent", WriteToTextFileJob("no repository here").out_file)
"""

# the same graph, written differently: statements reordered, locals renamed, dict keys swapped
COSMETIC = """\
from i6_core.text.processing import WriteToTextFileJob
from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
from sisyphus import tk
from sispin import experiment_set

LEARNING_RATE = 0.001


def py():
    unrelated = WriteToTextFileJob("no repository here")
    tk.register_output("exp/independent", unrelated.out_file)
    checkout = experiment_set("exp").repo("rc")
    returnn_config = ReturnnConfig({"rc_root": checkout, "learning_rate": LEARNING_RATE}, black_formatting=False)
    write_job = WriteReturnnConfigJob(returnn_config)
    tk.register_output("exp/copy", WriteToTextFileJob(write_job.out_returnn_config_file).out_file)
    tk.register_output("exp/config", write_job.out_returnn_config_file)
"""


class Setup:
    def __init__(self, root: Path, remote: Path, commits: list):
        self.root = root
        self.remote = remote
        self.c = commits

    @property
    def config(self) -> Path:
        return self.root / "config" / "exp.py"

    def run(self, *argv: str) -> int:
        return main(list(argv))


@pytest.fixture
def setup(real_setup, make_repo) -> Setup:
    remote = make_repo("rc")
    commits = [git_commit(remote, {"__init__.py": f"VERSION = {i}\n"}, f"change {i}") for i in range(3)]
    tables = (
        f'[repos.rc]\nurl = "file://{remote}"\nbranch = "main"\n\n'
        f'[sets.exp]\nconfigs = ["config/exp.py"]\nrc = "{commits[0]}"\n'
    )
    root = real_setup(tables, {"exp.py": CONFIG})
    return Setup(root, remote, commits)


def test_snapshot_records_outputs_without_touching_work(setup, capsys):
    assert setup.run("snapshot") == 0
    assert capsys.readouterr().out.splitlines() == [
        "exp: 3 outputs, 4 jobs (new in the snapshot)",
        "pin.snapshot.toml: written",
    ]
    outputs = read_snapshot(setup.root / "pin.snapshot.toml")["exp"]
    assert sorted(outputs) == ["exp/config", "exp/copy", "exp/independent"]
    assert outputs["exp/config"].job.startswith("i6_core/returnn/config/WriteReturnnConfigJob.")
    assert outputs["exp/config"].path == "returnn.config"
    assert list((setup.root / "work").iterdir()) == [], "loading the graph writes nothing to work/"
    assert setup.run("check", "--offline") == 0
    assert capsys.readouterr().out == "pin check: ok (1 set, 3 outputs)\n"


def test_semantic_change_fails_the_check_naming_the_outputs(setup, capsys):
    assert setup.run("snapshot") == 0
    old = read_snapshot(setup.root / "pin.snapshot.toml")["exp"]
    setup.config.write_text(CONFIG.replace("LEARNING_RATE = 1e-3", "LEARNING_RATE = 2e-3"))
    capsys.readouterr()
    assert setup.run("check", "--offline") == 1
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "summary: sets.exp: 2 outputs changed, 2 jobs renewed (0 finished in work/)",
        "problem: sets.exp: 2 outputs changed because returnn_config.config['learning_rate']: 0.001 -> 0.002 in "
        + old["exp/config"].job.rsplit("/", 1)[-1]
        + ": exp/config, exp/copy",
        "pin check: 1 problem",
    ], "one problem per root cause, naming every output it renews; the independent output is unaffected"
    assert setup.run("check", "--offline", "--verbose") == 1
    verbose = capsys.readouterr().out
    assert f"    output/exp/config: {old['exp/config'].job} -> i6_core/returnn/config/WriteReturnnConfigJob." in verbose


def test_a_config_rewritten_within_the_second_of_its_bytecode_is_checked_from_its_source(setup, capsys):
    # what a `sis manager` run (any import) leaves: the config's bytecode, stamped with the source's whole second
    # and size; a rewrite at the same size within that second, after the bytecode was written, passes for unchanged
    assert setup.run("snapshot") == 0
    second = setup.config.stat().st_mtime_ns // 10**9 * 10**9
    os.utime(setup.config, ns=(second + 10**8,) * 2)
    bytecode = Path(py_compile.compile(str(setup.config), cfile=importlib.util.cache_from_source(str(setup.config))))
    os.utime(bytecode, ns=(second + 2 * 10**8,) * 2)
    setup.config.write_text(CONFIG.replace("LEARNING_RATE = 1e-3", "LEARNING_RATE = 2e-3"))
    os.utime(setup.config, ns=(second + 5 * 10**8,) * 2)
    capsys.readouterr()
    assert setup.run("check", "--offline") == 1
    assert "returnn_config.config['learning_rate']: 0.001 -> 0.002" in capsys.readouterr().out
    assert bytecode.stat().st_mtime_ns == second + 2 * 10**8, "the probe writes no bytecode"


def test_cosmetic_change_passes_the_check(setup, capsys):
    assert setup.run("snapshot") == 0
    setup.config.write_text(COSMETIC)
    assert setup.run("check", "--offline") == 0


def test_clone_of_a_locked_repo_at_another_commit_is_caught(setup, capsys):
    assert setup.run("snapshot") == 0
    url = f"file://{setup.remote}"
    extra = (
        "\n    from i6_core.tools.git import CloneGitRepositoryJob\n"
        f"    old = CloneGitRepositoryJob({url + '.git'!r}, commit={setup.c[1]!r})\n"
        '    tk.register_output("exp/old", old.out_repository)\n'
        f"    hidden = CloneGitRepositoryJob('https://example.org/other', commit={setup.c[2]!r})\n"
        '    hidden.out_repository.hash_overwrite = "OTHER_ROOT"\n'
        '    tk.register_output("exp/hidden", hidden.out_repository)\n'
    )
    setup.config.write_text(CONFIG + extra)
    capsys.readouterr()
    assert setup.run("check", "--offline") == 1
    out = capsys.readouterr().out
    # the line names the config code that built the clone
    line = (
        (CONFIG + extra).splitlines().index(f"    old = CloneGitRepositoryJob({url + '.git'!r}, commit={setup.c[1]!r})")
    )
    assert f" (made at config/exp.py:{line + 1}): clones rc at {setup.c[1][:7]}, the set pins {setup.c[0][:7]}" in out
    assert "hash_overwrite 'OTHER_ROOT' set at config/exp.py:" in out and "from the clone's own output" in out
    assert "new outputs not in the snapshot (run `pin snapshot` to record them): exp/hidden, exp/old" in out


def test_a_move_to_unrelated_history_lists_the_dropped_commits_the_set_used(setup, capsys):
    lock = setup.root / "pin.toml"
    lock.write_text(lock.read_text().replace(setup.c[0], setup.c[1]))
    assert setup.run("snapshot") == 0
    # the remote's main rewritten: the pinned commit is gone from it, another one stands on its parent
    git(setup.remote, "checkout", "-q", "-b", "rewritten", setup.c[0])
    rewritten = git_commit(setup.remote, {"__init__.py": "VERSION = 'rewritten'\n"}, "rewritten history")
    git(setup.remote, "branch", "-q", "-f", "main", rewritten)
    capsys.readouterr()
    # a store that never saw the old history cannot tell what the move drops: it says so, and still judges the move
    assert setup.run("upgrade", "exp", "--dry-run", "--allow-unrelated") == 0
    out = capsys.readouterr().out
    assert "(unrelated history: the pinned commit is no longer in the remote)" in out, out
    assert "Blast radius: 3 of 4 jobs of set 'exp' get new ids" in out, out
    # a store that saw it lists both sides
    git(setup.remote, "branch", "-q", "-f", "main", setup.c[2])
    assert setup.run("status", "--fetch") == 0
    git(setup.remote, "branch", "-q", "-f", "main", rewritten)
    capsys.readouterr()
    assert setup.run("upgrade", "exp", "--dry-run", "--allow-unrelated") == 0
    out = capsys.readouterr().out.splitlines()
    at = out.index(f"rc  {setup.c[1][:7]} -> {rewritten[:7]}  (unrelated history: +1, -1 commits)")
    assert out[at + 1].startswith("    1 of the 1 dropped commit changes what set 'exp' uses of rc ("), out
    assert out[at + 2].startswith("    - ") and f" {setup.c[1][:7]} change 1  (__init__.py)" in out[at + 2], out
    assert out[at + 3].startswith("    1 of the 1 new commit changes what set 'exp' uses of rc ("), out
    assert f" {rewritten[:7]} rewritten history  (__init__.py)" in out[at + 4], out


def test_check_verifies_pinned_commits_unless_offline(setup, capsys):
    assert setup.run("snapshot") == 0
    lock = setup.root / "pin.toml"
    lock.write_text(lock.read_text().replace(setup.c[0], "0" * 40))
    capsys.readouterr()
    assert setup.run("check") == 1
    out = capsys.readouterr().out
    assert f"problem: sets.exp.rc: commit {'0' * 40} does not exist in file://{setup.remote}" in out


def test_check_without_snapshot_or_with_a_broken_config(setup, capsys):
    assert setup.run("check", "--offline") == 1
    assert "sets.exp: no snapshot in pin.snapshot.toml (run `pin snapshot exp`)" in capsys.readouterr().out
    setup.config.write_text(CONFIG + "\nraise RuntimeError('broken config')\n")
    assert setup.run("check", "--offline") == 1
    # the config's own place and exception, in one line; its whole traceback with --debug, same exit code
    assert "loading the configs of set 'exp' failed: config/exp.py:19: RuntimeError: broken config" in (
        capsys.readouterr().out
    )
    assert setup.run("snapshot") == 9
    assert capsys.readouterr().err == (
        "pin: error: loading the configs of set 'exp' failed: config/exp.py:19: RuntimeError: broken config\n"
    )
    assert setup.run("--debug", "snapshot") == 9
    err = capsys.readouterr().err
    assert 'config/exp.py", line 19, in <module>' in err, err
    assert err.rstrip().splitlines()[-1].startswith("pin: error: loading the configs of set 'exp' failed:")


def test_a_missing_config_is_said_before_any_set_is_built(setup, capsys):
    with open(setup.root / "pin.toml", "a") as lock:
        lock.write('\n[sets.typo]\nconfigs = ["config/exp3.py"]\n')
    # the other set would take a minute to build: the missing file is said without waiting for it
    setup.config.write_text("import time\n\ntime.sleep(60)\n" + CONFIG)
    started = time.monotonic()
    assert setup.run("check", "--offline") == 1
    assert time.monotonic() - started < 5
    assert capsys.readouterr().out.splitlines() == [
        "problem: sets.typo.configs: config/exp3.py does not exist",
        "not checked: exp, typo (no set is built until the configs above are there)",
        "pin check: 1 problem",
    ]


def test_blast_radius_counts_match_a_hand_count(setup, capsys):
    log = run_manager(setup.root, "config/exp.py")
    assert "All output calculated" in log, log
    # one more job that needs the checkout, not run yet
    setup.config.write_text(CONFIG + '    tk.register_output("exp/later", WriteToTextFileJob(root).out_file)\n')
    assert setup.run("snapshot") == 0
    capsys.readouterr()
    assert setup.run("upgrade", "exp", "--dry-run") == 0
    out = capsys.readouterr().out
    # by hand: the clone, the config, its copy and the new job depend on rc (4 of 5); all but the new one ran, so
    # the 4 renewed jobs would run (none of the new ids is finished) and 3 finished jobs fall out of use
    assert (
        "Blast radius: 4 of 5 jobs of set 'exp' get new ids; 4 would run (not finished in work/), "
        "3 finished jobs would no longer be used (" in out
    ), out
    # the move's price: what exactly those three jobs recorded in work/, per class and in all
    report = upgraded(setup.root / "pin.toml", ["exp"], dry_run=True).sets[0]
    unused = [job for job, done in report.before.jobs.items() if done and job not in report.after.jobs]
    renewed = {job: _usage(setup.root / "work" / job) for job in unused}
    assert len(renewed) == 3, renewed
    price = report.radius.price
    assert price.total.jobs == 3 and price.total.unknown == 0
    assert price.total.cpu_hours == pytest.approx(sum(cpu for cpu, _ in renewed.values()))
    assert price.total.peak_memory == pytest.approx(max(memory for _, memory in renewed.values()))
    assert {name: cost.jobs for name, cost in price.by_class.items()} == {
        "CloneGitRepositoryJob": 1,
        "WriteReturnnConfigJob": 1,
        "WriteToTextFileJob": 1,
    }
    assert "    WriteToTextFileJob: 1 job, " in out and " CPU-s, peak " in out, out
    assert "Outputs that change: exp/config, exp/copy, exp/later" in out
    assert "  3 outputs (exp/config, exp/copy, exp/later): only the pinned commit changes" in out

    before = read_snapshot(setup.root / "pin.snapshot.toml")["exp"]
    assert setup.run("upgrade", "exp") == 0
    after = read_snapshot(setup.root / "pin.snapshot.toml")["exp"]
    assert after["exp/independent"] == before["exp/independent"]
    assert after["exp/config"] != before["exp/config"], "the snapshot moved with the lock"
    assert setup.run("check", "--offline") == 0


def test_a_check_prices_the_finished_work_a_change_renews(setup, capsys):
    assert setup.run("snapshot") == 0
    assert "All output calculated" in run_manager(setup.root, "config/exp.py")
    setup.config.write_text(CONFIG.replace("LEARNING_RATE = 1e-3", "LEARNING_RATE = 2e-3"))
    capsys.readouterr()
    assert setup.run("check", "--offline", "--json") == 1
    changes = json.loads(capsys.readouterr().out)["sets"]["exp"]
    # the config and its copy ran: what their usage files in work/ say, summed
    recorded = read_snapshot(setup.root / "pin.snapshot.toml")["exp"]
    renewed = [recorded[name].job for name in ("exp/config", "exp/copy")]
    usage = [_usage(setup.root / "work" / job) for job in renewed]
    assert changes["finished"] == 2
    assert changes["cost"]["jobs"] == 2 and changes["cost"]["unknown"] == 0
    assert changes["cost"]["cpu_hours"] == pytest.approx(sum(cpu for cpu, _ in usage))
    assert changes["cost"]["peak_memory"] == pytest.approx(max(memory for _, memory in usage))
    assert setup.run("check", "--offline") == 1
    summary = capsys.readouterr().out.splitlines()[0]
    assert summary.startswith("summary: sets.exp: 2 outputs changed, 2 jobs renewed (2 finished in work/: "), summary
    assert summary.endswith(f"CPU-s, peak {max(memory for _, memory in usage):.1f} GB)"), summary


def test_a_new_set_from_another_says_what_starting_at_the_newest_commits_would_not_reuse(setup, capsys):
    assert setup.run("snapshot") == 0
    assert "All output calculated" in run_manager(setup.root, "config/exp.py")
    (setup.root / "config" / "exp2.py").write_text(CONFIG.replace('experiment_set("exp")', 'experiment_set("exp2")'))
    capsys.readouterr()
    assert setup.run("new", "exp2", "--from", "exp", "--configs", "config/exp2.py") == 0
    out = capsys.readouterr().out.splitlines()
    # at exp's commit the new set is exp's graph, all finished; at the head of rc its clone and the two jobs built
    # on it are new: those three finished jobs of exp are what the head does not reuse
    price = _price_of_the_jobs_on_rc(setup)
    radius = out.index(
        "Blast radius against the commits of 'exp': 3 of 4 jobs get new ids; 3 would run (not finished in work/), 3 "
        f"finished jobs would not be reused ({price.total.as_used(jobs=False)})."
    )
    classes = {f"    {name}: {cost.as_used()}" for name, cost in price.by_class.items()}
    assert set(out[radius + 1 : radius + 4]) == classes
    assert out[radius + 4] == (
        "The 3 jobs that would run ask for (their tasks' time limits, as first submitted): 3.0 CPU-h, 1.0 GB in one "
        "task"
    )
    assert out[radius + 5 :] == [
        "    CloneGitRepositoryJob: 1 job, 1.0 CPU-h, 1.0 GB in one task",
        "    WriteReturnnConfigJob: 1 job, 1.0 CPU-h, 1.0 GB in one task",
        "    WriteToTextFileJob: 1 job, 1.0 CPU-h, 1.0 GB in one task",
    ]
    # starting at the newest commits where they are the template's: the same graph, nothing renewed
    (setup.root / "config" / "exp3.py").write_text(CONFIG.replace('experiment_set("exp")', 'experiment_set("exp3")'))
    assert setup.run("new", "exp3", "--from", "exp2", "--configs", "config/exp3.py") == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "Blast radius against the commits of 'exp2': 0 of 4 jobs get new ids; 0 would run (not finished in work/), 0 "
        "finished jobs would not be reused (0 h)."
    )


def test_status_prices_moving_each_set_to_the_heads(setup, capsys):
    assert setup.run("snapshot") == 0
    assert "All output calculated" in run_manager(setup.root, "config/exp.py")
    price = _price_of_the_jobs_on_rc(setup)
    capsys.readouterr()
    assert setup.run("status", "--fetch", "--changes") == 0
    out = capsys.readouterr().out.splitlines()
    radius = out.index(
        "Moving set 'exp' to the heads: 3 of 4 jobs get new ids; 3 would run (not finished in work/), 3 finished jobs "
        f"would no longer be used ({price.total.as_used(jobs=False)})."
    )
    assert set(out[radius + 1 : radius + 4]) == {
        f"    {name}: {cost.as_used()}" for name, cost in price.by_class.items()
    }
    assert out[radius + 4].startswith("The 3 jobs that would run ask for (their tasks' time limits, as first "), out
    assert setup.run("status", "--changes", "--json") == 0
    at_heads = json.loads(capsys.readouterr().out)["at_heads"]["exp"]
    assert (at_heads["renewed"], at_heads["would_run"], at_heads["unused"]) == (3, 3, 3)
    assert at_heads["unused_cost"]["total"] == asdict(price.total)
    # at the heads already: nothing to move, nothing priced
    assert setup.run("upgrade", "exp") == 0
    capsys.readouterr()
    assert setup.run("status", "--changes", "--json") == 0
    assert json.loads(capsys.readouterr().out)["at_heads"] == {}


def _price_of_the_jobs_on_rc(setup: Setup) -> Price:
    """What the finished jobs built on rc (the clone, the config and its copy) cost, from their usage in work/."""
    work = setup.root / "work"
    recorded = read_snapshot(setup.root / "pin.snapshot.toml")["exp"]
    clones = [path.parent.relative_to(work) for path in work.glob("i6_core/tools/git/CloneGitRepositoryJob.*/info")]
    price = price_of(work, [recorded["exp/config"].job, recorded["exp/copy"].job, *map(str, clones)])
    assert (price.total.jobs, price.total.unknown) == (3, 0)
    return price


def test_a_price_counts_damaged_or_missing_usage_as_unknown_and_reads_cleaned_up_jobs(setup, capsys):
    assert "All output calculated" in run_manager(setup.root, "config/exp.py")
    work = setup.root / "work"
    jobs = sorted(str(path.parent.relative_to(work)) for path in work.rglob("finished"))
    assert len(jobs) == 4
    usage = {job: next((work / job).glob("usage.*")) for job in jobs}
    training, damaged, missing, cleaned = jobs
    # a job that asked for two GPUs (as a training does), one whose usage file was cut short, one without
    recorded = ast.literal_eval(usage[training].read_text())
    usage[training].write_text(pprint.pformat({**recorded, "requested_resources": {"cpu": 4, "gpu": 2}}))
    usage[damaged].write_text(usage[damaged].read_text()[:40])
    usage[missing].unlink()
    # cleaned up as Sisyphus does: everything but output/, info and work/ packed into finished.tar.gz
    cleaned_cpu = _usage(work / cleaned)[0]
    with tarfile.open(work / cleaned / "finished.tar.gz", "w:gz") as packed:
        packed.add(usage[cleaned], arcname=usage[cleaned].name)
    usage[cleaned].unlink()

    price = price_of(work, jobs)
    assert (price.total.jobs, price.total.unknown) == (2, 2)
    assert price.total.gpu_hours == pytest.approx(2 * recorded["used_time"])
    assert price.total.cpu_hours == pytest.approx(4 * recorded["used_time"] + cleaned_cpu)
    assert sum(cost.unknown for cost in price.by_class.values()) == 2
    assert price_of(work, []).total == Cost()


#: a setup's own jobs: a training that asks for GPUs for hours, and a job whose tasks depend on what its input holds
TRAINING_RECIPE = """\
from sisyphus import Job, Task


class Train(Job):
    def __init__(self, code):
        self.code = code
        self.out_model = self.output_path("model")

    def tasks(self):
        yield Task("prepare", mini_task=True)
        yield Task("run", rqmt={"time": "3:00:00", "gpu": 2, "cpu": 4, "mem": "8G"}, args=range(1, 3))

    def prepare(self):
        pass

    def run(self, part):
        pass


class Spread(Job):
    def __init__(self, code):
        self.code = code
        self.out_model = self.output_path("model")

    def tasks(self):
        yield Task("run", rqmt={"time": 2, "gpu": 1, "cpu": 2, "mem": 4, "multi_node_slots": 4})


class Split(Job):
    def __init__(self, corpus):
        self.corpus = corpus
        self.out_parts = self.output_path("parts")

    def tasks(self):
        with open(self.corpus.get_path()) as corpus:
            yield Task("run", rqmt={"time": 1}, args=range(int(corpus.read())))
"""


def test_what_would_run_is_priced_at_what_its_tasks_ask_for(setup, capsys):
    (setup.root / "recipe" / "training").mkdir()
    (setup.root / "recipe" / "training" / "__init__.py").write_text(TRAINING_RECIPE)
    setup.config.write_text(
        CONFIG
        + "    from training import Split, Spread, Train\n\n"
        + '    tk.register_output("exp/spread", Spread(root).out_model)\n'
        + "    train = Train(root)\n"
        + '    train.update_rqmt("run", {"time": 5})\n'
        + '    tk.register_output("exp/model", train.out_model)\n'
        + '    tk.register_output("exp/parts", Split(config.out_returnn_config_file).out_parts)\n'
    )
    assert setup.run("snapshot") == 0
    capsys.readouterr()
    assert setup.run("upgrade", "exp", "--dry-run") == 0
    out = capsys.readouterr().out
    requested = upgraded(setup.root / "pin.toml", ["exp"], dry_run=True).sets[0].radius.requested
    # by hand: two tasks of 2 GPUs and 4 CPUs for 5 hours (the config's overwrite of the recipe's 3), and its mini
    # task at the local engine's defaults (1 CPU, 1 GB, 1 hour: settings.py's engine()), as `sis manager` submits them
    assert requested.by_class["Train"] == Cost(jobs=1, cpu_hours=2 * 5 * 4 + 1, gpu_hours=2 * 5 * 2, peak_memory=8)
    # a task on 4 nodes asks for its processors on each: 2 hours of 1 GPU and 2 CPUs, 4 times
    assert requested.by_class["Spread"] == Cost(jobs=1, cpu_hours=2 * 2 * 4, gpu_hours=2 * 1 * 4, peak_memory=4)
    # the clone, the config and its copy: one mini task each; Split cannot list its tasks before its input exists
    assert requested.total == Cost(jobs=5, cpu_hours=41 + 16 + 3, gpu_hours=20 + 8, peak_memory=8, unknown=1)
    assert requested.by_class["Split"] == Cost(unknown=1)
    assert (
        "The 6 jobs that would run ask for (their tasks' time limits, as first submitted): 28.0 GPU-h, 60.0 CPU-h, "
        "8.0 GB in one task; request unknown for 1 job\n"
        "    Train: 1 job, 20.0 GPU-h, 41.0 CPU-h, 8.0 GB in one task\n"
    ) in out, out
    # five classes one by one, the dearest first; the sixth (Split, unknown) with --verbose
    assert "    Spread: 1 job, 8.0 GPU-h, 16.0 CPU-h, 4.0 GB in one task\n" in out, out
    assert "    Split" not in out and "    ... 1 more class (--verbose)\n" in out, out
    assert setup.run("upgrade", "exp", "--dry-run", "--verbose") == 0
    assert "    Split: request unknown for 1 job\n" in capsys.readouterr().out
    # the same for scripts, in one document
    assert setup.run("upgrade", "exp", "--dry-run", "--json") == 0
    (judged,) = json.loads(capsys.readouterr().out)["sets"]
    radius = judged["blast_radius"]
    assert radius["would_run"] == 6 and radius["would_run_requests"]["total"] == asdict(requested.total)
    assert radius["would_run_requests"]["by_class"]["Train"]["gpu_hours"] == 20
    assert radius["unused_cost"]["total"]["jobs"] == 0 and judged["moves"][0]["kind"] == "forward"


def _usage(job: Path) -> tuple:
    """(CPU-hours, peak memory in GB) of a job, read from its usage files as Sisyphus wrote them"""
    usages = [ast.literal_eval(path.read_text()) for path in job.glob("usage.*")]
    cpu = sum(u["used_time"] * u["requested_resources"].get("cpu", 1) for u in usages)
    return cpu, max(u["max"]["rss"] for u in usages)


def test_blast_radius_that_cannot_be_computed_says_why(history, capsys):
    assert main(["upgrade", "demo", "--dry-run"]) == 0
    assert "Blast radius: not computed (sets.demo.configs: config/demo.py does not exist)" in capsys.readouterr().out
    assert main(["upgrade", "other", "--dry-run"]) == 0
    assert "Blast radius: not computed (set 'other' lists no configs in pin.toml" in capsys.readouterr().out


def test_a_clone_at_a_prefix_or_another_spelling_of_the_pin_is_not_the_pin(setup, capsys):
    # git checks out "f7ad63a" or an uppercase SHA as the pinned commit, but the job hashes the string: another id,
    # outside every check that follows the pin (snapshot, moved pins), so the guard must refuse it as not the pin
    assert setup.run("snapshot") == 0
    url = f"file://{setup.remote}"
    extra = (
        "\n    from i6_core.tools.git import CloneGitRepositoryJob\n"
        f"    short = CloneGitRepositoryJob({url!r}, commit={setup.c[0][:7]!r})\n"
        '    tk.register_output("exp/short", short.out_repository)\n'
        f"    upper = CloneGitRepositoryJob({url!r}, commit={setup.c[0].upper()!r})\n"
        '    tk.register_output("exp/upper", upper.out_repository)\n'
    )
    setup.config.write_text(CONFIG + extra)
    capsys.readouterr()
    assert setup.run("check", "--offline") == 1
    clones = [line for line in capsys.readouterr().out.splitlines() if ": clones rc at " in line]
    assert len(clones) == 2, clones
    assert all(line.endswith(f", the set pins {setup.c[0][:7]}") for line in clones)
    # the clone's commit is shown as written: its first 7 characters alone would read like the pin
    joined = "\n".join(clones)
    assert f"clones rc at {setup.c[0][:7]!r}," in joined and f"clones rc at {setup.c[0].upper()!r}," in joined
