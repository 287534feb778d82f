"""
``pin run``: ``sis manager`` on the configs of the named sets, in the setup root, with the Sisyphus the lock pins.
The sets' configs are loaded once first: a config or lock that fails is one SisyphusError naming the config's
``file:line`` (exit 9), where the manager itself would log a traceback and exit 0.
"""

from __future__ import annotations

__all__ = ["run_sets"]

import subprocess
import sys
from pathlib import Path
from typing import Callable, Sequence

from sispin.errors import SisyphusError
from sispin.graph.build import load_graph, probe_environment
from sispin.lock.loading import load_lockfile
from sispin.text import shown_key


def run_sets(
    path: Path,
    set_names: Sequence[str],
    manager_args: Sequence[str],
    *,
    loading: Callable[[str, Sequence[str]], None],
    starting: Callable[[Sequence[str]], None],
) -> int:
    """
    :param path: the pin.toml
    :param set_names: the sets to run (each once, in this order)
    :param manager_args: what goes to ``sis manager`` before the configs
    :param loading: told each set and its configs before they are loaded
    :param starting: told the manager's arguments before it starts
    :return: the manager's exit code
    :raises SisyphusError: when a set lists no configs, a config fails to load, or the manager cannot start
    """
    lockfile = load_lockfile(path)
    specs = [lockfile.get_set(name) for name in dict.fromkeys(set_names)]
    for spec in specs:
        if not spec.configs:
            raise SisyphusError(f"sets.{shown_key(spec.name)} lists no configs: nothing to run")
        loading(spec.name, spec.configs)
        # the manager logs a failing config and goes on: loaded here first, its failure is one line and exit 9
        load_graph(lockfile, spec.name)
    configs = list(dict.fromkeys(config for spec in specs for config in spec.configs))
    starting([*manager_args, *configs])
    command = [sys.executable, "-m", "sisyphus", "manager", *manager_args, *configs]
    try:
        return subprocess.run(command, cwd=lockfile.root, env=probe_environment(lockfile), check=False).returncode
    except OSError as exc:
        raise SisyphusError(f"cannot start the manager: {exc}") from None
