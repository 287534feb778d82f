"""
``pin status`` over many sets, offline, timed as the command a user types: a fresh process, start included. The
figure is CPU time, of the command and of the git processes it runs (what other load on a shared machine inflates
least); on an idle machine the wall time is the same.
"""

from __future__ import annotations

import statistics
from pathlib import Path

from bench.common import Goal, Result, child_cpu, git, lock_text, make_history, python, s


def bench_status(work: Path, sets: int = 50, repos: int = 5, commits: int = 300, runs: int = 7) -> Result:
    """``python -m sispin status`` (what the ``pin`` script runs) with every mirror fetched before."""
    heads = []
    for r in range(repos):
        remote = work / "remotes" / f"r{r}"
        remote.parent.mkdir(parents=True, exist_ok=True)
        make_history(remote, commits, files=20, changes_per_commit=1)
        heads.append(git(remote, "rev-list", "main").split())
    setup = work / "setup"
    setup.mkdir()
    (setup / "pin.toml").write_text(
        lock_text(sets, repos, lambda s, r: heads[r][(s * 13 + r) % commits], lambda r: f"file://{work}/remotes/r{r}")
    )
    pycache = work / "pycache"

    def status(*flags: str) -> str:
        return python(["-m", "sispin", "status", *flags], setup, pycache, {"PIN_HOME": str(work / "store")})

    status("--fetch")  # the mirrors, and Python's bytecode cache, as after a user's earlier runs
    rows = status().splitlines()
    assert len(rows) == 1 + sets * repos + 1 and "never fetched" not in "".join(rows), rows[-3:]
    seconds = statistics.median(child_cpu(status) for _ in range(runs))
    return Result(
        f"pin status: {sets} sets x {repos} repos, offline, as a command, CPU",
        s(seconds),
        "-",
        "-",
        Goal("<= 0.3 s", 0.3),
        seconds,
    )
