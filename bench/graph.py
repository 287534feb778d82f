"""
``pin check --offline`` and ``pin snapshot`` of a generated set against a plain Sisyphus build of the same graph: the
config loaded as ``sis manager`` loads it and every job id computed, with the pinned clone written by hand. Each run
is a fresh process, as a user (or CI, or the pre-commit hook) starts it, and both sides start warm: bytecode cached,
the set recorded before, nothing changed since. ``pin check --full`` builds the set as a first check after a change
does; plain ``pin check`` of the unchanged set takes its earlier pass (see sispin.graph.incremental).
"""

from __future__ import annotations

import shutil
import statistics
import time
from pathlib import Path
from typing import Callable, List

from bench.common import RECIPE, ROOT, SISYPHUS, Goal, Result, child_cpu, dated_back, git, interleaved, python, s

#: about two jobs per model (its config and a copy of it), all using the pinned clone, each with a nested net dict
_CONFIG = """\
from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
from i6_core.text.processing import WriteToTextFileJob
from sisyphus import tk

{clone_import}


def network(i):
    return {{
        f"layer{{j}}": {{"class": "linear", "n_out": 512 + j, "from": [f"layer{{j - 1}}"] if j else "data"}}
        for j in range(12)
    }}


def py():
    root = {clone}
    features = WriteToTextFileJob("features")
    for i in range({models}):
        config = ReturnnConfig(
            {{"features": features.out_file, "rc": root, "index": i, "network": network(i)}}, black_formatting=False
        )
        write = WriteReturnnConfigJob(config)
        tk.register_output(f"big/model{{i}}", WriteToTextFileJob(write.out_returnn_config_file).out_file)
"""

#: the plain build: what `sis manager` does before its engine starts (load the configs, run py(), every id). It ends
#: with os._exit once its output is written, as the probe that builds the graph inside `pin` does: tearing down an
#: interpreter that holds a thousand jobs costs a tenth of the build, and neither side pays it
_PLAIN = """\
import asyncio, os, sys
sys.path.insert(0, "tools/sisyphus")
import sisyphus.toolkit as tk
from sisyphus.loader import config_manager
tk._sis_running_in_manager = True
asyncio.set_event_loop(asyncio.new_event_loop())
config_manager.load_configs(["config/plain.py"])
print(len({job._sis_id() for job in tk.sis_graph.jobs()}), len(tk.sis_graph.targets))
sys.stdout.flush()
os._exit(0)
"""


def make_setup(work: Path, jobs: int) -> Path:
    """A setup of one set of about ``jobs`` jobs pinning a generated repository, and the same graph by hand."""
    remote = work / "remote"
    remote.mkdir()
    git(remote, "init", "-q", "-b", "main")
    (remote / "__init__.py").write_text("X = 1\n")
    git(remote, "add", "-A")
    git(remote, "commit", "-q", "-m", "first")
    commit = git(remote, "rev-parse", "HEAD")
    (remote / "__init__.py").write_text("X = 2\n")
    git(remote, "commit", "-q", "-am", "second")  # where `pin upgrade` moves the pin
    root = work / "setup"
    for folder in ("config", "recipe", "tools", "work"):
        (root / folder).mkdir(parents=True)
    shutil.copy(ROOT / "settings.py", root)
    (root / "recipe" / "i6_core").symlink_to(RECIPE / "i6_core")
    (root / "tools" / "sisyphus").symlink_to(SISYPHUS)
    sisyphus = git(SISYPHUS, "rev-parse", "HEAD")
    (root / "pin.toml").write_text(
        f'version = 1\n\n[repos.rc]\nurl = "file://{remote}"\n\n[sets.big]\nconfigs = ["config/big.py"]\n'
        f'rc = "{commit}"\n\n[setup.sisyphus]\nurl = "file://{SISYPHUS}"\ncommit = "{sisyphus}"\n'
        'path = "tools/sisyphus"\n'
    )
    models = max(1, jobs // 2)
    pinned = 'experiment_set("big").repo("rc")'
    by_hand = f'CloneGitRepositoryJob("file://{remote}", commit="{commit}").out_repository'
    (root / "config" / "big.py").write_text(
        _CONFIG.format(clone_import="from sispin import experiment_set", clone=pinned, models=models)
    )
    (root / "config" / "plain.py").write_text(
        _CONFIG.format(clone_import="from i6_core.tools.git import CloneGitRepositoryJob", clone=by_hand, models=models)
    )
    (root / "plain.py").write_text(_PLAIN)
    return root


def _goal(limit: float) -> Goal:
    return Goal(f"<= {limit}x", limit)


def _timed(action: Callable[[], object], walls: List[float]) -> float:
    """:return: the CPU seconds of the processes action ran; their wall seconds go to walls"""
    start = time.perf_counter()
    cpu = child_cpu(action)
    walls.append(time.perf_counter() - start)
    return cpu


def bench_graph(work: Path, jobs: int = 1000, runs: int = 3) -> List[Result]:
    """
    :param jobs: about how many jobs the set builds
    :return: the rows of ``pin check --offline`` and ``pin snapshot`` against the plain build, CPU of the whole
        command (interpreter start, the probe's and Sisyphus's work)
    """
    name = f"{jobs:,} jobs"
    if not (SISYPHUS / "sisyphus" / "toolkit.py").is_file() or not (RECIPE / "i6_core").is_dir():
        reason = "needs the setup's Sisyphus and i6_core (pin sync)"
        return [Result(f"pin {verb}, {name}", "", "", "", skipped=reason) for verb in ("check", "snapshot")]
    root = make_setup(work, jobs)
    pycache, env = work / "pycache", {"PIN_HOME": str(work / "store")}

    def pin(*arguments: str, exit_code: int = 0) -> str:
        return python(["-m", "sispin", *arguments], root, pycache, env, exit_code)

    built = python(["plain.py"], root, pycache).split()
    pin("snapshot")  # recorded once: the state a later check starts from
    dated_back(root)  # files written in the last two seconds may still change: their builds are not kept
    assert pin("check", "--offline").startswith("pin check: ok"), "the set passes, as the rows assume"
    assert "1 unchanged since the last pass" in pin("check", "--offline"), "the pass is kept, as the last row assumes"
    rows = []
    upgrade = ("upgrade", "big", "rc", "--dry-run")
    kept_build = root / ".sispin-cache" / "builds"
    for verb, command, cpu_limit, wall_limit in (
        ("check --offline --full", ("check", "--offline", "--full"), 1.5, 1.3),
        ("snapshot", ("snapshot",), 2.0, None),
        ("check --offline (a pass kept: nothing read changed)", ("check", "--offline"), 0.2, None),
        # both graphs (the pins now and moved) side by side, each walking every job's record: measured, no goal
        ("upgrade --dry-run, the first (both graphs built)", upgrade, None, None),
        # the graph at the pins kept from the first: only the moved side is built
        ("upgrade --dry-run, again (the graph at the pins kept)", upgrade, 1.3, None),
    ):
        walls: List[List[float]] = [[], []]

        def mine_once(command=command, walls=walls, verb=verb) -> float:
            if "the first" in verb:
                shutil.rmtree(kept_build, ignore_errors=True)  # in this process: no CPU of the measured ones
            if "pins kept" in verb:
                assert (kept_build / "big.json").is_file(), "the row measures a kept graph"
            return _timed(lambda: pin(*command), walls[0])

        mine, plain = interleaved(
            [mine_once, lambda walls=walls: _timed(lambda: python(["plain.py"], root, pycache), walls[1])], runs
        )
        what = f"pin {verb}, {built[0]} jobs, {built[1]} outputs, unchanged: vs a plain Sisyphus build"
        cpu_goal = _goal(cpu_limit) if cpu_limit else None
        figure = mine / plain if cpu_goal else None
        rows.append(Result(f"{what}, CPU", s(mine), s(plain), f"{mine / plain:.2f}x", cpu_goal, figure))
        if wall_limit:
            wall, plain_wall = statistics.median(walls[0]), statistics.median(walls[1])
            ratio = wall / plain_wall
            rows.append(Result(f"{what}, wall", s(wall), s(plain_wall), f"{ratio:.2f}x", _goal(wall_limit), ratio))
    rows.append(_missing_config_row(root, pin, runs))
    snapshot = (root / "pin.snapshot.toml").stat().st_size
    outputs = int(built[1])
    rows.append(
        Result(
            f"pin.snapshot.toml, {outputs} outputs: bytes per output",
            f"{snapshot / outputs:.0f} B",
            "-",
            "-",
            Goal("<= 200 B", 200),
            snapshot / outputs,
        )
    )
    return rows


def _missing_config_row(root: Path, pin: Callable[..., str], runs: int) -> Result:
    """
    A second set whose config is not on disk, beside the generated one: ``pin check --full`` says so without building
    either set (a build of the other first took a new user 36 s to hear of a missing file). Wall time, what the user
    waits; a fresh process.
    """
    lockfile = root / "pin.toml"
    text = lockfile.read_text()
    lockfile.write_text(text + '\n[sets.gone]\nconfigs = ["config/gone.py"]\n')
    try:
        said = pin("check", "--offline", "--full", exit_code=1)
        assert "config/gone.py does not exist" in said and "not checked: big, gone" in said, said
        walls: List[float] = []
        for _ in range(runs):
            _timed(lambda: pin("check", "--offline", "--full", exit_code=1), walls)
    finally:
        lockfile.write_text(text)
    wall = statistics.median(walls)
    return Result(
        "pin check --offline --full, beside it a set whose config is not on disk: said, wall",
        s(wall),
        "-",
        "-",
        Goal("<= 1 s", 1.0),
        wall,
    )
