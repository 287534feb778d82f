"""
``pin freeze SET ...``: mark sets whose results are published, so that nothing moves them by accident.

A frozen set (``freeze = true`` in its table) keeps its pins, configs and snapshot entry: ``pin upgrade``, ``pin
configs --add/--remove``, ``pin snapshot SET`` and ``pin import --set SET`` refuse with one line (exit 12), and ``pin
snapshot`` of all sets leaves it as recorded; ``pin check`` checks it as before. ``pin thaw`` undoes it.
"""

from __future__ import annotations

__all__ = ["add_parser", "run"]

import argparse

from sispin.cli.options import add_command, commit_option, commit_written
from sispin.cli.output import Output
from sispin.errors import LockfileError
from sispin.graph.snapshot import read_snapshot
from sispin.lock.files import snapshot_path
from sispin.lock.freezing import edit_freeze
from sispin.lock.lockfile import find_lockfile, load_lockfile
from sispin.text import display_path, shown_key


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
    path = find_lockfile()
    lockfile = load_lockfile(path)
    recorded = read_snapshot(snapshot_path(lockfile.path))
    for spec in lockfile.select_sets(args.sets):
        if spec.configs and spec.name not in recorded:
            raise LockfileError(
                f"{display_path(snapshot_path(lockfile.path))}: sets.{shown_key(spec.name)}: not recorded; a frozen "
                f"set keeps the ids it has: run `pin snapshot {spec.name}` first"
            )
    changed = edit_freeze(path, args.sets, True)
    for name in dict.fromkeys(args.sets):
        out.info(f"sets.{shown_key(name)}: {'frozen' if name in changed else 'frozen already'}")
    if args.commit:
        commit_written(lockfile.path, f"pin freeze {' '.join(changed)}", [], out)
    return 0
