"""
``pin run SET [SET ...] [-- MANAGER ARGS]``: ``sis manager`` on the configs of the named sets, in the setup root, with
the Sisyphus the lock pins. The sets' configs are loaded once first: a config or lock that fails is one line naming
the config's ``file:line`` and exit 9, where the manager itself would log a traceback and exit 0.
"""

from __future__ import annotations

__all__ = ["add_parser", "run"]

import argparse
import subprocess
import sys

from sispin.cli.options import add_command
from sispin.cli.output import Output
from sispin.errors import SisyphusError
from sispin.graph.build import load_graph, probe_environment
from sispin.lock.lockfile import find_lockfile, load_lockfile
from sispin.text import shown_key


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = add_command(
        subparsers,
        "run",
        run,
        description="Run `sis manager` on the configs of the sets named, in the setup root, with the Sisyphus of "
        "pin.toml ([setup.*]; else the environment's). Their configs are loaded once before: a config or lock that "
        "fails to load is one line with its file:line and exit 9 (the manager would log a traceback and exit 0). "
        "Arguments after -- go to the manager (pin run demo -- -r). Its exit code is pin run's. Sets whose pins of "
        "one package differ cannot share one manager process when their configs import that package: run them "
        "one at a time.",
    )
    parser.add_argument("sets", metavar="SET", nargs="+", help="the sets to run (then -- and sis manager's arguments)")


def run(args: argparse.Namespace, out: Output) -> int:
    """:param args: parsed command line"""
    lockfile = load_lockfile(find_lockfile())
    specs = [lockfile.get_set(name) for name in dict.fromkeys(args.sets)]
    extra = args.passed_on
    for spec in specs:
        if not spec.configs:
            raise SisyphusError(f"sets.{shown_key(spec.name)} lists no configs: nothing to run")
        out.info(f"sets.{shown_key(spec.name)}: loading {', '.join(spec.configs)}")
        # the manager logs a failing config and goes on: loaded here first, its failure is one line and exit 9
        load_graph(lockfile, spec.name)
    configs = list(dict.fromkeys(config for spec in specs for config in spec.configs))
    command = [sys.executable, "-m", "sisyphus", "manager", *extra, *configs]
    out.info(f"sis manager {' '.join([*extra, *configs])}")
    try:
        return subprocess.run(command, cwd=lockfile.root, env=probe_environment(lockfile), check=False).returncode
    except OSError as exc:
        raise SisyphusError(f"cannot start the manager: {exc}") from None
