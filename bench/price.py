"""
What pricing a move costs: ``pin upgrade --dry-run`` of the generated set of :mod:`bench.graph` (its pin moved one
commit) over a work/ where every job of the set finished, each with the usage file Sisyphus leaves, against the same
dry run over an empty work/. Both sides build the same two graphs; the first also reads and sums the usage of every
finished job the move leaves unused (:mod:`sispin.graph.price`). Fresh processes, warm (bytecode cached, the set
recorded), CPU of the whole command; the two work/ directories are swapped in before each run.
"""

from __future__ import annotations

import os
import pprint
from pathlib import Path
from typing import List

from bench.common import RECIPE, SISYPHUS, Goal, Result, child_cpu, interleaved, python, s
from bench.graph import make_setup

#: lists every job of the hand-written graph (the same ids as the set's: bench.graph's plain build counts them)
_JOBS = """\
import asyncio, sys
sys.path.insert(0, "tools/sisyphus")
import sisyphus.toolkit as tk
from sisyphus.loader import config_manager
tk._sis_running_in_manager = True
asyncio.set_event_loop(asyncio.new_event_loop())
config_manager.load_configs(["config/plain.py"])
print("\\n".join(sorted(job._sis_id() for job in tk.sis_graph.jobs())))
"""

#: one task's usage as Sisyphus's worker writes it (``usage.run.1``: a pprint of a dict), a minute on one processor
_USAGE = {
    "cpu_time": 58.3,
    "current_time": "2026-11-30 10:12:01.123456",
    "elapsed": 60.0,
    "host": "node17",
    "max": {"cpu": 98.0, "rss": 0.41, "vms": 1.9},
    "out_of_memory": False,
    "pid": 4242,
    "requested_resources": {"cpu": 1, "mem": 1, "time": 1},
    "used_time": 60.0 / 3600,
}


def bench_price(work: Path, jobs: int = 5000, runs: int = 3) -> List[Result]:
    """
    :param jobs: about how many jobs the set builds, every one finished on the priced side
    :return: the row of the dry run over a finished work/ against the same over an empty one, CPU
    """
    name = f"pin upgrade --dry-run, {jobs:,} jobs"
    if not (SISYPHUS / "sisyphus" / "toolkit.py").is_file() or not (RECIPE / "i6_core").is_dir():
        return [Result(name, "", "", "", skipped="needs the setup's Sisyphus and i6_core (pin sync)")]
    root = make_setup(work, jobs)
    pycache, env = work / "pycache", {"PIN_HOME": str(work / "store")}
    python(["-m", "sispin", "snapshot"], root, pycache, env)
    (root / "jobs.py").write_text(_JOBS)
    ids = python(["jobs.py"], root, pycache).split()
    finished, empty = root / "work-finished", root / "work-empty"
    empty.mkdir()
    for job in ids:
        directory = finished / job
        directory.mkdir(parents=True)
        (directory / "finished").write_text("")
        (directory / "usage.run.1").write_text(pprint.pformat(_USAGE))
    (root / "work").rmdir()

    def dry_run(over: Path) -> str:
        os.symlink(over.name, root / "work")  # work/ as a link, as on clusters where it lies on another filesystem
        try:
            return python(["-m", "sispin", "upgrade", "big", "rc", "--dry-run"], root, pycache, env)
        finally:
            (root / "work").unlink()

    # the sides differ only in what the row says: one prices every job the move renews, the other has none to price
    renewed = len(ids) - 1  # all but the job that does not use the pin
    assert f" {renewed} finished jobs would no longer be used ({renewed / 60:.1f} CPU-h, peak 0.4 GB)." in dry_run(
        finished
    )
    assert " 0 finished jobs would no longer be used (0 h)." in dry_run(empty)
    priced, unpriced = interleaved(
        [lambda: child_cpu(lambda: dry_run(finished)), lambda: child_cpu(lambda: dry_run(empty))], runs
    )
    return [
        Result(
            f"{name}: every job finished in work/ (the move prices the {renewed:,} it leaves unused from their usage "
            "files) vs none finished, CPU",
            s(priced),
            s(unpriced),
            f"{priced / unpriced:.2f}x",
            Goal("<= 1.2x", 1.2),
            priced / unpriced,
        )
    ]
