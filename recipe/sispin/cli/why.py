"""
``pin why COMMIT|REPO``: which sets, finished jobs and outputs use a commit, or each commit of a repository.

Answers from the lockfiles the store serves (this setup's first), pin.snapshot.toml, work/ (finished
CloneGitRepositoryJobs and the finished jobs built on them) and the store's checkouts. Needs neither Sisyphus nor
the network, and changes nothing.
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "why"]

import argparse
from pathlib import Path

from sispin.cli.options import add_command
from sispin.cli.output import Output
from sispin.git.registry import load_users
from sispin.git.store import Store
from sispin.graph.snapshot import read_snapshot
from sispin.graph.usage import WorkDir, find_usages, target_matcher
from sispin.lock.files import snapshot_path
from sispin.lock.lockfile import find_lockfile, load_lockfile
from sispin.text import display_path


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = add_command(
        subparsers,
        "why",
        run,
        description="Show what uses a commit (a full SHA or a prefix of at least 4 hex digits) or, given a "
        "repository name of pin.toml, each commit of that repository: the sets that pin it in pin.toml and in the "
        "other lockfiles the store serves, its finished CloneGitRepositoryJobs in work/ with the finished jobs "
        "built on them, the registered outputs of pin.snapshot.toml among those, and its checkouts in the store. "
        "Reads only; needs neither Sisyphus nor the network.",
    )
    parser.add_argument("target", metavar="COMMIT|REPO", help="a commit SHA or prefix, or a repository name")


def run(args: argparse.Namespace, out: Output) -> int:
    """:param args: parsed command line"""
    return why(find_lockfile(), args.target, Store(), out)


def why(path: Path, target: str, store: Store, out: Output) -> int:
    """
    :param path: the pin.toml
    :param target: a commit SHA or prefix, or a repository name of the lockfile
    :param store: the store whose users and checkouts to consult
    :param out: where the answer goes
    :return: exit code (0: an answer, also when nothing uses it)
    """
    lockfile = load_lockfile(path)
    matches = target_matcher(lockfile, target)
    users = load_users(store.directory, lockfile)
    work = WorkDir(lockfile.root / "work")
    snapshot = read_snapshot(snapshot_path(lockfile.path))
    usages = find_usages(users, work, snapshot, store, matches)
    for usage in usages:
        out.result(f"{usage.name} {usage.commit}  {usage.url}")
        for pin in usage.pins:
            out.result(f"  pinned by  {pin.key}  ({display_path(pin.lockfile)})")
        if not usage.pins:
            out.result("  pinned by  no set" + ("  (`pin gc` removes its store checkout)" if usage.checkouts else ""))
        for clone, built_on in usage.clones:
            jobs = f"{len(built_on)} finished job{'' if len(built_on) == 1 else 's'}"
            out.result(f"  work       {clone.job}  finished, {jobs} built on it")
        for set_name, output, job in usage.outputs:
            out.result(f"  output     {set_name}: {output}  ({job})")
        for checkout in usage.checkouts:
            out.result(f"  store      {checkout}")
    for directory in work.unreadable:
        out.result(f"note: {display_path(directory)} cannot be read: jobs below it are not counted")
    if not usages:
        others = len(users.lockfiles) - 1
        out.result(
            f"nothing uses {target}: no pin in {display_path(lockfile.path)}"
            + (f" or the {others} other lockfile{'s' if others != 1 else ''} of the store" if others else "")
            + ", no finished clone job in work/, no store checkout"
        )
    return 0
