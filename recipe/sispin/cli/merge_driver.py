"""
``pin merge-driver BASE OURS THEIRS [PATH]`` and ``pin merge-driver --install``: the command line of
:mod:`sispin.ops.merge_driver`, and what it says (a line per conflict; what the set-up added).
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "render", "render_installed"]

import argparse
from pathlib import Path

from sispin.cli.options import add_command
from sispin.cli.output import Output
from sispin.errors import UsageError
from sispin.git.merge import DRIVER_COMMAND
from sispin.ops.merge_driver import Installed, Merge, install, merge_files
from sispin.text import display_path

#: the exit code git takes as "conflicts are left in the file"
CONFLICT = 1


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = add_command(
        subparsers,
        "merge-driver",
        run,
        description="Merge pin.toml or pin.snapshot.toml for git: git runs it as "
        f"`{DRIVER_COMMAND}` for the files .gitattributes marks merge=pin, and it writes the merge into OURS. "
        "Exit 0: merged; 1: conflicts, named one per line and left in OURS with git's conflict markers (a stale "
        "snapshot set: run `pin snapshot SET` after the merge).",
    )
    parser.add_argument("files", metavar="FILE", nargs="*", help="BASE OURS THEIRS [PATH]: git's %%O %%A %%B %%P")
    parser.add_argument(
        "--install",
        action="store_true",
        help="set the driver up in this setup's repository: its git configuration (once per clone) and "
        ".gitattributes beside pin.toml (commit that)",
    )


def run(args: argparse.Namespace, out: Output) -> int:
    """:param args: parsed command line"""
    if args.install:
        if args.files:
            raise UsageError("merge-driver --install takes no files")
        return render_installed(install(), out)
    if len(args.files) not in (3, 4):
        raise UsageError("merge-driver needs BASE OURS THEIRS [PATH] (git's %O %A %B %P), or --install")
    base, ours, theirs = (Path(name) for name in args.files[:3])
    return render(merge_files(base, ours, theirs, args.files[3] if len(args.files) == 4 else None), out)


def render(result: Merge, out: Output) -> int:
    """
    :param result: the merge written into OURS
    :param out: a line per conflict
    :return: 0 when merged, :data:`CONFLICT` when conflicts are left in the file
    """
    for line in result.conflicts:
        out.error(line)
    return CONFLICT if result.conflicts else 0


def render_installed(result: Installed, out: Output) -> int:
    """
    :param result: what the set-up added
    :param out: what it set and added, and what to commit
    :return: exit code (0)
    """
    out.info(f"git config merge.pin.driver: {DRIVER_COMMAND} (this clone; run --install once in every clone)")
    for line in result.added:
        out.info(f"{display_path(result.attributes)}: added {line}")
    if result.added:
        out.info(f"commit {result.attributes.name} so that every clone merges the lockfiles with the driver")
    return 0
