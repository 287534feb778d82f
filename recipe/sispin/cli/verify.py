"""``pin verify [SET ...]``: the command line of :mod:`sispin.ops.verify`, and its report (a line per checkout)."""

from __future__ import annotations

__all__ = ["add_parser", "run", "render"]

import argparse

from sispin.cli.options import add_command, set_names
from sispin.cli.output import Output
from sispin.git.store import Store
from sispin.lock.loading import find_lockfile
from sispin.ops.verify import VerifyResult, verify
from sispin.text import count, display_path


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = add_command(
        subparsers,
        "verify",
        run,
        description="Verify that every [setup.*] checkout, every store checkout of the sets' pins and every "
        "finished clone job of the sets in work/ is at its pinned commit with a clean tree. Lists tampered files; "
        "exit 1 when anything differs, exit 9 when the clone jobs in work/ cannot be identified (no Sisyphus).",
    )
    set_names(parser, "verify the checkouts of")
    parser.set_defaults(trailing="sets")


def run(args: argparse.Namespace, out: Output) -> int:
    """:param args: parsed command line"""
    return render(verify(find_lockfile(), args.sets, Store()), out)


def render(result: VerifyResult, out: Output) -> int:
    """
    :param result: what ``pin verify`` found
    :param out: one line per checkout, and the count
    :return: 0 when everything is as pinned, else 1
    :raises SisyphusError: after the report, when the clone jobs in work/ could not be identified (no Sisyphus)
    """
    for checkout in result.checkouts:
        if checkout.problem is not None:
            out.result(f"problem: {checkout.label}: {checkout.problem}")
        else:
            out.info(f"ok: {checkout.label}: {display_path(checkout.path)} at {checkout.commit[:7]}")
    out.result(f"pin verify: {count(len(result.problems), 'problem')} in {len(result.checkouts)} checkouts")
    if result.unverified is not None:
        raise result.unverified
    return 1 if result.problems else 0
