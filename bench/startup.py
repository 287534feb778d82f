"""
What sispin costs where every Sisyphus process pays it: ``import sispin`` (managers and workers import it through
settings.py), and a manager that builds one clone job per experiment set through ``experiment_set().repo()``,
against the same jobs written by hand. Every run is a fresh process, as the user starts it.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import List, Set

from bench.common import RECIPE, SISYPHUS, Goal, Result, child_cpu, interleaved, ms, python

#: the two configs a manager loads; each is imported as Sisyphus imports a config (importlib: bytecode is cached)
_PINNED_CONFIG = """\
from sispin import experiment_set

paths = [experiment_set(f"s{i}").repo("returnn_common") for i in range(SETS)]
"""
_HAND_WRITTEN_CALL = (
    '    CloneGitRepositoryJob("https://github.com/rwth-i6/returnn_common", commit="{sha}",'
    ' checkout_folder_name="returnn_common").out_repository,\n'
)

#: one manager start: Sisyphus and i6_core are imported first, then the clock runs while the config is imported.
#: It prints the CPU time of that (the work is all CPU, and CPU time is what other load on a shared machine
#: inflates least) and the ids of the jobs made, so that the report knows both sides did the same work.
_MANAGER = """\
import importlib, hashlib, sys, time
sys.path[:0] = [sys.argv[1], sys.argv[2], "config"]
import sisyphus.toolkit
from i6_core.tools.git import CloneGitRepositoryJob
assert "sispin" not in sys.modules
cpu = time.process_time()
config = importlib.import_module(sys.argv[3])
cpu = time.process_time() - cpu
ids = sorted(path.creator.job_id() for path in config.paths)
print(cpu, len(set(ids)), hashlib.sha256(" ".join(ids).encode()).hexdigest())
"""


def bench_import(work: Path, runs: int = 21) -> Result:
    """``python -c "import sispin"`` against ``python -c "pass"``: what every manager and worker pays on start."""
    pycache = work / "pycache"
    python(["-c", "import sispin"], work, pycache)  # writes the bytecode cache, as a user's first run does
    # whole processes, their CPU time: the bare interpreter's start is the baseline, sispin's share the difference
    ours, theirs = interleaved(
        [
            lambda: child_cpu(lambda: python(["-c", "import sispin"], work, pycache)),
            lambda: child_cpu(lambda: python(["-c", "pass"], work, pycache)),
        ],
        runs,
    )
    extra = ours - theirs
    return Result(
        "import sispin: fresh process vs a bare interpreter, CPU",
        ms(ours),
        ms(theirs),
        f"+{extra * 1000:.1f} ms",
        Goal("<= +25 ms", 0.025),
        extra,
    )


def _setup(work: Path, sets: int) -> Path:
    """A setup with a pin.toml of sets distinct commits, and both configs: through sispin and by hand."""
    root = work / f"setup-{sets}"
    (root / "config").mkdir(parents=True)
    (root / "settings.py").write_text("")  # Sisyphus reads ./settings.py: this setup's adds nothing
    shas = [hashlib.sha1(str(i).encode()).hexdigest() for i in range(sets)]
    lock = ["version = 1", "", "[repos.returnn_common]", 'url = "https://github.com/rwth-i6/returnn_common"']
    lock += ['branch = "main"', 'checkout = "returnn_common"', ""]
    for i, sha in enumerate(shas):
        lock += [f"[sets.s{i}]", f'configs = ["config/s{i}.py"]', f'returnn_common = "{sha}"', ""]
    (root / "pin.toml").write_text("\n".join(lock))
    (root / "config" / "pinned.py").write_text(_PINNED_CONFIG.replace("SETS", str(sets)))
    calls = "".join(_HAND_WRITTEN_CALL.format(sha=sha) for sha in shas)
    (root / "config" / "by_hand.py").write_text(
        f"from i6_core.tools.git import CloneGitRepositoryJob\n\npaths = [\n{calls}]\n"
    )
    return root


#: goals of the manager rows, by (many sets, first start after an edit): the highest ratio for 1,000 sets, where
#: the per-set cost shows (the first start after an edit validates the whole lockfile: its TOML parse alone is ~15%
#: of 1,000 hand-written calls); the most milliseconds sispin may add for a few sets, where its fixed cost (import
#: and lockfile load) would dominate any ratio
_GOALS = {
    (True, False): ("ratio", 1.10),
    (True, True): ("ratio", 1.35),
    (False, False): ("extra", 0.005),
    (False, True): ("extra", 0.010),
}


def bench_manager(work: Path, sets: int, runs: int = 15, edited: bool = False) -> Result:
    """
    A manager start: ``import sispin``, the lockfile load and ``sets`` calls of ``experiment_set(f"s{i}").repo()``
    (one set per commit), against the same ``sets`` CloneGitRepositoryJob calls written by hand; Sisyphus and
    i6_core are imported before the clock on both sides. Median CPU times of interleaved fresh processes.

    :param sets: experiment sets, one clone job each (the goal is a ratio from 1,000 on, else milliseconds)
    :param edited: measure the first start after the pins changed (pin.toml, or the hand-written config, edited just
        before), when neither sispin's lockfile cache nor Python's bytecode cache of the config can be used
    """
    state = "first start after the pins changed" if edited else "a later start"
    name = f"manager start, {sets:,} sets ({state}): exp.repo() vs hand-written, CPU"
    kind, limit = _GOALS[sets >= 1000, edited]
    goal = Goal(f"<= {limit:.2f}x" if kind == "ratio" else f"<= +{limit * 1000:.0f} ms", limit)
    if not (SISYPHUS / "sisyphus" / "toolkit.py").is_file() or not (RECIPE / "i6_core").is_dir():
        return Result(name, "-", "-", "-", goal, skipped="needs the setup's Sisyphus and i6_core (pin sync)")
    root = _setup(work, sets)
    edits = iter(range(10**6))
    digests: Set[str] = set()

    def start(config: str, pins: Path) -> float:
        if edited:  # a new comment: other bytes, the same pins
            with pins.open("a") as out:
                out.write(f"# edit {next(edits)}\n")
        cpu, jobs, digest = python(["-c", _MANAGER, str(SISYPHUS), str(RECIPE), config], root, work / "pycache").split()
        assert int(jobs) == sets, f"{config} made {jobs} jobs, not {sets}"
        digests.add(digest)
        return float(cpu)

    def pinned() -> float:
        return start("pinned", root / "pin.toml")

    def by_hand() -> float:
        return start("by_hand", root / "config" / "by_hand.py")

    pinned(), by_hand()  # the first start caches what can be cached: Python's bytecode, sispin's validated lock
    assert len(digests) == 1, "sispin and the hand-written config made different jobs"
    ours, theirs = interleaved([pinned, by_hand], runs)
    ratio, extra = ours / theirs, ours - theirs
    compared = f"{ratio:.2f}x" if kind == "ratio" else f"+{extra * 1000:.1f} ms ({ratio:.2f}x)"
    return Result(name, ms(ours), ms(theirs), compared, goal, ratio if kind == "ratio" else extra)


def bench_startup(work: Path) -> List[Result]:
    """Every row of this module at its full size."""
    (work / "import").mkdir()
    rows = [bench_import(work / "import")]
    for sets in (1000, 50):
        for edited in (False, True):
            directory = work / f"manager-{sets}-{'edited' if edited else 'later'}"
            directory.mkdir()
            rows.append(bench_manager(directory, sets, edited=edited))
    return rows
