"""
``pin sync``: materialise every ``[setup.*]`` checkout at its pinned commit.

Absent checkouts are cloned (atomically); present ones must already be at the pinned commit with a clean tree —
sync never moves or overwrites a checkout somebody may be working in.
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "sync"]

import argparse
import sys
from pathlib import Path

from filelock import FileLock

from sispin import git
from sispin.errors import CheckoutStateError, PinError
from sispin.lockfile import Lockfile, SetupCheckout, display_path, find_lockfile, load_lockfile

#: how many changed files a "not clean" error lists before it summarises the rest
_LISTED_CHANGES = 5


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = subparsers.add_parser(
        "sync",
        help="clone the setup's own checkouts ([setup.*]) at their pinned commits",
        description="Clone every [setup.*] entry of pin.toml at its pinned commit into its path. Idempotent: "
        "a checkout already at the pinned commit with a clean tree is left alone; one at another commit or "
        "with local changes is an error (exit 6), never overwritten.",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """:param args: parsed command line"""
    return sync(load_lockfile(find_lockfile()))


def sync(lockfile: Lockfile) -> int:
    """
    :param lockfile: the validated pin.toml
    :return: exit code: 0 when every checkout is at its commit, else the code of the first failure
    """
    if not lockfile.setup:
        print(f"{display_path(lockfile.path)} has no [setup.*] entries: nothing to sync")
        return 0
    name_width = max(len(entry.name) for entry in lockfile.setup.values())
    path_width = max(len(entry.path) for entry in lockfile.setup.values())
    exit_code = 0
    # one sync at a time per setup, so that concurrent runs neither clone twice nor remove each other's clones
    with FileLock(str(lockfile.root / ".pin-sync.lock")):
        for entry in lockfile.setup.values():
            prefix = f"{entry.name:<{name_width}}  {entry.commit[:7]}  {entry.path:<{path_width}}"
            try:
                outcome = _sync_one(lockfile.root, entry)
            except PinError as exc:
                print(f"{prefix}  failed", flush=True)
                print(f"pin: error: setup.{entry.name}: {exc}", file=sys.stderr, flush=True)
                exit_code = exit_code or exc.exit_code
            else:
                print(f"{prefix}  {outcome}", flush=True)
    return exit_code


def _sync_one(root: Path, entry: SetupCheckout) -> str:
    target = root / entry.path
    if not target.exists():
        git.clone_at_commit(entry.url, entry.commit, target)
        return "cloned"
    where = display_path(target)
    head = git.head_commit(target)
    if head != entry.commit:
        raise CheckoutStateError(
            f"{where} is at {head[:12]}, pin.toml pins {entry.commit[:12]}; "
            f"run `git -C {where} checkout --detach {entry.commit}` or move the directory away and rerun"
        )
    changes = git.local_changes(target)
    if changes:
        listed = ", ".join(line[3:] for line in changes[:_LISTED_CHANGES])
        more = f" and {len(changes) - _LISTED_CHANGES} more" if len(changes) > _LISTED_CHANGES else ""
        raise CheckoutStateError(f"{where} has local changes ({listed}{more}); commit, stash or remove them")
    return "ok"
