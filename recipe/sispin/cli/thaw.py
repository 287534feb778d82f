"""``pin thaw SET ...``: undo ``pin freeze``: the sets' pins, configs and snapshot entries may change again."""

from __future__ import annotations

__all__ = ["add_parser", "run"]

import argparse

from sispin.cli.freeze import changed_with
from sispin.cli.options import add_command, commit_option
from sispin.cli.output import Output
from sispin.ops.freeze import thaw


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = add_command(
        subparsers,
        "thaw",
        run,
        description="Thaw frozen experiment sets: removes freeze = true from their tables in pin.toml, so that "
        "upgrade, configs, snapshot and import may change them again.",
    )
    parser.add_argument("sets", metavar="SET", nargs="+", help="sets to thaw")
    commit_option(parser)


def run(args: argparse.Namespace, out: Output) -> int:
    """:param args: parsed command line"""
    return changed_with(thaw, ("thawed", "not frozen"), args, out)
