"""
``pin sync [SET ...]``: the command line of :mod:`sispin.ops.sync`, and its report (a line per checkout as it is
done with).
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "render"]

import argparse
from typing import Callable, Sequence

from sispin.cli.options import add_command
from sispin.cli.output import Output
from sispin.git.store import Store
from sispin.lock.loading import find_lockfile, load_lockfile
from sispin.lock.lockfile import Lockfile
from sispin.ops.sync import SetupSync, SetupSyncResult, StoreSync, sync_sets, sync_setup
from sispin.text import display_path


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = add_command(
        subparsers,
        "sync",
        run,
        description="Without SET: clone every [setup.*] entry of pin.toml at its pinned commit into its path. "
        "Idempotent: a checkout already at the pinned commit with a clean tree is left alone; one at another "
        "commit or with local changes is an error (exit 6), never overwritten. With SETs: make the store's "
        "read-only checkouts of those sets' pinned commits (what exp.checkout() and exp.imported() use).",
    )
    parser.add_argument("sets", metavar="SET", nargs="*", help="make the store checkouts of these sets instead")
    parser.set_defaults(trailing="sets")


def run(args: argparse.Namespace, out: Output) -> int:
    """:param args: parsed command line"""
    lockfile = load_lockfile(find_lockfile())
    if args.sets:
        sync_sets(lockfile, args.sets, Store(), _store_lines(lockfile, args.sets, out))
        return 0
    return render(sync_setup(lockfile, _setup_lines(lockfile, out)), out)


def render(result: SetupSyncResult, out: Output) -> int:
    """
    :param result: what ``pin sync`` did to the setup's checkouts (each said as it was done with)
    :param out: where to say that there was nothing to do
    :return: exit code: 0 when every checkout is at its commit, else the code of the first failure
    """
    if not result.checkouts:
        out.info(f"{display_path(result.lockfile)} has no [setup.*] entries: nothing to sync")
    if result.unsupported:
        out.error(result.unsupported)
    return result.exit_code


def _setup_lines(lockfile: Lockfile, out: Output) -> Callable[[SetupSync], None]:
    """:return: what says each ``[setup.*]`` checkout, in columns as wide as the entries need"""
    name_width = max((len(entry.name) for entry in lockfile.setup.values()), default=0)
    path_width = max((len(entry.path) for entry in lockfile.setup.values()), default=0)

    def say(synced: SetupSync) -> None:
        entry = synced.entry
        prefix = f"{entry.name:<{name_width}}  {entry.commit[:7]}  {entry.path:<{path_width}}"
        if synced.error is not None:
            out.result(f"{prefix}  failed")
            out.error(f"setup.{entry.name}: {synced.error}")
        else:
            out.info(f"{prefix}  {synced.outcome}")

    return say


def _store_lines(lockfile: Lockfile, set_names: Sequence[str], out: Output) -> Callable[[StoreSync], None]:
    """:return: what says each store checkout of the sets' pins, in columns as wide as the pins need"""
    specs = lockfile.select_sets(set_names)
    width = max((len(f"{spec.name}/{repo}") for spec in specs for repo in spec.pins), default=0)

    def say(synced: StoreSync) -> None:
        where = f"{synced.set_name}/{synced.repo}"
        out.info(f"{where:<{width}}  {synced.commit[:7]}  {synced.path}  {'made' if synced.made else 'ok'}")

    return say
