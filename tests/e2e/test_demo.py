"""
End to end: the demo experiment set run by a real ``sis manager`` against a local returnn_common stand-in
repository (a real git repository, file:// URL), in a copy of this setup made in a temp dir.
"""

from __future__ import annotations

import subprocess
import sys

from conftest import git, git_commit, run_manager
from sispin.cli.main import main


def test_sis_manager_runs_the_demo_at_the_pinned_commit(real_setup, make_repo, tmp_path, capsys):
    remote = make_repo("returnn_common")
    pinned = git_commit(remote, {"__init__.py": "VERSION = 'pinned'\n"}, "the pinned state")
    git_commit(remote, {"__init__.py": "VERSION = 'newer'\n"}, "main moved on")

    tables = (
        f'[repos.returnn_common]\nurl = "file://{remote}"\nbranch = "main"\ncheckout = "returnn_common"\n\n'
        f'[sets.demo]\nconfigs = ["config/demo.py"]\nreturnn_common = "{pinned}"\n'
    )
    setup = real_setup(tables)
    log = run_manager(setup, "config/demo.py")
    assert "All output calculated" in log, log

    checkout = setup / "output" / "demo" / "returnn_common"
    assert checkout.is_symlink()
    assert git(checkout, "rev-parse", "HEAD") == pinned

    # the job that made it is the one the in-process API computes, and its id holds the pinned commit
    from sispin.lock.loading import load_lockfile
    from sispin.sets import ExperimentSet

    job = ExperimentSet(load_lockfile(setup / "pin.toml"), "demo").clone_job("returnn_common")
    assert checkout.resolve() == (setup / "work" / job.job_id() / "output" / "returnn_common").resolve()

    # the written RETURNN config really imports returnn_common from the pinned checkout
    config = (setup / "output" / "demo" / "returnn.config").read_text()
    prolog = config.split("batch_size")[0]
    probe = prolog + "\nimport returnn_common\nprint(returnn_common.VERSION)\n"
    imported = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=tmp_path)
    assert imported.stdout.strip() == "pinned"

    # pin verify looks at the finished clone job too, and catches an edited file in it
    assert main(["verify"]) == 0
    assert f"ok: sets.demo.returnn_common ({job.job_id()})" in capsys.readouterr().out
    (checkout / "__init__.py").write_text("VERSION = 'edited by hand'\n")
    assert main(["verify", "demo"]) == 1
    said = capsys.readouterr().out
    assert "output/returnn_common has local changes: __init__.py (modified); to restore it: git -C " in said
    restore = said.split("to restore it: ")[1].split("\n")[0]  # the two commands it names, run as printed
    stash, checkout_again = (part.split(" (")[0] for part in restore.split(", then "))
    for command in (stash, checkout_again):
        subprocess.run(command, shell=True, cwd=setup, check=True, capture_output=True)
    assert main(["verify", "demo"]) == 0
