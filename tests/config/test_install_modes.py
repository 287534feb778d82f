"""
The hash guard works however Sisyphus and sispin are installed: Sisyphus installed with pip (no ``[setup.*]``), and
sispin installed non-editable, editable from this setup, and editable from another setup (a shared venv). In each,
the ids ``pin snapshot`` records equal the ids the real ``sis manager`` of that environment computes, including a job
whose id depends on which i6_core was imported.
"""

from __future__ import annotations

import os
import shutil
import sys
import sysconfig
from pathlib import Path

import pytest

from conftest import PROJECT_ROOT, git_commit, make_setup, run
from sispin.graph.snapshot import read_snapshot

CONFIG = """\
import os

import i6_core
from i6_core.text.processing import WriteToTextFileJob
from sisyphus import tk

from sispin import experiment_set


def py():
    tk.register_output("s/repo", experiment_set("s").repo("rc"))
    # the id of this job says which i6_core was imported
    tk.register_output("s/i6_core", WriteToTextFileJob(os.path.dirname(i6_core.__file__)).out_file)
"""


def _run(*command: object, cwd: Path = PROJECT_ROOT, env: dict = None) -> str:
    result = run(command, cwd, env)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@pytest.fixture(scope="module")
def venv(real_sisyphus, tmp_path_factory) -> Path:
    """A fresh venv with Sisyphus installed by pip; the other dependencies come from the test environment."""
    root = tmp_path_factory.mktemp("venv") / "v"
    # without pip of its own: pip and setuptools>=64 (the test extra) come from the test environment, as a venv's own
    # may be too old to read pyproject.toml's [project] (Python 3.9's setuptools 58)
    _run(sys.executable, "-m", "venv", "--without-pip", root)
    python = root / "bin" / "python"
    site = _run(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip()
    # pip, GitPython, tomlkit, psutil, i6_core's numpy...: visible, without processing this environment's .pth files
    Path(site, "test-dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # from a copy: a build writes build/ into its source, and the shared checkout must stay clean
    source = root.parent / "sisyphus-source"
    shutil.copytree(real_sisyphus, source, ignore=shutil.ignore_patterns(".git", "build", "*.egg-info"))
    _run(python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", source)
    assert (root / "bin" / "sis").is_file()
    return root


def _project(root: Path) -> Path:
    """A pip-installable setup in root: sispin's packaging, recipe/sispin, and recipe/i6_core."""
    root.mkdir(parents=True, exist_ok=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(PROJECT_ROOT / name, root)
    (root / "recipe").mkdir(exist_ok=True)
    shutil.copytree(
        PROJECT_ROOT / "recipe" / "sispin", root / "recipe" / "sispin", ignore=shutil.ignore_patterns("__pycache__")
    )
    if not (root / "recipe" / "i6_core").exists():
        (root / "recipe" / "i6_core").symlink_to(PROJECT_ROOT / "recipe" / "i6_core")
    return root


def _setup(root: Path, make_repo) -> Path:
    remote = make_repo("rc")
    commit = git_commit(remote, {"__init__.py": "X = 1\n"})
    lock = (
        f'version = 1\n\n[repos.rc]\nurl = "file://{remote}"\n\n[sets.s]\nconfigs = ["config/s.py"]\nrc = "{commit}"\n'
    )
    setup = make_setup(root, lock, PROJECT_ROOT / "tools" / "sisyphus", {"s.py": CONFIG})
    shutil.rmtree(setup / "tools")  # no [setup.*], no tools/sisyphus: the environment's Sisyphus it is
    (setup / "recipe" / "sispin").unlink()  # sispin comes from the installation under test
    return setup


@pytest.mark.parametrize("mode", ["non-editable", "editable", "editable from another setup"])
def test_snapshot_ids_equal_the_managers(venv, mode, make_repo, tmp_path):
    setup = _setup(tmp_path / "setup", make_repo)
    if mode == "non-editable":
        source = [_project(tmp_path / "source")]
    elif mode == "editable":
        source = ["-e", _project(setup)]
    else:
        source = ["-e", _project(tmp_path / "other")]  # its recipe/i6_core must not leak into this setup
    python = venv / "bin" / "python"
    _run(python, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--force-reinstall", *source)
    env = {k: v for k, v in os.environ.items() if k not in ("PIN_LOCK", "PYTHONPATH")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"

    _run(venv / "bin" / "pin", "snapshot", cwd=setup, env=env)
    recorded = read_snapshot(setup / "pin.snapshot.toml")["s"]
    log = _run(venv / "bin" / "sis", "manager", "-r", "config/s.py", cwd=setup, env=env)
    for name in ("s/repo", "s/i6_core"):
        target = os.readlink(setup / "output" / name)
        ran = Path(target).relative_to(setup / "work").parent.parent.as_posix()
        assert ran == recorded[name].job, (mode, name, log)
    imported = (setup / "output" / "s" / "i6_core").read_text().strip()
    assert imported == str(setup / "recipe" / "i6_core"), "recipe code comes from the setup's own recipe/"
    _run(venv / "bin" / "pin", "check", "--offline", cwd=setup, env=env)
