"""
The guarantee, however a pinned commit reaches a job: within a set, the pinned code never changes without the job
ids changing. Each way a hostile review found to break it is tried here in several forms with real Sisyphus +
i6_core: a hand-written clone of a pin (also through a helper given ``exp.commit()``), content computed from
``exp.imported()`` code placed where no hash sees it, async configs, ``current_set()`` during upgrades, a clone job
changed after it got its id, temporary lockfiles.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import USE_JOB, git_commit, run_manager
from results import checked, problems, snapshot_taken
from sispin.cli.main import main

#: the beginning of every config below: a job that takes anything, and the set's experiment set
HEAD = (
    """\
from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
from i6_core.tools.git import CloneGitRepositoryJob
from sisyphus import Job, Task, tk

from sispin import current_set, experiment_set

URL = {url!r}


"""
    + USE_JOB
    + """

def unhashed(name, value):
    # a RETURNN config hashes its config, not its post_config
    config = ReturnnConfig({{"x": 1}}, post_config={{"held": value}})
    tk.register_output(name, WriteReturnnConfigJob(config).out_returnn_config_file)

"""
)


class Setup:
    """A setup whose set ``s`` pins rc at its second commit (of three, each with another VALUE)."""

    def __init__(self, root: Path, url: str, commits: list):
        self.root, self.url, self.c = root, url, commits

    def config(self, body: str) -> None:
        (self.root / "config" / "s.py").write_text(HEAD.format(url=self.url) + body)


@pytest.fixture
def setup(real_setup, make_repo, capsys) -> Setup:
    remote = make_repo("rcpkg")
    commits = [git_commit(remote, {"__init__.py": f"VALUE = {i}\n"}, f"value {i}") for i in range(3)]
    url = f"file://{remote}"
    tables = (
        f'[repos.rc]\nurl = "{url}"\nbranch = "main"\ncheckout = "rcpkg"\n\n'
        f'[sets.s]\nconfigs = ["config/s.py"]\nrc = "{commits[1]}"\n'
    )
    root = real_setup(tables, {"s.py": ""})
    assert main(["status", "--fetch"]) == 0  # the store's mirror: where the moved build takes another commit
    capsys.readouterr()
    return Setup(root, url, commits)


def refused(*outputs: str) -> str:
    """`pin snapshot` refuses, naming each output; :return: the places that hide the commit, a line each"""
    result = snapshot_taken()
    assert result.hidden and not result.written
    out = "\n".join(str(problem) for problem in result.hidden)
    for output in outputs:
        assert f"(outputs: {output}" in out, out
    return out


PLAIN = """
def py():
    exp = experiment_set("s")
    tk.register_output("s/use", Use(exp.repo("rc")).out)
    tk.register_output("s/hand", Use(CloneGitRepositoryJob(URL, commit=exp.commit("rc"))).out)
    with exp.imported("rc"):
        import rcpkg
    tk.register_output("s/hashed", Use({"value": rcpkg.VALUE}).out)
"""


def test_every_plain_use_passes(setup, capsys):
    # a hand-written clone, a helper-made one and imported content, all where the hash sees them
    setup.config(PLAIN)
    assert snapshot_taken().written
    assert not checked().problems


@pytest.mark.parametrize(
    "body",
    [
        # the hand-written clone of the pin at exp.commit() made the same job as exp.repo(): the old check stopped
        'hand = CloneGitRepositoryJob(URL, commit=exp.commit("rc"))\n'
        '    tk.register_output("s/hand", hand.out_repository)\n'
        '    unhashed("s/held", exp.repo("rc"))\n',
        # a helper given exp.commit(), as pin import recommends, and its path in an unhashed place
        'unhashed("s/held", clone(exp.commit("rc")).out_repository)\n',
        # a literal commit, and the URL spelled with .git
        'hand = CloneGitRepositoryJob(URL + ".git", commit=PINNED)\n    unhashed("s/held", hand.out_repository)\n',
        # exp.clone_job() beside a hand-written twin
        'tk.register_output("s/twin", CloneGitRepositoryJob(URL, commit=exp.commit("rc")).out_repository)\n'
        '    unhashed("s/held", exp.clone_job("rc").out_repository)\n',
    ],
    ids=["hand-written twin", "helper", "literal .git", "clone_job twin"],
)
def test_a_pin_reaching_an_unhashed_place_however_it_was_cloned_is_refused(setup, capsys, body):
    helper = "\ndef clone(commit):\n    return CloneGitRepositoryJob(URL, commit=commit)\n"
    setup.config(f"PINNED = {setup.c[1]!r}\n{helper}\n\ndef py():\n    exp = experiment_set('s')\n    {body}")
    refused("s/held")
    assert checked().problems


@pytest.mark.parametrize(
    "body",
    [
        # content computed by the pinned code, in a RETURNN config's post_config
        '    with exp.imported("rc"):\n        import rcpkg\n        value = rcpkg.VALUE\n'
        '    unhashed("s/held", value)\n',
        # ... set on a job after it got its id
        '    with exp.imported("rc"):\n        import rcpkg\n    job = Use("fixed")\n    job.extra = rcpkg.VALUE\n'
        '    tk.register_output("s/held", job.out)\n',
        # the commit as a string, and a path of the checkout as a string, where no hash sees them
        '    unhashed("s/held", exp.commit("rc"))\n',
        '    unhashed("s/held", str(exp.repo("rc")))\n',
    ],
    ids=["imported in post_config", "imported set later", "commit string", "path string"],
)
def test_a_value_taken_from_the_pin_where_no_hash_sees_it_is_refused(setup, capsys, body):
    setup.config(f"\ndef py():\n    exp = experiment_set('s')\n{body}")
    out = refused("s/held")
    assert "keeps its id when the pins move, but its" in out and "config/s.py:" in out


def test_an_async_config_is_checked_past_its_awaits(setup, capsys):
    # the clone the config waits for is finished (a manager ran): the real build gets past the await, and so must
    # the build with the pins moved, whose clone never finishes
    setup.config(
        "\nasync def py():\n    exp = experiment_set('s')\n    rc = exp.repo('rc')\n"
        "    tk.register_output('s/rc', rc)\n    await tk.async_run(rc)\n    unhashed('s/held', exp.commit('rc'))\n"
    )
    run_manager(setup.root, "config/s.py")
    assert list((setup.root / "work").glob("i6_core/tools/git/CloneGitRepositoryJob.*/finished*")), "the clone ran"
    refused("s/held")


def test_a_config_waiting_for_unfinished_jobs_is_said(setup, capsys):
    setup.config(
        "\nasync def py():\n    exp = experiment_set('s')\n    rc = exp.repo('rc')\n"
        "    tk.register_output('s/rc', rc)\n    await tk.async_run(rc)\n    tk.register_output('s/after', rc)\n"
    )
    assert main(["snapshot"]) == 0
    assert "config/s.py waits for unfinished jobs" in capsys.readouterr().out
    # a check that could not see what the config builds after the wait is no success
    assert main(["check", "--offline"]) == 14
    said = capsys.readouterr().out
    assert said.endswith(
        "not seen: sets.s: config/s.py waits for unfinished jobs: what it builds after that is not checked (run the "
        "jobs it waits for, then check again; --accept-waiting accepts it)\n"
        "pin check: not whole (1 set, 1 output, 1 set not seen whole)\n"
    ), said
    assert main(["check", "--offline"]) == 14, "never a kept pass: the graph depends on work/"
    capsys.readouterr()
    assert main(["check", "--offline", "--accept-waiting"]) == 0
    assert capsys.readouterr().out.endswith("pin check: ok (1 set, 1 output, 1 set not seen whole, accepted)\n")


def test_a_clone_job_changed_after_it_got_its_id_is_refused(setup, capsys):
    setup.config(
        "\ndef py():\n    job = experiment_set('s').clone_job('rc')\n    job.patches = ['--- a\\n+++ b\\n']\n"
        "    tk.register_output('s/rc', job.out_repository)\n"
    )
    assert "was changed after it got its id (patches: None -> " in refused()


SHARED = """
from sispin import current_set


def build(tk, Use):
    exp = current_set()
    tk.register_output("s/use", Use(exp.repo("rc")).out)
"""


def test_current_set_is_known_while_an_upgrade_builds_the_moved_pins(setup, capsys):
    (setup.root / "recipe" / "shared_tools.py").write_text(SHARED)
    setup.config("\nimport shared_tools\n\n\ndef py():\n    shared_tools.build(tk, Use)\n")
    assert main(["snapshot"]) == 0
    capsys.readouterr()
    assert main(["upgrade", "s", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "Blast radius: 2 of 2 jobs of set 's' get new ids" in out, out
    # the config changed since the snapshot: the upgrade would record that change unseen
    setup.config(
        "\nimport shared_tools\n\n\ndef py():\n    shared_tools.build(tk, Use)\n"
        "    tk.register_output('s/x', Use(1).out)\n"
    )
    assert main(["upgrade", "s"]) == 8


def test_no_temporary_lockfile_becomes_a_user_of_the_store(setup, store_dir, capsys):
    setup.config(PLAIN)
    assert main(["snapshot"]) == 0
    assert main(["upgrade", "s", "--dry-run"]) == 0
    assert main(["new", "t", "--from", "s", "--configs", "config/s.py"]) == 0
    registry = store_dir / "lockfiles"
    users = sorted(entry.read_text().strip() for entry in registry.iterdir()) if registry.is_dir() else []
    assert users == [str((setup.root / "pin.toml").resolve())], users


def test_the_probe_reads_the_moved_text_but_keeps_the_setup_root(setup):
    # what the probe of an upgrade sees: the lockfile where it is, the pins of the text it was given
    text = (setup.root / "pin.toml").read_text().replace(setup.c[1], setup.c[2])
    moved = setup.root.parent / "moved.toml"
    moved.write_text(text)
    code = (
        "import json; from sispin import experiment_set; e = experiment_set('s')\n"
        "print(json.dumps([str(e.lockfile.root), e.commit('rc')]))"
    )
    env = {**os.environ, "SISPIN_PROBE_LOCK_TEXT": str(moved), "PIN_LOCK": str(setup.root / "pin.toml")}
    result = subprocess.run([sys.executable, "-c", code], cwd=setup.root, env=env, capture_output=True, text=True)
    assert json.loads(result.stdout) == [str(setup.root), setup.c[2]]


def test_an_upgrade_that_would_keep_an_id_with_other_content_is_refused(setup, capsys):
    # the case itself: after the move the job would keep its id and its old file, built from the old code
    setup.config(
        "\ndef py():\n    exp = experiment_set('s')\n    with exp.imported('rc'):\n        import rcpkg\n"
        "        value = rcpkg.VALUE\n    unhashed('s/held', value)\n    tk.register_output('s/rc', exp.repo('rc'))\n"
    )
    before = (setup.root / "pin.toml").read_text()
    assert main(["upgrade", "s", "--to", setup.c[2], "--accept-drift"]) == 7
    out = capsys.readouterr()
    assert "(outputs: s/held) keeps its id when the pins move, but its" in out.out
    assert "1 job would keep its id with other content after this move" in out.err
    assert (setup.root / "pin.toml").read_text() == before


# found by a hostile review: each must be refused too


@pytest.mark.parametrize(
    "body",
    [
        # the job's environment (set_env) is not hashed either
        '    job = Use("fixed")\n    job.set_env("RC_COMMIT", exp.commit("rc"))\n'
        '    tk.register_output("s/held", job.out)\n',
        '    job = Use("fixed")\n    job.set_env("PYTHONPATH", os.path.dirname(exp.repo("rc").get_path()))\n'
        '    tk.register_output("s/held", job.out)\n',
        # an object whose __sis_state__ leaves the commit out of the hash
        '    tk.register_output("s/held", Use(Tool("rc", exp.commit("rc"))).out)\n',
        # the lock's values by other ways
        '    unhashed("s/held", exp.clone_kwargs("rc")["commit"])\n',
        '    unhashed("s/held", exp.clone_job("rc").job_id())\n',
        '    unhashed("s/held", exp.clone_job("rc")._sis_kwargs["commit"])\n',
        '    unhashed("s/held", vars(exp.clone_job("rc"))["commit"])\n',
        '    unhashed("s/held", exp.spec.pin("rc").commit)\n',
        # a clone path as text through Sisyphus's own helpers, a copy, a pickle
        '    unhashed("s/held", DelayedFormat("{}", exp.repo("rc")).get())\n',
        '    unhashed("s/held", copy.copy(exp.repo("rc")))\n',
        '    unhashed("s/held", pickle.loads(pickle.dumps(exp.repo("rc"))))\n',
    ],
    ids=[
        "set_env commit",
        "set_env path",
        "__sis_state__",
        "clone_kwargs",
        "job_id",
        "_sis_kwargs",
        "vars",
        "spec",
        "DelayedFormat",
        "copy",
        "pickle",
    ],
)
def test_values_that_leave_by_other_ways_are_refused(setup, capsys, body):
    setup.config(f"{MORE}\ndef py():\n    exp = experiment_set('s')\n{body}")
    refused("s/held")


MORE = '''
import copy
import os
import pickle

from sisyphus.delayed_ops import DelayedFormat


class Tool:
    """a tool and the commit to run it at: Sisyphus hashes only its name"""

    def __init__(self, name, commit):
        self.name, self.commit = name, commit

    def __sis_state__(self):
        return {"name": self.name}


class Checkout:
    def __init__(self, name, path):
        self.name, self.path = name, path

    def __sis_state__(self):
        return {"name": self.name}
'''


@pytest.mark.parametrize(
    "body",
    [
        # a path an object hides from the hash and from Sisyphus's inputs (its __sis_state__)
        '    tk.register_output("s/held", Use(Checkout("rc", exp.repo("rc"))).out)\n',
        # a path set on a job after it got its id
        '    job = Use("fixed")\n    job.repo = exp.repo("rc")\n    tk.register_output("s/held", job.out)\n',
    ],
    ids=["__sis_state__ path", "set after creation"],
)
def test_a_pinned_path_held_where_no_hash_sees_it_is_refused(setup, capsys, body):
    setup.config(f"{MORE}\ndef py():\n    exp = experiment_set('s')\n{body}")
    out = refused("s/held")
    assert "keeps its id when the pinned commit of" in out


def test_a_subclass_of_the_clone_job_is_a_clone(setup, capsys):
    setup.config(
        "\nclass RecipeClone(CloneGitRepositoryJob):\n    pass\n\n\ndef py():\n"
        "    head = RecipeClone(URL, branch='main', checkout_folder_name='rcpkg')\n"
        "    tk.register_output('s/head', head.out_repository)\n"
    )
    assert "clones rc following a branch instead of the pinned" in problems(checked())


VERSION_JOB = '''

class Version(Job):
    """reads VALUE from the checkout it is given"""

    def __init__(self, repo):
        self.repo = repo
        self.out = self.output_var("version")

    def tasks(self):
        yield Task("run", mini_task=True)

    def run(self):
        namespace = {}
        exec(open(self.repo.get_path() + "/__init__.py").read(), namespace)
        self.out.set(namespace["VALUE"])


async def py():
    exp = experiment_set("s")
    version = Version(exp.repo("rc")).out
    await tk.async_run(version)
    unhashed("s/held", version.get())
'''


def test_a_value_a_job_computed_from_the_pin_read_after_an_await_is_refused(setup, capsys):
    setup.config(VERSION_JOB)
    run_manager(setup.root, "config/s.py")  # the clone and Version ran: the real build gets past the await
    out = refused("s/held")
    assert "get() of a variable of config/s/Version." in out


def test_an_upgrade_to_pins_the_set_does_not_build_at_writes_nothing(setup, capsys):
    setup.config(
        "\ndef py():\n    exp = experiment_set('s')\n    with exp.imported('rc'):\n        import rcpkg\n"
        "    assert rcpkg.VALUE < 2, 'this config does not build at the third commit'\n"
        "    tk.register_output('s/use', Use(exp.repo('rc')).out)\n"
    )
    assert main(["snapshot"]) == 0
    before = (setup.root / "pin.toml").read_text()
    assert main(["upgrade", "s", "--to", setup.c[2]]) == 9
    assert f"set 's' does not build at rc {setup.c[2][:7]}: " in capsys.readouterr().err
    assert (setup.root / "pin.toml").read_text() == before


def test_a_snapshot_of_a_graph_with_a_clone_off_the_lock_is_refused(setup, capsys):
    old = f"CloneGitRepositoryJob(URL, commit={setup.c[0]!r})"
    setup.config(f"\ndef py():\n    tk.register_output('s/old', {old}.out_repository)\n")
    assert f"clones rc at {setup.c[0][:7]}, the set pins {setup.c[1][:7]}" in refused()
    assert not (setup.root / "pin.snapshot.toml").exists()
