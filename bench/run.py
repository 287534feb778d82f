"""
sispin's benchmarks, each side by side with the plain way; prints every figure next to its goal.

    python bench/run.py [NAME ...]

NAME runs only those benchmarks (startup, lockfile, checkout, status, import, graph1000, graph5000, price5000), in
that order; none runs them all. Run it from a setup after ``pip install -e ".[setup]"`` and ``pin sync`` (the manager
rows need the setup's Sisyphus and i6_core, and say so when they are missing). Each module of this directory is one
benchmark; ``common`` holds what they share. Everything is built in a temporary directory and nothing touches the
network. Exit code 1 when a goal is missed, 2 for a name that is no benchmark.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, List, Tuple

# `python bench/run.py` runs this file as a script: the package it belongs to, and this checkout's sispin (for the
# benchmarks that run it in this process), go first on the path
_ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(_ROOT), str(_ROOT / "recipe")]

from bench.checkout import bench_checkout  # noqa: E402
from bench.common import Result  # noqa: E402
from bench.graph import bench_graph  # noqa: E402
from bench.lockload import bench_lockfile_load  # noqa: E402
from bench.price import bench_price  # noqa: E402
from bench.scan import bench_import_scan  # noqa: E402
from bench.startup import bench_startup  # noqa: E402
from bench.status import bench_status  # noqa: E402


def report(results: List[Result]) -> str:
    """:return: the table of results, one line each, and the reasons of skipped rows"""
    columns = ("benchmark", "sispin", "plain way", "ratio", "goal", "met")
    met = {True: "yes", False: "NO", None: "-"}
    rows = [columns] + [
        (
            r.name,
            r.measured,
            r.baseline,
            r.ratio,
            r.goal.text if r.goal else "-",
            "skipped" if r.skipped else met[r.met],
        )
        for r in results
    ]
    widths = [max(len(row[i]) for row in rows) for i in range(len(columns))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines + [f"skipped: {r.name}: {r.skipped}" for r in results if r.skipped])


def main(names: List[str]) -> int:
    """
    Run the benchmarks named (all when none is), at full size, and print the report.

    :param names: benchmark names (see the module's docstring)
    :return: the exit code: 1 when a goal is missed, 2 for an unknown name
    """
    results: List[Result] = []
    with tempfile.TemporaryDirectory(prefix="sispin-bench-") as scratch:
        work = Path(scratch)
        benchmarks: List[Tuple[str, Callable[[Path], List[Result]]]] = [
            ("startup", bench_startup),
            ("lockfile", bench_lockfile_load),
            ("checkout", bench_checkout),
            ("status", lambda directory: [bench_status(directory)]),
            ("import", lambda directory: [bench_import_scan(directory)]),
            ("graph1000", lambda directory: bench_graph(directory, jobs=1000)),
            ("graph5000", lambda directory: bench_graph(directory, jobs=5000)),
            ("price5000", bench_price),
        ]
        unknown = sorted(set(names) - {name for name, _ in benchmarks})
        if unknown:
            print(f"bench/run.py: no benchmark {', '.join(unknown)}", file=sys.stderr)
            return 2
        for name, bench in benchmarks:
            if names and name not in names:
                continue
            (work / name).mkdir()
            start = time.perf_counter()
            results += bench(work / name)
            print(f"  ({name}: {time.perf_counter() - start:.0f} s)", file=sys.stderr)
    print(report(results))
    return 1 if any(r.met is False for r in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
