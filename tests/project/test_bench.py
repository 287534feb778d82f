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
    goals = [row.goal.text if row.goal else None for row in rows]
    assert goals == ["<= 1.5x", "<= 1.3x", "<= 2.0x", "<= 0.2x", None, "<= 1.3x", "<= 1 s", "<= 200 B"], rows
    assert all((row.figure is not None) == (row.goal is not None) for row in rows), rows
    assert "10 outputs" in rows[-1].name and "not on disk" in rows[-2].name and "pins kept" in rows[-3].name
    assert "both graphs built" in rows[-4].name, rows
    assert "config/gone" not in (tmp_path / "setup" / "pin.toml").read_text(), "the lockfile is as before"


def test_price_benchmark_runs(bench, real_sisyphus, tmp_path: Path):
    from bench import price

    (row,) = price.bench_price(tmp_path, jobs=20, runs=1)
    assert row.goal.text == "<= 1.2x" and row.figure is not None and "prices the 21 " in row.name, row


def test_real_setup_copies_the_checkout_and_compares_ids(bench, tmp_path: Path):
    from bench import real_setup

    # a checkout with one pipeline and a link to a place that is not there (i6_experiments has such links)
    checkout = tmp_path / "i6_experiments"
    pipeline = real_setup.PIPELINES["users/zeineldeen/experiments/aed_beam_search"]
    (checkout / pipeline.path).mkdir(parents=True)
    (checkout / pipeline.path / "a.py").write_text("X = 1\n")
    (checkout / "users" / "dangling").symlink_to("/nonexistent/cluster/path")
    (tmp_path / "work").mkdir()
    setup = real_setup.build_setup(tmp_path / "work", checkout, pipeline, [("https://x/y", "/mirror/y")])
    copied = setup.root / "recipe" / "i6_experiments"
    assert (copied / pipeline.path / "a.py").read_text() == "X = 1\n" and (copied / "users" / "dangling").is_symlink()
    assert (setup.root / "config" / "real.py").read_text() == pipeline.config and not (setup.root / "pin.toml").exists()
    assert (setup.root / "settings.py").read_text().endswith(pipeline.settings)  # what the pipeline needs of it
    assert (
        setup.env["GIT_CONFIG_KEY_0"] == "url./mirror/y.insteadOf" and setup.env["GIT_CONFIG_VALUE_0"] == "https://x/y"
    )
    assert setup.env["PYTHONPATH"] == str(setup.root / "tools" / "sisyphus") and "PIN_LOCK" not in setup.env
    # the ids of two plain loads: a row is met only when none differs
    before = real_setup.Load({"a/Job.1": "Job", "b/ReturnnTrainingJob.2": "ReturnnTrainingJob"}, {"out": "a/Job.1"})
    after = real_setup.Load({"a/Job.1": "Job", "b/ReturnnTrainingJob.3": "ReturnnTrainingJob"}, {"out": "a/Job.1"})
    assert before.summary() == "2 jobs, 1 outputs, 1 trainings, 0 clones"
    assert real_setup._equal_ids("same", before, before).met is True
    row = real_setup._equal_ids("moved", before, after)
    assert row.met is False and row.measured == "1 of 2 ids equal (1 gone, 1 new)"


def test_the_benchmarks_to_run_are_named_and_an_unknown_name_is_refused(bench, capsys):
    assert bench.main(["graph1000", "nothing"]) == 2
    assert "bench/run.py: no benchmark nothing" in capsys.readouterr().err
