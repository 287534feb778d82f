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

from sispin.errors import SisyphusError, UsageError
from sispin.graph.build import load_graph, probe_environment
from sispin.lock.loading import load_lockfile
from sispin.text import shown_key

#: ``python -m sisyphus``, but with no terminal to ask (``make demo``, a batch job) the manager's questions get an
#: answer or end it in one line: ``input()`` at the end of stdin would raise EOFError, which the manager prints as a
#: traceback and exits 0. An answer waiting on stdin (``echo c | pin run``, a file) is read as ``input()`` reads it;
#: when none is waiting (stdin spent, /dev/null, closed, write-only as nohup leaves it, or a pipe that sends nothing:
#: never waited for), the question when every job is finished is answered "u" (update outputs and
#: aliases, what a run that finishes them does) and any other (work/ missing, ``-i``) ends it with exit 2. Nothing of
#: sispin is imported: the configs import the sispin they always do.
_MANAGER = f"""\
import builtins, os, runpy, select, sys
if sys.stdin is None or not sys.stdin.isatty():
    def _input(prompt=""):
        sys.stdout.write(prompt)
        sys.stdout.flush()
        try:  # an answer already waiting (a file, a pipe written to): never wait for one that may not come
            ready = sys.stdin is not None and select.select([sys.stdin], [], [], 0)[0]
            answer = sys.stdin.readline() if ready else ""
        except (OSError, ValueError):  # stdin open for writing only (nohup), or closed
            answer = ""
        if answer:
            sys.stdout.write(answer if answer.endswith("\\n") else answer + "\\n")
            return answer.rstrip("\\n")
        if prompt.startswith("All calculations are done"):
            sys.stdout.write("u  (pin run: no terminal to ask; outputs and aliases are updated)\\n")
            sys.stdout.flush()
            return "u"
        sys.stdout.write("\\n")
        sys.stdout.flush()
        sys.stderr.write(
            "pin: error: sis manager asks %r and no terminal can answer (run pin run in a terminal)\\n"
            % prompt.strip()
        )
        sys.stderr.flush()
        os._exit({UsageError.exit_code})
    builtins.input = _input
import importlib.util
# as -m has it before Sisyphus starts: its settings take sys.argv[0] as the command that runs a job's tasks
sys.argv[0] = os.path.join(os.path.dirname(importlib.util.find_spec("sisyphus").origin), "__main__.py")
runpy.run_module("sisyphus", run_name="__main__", alter_sys=True)
"""


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
    command = [sys.executable, "-c", _MANAGER, "manager", *manager_args, *configs]
    try:
        return subprocess.run(command, cwd=lockfile.root, env=probe_environment(lockfile), check=False).returncode
    except OSError as exc:
        raise SisyphusError(f"cannot start the manager: {exc}") from None
