"""
``pin check`` on a generated graph of 1,000+ jobs: a change that moves 300 outputs gives a short, deterministic report
(a summary, then one line per root cause); changed output files and stale snapshot sections are reported too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from filelock import FileLock

from conftest import git, git_commit, make_setup, run_directory, sisyphus_entry
from sispin.cli.main import main
from sispin.graph.snapshot import read_snapshot

CONFIG = """\
from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
from i6_core.text.processing import WriteToTextFileJob
from sisyphus import tk

from sispin import experiment_set

FEATURE_OPTION = 80
SUFFIX = "txt"
LEARNING_RATE = 0.001


def py():
    root = experiment_set("big").repo("rc")
    features = WriteToTextFileJob(f"features dim={{FEATURE_OPTION}}")
    for i in range(300):
        config = WriteReturnnConfigJob(
            ReturnnConfig(
                {{
                    "features": features.out_file,
                    "rc": root,
                    "index": i,
                    "lr": LEARNING_RATE,
                    "schedule": [LEARNING_RATE * step for step in range(1, 41)],
                }},
                black_formatting=False,
            )
        )
        tk.register_output(f"big/model{{i}}", WriteToTextFileJob(config.out_returnn_config_file).out_file)
    previous = None
    for i in range({independent}):
        previous = WriteToTextFileJob([f"step {{i}}", previous.out_file] if previous else f"step {{i}}")
        tk.register_output(f"big/independent{{i}}", previous.out_file)
    text = WriteToTextFileJob("x").out_file
    tk.register_output("big/file", text if SUFFIX == "txt" else text.copy_append(SUFFIX))
"""


@pytest.fixture(scope="session")
def snapshotted(real_sisyphus, tmp_path_factory, worker_id) -> Path:
    """
    The setup of set ``big`` with its snapshot taken, made once per run: snapshotting 1,053 jobs is the dearest step of
    these tests, and each starts from a copy (``big``). Under pytest-xdist the workers share it: the first to need it
    builds it in their common temporary directory, under a file lock.
    """
    shared = run_directory(tmp_path_factory, worker_id)
    with FileLock(str(shared / "big.lock")):
        root = shared / "big" / "setup"
        if not (root / "pin.snapshot.toml").is_file():
            _snapshot(root, real_sisyphus)
    return root


def _snapshot(root: Path, sisyphus: Path) -> None:
    """Make the setup of set ``big`` in root and take its snapshot (in a process of its own, with a store beside it)."""
    remote = root.parent / "remotes" / "rc"
    shutil.rmtree(root.parent, ignore_errors=True)  # what a worker that died half-way left
    remote.mkdir(parents=True)
    git(remote, "init", "-q", "-b", "main")
    commit = git_commit(remote, {"__init__.py": "X = 1\n"})
    lock = (
        f'version = 1\n\n[repos.rc]\nurl = "file://{remote}"\n\n[sets.big]\nconfigs = ["config/big.py"]\n'
        f'rc = "{commit}"\n\n' + sisyphus_entry(sisyphus)
    )
    make_setup(root, lock, sisyphus, {"big.py": CONFIG.format(independent=450)})
    env = {**os.environ, "PIN_HOME": str(root.parent / "store")}
    snapshot = subprocess.run(
        [sys.executable, "-m", "sispin", "snapshot"], cwd=root, env=env, capture_output=True, text=True, check=False
    )
    assert snapshot.returncode == 0, snapshot.stdout + snapshot.stderr
    assert "big: 751 outputs, 1053 jobs" in snapshot.stdout


@pytest.fixture
def big(snapshotted, tmp_path, monkeypatch, store_dir) -> Path:
    """A copy of the snapshotted setup (a build clones nothing: there is no store to copy), the working directory."""
    root = tmp_path / "setup"
    shutil.copytree(snapshotted, root, symlinks=True)
    monkeypatch.chdir(root)
    return root


def _check(root, *options: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "sispin", "check", "--offline", *options],
        cwd=root, capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_a_change_moving_300_outputs_is_a_short_deterministic_report(big):
    # the committed file holds what a reviewer reads; what each id is made of stays beside it, outside git
    snapshot = (big / "pin.snapshot.toml").read_bytes()
    assert len(snapshot) / 751 <= 200 and b"[sets.big.jobs" not in snapshot, len(snapshot) / 751
    assert (big / ".sispin-cache" / "records" / "big.json").is_file()
    config = big / "config" / "big.py"
    config.write_text(config.read_text().replace("FEATURE_OPTION = 80", "FEATURE_OPTION = 40"))
    first, second = _check(big), _check(big)
    assert first.returncode == 1 and first.stdout == second.stdout, "byte-identical across runs"
    lines = first.stdout.splitlines()
    assert len(lines) <= 20, first.stdout
    assert lines[0] == "summary: sets.big: 300 outputs changed, 601 jobs renewed (0 finished in work/)"
    assert lines[1].startswith(
        "problem: sets.big: 300 outputs changed because content: 'features dim=80' -> 'features dim=40' in "
        "WriteToTextFileJob."
    )
    assert lines[1].endswith(
        ": big/model0, big/model1, big/model10, big/model100, big/model101 and 295 more (--verbose lists them)"
    )
    assert lines[2:] == ["pin check: 1 problem"]
    # the report's data names every output, as --verbose does, whether or not the text is asked for in full
    (problem,) = json.loads(_check(big, "--json").stdout)["problems"]
    assert problem.count("big/model") == 300 and "more" not in problem


def test_a_changed_output_file_and_a_stale_section_are_reported(big, capsys):
    config = big / "config" / "big.py"
    config.write_text(config.read_text().replace('SUFFIX = "txt"', 'SUFFIX = ".gz"'))
    snapshot = big / "pin.snapshot.toml"
    snapshot.write_text(snapshot.read_text() + '\n[sets.gone.outputs]\n"gone/x" = {job = "a/B.c", path = "x"}\n')
    capsys.readouterr()
    assert main(["check", "--offline"]) == 1
    out = capsys.readouterr().out
    assert "pin.snapshot.toml: sets.gone: no such set in pin.toml (stale: `pin snapshot` drops it)" in out
    assert "problem: sets.big: output/big/file: same job, other file: file.txt -> file.txt.gz" in out
    assert main(["snapshot"]) == 0
    assert "gone" not in read_snapshot(snapshot)


def test_one_argument_changed_in_300_jobs_of_their_own_is_one_line(big, capsys):
    # a learning rate in a shared helper: every output has its own job, each with the same argument changed
    config = big / "config" / "big.py"
    config.write_text(config.read_text().replace("LEARNING_RATE = 0.001", "LEARNING_RATE = 0.002"))
    result = _check(big)
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert len(lines) <= 5, result.stdout
    assert lines[1].startswith(
        "problem: sets.big: 300 outputs changed because returnn_config.config['lr']: 0.001 -> 0.002 (+40 more "
        "arguments: pin explain) in WriteReturnnConfigJob (300 jobs: WriteReturnnConfigJob."
    ), lines[1]
    explained = subprocess.run(
        [sys.executable, "-m", "sispin", "explain"], cwd=big, capture_output=True, text=True, check=False
    )
    lines = explained.stdout.splitlines()
    assert len(lines) <= 20, explained.stdout[:3000]
    assert lines[0].startswith(
        "300 outputs changed for the same root causes: big/model0, big/model1, big/model10"
    ), lines[0]
    assert "  because  returnn_config.config['lr']: 0.001 -> 0.002" in lines
    assert "  because  returnn_config.config['schedule'][3]: 0.004 -> 0.008" in lines, "positions in numeric order"
    assert "  because  ... and 36 more arguments of this job (--verbose lists them)" in lines
