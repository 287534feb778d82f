"""
``pin run SET [SET ...] [-- MANAGER ARGS]``: the command line of :mod:`sispin.ops.run`; it says which configs it
loads and how it starts the manager, whose exit code is its own.
"""

from __future__ import annotations

__all__ = ["add_parser", "run"]

import argparse

from sispin.cli.options import add_command
from sispin.cli.output import Output
from sispin.lock.loading import find_lockfile
from sispin.ops.run import run_sets
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
        "Arguments after -- go to the manager (pin run demo -- -r). Its exit code is pin run's. With no terminal on "
        "stdin, the manager's question when every job is finished is answered u (update outputs and aliases) and any "
        "other question ends it with one line and exit 2. Sets whose pins of "
        "one package differ cannot share one manager process when their configs import that package: run them "
        "one at a time.",
    )
    parser.add_argument("sets", metavar="SET", nargs="+", help="the sets to run (then -- and sis manager's arguments)")


def run(args: argparse.Namespace, out: Output) -> int:
    """:param args: parsed command line"""
    return run_sets(
        find_lockfile(),
        args.sets,
        args.passed_on,
        loading=lambda name, configs: out.info(f"sets.{shown_key(name)}: loading {', '.join(configs)}"),
        starting=lambda words: out.info(f"sis manager {' '.join(words)}"),
    )
