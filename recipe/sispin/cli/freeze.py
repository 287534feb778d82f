"""
``pin freeze SET ...``: the command line of :mod:`sispin.ops.freeze`: mark sets whose results are published.

A frozen set (``freeze = true`` in its table) keeps its pins, configs and snapshot entry: ``pin upgrade``, ``pin
configs --add/--remove``, ``pin snapshot SET`` and ``pin import --set SET`` refuse with one line (exit 12), and ``pin
snapshot`` of all sets leaves it as recorded; ``pin check`` checks it as before. ``pin thaw`` undoes it.
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "changed_with", "render"]

import argparse
from pathlib import Path
from typing import Callable, Sequence, Tuple

from sispin.cli.options import add_command, commit_option, commit_written
from sispin.cli.output import Output
from sispin.lock.loading import find_lockfile
from sispin.ops.freeze import Freezing, freeze
from sispin.text import shown_key


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = add_command(
        subparsers,
        "freeze",
        run,
        description="Freeze experiment sets whose results are published: adds freeze = true to their tables in "
        "pin.toml. Then upgrade, configs --add/--remove, snapshot and import refuse to change them (exit 12); pin "
        "check still checks them. A set with configs must have its job ids in pin.snapshot.toml first.",
    )
    parser.add_argument("sets", metavar="SET", nargs="+", help="sets to freeze")
    commit_option(parser)


def run(args: argparse.Namespace, out: Output) -> int:
    """:param args: parsed command line"""
    return changed_with(freeze, ("frozen", "frozen already"), args, out)


def changed_with(
    change: Callable[[Path, Sequence[str]], Freezing], said: Tuple[str, str], args: argparse.Namespace, out: Output
) -> int:
    """
    Freeze or thaw the named sets, say what each is now, and commit pin.toml with ``--commit``.

    :param change: :func:`sispin.ops.freeze.freeze` or :func:`~sispin.ops.freeze.thaw`
    :param said: what a set changed is, and what one left as it was is
    :return: 0
    """
    path = find_lockfile()
    result = change(path, args.sets)
    code = render(result, out, said)
    if args.commit:
        commit_written(path, *result.commit_message(), out)
    return code


def render(result: Freezing, out: Output, said: Tuple[str, str] = ("frozen", "frozen already")) -> int:
    """
    :param result: what ``pin freeze`` (or ``pin thaw``) changed
    :param out: a line per set named
    :param said: what a set changed is, and what one left as it was is
    :return: 0
    """
    for name in result.names:
        out.info(f"sets.{shown_key(name)}: {said[0] if name in result.changed else said[1]}")
    return 0
