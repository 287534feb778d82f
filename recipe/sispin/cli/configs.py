"""
``pin configs SET [--add PATH ...] [--remove PATH ...]``: the command line of :mod:`sispin.ops.configs`: list or
change the Sisyphus configs of a set.
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "render", "render_listing"]

import argparse
from typing import Sequence

from sispin.cli.options import add_command, commit_option, commit_written, one_set, setup_relative
from sispin.cli.output import Output
from sispin.lock.loading import find_lockfile
from sispin.ops.configs import ConfigsEdit, configs_of, edit_configs
from sispin.text import display_path, shown_key


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = add_command(
        subparsers,
        "configs",
        run,
        description="Without options, list the configs of set SET. --add appends existing config files (setup-"
        "relative) to sets.SET.configs, --remove takes listed ones out; comments and layout of pin.toml stay.",
    )
    one_set(parser, "the experiment set")
    parser.add_argument(
        "--add",
        metavar="PATH",
        nargs="+",
        default=[],
        help="config files to add (must exist; relative to where you are)",
    )
    parser.add_argument("--remove", metavar="PATH", nargs="+", default=[], help="config files to remove")
    commit_option(parser)


def run(args: argparse.Namespace, out: Output) -> int:
    """:param args: parsed command line"""
    path = find_lockfile()
    add = [setup_relative(path.parent, config, "--add", must_exist=True) for config in args.add]
    remove = [setup_relative(path.parent, config, "--remove") for config in args.remove]
    if not add and not remove:
        return render_listing(args.set, configs_of(path, args.set), out)
    result = edit_configs(path, args.set, add=add, remove=remove)
    code = render(result, out)
    if args.commit:
        commit_written(path, *result.commit_message(), out)
    return code


def render(result: ConfigsEdit, out: Output) -> int:
    """
    :param result: the change ``pin configs --add/--remove`` made
    :param out: the set's configs now
    :return: 0
    """
    out.info(f"{display_path(result.lock)}: sets.{shown_key(result.name)}.configs = {list(result.configs)!r}")
    return 0


def render_listing(name: str, configs: Sequence[str], out: Output) -> int:
    """
    :param name: the set
    :param configs: its configs
    :param out: each config, or that there is none
    :return: 0
    """
    for config in configs:
        out.result(config)
    if not configs:
        out.result(f"sets.{shown_key(name)}: no configs (add one with `pin configs {name} --add PATH`)")
    return 0
