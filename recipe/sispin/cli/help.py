"""
``pin help [COMMAND]``: the help of ``pin`` or of one command, as git and cargo give it (``pin help check`` is
``pin check --help``).
"""

from __future__ import annotations

__all__ = ["add_parser", "run"]

import argparse

from sispin.cli.commands import COMMANDS
from sispin.cli.options import add_command
from sispin.cli.output import Output
from sispin.errors import UsageError
from sispin.text import did_you_mean


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = add_command(
        subparsers, "help", run, description="Show the help of pin, or of COMMAND (the same as pin COMMAND --help)."
    )
    parser.add_argument("topic", metavar="COMMAND", nargs="?", help="a pin command (default: the overview)")


def run(args: argparse.Namespace, out: Output) -> int:
    """:param args: parsed command line"""
    from sispin.cli.main import build_parser, command_parser  # the parser of the parsers: imported when asked for

    if args.topic is None:
        out.result(build_parser([]).format_help().rstrip("\n"))
        return 0
    if args.topic not in COMMANDS:
        raise UsageError(f"{args.topic!r} is not a pin command{did_you_mean(args.topic, COMMANDS)} (see pin --help)")
    out.result(command_parser(args.topic).format_help().rstrip("\n"))
    return 0
