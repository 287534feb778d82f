"""``pin thaw SET ...``: undo ``pin freeze``: the sets' pins, configs and snapshot entries may change again."""

from __future__ import annotations

__all__ = ["add_parser", "run", "render"]

import argparse

from sispin.cli.options import add_command, commit_option, commit_written
from sispin.cli.output import Output
from sispin.lock.loading import find_lockfile
from sispin.ops.freeze import Freezing, thaw
from sispin.text import shown_key


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
    path = find_lockfile()
    result = thaw(path, args.sets)
    code = render(result, out)
    if args.commit:
        commit_written(path, *result.commit_message(), out)
    return code


def render(result: Freezing, out: Output) -> int:
    """
    :param result: what ``pin thaw`` changed
    :param out: a line per set named
    :return: 0
    """
    for name in result.names:
        out.info(f"sets.{shown_key(name)}: {'thawed' if name in result.changed else 'not frozen'}")
    return 0
