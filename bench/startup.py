"""
What sispin costs where every Sisyphus process pays it: ``import sispin`` (managers and workers import it through
settings.py), and a whole manager start that builds one clone job per experiment set through
``experiment_set().repo()`` and registers its outputs, against the same jobs written by hand. Every run is a fresh
process, as the user starts it, and is timed whole: the interpreter, Sisyphus and i6_core, settings.py (with sispin's
``use_store_mirrors()`` on sispin's side, nothing on the other), the config's ``py()``, every job id.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import List, Set, Tuple

from bench.common import RECIPE, SISYPHUS, Goal, Result, child_cpu, interleaved, ms, python

#: the two configs a manager loads, each registering one output per set
_PINNED_CONFIG = """\
from sisyphus import tk

from sispin import experiment_set


def py():
    for i in range(SETS):
        tk.register_output(f"s{i}/repo", experiment_set(f"s{i}").repo("returnn_common"))
"""
_HAND_WRITTEN_CALL = (
    '    CloneGitRepositoryJob("https://github.com/rwth-i6/returnn_common", commit="{sha}",'
    ' checkout_folder_name="returnn_common").out_repository,\n'
)
#: settings.py of sispin's side: what README asks a setup to add
_PINNED_SETTINGS = (
    "import sispin\n\nDEFAULT_ENVIRONMENT_SET = {}\nDEFAULT_ENVIRONMENT_SET.update(sispin.use_store_mirrors())\n"
)

#: one manager start, as `sis manager` starts before its engine runs: Sisyphus imported (it runs ./settings.py), the
#: config loaded through Sisyphus's loader (py() run, outputs registered), every job id computed. It prints how many
#: jobs it made and a digest of their ids, so that the report knows both sides did the same work.
_MANAGER = """\
import asyncio, hashlib, sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
import sisyphus.toolkit as tk
from sisyphus.loader import config_manager
tk._sis_running_in_manager = True
asyncio.set_event_loop(asyncio.new_event_loop())
config_manager.load_configs([sys.argv[3]])
ids = sorted(job._sis_id() for job in tk.sis_graph.jobs())
print(len(ids), hashlib.sha256(" ".join(ids).encode()).hexdigest())
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


def _setups(work: Path, sets: int) -> Tuple[Path, Path]:
    """
    Two setups of sets distinct commits: one pinning them in pin.toml (configs through sispin, settings.py with its
    hook), one with the same clone jobs written by hand (and an empty settings.py).
    """
    shas = [hashlib.sha1(str(i).encode()).hexdigest() for i in range(sets)]
    pinned, by_hand = work / f"pinned-{sets}", work / f"by-hand-{sets}"
    for root in (pinned, by_hand):
        (root / "config").mkdir(parents=True)
    lock = ["version = 1", "", "[repos.returnn_common]", 'url = "https://github.com/rwth-i6/returnn_common"']
    lock += ['branch = "main"', 'checkout = "returnn_common"', ""]
    for i, sha in enumerate(shas):
        lock += [f"[sets.s{i}]", 'configs = ["config/main.py"]', f'returnn_common = "{sha}"', ""]
    (pinned / "pin.toml").write_text("\n".join(lock))
    (pinned / "settings.py").write_text(_PINNED_SETTINGS)
    (pinned / "config" / "main.py").write_text(_PINNED_CONFIG.replace("SETS", str(sets)))
    calls = "".join(_HAND_WRITTEN_CALL.format(sha=sha) for sha in shas)
    (by_hand / "settings.py").write_text("")
    (by_hand / "config" / "main.py").write_text(
        "from i6_core.tools.git import CloneGitRepositoryJob\nfrom sisyphus import tk\n\npaths = [\n"
        f"{calls}]\n\n\ndef py():\n    for i, path in enumerate(paths):\n"
        '        tk.register_output(f"s{i}/repo", path)\n'
    )
    return pinned, by_hand


#: goals of the manager rows, by (many sets, first start after an edit): the highest ratio for 1,000 sets, where
#: the per-set cost shows (the first start after an edit validates the whole lockfile: its TOML parse alone is ~15%
#: of 1,000 hand-written calls); the most milliseconds sispin may add for a few sets, where its fixed cost (its
#: import, settings.py's hook and the lockfile load; the validation too after an edit) would dominate any ratio
_GOALS = {
    (True, False): ("ratio", 1.10),
    (True, True): ("ratio", 1.35),
    (False, False): ("extra", 0.010),
    (False, True): ("extra", 0.020),
}


def bench_manager(work: Path, sets: int, runs: int = 15, edited: bool = False) -> Result:
    """
    A whole manager start (see :data:`_MANAGER`) of ``sets`` sets, each one clone job made by
    ``experiment_set(f"s{i}").repo()`` and registered as an output, against the same jobs written by hand. Median CPU
    of interleaved fresh processes (the interpreter, Sisyphus, i6_core and settings.py included on both sides).

    :param sets: experiment sets, one clone job each (the goal is a ratio from 1,000 on, else milliseconds)
    :param edited: measure the first start after the pins changed (pin.toml, or the hand-written config, edited just
        before), when neither sispin's lockfile cache nor Python's bytecode cache of the config can be used
    """
    state = "first start after the pins changed" if edited else "a later start"
    name = f"sis manager start, {sets:,} sets ({state}): exp.repo() vs hand-written, CPU"
    kind, limit = _GOALS[sets >= 1000, edited]
    goal = Goal(f"<= {limit:.2f}x" if kind == "ratio" else f"<= +{limit * 1000:.0f} ms", limit)
    if not (SISYPHUS / "sisyphus" / "toolkit.py").is_file() or not (RECIPE / "i6_core").is_dir():
        return Result(name, "-", "-", "-", goal, skipped="needs the setup's Sisyphus and i6_core (pin sync)")
    pinned_root, by_hand_root = _setups(work, sets)
    edits = iter(range(10**6))
    digests: Set[str] = set()
    environment = {"PIN_HOME": str(work / "store")}

    def start(root: Path, pins: Path) -> float:
        if edited:  # a new comment: other bytes, the same pins
            with pins.open("a") as out:
                out.write(f"# edit {next(edits)}\n")
        output: List[str] = []
        cpu = child_cpu(
            lambda: output.append(
                python(
                    ["-c", _MANAGER, str(SISYPHUS), str(RECIPE), "config/main.py"], root, work / "pycache", environment
                )
            )
        )
        jobs, digest = output[0].split()
        assert int(jobs) == sets, f"{root} made {jobs} jobs, not {sets}"
        digests.add(digest)
        return cpu

    def pinned() -> float:
        return start(pinned_root, pinned_root / "pin.toml")

    def by_hand() -> float:
        return start(by_hand_root, by_hand_root / "config" / "main.py")

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
