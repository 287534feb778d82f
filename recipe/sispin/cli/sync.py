"""
``pin sync [SET ...]``: materialise checkouts at their pinned commits.

Without SET: every ``[setup.*]`` checkout of the setup. Absent checkouts are cloned (atomically); present ones must
already be at the pinned commit with a clean tree — sync never moves or overwrites a checkout somebody may be
working in. With SETs: the store's read-only checkouts of those sets' pins, for manager-side imports
(``exp.checkout()``, ``exp.imported()``).
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "sync", "sync_sets"]

import argparse
import os
from pathlib import Path
from typing import Sequence

from sispin.cli.options import add_command
from sispin.cli.output import Output
from sispin.clonejob import checkout_folder
from sispin.errors import CheckoutStateError, FileSystemError, GitError, PinError
from sispin.git.registry import register_lockfile
from sispin.git.repo import clone_at_commit
from sispin.git.store import Store
from sispin.git.verify import verify_checkout
from sispin.lock.files import file_lock
from sispin.lock.lockfile import Lockfile, SetupCheckout, find_lockfile, inside_setup, load_lockfile
from sispin.text import display_path, shown_key


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
        return sync_sets(lockfile, args.sets, Store(), out)
    return sync(lockfile, out)


def sync_sets(lockfile: Lockfile, set_names: Sequence[str], store: Store, out: Output) -> int:
    """
    :param lockfile: the validated pin.toml
    :param set_names: sets whose pins to check out in the store
    :param store: the store
    :param out: a line per checkout
    :return: exit code
    """
    specs = lockfile.select_sets(set_names)
    register_lockfile(store.directory, lockfile.path)  # first: `pin gc` keeps what a recorded lockfile pins
    rows = [(spec.name, repo, pin.commit) for spec in specs for repo, pin in spec.pins.items()]
    width = max((len(f"{set_name}/{repo}") for set_name, repo, _ in rows), default=0)
    for set_name, repo, commit in rows:
        spec = lockfile.get_repo(repo)
        folder = checkout_folder(spec.checkout)
        existed = (store.checkout_path(spec.url, commit, folder) / ".git").is_dir()
        try:
            path = store.checkout(spec.url, commit, folder)
        except GitError as exc:
            raise GitError(f"sets.{shown_key(set_name)}.{shown_key(repo)}: {exc}") from None
        out.info(f"{set_name + '/' + repo:<{width}}  {commit[:7]}  {path}  {'ok' if existed else 'made'}")
    return 0


def sync(lockfile: Lockfile, out: Output) -> int:
    """
    :param lockfile: the validated pin.toml
    :param out: a line per checkout, and the errors
    :return: exit code: 0 when every checkout is at its commit, else the code of the first failure
    """
    if not lockfile.setup:
        out.info(f"{display_path(lockfile.path)} has no [setup.*] entries: nothing to sync")
        return 0
    name_width = max(len(entry.name) for entry in lockfile.setup.values())
    path_width = max(len(entry.path) for entry in lockfile.setup.values())
    exit_code = 0
    # one sync at a time per setup, so that concurrent runs neither clone twice nor remove each other's clones
    with file_lock(lockfile.root / ".pin-sync"):
        for entry in lockfile.setup.values():
            prefix = f"{entry.name:<{name_width}}  {entry.commit[:7]}  {entry.path:<{path_width}}"
            try:
                outcome = _sync_one(lockfile.root, entry)
            except PinError as exc:
                out.result(f"{prefix}  failed")
                out.error(f"setup.{entry.name}: {exc}")
                exit_code = exit_code or exc.exit_code
            else:
                out.info(f"{prefix}  {outcome}")
    return exit_code


def _sync_one(root: Path, entry: SetupCheckout) -> str:
    target = root / entry.path
    if not target.exists():
        where = entry.path  # as pin.toml names it: display_path would resolve the very symlinks that matter here
        if target.is_symlink():
            raise CheckoutStateError(
                f"{where} is a symlink to {os.readlink(target)}, which does not exist; fix or remove the link and rerun"
            )
        if not inside_setup(root, entry.path):
            # an existing checkout reached through a symlink is only read (verified); a clone is only ever written
            # inside the setup
            raise CheckoutStateError(
                f"{where} leads out of the setup through a symlink (to {os.path.realpath(target)}); pin sync clones "
                "only inside the setup: remove the link or clone there yourself"
            )
        try:
            clone_at_commit(entry.url, entry.commit, target)
        except OSError as exc:
            raise FileSystemError(f"{where}: cannot create the checkout: {exc.strerror} ({exc.filename})") from None
        return "cloned"
    where = display_path(target)
    try:
        verify_checkout(target, entry.commit, where, ignored=False)
    except CheckoutStateError as exc:
        # sync never moves or cleans a checkout somebody may be working in: say how to resolve it
        raise CheckoutStateError(
            f"{exc}; check out the pinned commit, commit or remove the changes, or move the directory away and rerun"
        ) from None
    return "ok"
