"""
The job graph of an experiment set, as Sisyphus builds it from the set's configs.

The core never imports Sisyphus: it runs :mod:`sispin.sisyphus_probe` in a subprocess (with the setup's own
Sisyphus checkout on the path) and reads what it reports. Nothing runs and nothing is written to work/.
"""

from __future__ import annotations

__all__ = ["Output", "Clone", "SetGraph", "find_sisyphus", "load_graph", "run_probe"]

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from sispin.errors import SisyphusError
from sispin.lockfile import Lockfile, inside_setup

#: loading a set's configs must not take longer than this
PROBE_TIMEOUT = 600
#: the directory that holds the sispin package, for the probe's import path
_PACKAGE_PARENT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Output:
    """
    :param job: id of the job that creates the registered output ("" when no job creates it)
    :param path: the output's path inside the job directory
    """

    job: str
    path: str


@dataclass(frozen=True)
class Clone:
    """
    :param job: the CloneGitRepositoryJob's id
    :param url: its url argument
    :param commit: its commit argument (None: it follows a branch)
    :param hash_overwrite: the hash_overwrite set on its out_repository, if any
    """

    job: str
    url: str
    commit: Optional[str]
    hash_overwrite: Optional[str]


@dataclass(frozen=True)
class SetGraph:
    """
    :param set_name: the experiment set
    :param outputs: registered output name -> what creates it
    :param jobs: id of every job the outputs need -> whether it is finished in work/
    :param clones: the CloneGitRepositoryJobs among them
    """

    set_name: str
    outputs: Dict[str, Output]
    jobs: Dict[str, bool]
    clones: Tuple[Clone, ...]


def find_sisyphus(lockfile: Lockfile) -> Optional[Path]:
    """
    :param lockfile: the setup's lockfile
    :return: the directory holding the setup's Sisyphus package (a ``[setup.*]`` checkout), or None
    """
    for entry in lockfile.setup.values():
        candidate = lockfile.root / entry.path
        if (candidate / "sisyphus" / "toolkit.py").is_file():
            return candidate
    return None


def load_graph(lockfile: Lockfile, set_name: str, lock_text: Optional[str] = None) -> SetGraph:
    """
    Build the set's job graph with real Sisyphus, in a subprocess.

    :param lockfile: the setup's lockfile
    :param set_name: the set whose ``configs`` to load
    :param lock_text: load against this lockfile content instead of the file (to see a move before making it)
    :raises SisyphusError: when Sisyphus is missing, the set has no configs, or loading them fails
    """
    spec = lockfile.get_set(set_name)
    if not spec.configs:
        raise SisyphusError(f"set {set_name!r} lists no configs in pin.toml (sets.{set_name}.configs)")
    for config in spec.configs:
        if not (lockfile.root / config).is_file():
            raise SisyphusError(f"sets.{set_name}.configs: {config} does not exist")
        if not inside_setup(lockfile.root, config):
            raise SisyphusError(f"sets.{set_name}.configs: {config} leads out of the setup through a symlink")
    report = run_probe(lockfile, ["graph", *spec.configs], f"loading the configs of set {set_name!r}", lock_text)
    return SetGraph(
        set_name=set_name,
        outputs={name: Output(job=o["job"] or "", path=o["path"]) for name, o in report["outputs"].items()},
        jobs=dict(report["jobs"]),
        clones=tuple(Clone(c["job"], c["url"], c["commit"], c["hash_overwrite"]) for c in report["clones"]),
    )


def run_probe(lockfile: Lockfile, arguments: List[str], what: str, lock_text: Optional[str] = None) -> Any:
    """
    Run :mod:`sispin.sisyphus_probe` in the setup root with the setup's Sisyphus, and return what it reports.

    :param lockfile: the setup's lockfile (its root, and its ``[setup.*]`` Sisyphus)
    :param arguments: the probe's mode, then its arguments after OUT
    :param what: what is being done, for error messages
    :param lock_text: run against this lockfile content instead of the file
    :raises SisyphusError: when there is no Sisyphus checkout or the probe fails
    """
    sisyphus_dir = find_sisyphus(lockfile)
    if sisyphus_dir is None:
        raise SisyphusError("no Sisyphus checkout among the [setup.*] entries of pin.toml (run `pin sync`)")
    python_path = os.pathsep.join(
        p for p in (str(sisyphus_dir), str(_PACKAGE_PARENT), os.environ.get("PYTHONPATH")) if p
    )
    with tempfile.TemporaryDirectory(prefix="sispin-probe-") as scratch:
        lock_path = lockfile.path
        if lock_text is not None:
            lock_path = Path(scratch) / "pin.toml"
            lock_path.write_text(lock_text, encoding="utf-8")
        report_path = Path(scratch) / "report.json"
        env = {**os.environ, "PIN_LOCK": str(lock_path), "PYTHONPATH": python_path}
        command = [sys.executable, "-m", "sispin.sisyphus_probe", arguments[0], str(report_path), *arguments[1:]]
        try:
            result = subprocess.run(
                command,
                cwd=lockfile.root,
                env=env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=PROBE_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise SisyphusError(f"{what} took over {PROBE_TIMEOUT} s") from None
        if result.returncode != 0 or not report_path.is_file():
            lines = [line for line in result.stderr.splitlines() if line.strip()]
            reason = lines[-1].strip() if lines else f"exit code {result.returncode}"
            raise SisyphusError(f"{what} failed: {reason}")
        return json.loads(report_path.read_text(encoding="utf-8"))
