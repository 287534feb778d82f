"""
The config path loads only what it needs: every Sisyphus manager and worker imports sispin through settings.py,
and a config that calls ``experiment_set().repo()`` must not pay for GitPython, tomlkit, filelock or the scanner,
which only the commands that write pin.toml or talk to git use. Checked in fresh processes with the real Sisyphus
and i6_core.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import List

from conftest import RECIPE_DIR, SISYPHUS_DIR, make_setup

#: what the config path must leave alone: GitPython, tomlkit, filelock, and sispin's clone, history, imports, writing
#: and scanning modules
#: (sispin.git.store itself is light: it loads filelock and the modules that clone only in the methods that lock or
#: clone; the settings hook asks it where the mirrors are, and asks git through sispin.git.process, which costs no
#: import beyond the standard library, which mirrors hold the pinned commits)
HEAVY = (
    "git",
    "tomlkit",
    "filelock",
    "sispin.git.repo",
    "sispin.git.history",
    "sispin.imports",
    "sispin.lock.editing",
    "sispin.adopt.scan",
)
SHA = "f7ad63a588359543e7882db517a5eb7fd99ec670"
LOCK = (
    'version = 1\n\n[repos.returnn_common]\nurl = "https://github.com/rwth-i6/returnn_common"\n'
    f'checkout = "returnn_common"\n\n[sets.demo]\nreturnn_common = "{SHA}"\n'
    f'[sets.other]\nreturnn_common = {{ commit = "{SHA}", clone_submodules = true }}\n'
)
#: a manager's config, after Sisyphus has read settings.py: prints the heavy modules that got loaded
CONFIG = """\
import json, sys
sys.path[:0] = [sys.argv[1], "recipe"]
import sisyphus.toolkit
from sispin import experiment_set
exp = experiment_set("demo")
assert exp.commit("returnn_common") == sys.argv[2]
assert exp.repo("returnn_common") == exp.clone_job("returnn_common").out_repository
experiment_set("other").repo("returnn_common")
print(json.dumps(sorted(m for m in sys.modules if m.split(".")[0] in ("git", "tomlkit", "filelock") or m in HEAVY)))
"""


def loaded(setup: Path, code: str, *arguments: str) -> List[str]:
    """Run code in a fresh interpreter in setup; :return: what it printed, as JSON"""
    environ = {k: v for k, v in os.environ.items() if k not in ("PIN_LOCK", "PYTHONPATH")}
    result = subprocess.run(
        [sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{code}", *arguments],
        cwd=setup,
        env=environ,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])


def test_import_sispin_loads_nothing_heavy(tmp_path):
    code = (
        f"import json, sys; sys.path.insert(0, {str(RECIPE_DIR)!r}); import sispin\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in ('git', 'tomlkit', 'filelock', "
        "'sisyphus', 'i6_core', 'tomllib', 'tomli') or m in HEAVY or m == 'sispin.lock.lockfile')))"
    )
    assert loaded(tmp_path, code) == []


def test_a_config_building_jobs_loads_nothing_heavy(real_sisyphus, tmp_path):
    setup = make_setup(tmp_path / "setup", LOCK, real_sisyphus)
    (setup / "settings.py").write_text("import sispin\n")  # what every setup's settings.py does at least
    assert loaded(setup, CONFIG, str(SISYPHUS_DIR), SHA) == [], "first start: the lockfile is validated"
    assert (setup / ".sispin-cache").is_dir()
    assert loaded(setup, CONFIG, str(SISYPHUS_DIR), SHA) == [], "a later start: the validated lockfile is cached"


def test_the_settings_hook_loads_nothing_heavy(real_sisyphus, tmp_path):
    # this setup's settings.py: DEFAULT_ENVIRONMENT_SET.update(sispin.use_store_mirrors())
    setup = make_setup(tmp_path / "setup", LOCK, real_sisyphus)
    assert loaded(setup, CONFIG, str(SISYPHUS_DIR), SHA) == []
