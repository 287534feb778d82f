"""The benchmarks of bench/run.py still run (tiny sizes; the figures themselves are not judged here)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from conftest import PROJECT_ROOT


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("sispin_bench", PROJECT_ROOT / "bench" / "run.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_benchmarks_run_at_tiny_sizes(bench, tmp_path: Path, monkeypatch):
    monkeypatch.delenv("PIN_LOCK", raising=False)
    results = [bench.bench_lockfile_load(sets=5, repos=2, runs=1)]
    for name in ("checkout", "status", "import"):
        (tmp_path / name).mkdir()
    results += bench.bench_checkout(tmp_path / "checkout", commits=30, files=10, runs=1)
    results.append(bench.bench_status(tmp_path / "status", sets=3, repos=2, commits=10, runs=1))
    results.append(bench.bench_import_scan(tmp_path / "import", files=200, runs=1))
    assert len(results) == 5
    assert all(r.measured and r.goal and r.met in (True, False) for r in results)


def test_manager_benchmark_runs(bench, real_sisyphus, tmp_path: Path):
    result = bench.bench_manager_overhead(tmp_path, calls=20, runs=1)
    assert result.met in (True, False) and result.ratio.endswith("x")
