"""
``pin merge-driver BASE OURS THEIRS [PATH]``: git's merge driver for pin.toml and pin.snapshot.toml (``merge=pin`` in
.gitattributes; ``pin merge-driver --install`` sets it up). Branches that moved different sets or repositories merge
without a conflict; a pin both moved is a conflict naming both commits, left with git's usual conflict markers.
"""

from __future__ import annotations

__all__ = ["add_parser", "run"]

import argparse
from pathlib import Path
from typing import List, Optional

from sispin.cli.options import add_command
from sispin.cli.output import Output
from sispin.errors import LockfileError, PinError, UsageError
from sispin.git.merge import DRIVER_COMMAND, install_driver, merge_lines
from sispin.graph.snapshot_merge import merge_snapshots
from sispin.lock.files import SNAPSHOT_NAME, snapshot_path
from sispin.lock.lockfile import find_lockfile, parse_lockfile, parse_toml, read_lockfile_text
from sispin.lock.merging import apply_changes, holds, lost_lines, merge_values
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
        return _install(out)
    if len(args.files) not in (3, 4):
        raise UsageError("merge-driver needs BASE OURS THEIRS [PATH] (git's %O %A %B %P), or --install")
    base, ours, theirs = (read_lockfile_text(Path(name)) for name in args.files[:3])
    name = args.files[3] if len(args.files) == 4 else None
    try:
        if _is_snapshot(name, (base, ours, theirs)):
            text, conflicts = _merge_snapshot(base, ours, theirs, name or SNAPSHOT_NAME)
        else:
            text, conflicts = _merge_lockfile(base, ours, theirs, name or "pin.toml")
    except PinError:
        Path(args.files[1]).write_bytes(merge_lines(base, ours, theirs)[0].encode("utf-8"))
        raise
    Path(args.files[1]).write_bytes(text.encode("utf-8"))
    for line in conflicts:
        out.error(line)
    return CONFLICT if conflicts else 0


def _is_snapshot(name: Optional[str], texts: tuple) -> bool:
    if name is not None:
        return Path(name).name == SNAPSHOT_NAME
    # without a name: a snapshot has sets of outputs and nothing of a lockfile's
    return any(text.lstrip().startswith("# Written by `pin snapshot`") for text in texts)


def _merge_lockfile(base: str, ours: str, theirs: str, where: str) -> tuple:
    """:return: the merged text (with conflict markers when there are conflicts) and the conflicts"""
    merge = merge_values(*(parse_toml(text, where) for text in (base, ours, theirs)), where)
    if merge.conflicts:
        return merge_lines(base, ours, theirs)[0], merge.conflicts
    # git's line merge when it is clean and holds the merged values (say, no set appended on both branches), else
    # the other branch's changes made to this branch's file
    clean, no_conflicts = merge_lines(base, ours, theirs)
    candidates = [clean] if no_conflicts else []
    candidates.append(apply_changes(ours, theirs, merge.values))
    text = next((candidate for candidate in candidates if holds(candidate, merge.values)), None)
    if text is None:
        return merge_lines(base, ours, theirs)[0], [f"{where}: the merged values cannot be written keeping the layout"]
    for side, label in ((ours, "this branch"), (theirs, "the other branch")):
        lost = lost_lines(base, side, text)
        if lost:
            # a comment edit beside a change of values: never dropped silently
            return merge_lines(base, ours, theirs)[0], [
                f"{where}: a merge by value cannot keep {label}'s line {lost[0].strip()!r}: resolve by hand"
            ]
    try:
        parse_lockfile(text, Path(where))
    except LockfileError as exc:
        # both branches' changes are fine alone but not together (say, the same config added to two sets)
        return merge_lines(base, ours, theirs)[0], [f"merged {exc}"]
    return text, []


def _merge_snapshot(base: str, ours: str, theirs: str, where: str) -> tuple:
    """:return: the merged text and one line per stale set"""
    merge = merge_snapshots(base, ours, theirs, where)
    stale: List[str] = [
        f"{where}: set {name} changed on both branches: run `pin snapshot {name}` after the merge, then `git add`"
        for name in merge.stale
    ]
    return merge.text, stale


def _install(out: Output) -> int:
    lockfile = find_lockfile()
    attributes, added = install_driver(lockfile.parent, [lockfile, snapshot_path(lockfile)])
    out.info(f"git config merge.pin.driver: {DRIVER_COMMAND} (this clone; run --install once in every clone)")
    for line in added:
        out.info(f"{display_path(attributes)}: added {line}")
    if added:
        out.info(f"commit {attributes.name} so that every clone merges the lockfiles with the driver")
    return 0
