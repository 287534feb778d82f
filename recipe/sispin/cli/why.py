"""``pin why COMMIT|REPO``: the command line of :mod:`sispin.ops.why`, and its answer (a block per commit)."""

from __future__ import annotations

__all__ = ["add_parser", "run", "render"]

import argparse

from sispin.cli.options import add_command
from sispin.cli.output import Output
from sispin.git.store import Store
from sispin.lock.loading import find_lockfile
from sispin.ops.why import WhyResult, why
from sispin.text import count, display_path


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
    return render(why(find_lockfile(), args.target, Store()), out)


def render(result: WhyResult, out: Output) -> int:
    """
    :param result: what uses the target
    :param out: a block per commit, and what could not be read
    :return: exit code (0: an answer, also when nothing uses it)
    """
    for usage in result.usages:
        out.result(f"{usage.name} {usage.commit}  {usage.url}")
        for pin in usage.pins:
            out.result(f"  pinned by  {pin.key}  ({display_path(pin.lockfile)})")
        if not usage.pins:
            out.result("  pinned by  no set" + ("  (`pin gc` removes its store checkout)" if usage.checkouts else ""))
        for clone, built_on in usage.clones:
            out.result(f"  work       {clone.job}  finished, {count(len(built_on), 'finished job')} built on it")
        for set_name, output, job in usage.outputs:
            out.result(f"  output     {set_name}: {output}  ({job})")
        for checkout in usage.checkouts:
            out.result(f"  store      {checkout}")
    for directory in result.unreadable:
        out.result(f"note: {display_path(directory)} cannot be read: jobs below it are not counted")
    if not result.usages:
        others = result.other_lockfiles
        out.result(
            f"nothing uses {result.target}: no pin in {display_path(result.lockfile)}"
            + (f" or the {count(others, 'other lockfile')} of the store" if others else "")
            + ", no finished clone job in work/, no store checkout"
        )
    return 0
