"""
``pin snapshot`` against commands that change pin.toml while it builds the graphs (a real second process, a real
Sisyphus): what they wrote stays, and a set whose lock section changed meanwhile is not recorded from the old one.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import git_commit
from sispin.cli.main import main
from sispin.graph.probe.schema import RecordedOutput, SetGraph
from sispin.graph.snapshot import read_snapshot, record_graphs
from sispin.lock.loading import load_lockfile

OTHER = """\
from sisyphus import tk
from sispin import experiment_set


def py():
    tk.register_output("other/rc", experiment_set("other").repo("rc"))
"""
# while the file "hold" exists, loading this config says so ("building") and waits for "go": the time in which
# another process changes pin.toml
SLOW = """\
import os
import time

from sisyphus import tk
from sispin import experiment_set


def py():
    if os.path.exists("hold"):
        open("building", "w").close()
        deadline = time.time() + 120
        while not os.path.exists("go") and time.time() < deadline:
            time.sleep(0.05)
    tk.register_output("slow/rc", experiment_set("slow").repo("rc"))
"""


def wait_for(path: Path, process: subprocess.Popen) -> None:
    deadline = time.time() + 120
    while not path.exists():
        if process.poll() is not None:
            pytest.fail(f"pin snapshot ended before {path.name}: {process.communicate()}")
        if time.time() > deadline:
            pytest.fail(f"no {path.name} after 120 s")
        time.sleep(0.05)


@pytest.fixture
def setup(real_setup, make_repo) -> Path:
    remote = make_repo("rc")
    commits = [git_commit(remote, {"nn.py": f"V = {i}\n"}, f"change {i}") for i in range(3)]
    # other first: pin snapshot builds it before it waits in slow
    tables = (
        f'[repos.rc]\nurl = "file://{remote}"\nbranch = "main"\n\n'
        f'[sets.other]\nconfigs = ["config/other.py"]\nrc = "{commits[0]}"\n\n'
        f'[sets.slow]\nconfigs = ["config/slow.py"]\nrc = "{commits[0]}"\n'
    )
    root = real_setup(tables, {"other.py": OTHER, "slow.py": SLOW})
    assert main(["snapshot"]) == 0
    return root


def test_what_other_commands_write_while_a_snapshot_builds_is_kept(setup, capsys):
    (setup / "hold").write_text("")
    first = subprocess.Popen(
        [sys.executable, "-m", "sispin", "snapshot"],
        cwd=setup,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(setup / "building", first)  # other's graph is built at its old pin; slow's is being built
        assert main(["upgrade", "other"]) == 0
        assert main(["new", "fresh", "--config", "config/fresh.py"]) == 0
        meanwhile = read_snapshot(setup / "pin.snapshot.toml")
        (setup / "go").write_text("")
        out, err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    capsys.readouterr()
    assert first.returncode == 11, (out, err)
    assert err == (
        "pin: error: sets.other changed while this snapshot ran: not recorded (the other sets are); run `pin snapshot "
        "other` again\n"
    )
    assert "sets.other: not recorded: another process changed it in pin.toml while its graph was built" in out
    assert "slow: 1 output, 1 job (0 outputs changed)" in out
    after = read_snapshot(setup / "pin.snapshot.toml")
    assert after["other"] == meanwhile["other"], "the upgrade's outputs are not overwritten with the old pin's"
    assert after["fresh"] == meanwhile["fresh"], "the set added meanwhile keeps its entry"
    assert after["slow"] == meanwhile["slow"]
    os.remove(setup / "hold")
    assert main(["check", "--offline"]) == 0, capsys.readouterr().out


def test_a_set_whose_configs_changed_while_a_snapshot_builds_is_not_recorded(setup, capsys):
    (setup / "hold").write_text("")
    first = subprocess.Popen(
        [sys.executable, "-m", "sispin", "snapshot", "slow"],
        cwd=setup,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(setup / "building", first)
        before = (setup / "pin.snapshot.toml").read_text()
        assert main(["configs", "slow", "--add", "config/other.py"]) == 0
        (setup / "go").write_text("")
        out, err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
            first.communicate()
    assert first.returncode == 11, (out, err)
    assert "sets.slow: not recorded" in out
    assert (setup / "pin.snapshot.toml").read_text() == before, "nothing recorded from the graph of the old configs"


def graph(name: str, job: str) -> SetGraph:
    outputs = {f"{name}/rc": RecordedOutput(job=job, path="rc")}
    return SetGraph(set_name=name, outputs=outputs, jobs={job: False}, clones=())


def test_the_snapshot_is_decided_against_the_lock_as_it_is_when_written(tmp_path):
    """The decision alone, on real files: sets removed, changed or added meanwhile, and one that stayed."""
    lock = tmp_path / "pin.toml"
    repo = '[repos.rc]\nurl = "file:///r"\n'
    lock.write_text(f'version = 1\n{repo}[sets.a]\nrc = "{"a" * 40}"\n[sets.b]\nrc = "{"a" * 40}"\n[sets.c]\n')
    built_from = load_lockfile(lock)
    (tmp_path / "pin.snapshot.toml").write_text(
        'version = 1\n[sets.b.outputs]\n"b/rc" = {job = "B.moved", path = "rc"}\n'
        '[sets.d.outputs]\n"d/rc" = {job = "D.new", path = "rc"}\n'
    )
    # meanwhile: b moved (its snapshot entry with it), c removed, d added (with its entry)
    lock.write_text(f'version = 1\n{repo}[sets.a]\nrc = "{"a" * 40}"\n[sets.b]\nrc = "{"b" * 40}"\n[sets.d]\n')
    written, changed = record_graphs(lock, [graph("a", "A.1"), graph("b", "B.old"), graph("c", "C.1")], built_from)
    assert written and changed == ["b", "c"]
    assert {
        name: outputs[f"{name}/rc"].job for name, outputs in read_snapshot(tmp_path / "pin.snapshot.toml").items()
    } == {
        "a": "A.1",
        "b": "B.moved",
        "d": "D.new",
    }
    # a setup entry (the Sisyphus that builds every graph) changed meanwhile: no set is recorded from the old one
    built_from = load_lockfile(lock)
    lock.write_text(lock.read_text() + f'[setup.s]\nurl = "file:///s"\ncommit = "{"c" * 40}"\npath = "s"\n')
    assert record_graphs(lock, [graph("a", "A.2")], built_from) == (False, ["a"])
