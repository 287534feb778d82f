"""
``pin import --config`` and the commands after it on a real, public setup, side by side with a plain Sisyphus load of
the same configs: the table of docs/adoption.md ("A whole setup in one command"), rebuilt in one run.

    python -m bench.real_setup --i6-experiments PATH [--pipeline NAME] [--runs N] [--redirect URL=GITDIR ...]

PATH is a checkout of https://github.com/rwth-i6/i6_experiments that you provide (this script never downloads it, and
nothing of it belongs in this repository; the docs' figures were measured at commit 6b0591b10). The script builds a
throwaway copy of a setup in a temporary directory: ``recipe/i6_experiments`` a copy of PATH (the scenarios edit it;
PATH itself is only read), ``recipe/i6_core`` and ``tools/sisyphus`` links to this checkout's (``pin sync``),
``settings.py`` this checkout's, and ``config/real.py`` calling the pipeline's experiments in its ``py()``. There is
no pin.toml: ``pin import --config --write`` makes it. Then, in that copy, each step below, every run a fresh process
(as a user, CI or the pre-commit hook starts it) with Sisyphus on ``PYTHONPATH`` as ``sis`` would have it:

- the plain load: what ``sis manager`` computes before its engine starts (``config_manager.load_configs`` on the
  config, then every job's id), as bench/graph.py does it;
- ``pin import PIPELINE common --set NAME --config config/real.py --accept-unpinned --write``, and every job id of a
  plain load before and after it compared (all must be equal), and the snapshot's output jobs with the plain load's;
- ``pin check --offline --full``, ``pin check --offline`` with its earlier pass kept, and ``pin snapshot``, each timed
  in alternation with the plain load (``--runs`` pairs, medians of CPU and wall time). Both sides are warm: each ran
  once before (bytecode cached, in a directory of the run's own, ``PYTHONPYCACHEPREFIX``), and both end the same way,
  with ``os._exit`` once their output is written (the probe inside ``pin`` does, so the plain load does too);
- for a pipeline with an upgrade scenario (the first below): a pin moved in pin.toml under unchanged code
  (``pin check`` must fail and name the assignment of the overwrite), ``pin upgrade --dry-run --accept-drift``
  (refused while the overwrite is in the code; with ``--redirect``, its count of changing commits held against
  ``git rev-list`` in that repository), the clone moved to ``experiment_set(NAME).repo(...)`` (every job id of
  a plain load kept), ``pin upgrade --dry-run`` of that move timed against the plain load (the first, with the graph
  at the pins built beside the moved one, and again, with the graph at the pins kept from the first) and the upgrade
  itself (its blast radius against the ids a plain load gives afterwards).

The measured pipelines (``--pipeline``, default the first; each also with a code change whose report ``pin check``
must count as two plain loads see it):

- ``example_setups/librispeech/ctc_rnnt_standalone_2024``: the BPE LSTM and Transformer LMs and the CTC BPE-128
  baseline with their LM decodings (the docs' table), 639 jobs; with the upgrade scenario (i6_models);
- ``users/zeineldeen/experiments/aed_beam_search``: ``configs/espnet_adaptive_search.py``, ESPnet beam searches of
  models on its authors' cluster, 599 jobs built from ``tk.Path`` objects only (no data is needed for the graph); it
  pins nothing (its one clone, SCTK, follows a branch), and the setup's settings.py names a RETURNN, as i6 setups do.

What it needs: this checkout's venv with sispin installed (``pip install -e '.[setup]'``) and ``pin sync`` run (the
setup's Sisyphus and i6_core); the pipelines' own Python dependencies in the same interpreter, from the package
registry: ``pip install torch==2.9.1 'torchaudio==2.9.*' i6-models typeguard returnn``. The first pipeline imports
torchaudio, and a torchaudio wheel loads only beside the torch of its own version (torchaudio 2.11.1, PyPI's newest,
fails beside torch 2.13.0: ``Could not load this library: .../_torchaudio.so``). The upgrade rows clone the moved
repository (i6_models) into a store of the run's own: with no network, ``--redirect
https://github.com/rwth-i6/i6_models=GITDIR`` has git take it from a local clone or mirror (``url.GITDIR.insteadOf``,
which changes no job id); without either those rows are skipped with the reason. The plain way's figures and sispin's
are printed next to each other with the goal each row keeps; exit 1 when a goal is missed. Nothing outside the
temporary directory is written (``--keep DIR`` keeps the setup copy there instead, to look at it).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

if __package__ in (None, ""):  # `python bench/real_setup.py`: the package it belongs to goes first on the path
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import RECIPE, ROOT, SISYPHUS, Goal, Result, child_cpu, dated_back, git, interleaved, s  # noqa: E402

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - sispin's own dependency on older Pythons
    import tomli as tomllib


@dataclass(frozen=True)
class Upgrade:
    """
    A pin of the pipeline moved, and its clone moved to ``experiment_set(...).repo(...)`` on the way.

    :param url: the repository's URL, as the pipeline clones it (finds its entry in pin.toml after the import)
    :param old: its pinned commit in the pipeline
    :param new: the commit it is moved to
    :param package: the directory of the repository whose changes a job sees (for the count of changing commits)
    :param file: the pipeline's file that clones it and sets its ``hash_overwrite``, relative to the pipeline
    :param overwrite: the start of the line that sets the overwrite (its line number is what ``pin check`` must name)
    :param clone: the code in ``file`` that makes the clone and its overwrite, replaced by ``migrated``
    :param migrated: the same path through the lock, ``{set}`` being the set's name
    """

    url: str
    old: str
    new: str
    package: str
    file: str
    overwrite: str
    clone: str
    migrated: str


@dataclass(frozen=True)
class Change:
    """
    An ordinary code change of the pipeline, of the kind that gives jobs new ids.

    :param file: the file changed, relative to the pipeline
    :param old: the text replaced (its first occurrence)
    :param new: what replaces it
    :param what: the change, for the report
    :param argument: what every cause ``pin explain --against HEAD`` names must be about (the changed argument)
    """

    file: str
    old: str
    new: str
    what: str
    argument: str


@dataclass(frozen=True)
class Pipeline:
    """
    One pipeline of i6_experiments and what this benchmark builds of it.

    :param path: its directory in i6_experiments (also the PATH that ``pin import`` scans, with ``common``)
    :param set_name: the experiment set it is adopted as
    :param config: ``config/real.py``: which of its experiments are built
    :param what: what that builds, for the report
    :param upgrade: the upgrade scenario, when the pipeline has one
    :param change: a code change that ``pin check`` must report as the plain loads see it, when it has one
    :param settings: lines the setup's settings.py needs for the pipeline (what its authors' settings.py sets)
    """

    path: str
    set_name: str
    config: str
    what: str
    upgrade: Optional[Upgrade] = None
    change: Optional[Change] = None
    settings: str = ""


_CTC2024 = "example_setups/librispeech/ctc_rnnt_standalone_2024"
_CTC2024_MODULE = "i6_experiments." + _CTC2024.replace("/", ".")
_AED_SEARCH = "users/zeineldeen/experiments/aed_beam_search"
_AED_SEARCH_MODULE = "i6_experiments." + _AED_SEARCH.replace("/", ".")

#: what --help says the run needs (the module's docstring says it at length)
_NEEDS = """\
measured pipelines: example_setups/librispeech/ctc_rnnt_standalone_2024 (the default; the docs' table) and
users/zeineldeen/experiments/aed_beam_search.

needs, in this interpreter: sispin installed from this checkout (pip install -e '.[setup]'), `pin sync` run (the
setup's Sisyphus and i6_core), and what the pipelines import, from the package registry:
    pip install torch==2.9.1 'torchaudio==2.9.*' i6-models typeguard returnn
The upgrade rows clone https://github.com/rwth-i6/i6_models: the network, or --redirect URL=GITDIR.
Exit 1 when a goal is missed, 2 when the run cannot start or the plain load fails."""

#: the exit code of ``pin`` when a git command failed (sispin.errors.GitError)
_GIT_ERROR = 5

#: the measured pipelines, by their directory in i6_experiments
PIPELINES: Dict[str, Pipeline] = {
    _CTC2024: Pipeline(
        path=_CTC2024,
        set_name="ctc2024",
        config=f"""\
from {_CTC2024_MODULE}.experiments.ctc_bpe.baseline_128 import bpe128_ls960_0924_base
from {_CTC2024_MODULE}.experiments.lm_bpe.lstm import bpe128_kazuki_lstm
from {_CTC2024_MODULE}.experiments.lm_bpe.trafo import bpe128_kazuki_trafo


def py():
    # the LMs first: the CTC baseline's LM decodings take them from the pipeline's storage
    bpe128_kazuki_lstm()
    bpe128_kazuki_trafo()
    bpe128_ls960_0924_base()
""",
        what="the BPE LSTM and Transformer LMs and the CTC BPE-128 baseline with their LM decodings",
        upgrade=Upgrade(
            url="https://github.com/rwth-i6/i6_models",
            old="1a5fe8302587d24237e2291f05b9c3ab5f01415c",
            new="7ec53ccb6cdff30f8e4786cf073f043724a3004b",
            package="i6_models",
            file="default_tools.py",
            overwrite="I6_MODELS_REPO_PATH.hash_overwrite = ",
            clone="""\
I6_MODELS_REPO_PATH = CloneGitRepositoryJob(
    url="https://github.com/rwth-i6/i6_models",
    commit="1a5fe8302587d24237e2291f05b9c3ab5f01415c",
    checkout_folder_name="i6_models",
).out_repository.copy()
I6_MODELS_REPO_PATH.hash_overwrite = "LIBRISPEECH_DEFAULT_I6_MODELS"
""",
            migrated="""\
from sispin import experiment_set

I6_MODELS_REPO_PATH = experiment_set("{set}").repo("i6_models").copy()
""",
        ),
        change=Change(
            file="experiments/ctc_bpe/baseline_128.py",
            old="np.linspace(5e-5, 5e-4, 480)",
            new="np.linspace(5e-5, 6e-4, 480)",
            what="the CTC model's learning-rate schedule changed (np.linspace(5e-5, 6e-4, 480))",
            argument="['learning_rates']",
        ),
    ),
    # ESPnet beam searches of models on the authors' cluster, each scored twice: every input is a tk.Path (a model
    # directory, a Python, a script), so the graph builds with no data; its one clone is SCTK at a branch
    _AED_SEARCH: Pipeline(
        path=_AED_SEARCH,
        set_name="aed_search",
        config=f"""\
from {_AED_SEARCH_MODULE}.configs.espnet_adaptive_search import py as espnet_adaptive_search


def py():
    espnet_adaptive_search()
""",
        what="configs/espnet_adaptive_search.py: ESPnet adaptive-pruning beam searches, each scored by sclite and WER",
        change=Change(
            file="configs/espnet_adaptive_search.py",
            old='"nbest": 1,',
            new='"nbest": 2,',
            what="the searches' baseline argument nbest changed from 1 to 2",
            argument="nbest",
        ),
        # ReturnnComputeWERJob finds RETURNN through the settings, as in every i6 setup; no job runs here
        settings='RETURNN_ROOT = "/opt/returnn"\nRETURNN_PYTHON_EXE = "/usr/bin/python3"\n',
    ),
}

#: the plain load: what `sis manager` computes before its engine starts (load the configs, which runs py(), then every
#: job's id); it ends as the probe does, without tearing its interpreter down, so that both sides end alike
_PLAIN = """\
import asyncio, json, os, sys
sys.path.insert(0, "tools/sisyphus")
import sisyphus.toolkit as tk
from sisyphus.loader import config_manager
tk._sis_running_in_manager = True
asyncio.set_event_loop(asyncio.new_event_loop())
config_manager.load_configs(["config/real.py"])
jobs = {job._sis_id(): type(job).__name__ for job in tk.sis_graph.jobs()}
outputs = {}
for target in tk.sis_graph.targets:
    creators = [path.creator for path in target.required_full_list if path.creator is not None]
    outputs[target.name] = creators[0]._sis_id() if len(creators) == 1 else None
if len(sys.argv) > 1:
    with open(sys.argv[1], "w") as ids:
        json.dump({"jobs": jobs, "outputs": outputs}, ids)
print(len(jobs), len(outputs))
sys.stdout.flush()
os._exit(0)
"""


@dataclass
class Load:
    """
    What a plain load built.

    :param jobs: every job's id, with its class name
    :param outputs: every registered output's name, with the id of the job that makes it (None: no job, or several)
    """

    jobs: Dict[str, str]
    outputs: Dict[str, Optional[str]]

    def count(self, *words: str) -> int:
        """:return: how many jobs are of a class whose name has one of the words in it"""
        return sum(1 for name in self.jobs.values() if any(word in name for word in words))

    def summary(self) -> str:
        """:return: the graph's size, for the report"""
        trainings, clones = self.count("Training"), self.count("CloneGitRepositoryJob")
        return f"{len(self.jobs)} jobs, {len(self.outputs)} outputs, {trainings} trainings, {clones} clones"


@dataclass
class Run:
    """One finished command: its exit code, what it printed (stdout and stderr), its CPU and wall seconds."""

    code: int
    out: str
    cpu: float
    wall: float

    def tail(self, lines: int = 3) -> str:
        """:return: its last lines, for a report of what went wrong"""
        return " | ".join(line.strip() for line in self.out.strip().splitlines()[-lines:])


@dataclass
class Setup:
    """
    The throwaway copy of the setup, and how each command is run in it.

    :param root: the setup root (where pin.toml is made)
    :param pipeline: the pipeline it builds
    :param env: the environment of every command
    :param redirects: the local git directory that stands for each redirected URL
    """

    root: Path
    pipeline: Pipeline
    env: Dict[str, str] = field(default_factory=dict)
    redirects: Dict[str, str] = field(default_factory=dict)

    def run(self, arguments: Sequence[str]) -> Run:
        """:return: a fresh process of this interpreter with these arguments, in the setup root, as it ended"""
        start = time.perf_counter()
        result: List[subprocess.CompletedProcess] = []
        cpu = child_cpu(
            lambda: result.append(
                subprocess.run(
                    [sys.executable, *arguments],
                    cwd=self.root,
                    env=self.env,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                )
            )
        )
        return Run(result[0].returncode, result[0].stdout.decode(errors="replace"), cpu, time.perf_counter() - start)

    def pin(self, *arguments: str) -> Run:
        """:return: ``pin ARGUMENTS`` as it ended"""
        return self.run(["-m", "sispin", *arguments])

    def plain(self) -> Run:
        """:return: a plain load as it ended (nothing kept but its two counts)"""
        return self.run(["plain.py"])

    def load(self) -> Load:
        """:return: what a plain load builds now; :raises RuntimeError: when it fails"""
        ids = self.root / "plain-ids.json"
        done = self.run(["plain.py", str(ids)])
        if done.code != 0:
            raise RuntimeError(f"the plain load failed: {done.tail()}")
        data = json.loads(ids.read_text())
        ids.unlink()
        return Load(data["jobs"], data["outputs"])

    @property
    def pipeline_dir(self) -> Path:
        """:return: the pipeline's directory in the copy"""
        return self.root / "recipe" / "i6_experiments" / self.pipeline.path


def as_written(work: Path, i6_experiments: Path, pipeline: Pipeline) -> Tuple[Path, Path, str]:
    """
    The Sisyphus and i6_core a pipeline was written against: of each, the newest commit on its first-parent history
    (this repository's pinned checkouts hold it) from before the pipeline's last change in the user's checkout.

    :param work: where the two checkouts go
    :return: the Sisyphus and the i6_core checkout, and what they are (for the report)
    """
    changed = git(i6_experiments, "log", "-1", "--format=%cI", "--", pipeline.path)
    if not changed:
        raise RuntimeError(f"{pipeline.path}: no commit in the i6_experiments checkout's history (--as-written)")
    checkouts, said = [], []
    for name, source in (("sisyphus", SISYPHUS), ("i6_core", RECIPE / "i6_core")):
        commit = git(source, "rev-list", "-1", "--first-parent", f"--before={changed}", "HEAD")
        checkout = work / "versions" / name
        git(work, "clone", "-q", "--no-checkout", str(source), str(checkout))
        git(checkout, "checkout", "-q", commit)
        checkouts.append(checkout)
        said.append(f"{name} {commit[:7]} ({git(checkout, 'log', '-1', '--format=%cs')})")
    return checkouts[0], checkouts[1], f"as written (last change {changed[:10]}): {', '.join(said)}"


def build_setup(
    work: Path,
    i6_experiments: Path,
    pipeline: Pipeline,
    redirects: Sequence[Tuple[str, str]] = (),
    versions: Optional[Tuple[Path, Path]] = None,
) -> Setup:
    """
    :param work: an empty directory: the setup copy, the store and the bytecode cache go there
    :param i6_experiments: the user's checkout (only read)
    :param redirects: (URL, local git directory) pairs: git takes each URL's repository from that directory
    :param versions: the Sisyphus and i6_core checkouts to use (None: this repository's pinned ones)
    :return: the setup copy, with no pin.toml yet
    """
    root = work / "setup"
    for folder in ("config", "recipe", "tools", "work"):
        (root / folder).mkdir(parents=True)
    # a copy, not a link: the scenarios edit the pipeline, and the user's checkout must stay as it is; its links
    # (some name places on the authors' cluster) stay links
    shutil.copytree(
        i6_experiments, root / "recipe" / "i6_experiments", symlinks=True, ignore=shutil.ignore_patterns(".git")
    )
    sisyphus, i6_core = versions or (SISYPHUS, RECIPE / "i6_core")
    (root / "recipe" / "i6_core").symlink_to(i6_core)
    (root / "tools" / "sisyphus").symlink_to(sisyphus)
    shutil.copy(ROOT / "settings.py", root)
    if pipeline.settings:
        with open(root / "settings.py", "a") as settings:
            settings.write(f"\n# what the pipeline needs of an i6 setup's settings\n{pipeline.settings}")
    (root / "config" / "real.py").write_text(pipeline.config)
    (root / "plain.py").write_text(_PLAIN)
    # files written in the last two seconds may still change: a check does not keep a pass that read them
    dated_back(root)
    env = {k: v for k, v in os.environ.items() if k not in ("PIN_LOCK", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    # Sisyphus on the path, as `sis` from a checkout has it; sispin from this interpreter's install; the user's
    # store and git configuration are left alone (the redirects are git's own environment variables)
    env.update(PYTHONPATH=str(root / "tools" / "sisyphus"), PYTHONPYCACHEPREFIX=str(work / "pycache"))
    env.update(PIN_HOME=str(work / "store"), GIT_CONFIG_COUNT=str(len(redirects)))
    for number, (url, directory) in enumerate(redirects):
        env[f"GIT_CONFIG_KEY_{number}"] = f"url.{directory}.insteadOf"
        env[f"GIT_CONFIG_VALUE_{number}"] = url
    return Setup(root, pipeline, env, dict(redirects))


def _paired(
    setup: Setup, arguments: Sequence[str], runs: int, before_each: Callable[[], None] = lambda: None
) -> Tuple[float, float, float, float, Run]:
    """
    ``pin ARGUMENTS`` and the plain load, alternately, ``runs`` of each; both ran once before, so both are warm.

    :param before_each: run in this process (outside the clocks) before each run of ``pin``: the state it starts from
    :return: the medians of sispin's CPU, the plain load's CPU, sispin's wall, the plain load's wall; sispin's last run
    """
    before_each()
    setup.pin(*arguments), setup.plain()
    walls: List[List[float]] = [[], []]
    last: List[Run] = []

    def side(action: Callable[[], Run], index: int) -> float:
        if index == 0:
            before_each()
        done = action()
        walls[index].append(done.wall)
        if index == 0:
            last[:] = [done]
        elif done.code != 0:
            raise RuntimeError(f"the plain load failed: {done.tail()}")
        return done.cpu

    cpu, plain_cpu = interleaved([lambda: side(lambda: setup.pin(*arguments), 0), lambda: side(setup.plain, 1)], runs)
    return cpu, plain_cpu, statistics.median(walls[0]), statistics.median(walls[1]), last[0]


def _ratio_rows(
    what: str, timing: Tuple[float, float, float, float, Run], limit: Optional[float], passed: bool
) -> List[Result]:
    """
    :param limit: the ratio's goal (None: the rows only inform, but a command that did not pass still misses)
    :return: the CPU and wall rows of a paired timing; a command that did not pass misses its goal
    """
    cpu, plain_cpu, wall, plain_wall, _ = timing
    rows = []
    for kind, mine, plain in (("CPU", cpu, plain_cpu), ("wall", wall, plain_wall)):
        ratio = mine / plain
        if limit is None:
            goal = Goal("passes", 1, at_most=False)
            figure = 1.0 if passed else 0.0
        else:
            goal = Goal(f"<= {limit}x" + ("" if passed else ", and passes"), limit)
            figure = ratio if passed else 1e9
        rows.append(Result(f"{what}, {kind}", s(mine), s(plain), f"{ratio:.3f}x", goal, figure))
    return rows


def _differ(before: Load, after: Load) -> Tuple[Set[str], Set[str]]:
    """:return: the job ids only before, and only after"""
    return set(before.jobs) - set(after.jobs), set(after.jobs) - set(before.jobs)


def _equal_ids(what: str, before: Load, after: Load) -> Result:
    """:return: the row that every job id of a plain load stayed"""
    gone, new = _differ(before, after)
    kept = len(set(before.jobs) & set(after.jobs))
    measured = f"{kept} of {len(before.jobs)} ids equal ({len(gone)} gone, {len(new)} new)"
    return Result(what, measured, f"{len(before.jobs)} ids", "-", Goal("0 ids differ", 0), len(gone) + len(new))


def _flag(what: str, done: Run, ok: bool, shown: str, goal: str) -> Result:
    """:return: a row whose goal is a yes or no: ``ok``"""
    return Result(what, shown, "-", "-", Goal(goal, 1, at_most=False), 1.0 if ok else 0.0)


def _snapshot_outputs(setup: Setup) -> Dict[str, str]:
    """:return: the output jobs pin.snapshot.toml records for the set, by output name"""
    data = tomllib.loads((setup.root / "pin.snapshot.toml").read_text(encoding="utf-8"))
    outputs = data.get("sets", {}).get(setup.pipeline.set_name, {}).get("outputs", {})
    return {name: entry["job"] for name, entry in outputs.items()}


def _count(pattern: str, text: str) -> str:
    """:return: the first group of pattern in text, or '?' when it is not there"""
    found = re.search(pattern, text)
    return found.group(1) if found else "?"


def _line_of(path: Path, start: str) -> int:
    """:return: the number of the first line of path that starts with start (0 when none does)"""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if line.startswith(start):
            return number
    return 0


def bench_adoption(setup: Setup, runs: int) -> Tuple[List[Result], Load]:
    """:return: the rows of the plain load, the import, and check and snapshot against the plain load; its load"""
    pipeline, rows = setup.pipeline, []
    setup.plain()  # warm: bytecode cached, files read once
    first = setup.plain()
    before = setup.load()
    if first.code != 0:
        raise RuntimeError(f"the plain load failed: {first.tail()}")
    rows.append(
        Result(
            f"plain Sisyphus load of config/real.py ({pipeline.what})", "-", f"{before.summary()}, {s(first.wall)}", "-"
        )
    )
    scanned = (f"recipe/i6_experiments/{pipeline.path}", "recipe/i6_experiments/common")
    adopt = setup.pin(
        "import", *scanned, "--set", pipeline.set_name, "--config", "config/real.py", "--accept-unpinned", "--write"
    )
    kept = re.search(r"(\d+) of (\d+) outputs keep their job id", adopt.out)
    adopted = re.search(r"adopted \((\d+) new pins?, (\d+) hash_overwrite alias", adopt.out)
    accepted = len(re.findall(r"accepted by URL", adopt.out))
    figure = int(kept.group(1)) / int(kept.group(2)) if kept and adopt.code == 0 else 0.0
    shown = (
        f"{adopted.group(1) if adopted else '?'} pins, {adopted.group(2) if adopted else '?'} aliases, {accepted} "
        f"accepted URLs; {kept.group(0) if kept else adopt.tail()}; exit {adopt.code}, {s(adopt.wall)}"
    )
    rows.append(
        Result(
            "pin import ... --config config/real.py --accept-unpinned --write",
            shown,
            "-",
            "-",
            Goal("every output keeps its id", 1.0, at_most=False),
            figure,
        )
    )
    if adopt.code != 0:
        return rows, before
    dated_back(setup.root)
    after = setup.load()
    rows.append(_equal_ids("plain load after the adoption: every job id as before", before, after))
    recorded = _snapshot_outputs(setup)
    plain_outputs = {name: job for name, job in before.outputs.items() if job is not None}
    wrong = sum(1 for name, job in plain_outputs.items() if recorded.get(name) != job) + len(
        set(recorded) - set(plain_outputs)
    )
    rows.append(
        Result(
            "pin.snapshot.toml's output jobs against the plain load's",
            f"{len(recorded)} recorded, {wrong} differ",
            f"{len(plain_outputs)} outputs",
            "-",
            Goal("0 differ", 0),
            wrong,
        )
    )
    size = (setup.root / "pin.snapshot.toml").stat().st_size
    rows.append(
        Result(
            "pin.snapshot.toml: size, bytes per output",
            f"{size / 1024:.0f} KB, {size / max(1, len(recorded)):.0f} B",
            "-",
            "-",
        )
    )

    full = _paired(setup, ("check", "--offline", "--full"), runs)
    ok = full[4].code == 0 and full[4].out.startswith("pin check: ok")
    rows += _ratio_rows(f"pin check --offline --full ({full[4].tail(1)}) vs the plain load", full, 1.5, ok)
    dated_back(setup.root)
    setup.pin("check", "--offline")  # the pass recorded, as after any check of a change
    kept_pass = _paired(setup, ("check", "--offline"), runs)
    ok = kept_pass[4].code == 0 and "unchanged since the last pass" in kept_pass[4].out
    rows += _ratio_rows(
        f"pin check --offline, the pass kept ({kept_pass[4].tail(1)}) vs the plain load", kept_pass, 0.2, ok
    )
    snapshot = _paired(setup, ("snapshot",), runs)
    rows += _ratio_rows("pin snapshot of the unchanged set vs the plain load", snapshot, 2.0, snapshot[4].code == 0)
    return rows, before


def bench_upgrade(setup: Setup, before: Load, runs: int) -> List[Result]:
    """:return: the rows of the pin moved under unchanged code, the dry run, the migration and the upgrade"""
    upgrade = setup.pipeline.upgrade
    if upgrade is None:
        return [Result("pin upgrade scenario", "", "", "", skipped="the pipeline has no upgrade scenario")]
    lock = setup.root / "pin.toml"
    lock_text = lock.read_text()
    entries = [name for name, repo in tomllib.loads(lock_text).get("repos", {}).items() if repo["url"] == upgrade.url]
    if len(entries) != 1 or upgrade.old not in lock_text:
        return [Result("pin upgrade scenario", "", "", "", skipped=f"pin.toml has no one pin of {upgrade.url}")]
    repo, code = entries[0], setup.pipeline_dir / upgrade.file
    where = f"{upgrade.file}:{_line_of(code, upgrade.overwrite)}"
    rows = []

    # the pin moved by hand, the code left as it is: the overwrite now hides the new commit
    lock.write_text(lock_text.replace(upgrade.old, upgrade.new))
    moved = setup.pin("check", "--offline")
    lock.write_text(lock_text)
    problems = _count(r"(\d+) problems?", moved.out)
    ok = moved.code == 1 and where in moved.out
    rows.append(
        _flag(
            f"the {repo} pin moved to {upgrade.new[:7]} in pin.toml, code unchanged: pin check",
            moved,
            ok,
            f"exit {moved.code}, {problems} problems, names {where}: {where in moved.out}; {s(moved.wall)}",
            f"fails naming {where}",
        )
    )

    dry = setup.pin("upgrade", setup.pipeline.set_name, repo, "--to", upgrade.new, "--dry-run", "--accept-drift")
    if (
        dry.code == _GIT_ERROR and upgrade.url not in setup.redirects
    ):  # git failed, and nothing stood in for the network
        skipped = f"{upgrade.url} cannot be reached (network, or --redirect URL=GITDIR): {dry.tail(1)}"
        return rows + [Result("pin upgrade (dry run, migration, upgrade)", "", "", "", skipped=skipped)]
    changing = re.search(r"(\d+) of the (\d+) new commits change what set", dry.out)
    ok = dry.code == 7 and where in dry.out
    counted = ""
    source = setup.redirects.get(upgrade.url)
    if source:  # the commits between, counted by git itself: all of them, and those that touch the package
        between = f"{upgrade.old}..{upgrade.new}"
        total, used = (
            int(git(Path(source), "rev-list", "--count", between, *extra) or 0)
            for extra in ((), ("--", upgrade.package))
        )
        ok = ok and changing is not None and (int(changing.group(1)), int(changing.group(2))) == (used, total)
        counted = f", commits = git rev-list ({used} of {total})"
    rows.append(
        _flag(
            f"pin upgrade {setup.pipeline.set_name} {repo} --to {upgrade.new[:7]} --dry-run --accept-drift",
            dry,
            ok,
            f"{changing.group(0) if changing else 'no count of commits'}; exit {dry.code}, names {where}: "
            f"{where in dry.out}; {s(dry.wall)}",
            f"refused (exit 7) naming {where}{counted}",
        )
    )

    # the clone and its overwrite through the lock: the alias keeps the overwrite, so no id may change
    text = code.read_text()
    if upgrade.clone not in text:
        return rows + [Result("migration to experiment_set().repo()", "", "", "", skipped=f"{where}: code differs")]
    code.write_text(text.replace(upgrade.clone, upgrade.migrated.format(set=setup.pipeline.set_name)))
    dated_back(setup.root)
    migrated = setup.load()
    check = setup.pin("check", "--offline")
    rows.append(_equal_ids(f"{upgrade.file} moved to experiment_set(...).repo({repo!r}): plain load", before, migrated))
    rows.append(_flag("pin check --offline after the migration", check, check.code == 0, check.tail(1), "passes"))
    rows += _dry_run_rows(setup, repo, upgrade, runs)

    done = setup.pin("upgrade", setup.pipeline.set_name, repo, "--to", upgrade.new)
    radius = re.search(r"(\d+) of (\d+) jobs", done.out)
    dated_back(setup.root)
    upgraded = setup.load()
    gone, new = _differ(migrated, upgraded)
    predicted = int(radius.group(1)) if radius and done.code == 0 else -1
    rows.append(
        Result(
            f"pin upgrade {setup.pipeline.set_name} {repo} --to {upgrade.new[:7]}: blast radius vs a plain load",
            f"exit {done.code}, blast radius {radius.group(0) if radius else '?'}; {s(done.wall)}",
            f"{len(gone)} ids gone, {len(new)} new",
            "-",
            Goal("radius = ids gone", 0),
            abs(predicted - len(gone)) if predicted >= 0 else 1e9,
        )
    )
    after = setup.pin("check", "--offline")
    rows.append(_flag("pin check --offline after the upgrade", after, after.code == 0, after.tail(1), "passes"))
    return rows


def _dry_run_rows(setup: Setup, repo: str, upgrade: Upgrade, runs: int) -> List[Result]:
    """
    :return: the rows of ``pin upgrade --dry-run`` of the migrated setup against the plain load: the first, which
        builds the graph at the pins and the moved one, and again, with the graph at the pins kept from the first
    """
    name = setup.pipeline.set_name
    dry_run = ("upgrade", name, repo, "--to", upgrade.new, "--dry-run")
    kept_build = setup.root / ".sispin-cache" / "builds" / f"{name}.json"
    what = f"pin upgrade {name} {repo} --to {upgrade.new[:7]} --dry-run"
    # the kept graph removed before each run (outside the clock): both graphs built every time
    first = _paired(setup, dry_run, runs, lambda: kept_build.unlink() if kept_build.exists() else None)
    rows = _ratio_rows(f"{what}, the first (both graphs built) vs the plain load", first, None, _radius(first[4]))
    again = _paired(setup, dry_run, runs)
    kept = _radius(again[4]) and kept_build.is_file()
    return rows + _ratio_rows(f"{what}, again (the graph at the pins kept) vs the plain load", again, 1.3, kept)


def _radius(dry_run: Run) -> bool:
    """:return: whether a dry run passed and said its blast radius"""
    return dry_run.code == 0 and "Blast radius" in dry_run.out


def bench_change(setup: Setup, runs: int) -> List[Result]:
    """:return: the rows of a code change: what ``pin check`` reports of it against two plain loads, and pin explain"""
    change, name = setup.pipeline.change, setup.pipeline.set_name
    if change is None:
        return [Result("a code change", "", "", "", skipped="the pipeline has no change scenario")]
    code = setup.pipeline_dir / change.file
    text = code.read_text()
    if change.old not in text:
        return [Result(change.what, "", "", "", skipped=f"{change.file} has no {change.old!r}")]
    unchanged = setup.load()
    # the setup's own history, as a user's setup has one: `pin explain --against HEAD` builds the old graph from it
    git(setup.root, "init", "-q")
    git(setup.root, "add", "-A")
    git(setup.root, "commit", "-q", "-m", "the pipeline as it ran")
    code.write_text(text.replace(change.old, change.new, 1))
    dated_back(setup.root)
    changed = setup.load()
    check = setup.pin("check", "--offline")
    explain = setup.pin("explain", name)
    timing = _paired(setup, ["explain", name, "--against", "HEAD"], runs)
    code.write_text(text)
    gone, _ = _differ(unchanged, changed)
    outputs = sum(1 for output, job in unchanged.outputs.items() if job != changed.outputs.get(output))
    summary = re.search(rf"sets\.{re.escape(name)}: (\d+) outputs changed, (\d+) jobs renewed", check.out)
    reported = (int(summary.group(1)), int(summary.group(2))) if summary and check.code == 1 else None
    lines = [line for line in check.out.splitlines() if line.strip()]
    return [
        Result(
            f"{change.what}: pin check --offline against two plain loads",
            f"exit {check.code}, {len(lines)} lines: {summary.group(0) if summary else check.tail(1)}; "
            f"{s(check.wall)}",
            f"{outputs} outputs, {len(gone)} jobs with new ids",
            "-",
            Goal("fails, counts = plain loads'", 0),
            abs(reported[0] - outputs) + abs(reported[1] - len(gone)) if reported else 1e9,
        ),
        Result(
            f"pin explain {name} of that change",
            f"exit {explain.code}, {len(explain.out.splitlines())} lines, {len(explain.out.encode()) / 1024:.1f} KB; "
            f"{s(explain.wall)}",
            "-",
            "-",
        ),
        *_against_rows(change, name, timing),
    ]


def _against_rows(change: Change, name: str, timing: Tuple[float, float, float, float, Run]) -> List[Result]:
    """
    :param timing: ``pin explain --against HEAD`` of the change and the plain load, paired (see :func:`_paired`)
    :return: the rows of ``pin explain --against HEAD`` of the change: whether every cause it names is the changed
        argument (no artifact of the temporary copy it builds the old graph in), and its CPU and wall time against
        two plain loads (the old graph and today's)
    """
    cpu, plain_cpu, wall, plain_wall, against = timing
    # a job with more differing arguments than are shown ends them with "because  ... and N more arguments of this
    # job": a count of the arguments above's kind, no cause of its own
    causes = [
        line.strip()
        for line in against.out.splitlines()
        if line.strip().startswith("because") and not re.match(r"because\s+\.\.\. and \d+ more", line.strip())
    ]
    other = [cause for cause in causes if change.argument not in cause]
    named = f"{len(causes)} causes, {len(other)} about anything else" + (f" (first: {other[0][:80]})" if other else "")
    rows = [
        Result(
            f"pin explain {name} --against HEAD of that change: what it names",
            f"exit {against.code}, {len(against.out.splitlines())} lines; {named}",
            "-",
            "-",
            Goal(f"only {change.argument}", 0),
            len(other) if causes and against.code == 1 else 1e9,
        )
    ]
    for kind, mine, plain in (("CPU", cpu, plain_cpu), ("wall", wall, plain_wall)):
        ratio = mine / (2 * plain)
        rows.append(
            Result(
                f"pin explain {name} --against HEAD against two plain loads, {kind}",
                s(mine),
                f"2 x {s(plain)}",
                f"{ratio:.2f}x",
                Goal("<= 1.3x", 1.3),
                ratio,
            )
        )
    return rows


def bench_real_setup(
    work: Path,
    i6_experiments: Path,
    pipeline: Pipeline,
    runs: int = 5,
    redirects: Sequence[Tuple[str, str]] = (),
    versions: Optional[Tuple[Path, Path]] = None,
) -> List[Result]:
    """
    :param work: an empty directory for the setup copy
    :param i6_experiments: the user's checkout of rwth-i6/i6_experiments
    :param runs: runs of each side of a timed pair
    :return: every row, in the order of the docs' table
    """
    setup = build_setup(work, i6_experiments, pipeline, redirects, versions)
    rows, before = bench_adoption(setup, runs)
    if rows[-1].skipped or not (setup.root / "pin.snapshot.toml").is_file():
        return rows
    rows += bench_upgrade(setup, before, runs)
    return rows + bench_change(setup, runs)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the benchmark on one pipeline and print the report; exit 1 when a goal is missed, 2 when it cannot run."""
    parser = argparse.ArgumentParser(
        prog="python -m bench.real_setup",
        description=__doc__.split("\n\n")[0].strip(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_NEEDS,
    )
    parser.add_argument(
        "--i6-experiments",
        type=Path,
        required=True,
        metavar="PATH",
        help="a checkout of rwth-i6/i6_experiments (only read; the docs measured 6b0591b10)",
    )
    parser.add_argument("--pipeline", choices=sorted(PIPELINES), default=_CTC2024, help="(default: %(default)s)")
    parser.add_argument("--runs", type=int, default=5, help="runs of each side of a timed pair (default: %(default)s)")
    parser.add_argument(
        "--redirect",
        action="append",
        default=[],
        metavar="URL=GITDIR",
        help="clone URL from the local git directory GITDIR (git's url.insteadOf; repeatable)",
    )
    parser.add_argument("--keep", type=Path, metavar="DIR", help="build the setup copy in DIR (empty) and keep it")
    parser.add_argument(
        "--as-written",
        action="store_true",
        help="use the Sisyphus and i6_core the pipeline was written against (the newest commit of each before the "
        "pipeline's last change) instead of this repository's pinned ones",
    )
    options = parser.parse_args(argv)
    from bench.run import report

    checkout = options.i6_experiments.resolve()
    pipeline = PIPELINES[options.pipeline]
    if not (checkout / pipeline.path).is_dir():
        parser.error(f"{checkout / pipeline.path}: no such pipeline in the checkout")
    if not (SISYPHUS / "sisyphus" / "toolkit.py").is_file() or not (RECIPE / "i6_core").is_dir():
        parser.error("needs the setup's Sisyphus and i6_core: run `pin sync` first")
    redirects = [tuple(item.split("=", 1)) for item in options.redirect]
    if any(len(pair) != 2 for pair in redirects):
        parser.error("--redirect takes URL=GITDIR")
    commit = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short=9", "HEAD"], capture_output=True)
    print(
        f"i6_experiments {commit.stdout.decode().strip() or '(not a git checkout)'}, pipeline {pipeline.path}, "
        f"{options.runs} runs a side",
        file=sys.stderr,
    )
    with tempfile.TemporaryDirectory(prefix="sispin-real-") as scratch:
        work = options.keep.resolve() if options.keep else Path(scratch)
        work.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        try:
            versions = None
            if options.as_written:
                sisyphus, i6_core, said = as_written(work, checkout, pipeline)
                versions = (sisyphus, i6_core)
                print(f"  Sisyphus and i6_core {said}", file=sys.stderr)
            results = bench_real_setup(
                work, checkout, pipeline, options.runs, redirects, versions  # type: ignore[arg-type]
            )
        except RuntimeError as error:
            print(f"error: {error}", file=sys.stderr)
            return 2
        print(f"  ({time.perf_counter() - start:.0f} s)", file=sys.stderr)
    print(report(results))
    return 1 if any(r.met is False for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
