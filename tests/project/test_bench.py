"""Every benchmark of bench/ still runs (tiny sizes; the figures themselves are not judged here)."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from conftest import PROJECT_ROOT


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(PROJECT_ROOT))
    try:
        from bench import run

        yield run
    finally:
        sys.path.remove(str(PROJECT_ROOT))


def test_benchmarks_run_at_tiny_sizes(bench, tmp_path: Path):
    from bench import checkout, lockload, scan, startup, status

    for name in ("import", "lockfile", "checkout", "status", "scan"):
        (tmp_path / name).mkdir()
    results = [startup.bench_import(tmp_path / "import", runs=1)]
    results += lockload.bench_lockfile_load(tmp_path / "lockfile", sets=5, repos=2, runs=1)
    results += checkout.bench_checkout(tmp_path / "checkout", commits=30, files=10, runs=1)
    results.append(status.bench_status(tmp_path / "status", sets=3, repos=2, commits=10, runs=1))
    results.append(scan.bench_import_scan(tmp_path / "scan", files=200, runs=1))
    assert len(results) == 11
    goals = [r for r in results if r.goal is not None]
    assert len(goals) == 8 and all(r.measured and r.figure is not None for r in goals), goals
    # the rows of other transfers say what a job saves, and judge nothing
    assert all("another transfer" in r.name for r in results if r.goal is None and "faster" in r.ratio)
    table = bench.report(results)
    assert len(table.splitlines()) == 1 + len(results)
    # each goal is judged on its row's figure, so a figure beyond the limit is reported as missed
    for row in goals:
        beyond = row.goal.limit * (2 if row.goal.at_most else 0.5)
        missed = dataclasses.replace(row, figure=beyond)
        assert missed.met is False and bench.report([missed]).splitlines()[1].rstrip().endswith("NO")


def test_manager_benchmark_runs(bench, real_sisyphus, tmp_path: Path):
    from bench import startup

    for edited in (False, True):
        (tmp_path / str(edited)).mkdir()
        result = startup.bench_manager(tmp_path / str(edited), sets=20, runs=1, edited=edited)
        assert result.figure is not None and result.goal.text.endswith("ms"), result
        assert result.met == (result.figure <= result.goal.limit)


def test_graph_benchmark_runs(bench, real_sisyphus, tmp_path: Path):
    from bench import graph

    rows = graph.bench_graph(tmp_path, jobs=20, runs=1)
    assert [row.goal.text for row in rows] == ["<= 1.5x", "<= 1.3x", "<= 2.0x", "<= 0.2x", "<= 200 B"]
    assert all(row.figure is not None for row in rows) and "10 outputs" in rows[-1].name, rows
