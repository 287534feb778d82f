"""
Running on a cluster: a set run by a real ``sis manager`` through Sisyphus's SLURM engine on a real single-node SLURM
(Debian's slurm-wlm + munge, started by .ci/slurm), with sispin's store on a path the manager and the node share.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, Iterator, List, Set, Tuple

import pytest

from conftest import PROJECT_ROOT, _real_required, git, git_commit, make_setup, run_manager
from scenarios import task_environment
from sispin.cli.main import main
from sispin.git.store import Store
from sispin.lock.loading import load_lockfile
from sispin.sets import ExperimentSet
from sispin.settings_hook import use_store_mirrors

SLURM_TOOLS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo", "sacct", "scontrol")

# A stand-in for a RETURNN job: a real Sisyphus job whose task runs on a node and imports the pinned package from the
# clone job's output, as a RETURNN config's prolog does.
STANDIN_RECIPE = """
import importlib
import json
import os
import subprocess
import sys

from sisyphus import Job, Task


class ImportPinnedJob(Job):
    def __init__(self, repository, package):
        self.repository = repository
        self.package = package
        self.out_report = self.output_path("report.json")

    def tasks(self):
        yield Task("run", rqmt={"cpu": 1, "mem": 1, "time": 0.1})

    def run(self):
        checkout = self.repository.get_path()
        sys.path.insert(0, os.path.dirname(checkout))
        module = importlib.import_module(self.package)
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=checkout, capture_output=True, text=True, check=True)
        with open(self.out_report.get_path(), "w") as report:
            json.dump({"file": module.__file__, "head": head.stdout.strip()}, report)
"""

CLUSTER_CONFIG = """
from sisyphus import tk

from sispin import experiment_set
from standin import ImportPinnedJob


def py():
    exp = experiment_set("cluster")
    # a clone job is a mini task, which the EngineSelector runs on the manager's machine: this set clones on a node
    exp.clone_job("returnn_common").update_rqmt("run", {"engine": "long"})
    checkout = exp.repo("returnn_common")
    tk.register_output("cluster/returnn_common", checkout)
    tk.register_output("cluster/report.json", ImportPinnedJob(checkout, "returnn_common").out_report)
"""


@pytest.fixture(scope="module")
def slurm() -> Iterator[Path]:
    """A single-node SLURM on this machine for the tests of this module; yields its slurm.conf."""
    missing = [tool for tool in SLURM_TOOLS if shutil.which(tool) is None]
    if missing:
        reason = f"SLURM not installed (no {', '.join(missing)}): apt-get install slurm-wlm munge"
        if _real_required():
            pytest.fail(f"SISPIN_REQUIRE_REAL=1: {reason}", pytrace=False)
        pytest.skip(reason)
    # not under pytest's tmp_path: munged wants every directory above its socket open to all
    directory = Path(tempfile.mkdtemp(prefix="sispin-slurm-"))
    script = PROJECT_ROOT / ".ci" / "slurm"
    started = subprocess.run(["bash", str(script), "start", str(directory)], capture_output=True, text=True)
    if started.returncode != 0:
        subprocess.run(["bash", str(script), "stop", str(directory)], check=False)
        pytest.fail(f".ci/slurm start failed:\n{started.stdout}{started.stderr}", pytrace=False)
    try:
        yield directory / "slurm.conf"
    finally:
        subprocess.run(["bash", str(script), "stop", str(directory)], check=True)
        shutil.rmtree(directory)


def finished_slurm_jobs(conf: Path) -> List[Tuple[str, str, str, str]]:
    """(job id, job name, state, nodes) of every job the cluster finished, from ``sacct -c`` (jobcomp/filetxt)."""
    # sacct -c also complains on stderr about the array fields of the completion file; only stdout counts
    result = subprocess.run(
        ["sacct", "-c", "-n", "-P", "--format=JobID,JobName,State,NodeList"],
        env={**os.environ, "SLURM_CONF": str(conf)},
        capture_output=True,
        text=True,
        check=True,
    )
    return [tuple(line.split("|")) for line in result.stdout.splitlines() if line]  # type: ignore[misc]


def wait_for_slurm_jobs(conf: Path, before: Set[str], count: int) -> List[Tuple[str, str, str, str]]:
    """The jobs finished since ``before``, once there are count of them (slurmctld records a completion late)."""
    deadline = time.monotonic() + 30
    while True:
        new = [job for job in finished_slurm_jobs(conf) if job[0] not in before]
        if len(new) >= count or time.monotonic() > deadline:
            return new
        time.sleep(0.2)


def cluster_setup(root: Path, remote: Path, pinned: str, sisyphus: Path) -> Path:
    """A copy of this setup whose set ``cluster`` pins remote at pinned (see CLUSTER_CONFIG)."""
    lock = (
        "version = 1\n\n"
        f'[repos.returnn_common]\nurl = "file://{remote}"\nbranch = "main"\ncheckout = "returnn_common"\n\n'
        f'[sets.cluster]\nconfigs = ["config/cluster.py"]\nreturnn_common = "{pinned}"\n'
    )
    setup = make_setup(root, lock, sisyphus, configs={"cluster.py": CLUSTER_CONFIG})
    (setup / "recipe" / "standin.py").write_text(STANDIN_RECIPE)
    return setup


def object_files(directory: Path) -> Dict[Tuple[int, int], Path]:
    """(device, inode) -> path of every file under directory."""
    return {(p.stat().st_dev, p.stat().st_ino): p for p in directory.rglob("*") if p.is_file()}


def run_on_slurm(setup: Path, conf: Path, pinned: str) -> Tuple[Path, List[Tuple[str, str, str, str]]]:
    """
    Run the set ``cluster`` of setup through ``sis manager`` on SLURM and check what every run must show: the
    checkout's HEAD is the pin, the node imported the package from the clone job's output, and both tasks ran as
    SLURM jobs on this machine's node.

    :return: the clone job's checkout, and the SLURM jobs of this run
    """
    before = {job[0] for job in finished_slurm_jobs(conf)}
    log = run_manager(setup, "config/cluster.py")
    assert "All output calculated" in log, log
    clone = ExperimentSet(load_lockfile(setup / "pin.toml"), "cluster").clone_job("returnn_common")
    checkout = setup / "work" / clone.job_id() / "output" / "returnn_common"
    assert (setup / "output" / "cluster" / "returnn_common").resolve() == checkout.resolve(), "same job id on SLURM"
    assert git(checkout, "rev-parse", "HEAD") == pinned

    report = json.loads((setup / "output" / "cluster" / "report.json").read_text())
    assert report == {"head": pinned, "file": str(checkout / "__init__.py")}

    jobs = wait_for_slurm_jobs(conf, before, 2)
    names = sorted(name.rsplit(".", 2)[0] for _, name, _, _ in jobs)
    assert names == ["i6_core.tools.git.CloneGitRepositoryJob", "standin.ImportPinnedJob"], jobs
    assert {(state, nodes) for _, _, state, nodes in jobs} == {("COMPLETED", socket.gethostname().split(".")[0])}
    return checkout, jobs


def test_slurm_nodes_clone_from_the_shared_store_and_fall_back_without_its_mirror(
    slurm, real_sisyphus, make_repo, tmp_path, store_dir, monkeypatch
):
    remote = make_repo("returnn_common")
    pinned = git_commit(remote, {"__init__.py": "VERSION = 'pinned'\n"}, "pinned")
    git_commit(remote, {"__init__.py": "VERSION = 'newer'\n"}, "newer")
    monkeypatch.setenv("SLURM_CONF", str(slurm))
    monkeypatch.setenv("SISPIN_ENGINE", "slurm")

    # the store (PIN_HOME, here in tmp_path beside work/) is at the same path for the manager and the node
    first = cluster_setup(tmp_path / "first", remote, pinned, real_sisyphus)
    monkeypatch.chdir(first)
    assert main(["status", "--fetch"]) == 0
    mirror = Store(store_dir).mirror_path(f"file://{remote}")
    hidden = remote.with_name("away")
    remote.rename(hidden)  # only the store can serve the node's clone now
    checkout, _ = run_on_slurm(first, slurm, pinned)
    shared = object_files(checkout / ".git" / "objects").keys() & object_files(mirror / "objects").keys()
    assert shared, "the node's clone hardlinks the objects of the store's mirror"
    assert git(checkout, "config", "remote.origin.url") == f"file://{remote}", "the URL itself is unchanged"

    # the same with the mirror removed: the node clones from the remote
    hidden.rename(remote)
    shutil.rmtree(mirror)
    second = cluster_setup(tmp_path / "second", remote, pinned, real_sisyphus)
    checkout, _ = run_on_slurm(second, slurm, pinned)
    assert all(p.stat().st_nlink == 1 for p in object_files(checkout / ".git" / "objects").values())
    assert not mirror.exists(), "nothing made a mirror on the way"


def test_a_node_without_the_store_the_manager_saw_fails_the_clone(
    slurm, real_sisyphus, make_repo, tmp_path, store_dir, monkeypatch
):
    remote = make_repo("returnn_common")
    pinned = git_commit(remote, {"__init__.py": "VERSION = 'pinned'\n"}, "pinned")
    monkeypatch.setenv("SLURM_CONF", str(slurm))
    monkeypatch.setenv("SISPIN_ENGINE", "slurm")
    setup = cluster_setup(tmp_path / "setup", remote, pinned, real_sisyphus)
    monkeypatch.chdir(setup)
    assert main(["status", "--fetch"]) == 0
    mirror = Store(store_dir).mirror_path(f"file://{remote}")

    # the manager sees the mirror and redirects; the clone waits in the queue (partition down) while the mirror goes
    partition = ["scontrol", "update", "PartitionName=main"]
    subprocess.run([*partition, "State=DOWN"], check=True)
    manager = subprocess.Popen(
        [sys.executable, str(setup / "tools" / "sisyphus" / "sis"), "manager", "-r", "config/cluster.py"],
        cwd=setup,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not subprocess.run(["squeue", "-h"], capture_output=True, text=True, check=True).stdout.strip():
            assert time.monotonic() < deadline and manager.poll() is None, "nothing was submitted"
            time.sleep(0.2)
        shutil.rmtree(mirror)
        subprocess.run([*partition, "State=UP"], check=True)
        log, _ = manager.communicate(timeout=300)
    finally:
        subprocess.run([*partition, "State=UP"], check=True)
        if manager.poll() is None:
            manager.kill()
            manager.wait()
    clone = ExperimentSet(load_lockfile(setup / "pin.toml"), "cluster").clone_job("returnn_common")
    assert (setup / "work" / clone.job_id() / "error.run.1").exists(), log
    assert f"'{mirror}' does not appear to be a git repository" in log, log


def load_settings(monkeypatch: pytest.MonkeyPatch, engine_choice: str) -> dict:
    """
    Execute this setup's settings.py as Sisyphus does (in its global_settings namespace), in a copy of that namespace
    so that the test process's Sisyphus keeps its own settings.
    """
    import sisyphus.global_settings as gs

    monkeypatch.setenv("SISPIN_ENGINE", engine_choice)
    namespace = dict(vars(gs), DEFAULT_ENVIRONMENT_SET=dict(gs.DEFAULT_ENVIRONMENT_SET))
    exec(compile((PROJECT_ROOT / "settings.py").read_text(), "settings.py", "exec"), namespace)
    return namespace


def test_the_engine_is_chosen_by_an_environment_variable(real_sisyphus, write_lock, store_dir, monkeypatch):
    from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
    from i6_core.tools.git import CloneGitRepositoryJob
    from sisyphus.engine import EngineSelector
    from sisyphus.localengine import LocalEngine
    from sisyphus.simple_linux_utility_for_resource_management_engine import (
        SimpleLinuxUtilityForResourceManagementEngine,
    )

    write_lock("version = 1\n")
    assert type(load_settings(monkeypatch, "")["engine"]()) is LocalEngine
    assert type(load_settings(monkeypatch, "local")["engine"]()) is LocalEngine

    selector = load_settings(monkeypatch, "slurm")["engine"]()
    assert isinstance(selector, EngineSelector)
    # the demo's jobs are mini tasks: they stay on the manager's machine
    for job in (CloneGitRepositoryJob("file:///nowhere", commit="0" * 40), WriteReturnnConfigJob(ReturnnConfig({}))):
        task = next(iter(job.tasks()))
        assert task.mini_task
        assert type(selector.get_used_engine_by_rqmt(task.rqmt())) is LocalEngine
    assert type(selector.get_used_engine_by_rqmt({})) is SimpleLinuxUtilityForResourceManagementEngine


def test_an_unknown_engine_stops_sis_with_one_line(real_sisyphus, tmp_path, monkeypatch):
    setup = make_setup(tmp_path / "setup", "version = 1\n", real_sisyphus)
    monkeypatch.setenv("SISPIN_ENGINE", "sge")
    result = subprocess.run(
        [sys.executable, str(setup / "tools" / "sisyphus" / "sis"), "manager", "-r", "config/demo.py"],
        cwd=setup,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (result.returncode, result.stdout, result.stderr) == (
        1,
        "",
        "settings.py: SISPIN_ENGINE='sge' is not one of 'local', 'slurm'\n",
    )


def test_a_store_on_another_filesystem_is_copied_not_hardlinked(history, tmp_path, monkeypatch):
    other = Path(tempfile.mkdtemp(prefix="sispin-store-", dir="/dev/shm"))
    try:
        assert other.stat().st_dev != tmp_path.stat().st_dev, "/dev/shm is a filesystem of its own (tmpfs)"
        monkeypatch.setenv("PIN_HOME", str(other))
        Store().fetch(history.url)
        task = task_environment(use_store_mirrors())
        history.remote.rename(history.remote.with_name("away"))
        # what CloneGitRepositoryJob runs: the clone still comes from the store, only its objects are copied
        clone = tmp_path / "work" / "clone"
        subprocess.run(["git", "clone", "-q", history.url, str(clone)], env=task, check=True)
        assert git(clone, "rev-parse", "HEAD") == history.c[4]
        assert all(p.stat().st_nlink == 1 for p in object_files(clone / ".git" / "objects").values())
    finally:
        shutil.rmtree(other)
