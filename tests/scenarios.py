"""
What several test files build their setups from: config texts, the slow remotes' pace, and the redirect of
the rwth-i6 URLs to the bundles of ../shared/mirrors; and how they run ``pin`` on a pseudo-terminal.
"""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path
from typing import Dict, List, Tuple

from conftest import PROJECT_ROOT, RECIPE_DIR

#: a set's config: a RETURNN config holding its pin of rc and a learning rate (``.format(name=SET)``)
FREEZE_CONFIG = """\
from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
from sisyphus import tk

from sispin import experiment_set


def py():
    config = ReturnnConfig({{"rc": experiment_set("{name}").repo("rc"), "learning_rate": 0.001}})
    tk.register_output("{name}/config", WriteReturnnConfigJob(config).out_returnn_config_file)
"""

#: a set whose manager imports pkg.a of its pin of rc (``exp.imported``)
IMPORTS = """\
from i6_core.returnn.config import ReturnnConfig, WriteReturnnConfigJob
from sisyphus import tk

from sispin import experiment_set


def py():
    exp = experiment_set("imports")
    with exp.imported("rc"):
        import pkg.a

        value = pkg.a.VALUE
    tk.register_output("imports/config", WriteReturnnConfigJob(ReturnnConfig({"value": value})).out_returnn_config_file)
"""

#: the remote sends 25 kB every 0.25 s: a 400 kB repository below takes ~4 s, and git reports progress every second
CHUNK, PAUSE = 25_000, 0.25


def age_files(*roots: Path) -> None:
    """
    Date every file back a minute, as in a setup made some time ago: a file written in the last two seconds may still
    be changing, and a build that read it keeps no pass (see sispin.graph.probe.inputs).
    """
    past = time.time() - 60
    for root in roots:
        for directory, directories, files in os.walk(root):
            for name in files + directories:  # symlinks to directories too, which walk does not enter
                os.utime(os.path.join(directory, name), (past, past), follow_symlinks=False)
            os.utime(directory, (past, past))


def mirrors_redirect() -> Dict[str, str]:
    """git config entries that clone the rwth-i6 URLs from ../shared/mirrors when it is there (as .ci/run does)."""
    mirrors = PROJECT_ROOT.parent / "shared" / "mirrors"
    count = int(os.environ.get("GIT_CONFIG_COUNT", "0"))
    env = {}
    for name in ("returnn", "returnn_common"):
        if (mirrors / f"{name}.bundle").is_file():
            env[f"GIT_CONFIG_KEY_{count}"] = f"url.{mirrors}/{name}.bundle.insteadOf"
            env[f"GIT_CONFIG_VALUE_{count}"] = f"https://github.com/rwth-i6/{name}"
            count += 1
    if env:
        env["GIT_CONFIG_COUNT"] = str(count)
    return env


def task_environment(variables: dict) -> dict:
    """:return: os.environ as a task's process has it after Sisyphus set variables, a DEFAULT_ENVIRONMENT_SET"""
    return {**os.environ, **{key: value.replace("$$", "$") for key, value in variables.items()}}


def pin_on_a_terminal(setup: Path, *arguments: str) -> Tuple[int, str]:
    """Run ``pin ARGUMENTS`` with stdout and stderr on a pseudo-terminal; :return: exit code and all it showed"""
    code, shown = pin_on_a_terminal_timed(setup, *arguments)
    return code, "".join(text for _, text in shown)


def pin_on_a_terminal_timed(setup: Path, *arguments: str) -> Tuple[int, List[Tuple[float, str]]]:
    """
    Run ``pin ARGUMENTS`` with stdout and stderr on a pseudo-terminal (100 columns).

    :return: its exit code, and what it showed, piece by piece, with the seconds from its start to each piece
    """
    controller, terminal = pty.openpty()
    environ = {**os.environ, "PYTHONPATH": str(RECIPE_DIR), "COLUMNS": "100"}
    environ.pop("PIN_LOCK", None)
    started = time.monotonic()
    process = subprocess.Popen(
        [sys.executable, "-m", "sispin", *arguments],
        cwd=setup,
        env=environ,
        stdin=subprocess.DEVNULL,
        stdout=terminal,
        stderr=terminal,
    )
    os.close(terminal)
    shown: List[Tuple[float, str]] = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ready, _, _ = select.select([controller], [], [], 1)
        if ready:
            try:
                data = os.read(controller, 65536)
            except OSError:  # the terminal's other end is closed: pin is done
                break
            if not data:
                break
            shown.append((time.monotonic() - started, data.decode(errors="replace")))
    os.close(controller)
    return process.wait(timeout=30), shown
