"""
``pin configs SET [--add PATH ...] [--remove PATH ...]``: list or change the Sisyphus configs of a set.

The change is written like every other edit of pin.toml (comments, order and layout stay; under the lockfile's lock;
atomic); only the set's ``configs`` array changes. An added config must exist; a removed one must be listed.
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "edit_configs"]

import argparse
import os
from pathlib import Path
from typing import Any, Sequence

import tomlkit

from sispin.cli.options import add_command, commit_option, commit_written, one_set, setup_relative
from sispin.cli.output import Output
from sispin.errors import ConcurrentChangeError, UsageError
from sispin.lock.editing import add_value, edit_lockfile
from sispin.lock.files import write_atomically
from sispin.lock.lockfile import Lockfile, find_lockfile, load_lockfile
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
    add = [setup_relative(path.parent, config, "--add") for config in args.add]
    remove = [setup_relative(path.parent, config, "--remove") for config in args.remove]
    code = edit_configs(path, args.set, out, add=add, remove=remove)
    if args.commit and (add or remove):
        changes = [f"+{config}" for config in add] + [f"-{config}" for config in remove]
        commit_written(path, f"pin configs {args.set}: {' '.join(changes)}", [], out)
    return code


def edit_configs(path: Path, name: str, out: Output, *, add: Sequence[str], remove: Sequence[str]) -> int:
    """
    :param path: the pin.toml
    :param name: the set whose configs to list or change
    :param out: where the listing or the change is said
    :param add: config files to append (each must exist and not be listed yet)
    :param remove: listed config files to take out
    :return: exit code
    :raises UsageError: when an added file does not exist or is listed already, or a removed one is not listed
    :raises UnknownNameError: when the set does not exist
    """
    lockfile = load_lockfile(path)
    spec = lockfile.get_set(name)
    if not add and not remove:
        for config in spec.configs:
            out.result(config)
        if not spec.configs:
            out.result(f"sets.{shown_key(name)}: no configs (add one with `pin configs {name} --add PATH`)")
        return 0
    spec.check_not_frozen("pin configs --add/--remove")
    for config in add:
        if config in spec.configs or add.count(config) > 1:
            raise UsageError(f"--add {config}: already listed in sets.{shown_key(name)}.configs")
        if not os.path.lexists(lockfile.root / config):
            raise UsageError(f"--add {config}: no such file (paths are relative to {display_path(lockfile.root)})")
    for config in remove:
        if config not in spec.configs:
            raise UsageError(
                f"--remove {config}: not in sets.{shown_key(name)}.configs ({', '.join(spec.configs) or 'empty'})"
            )
    wanted = [config for config in spec.configs if config not in remove] + list(add)

    def change(current: Lockfile, document: tomlkit.TOMLDocument) -> None:
        if current.sets.get(name) is None or current.get_set(name).configs != spec.configs:
            raise ConcurrentChangeError(
                f"{display_path(current.path)}: another process changed sets.{shown_key(name)} while this command ran; "
                "nothing written"
            )
        current.get_set(name).check_not_frozen("pin configs --add/--remove")  # frozen by another process meanwhile
        table: Any = document["sets"][name]  # type: ignore[index]
        if "configs" not in table:
            add_value(table, "configs", tomlkit.array())
        array = table["configs"]
        for config in remove:
            del array[[str(item) for item in array].index(config)]
        for config in add:
            array.append(config)

    def write(target: Path, text: str, updated: Lockfile) -> None:
        _check_only_configs_changed(lockfile, updated, name)
        write_atomically(target, text)

    edit_lockfile(path, change, rewritable_key="configs", write=write)
    out.info(f"{display_path(path)}: sets.{shown_key(name)}.configs = [{', '.join(repr(c) for c in wanted)}]")
    return 0


def _check_only_configs_changed(before: Lockfile, after: Lockfile, name: str) -> None:
    """
    The text check lets the lines of every ``configs`` value change: before writing, make sure that only this
    set's did and that all else means the same.

    :raises AssertionError: a bug of this command (nothing is written)
    """
    others = {key: spec for key, spec in before.sets.items() if key != name}
    assert {key: spec for key, spec in after.sets.items() if key != name} == others, "another set changed"
    assert (
        after.repos == before.repos and after.setup == before.setup
    ), "more than sets.{shown_key(name)}.configs changed"
    assert after.sets[name].pins == before.sets[name].pins, f"the pins of sets.{shown_key(name)} changed"
