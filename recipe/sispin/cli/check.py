"""
``pin check [SET ...] [--offline] [--full] [--lock-only] [--json]``: the command line of :mod:`sispin.ops.check`
and its report: one line per problem and exit 1 when there is any (for CI).
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "render"]

import argparse

from sispin.cli.options import add_command, json_output, set_names
from sispin.cli.output import Output
from sispin.cli.snapshot import skipped_line
from sispin.errors import LockfileError
from sispin.git.store import Store
from sispin.graph.guard import Problem
from sispin.lock.loading import find_lockfile, load_lockfile
from sispin.ops.check import CheckResult, check, check_lock_only
from sispin.text import count, listed, shown_key

#: the exit code of a check that could not see a whole graph (sispin.errors.EXIT_CODES)
WAITING_EXIT = 14


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = add_command(
        subparsers,
        "check",
        run,
        description="Check that pin.toml is valid, every pinned commit exists (skipped with --offline), each "
        "set's job graph (built by real Sisyphus) clones locked repositories only at the pinned commit and never "
        "with hash_overwrite, and every registered output still has the job id recorded in pin.snapshot.toml. "
        "Prints every problem and exits 1 when there is one.",
    )
    set_names(parser, "check")
    parser.add_argument("--offline", action="store_true", help="do not contact remotes to verify the commits")
    parser.add_argument(
        "--full",
        action="store_true",
        help="build every set's graph, also the sets whose earlier pass still stands because nothing their builds "
        "read has changed since (what CI should run)",
    )
    json_output(parser)
    parser.add_argument(
        "--accept-waiting",
        action="store_true",
        help="an async config that waits for unfinished jobs (what it builds after the wait is not seen) does not "
        "fail the check (exit 14 otherwise)",
    )
    parser.add_argument(
        "--lock-only",
        action="store_true",
        help="only validate pin.toml and pin.snapshot.toml: no git, no Sisyphus (fast: a pre-commit hook)",
    )
    parser.set_defaults(trailing="sets")


def run(args: argparse.Namespace, out: Output) -> int:
    """:param args: parsed command line"""
    try:
        lockfile = load_lockfile(find_lockfile())
    except LockfileError as exc:
        if args.json:
            out.json({"problems": [str(exc)]})
        else:
            out.result(f"problem: {exc}\npin check: 1 problem")
        return exc.exit_code
    if args.lock_only:
        sets = check_lock_only(lockfile, args.sets)
        out.result(f"pin check: lock ok ({count(sets, 'set')}; the job graphs were not checked)")
        return 0
    result = check(lockfile, args.sets, offline=args.offline, store=Store(), full=args.full)
    if args.json:
        details = {str(problem): list(problem.details) for problem in result.problems if problem.details}
        out.json(
            {
                "sets": result.changes,
                "skipped": result.skipped,
                "kept": result.kept,
                "waiting": result.waiting,
                "unchecked": result.unchecked,
                "problems": [str(problem) for problem in result.problems],
                "details": details,
            }
        )
    else:
        render(result, out, args.accept_waiting)
    if result.problems:
        return 1
    return WAITING_EXIT if result.waiting and not args.accept_waiting else 0


def render(result: CheckResult, out: Output, accept_waiting: bool = False) -> None:
    """
    :param result: what ``pin check`` found
    :param out: the skipped, kept and built sets, a summary per changed set, every problem (details with
        ``--verbose``), the sets not seen whole, and the verdict
    :param accept_waiting: whether a set not seen whole passes (``--accept-waiting``)
    """
    for name in result.skipped:
        out.info(skipped_line(name))
    for name in result.kept:
        out.detail(f"sets.{shown_key(name)}: not built: nothing it read changed since it passed (--full builds it)")
    for name, why in result.built.items():
        unkept = f"; its pass is not kept: {result.unkept[name]}" if name in result.unkept else ""
        out.detail(f"sets.{shown_key(name)}: built ({why}){unkept}")
    for line in result.summaries:
        out.result(f"summary: {line}")
    for problem in result.problems:
        out.result(f"problem: {problem if out.verbose else _short(problem)}")
        for detail in problem.details:
            out.detail(f"    {detail}")
    if result.unchecked:
        unchecked = ", ".join(shown_key(name) for name in result.unchecked)
        out.result(f"not checked: {unchecked} (no set is built until the configs above are there)")
    for name, configs in result.waiting.items():
        out.result(
            f"not seen: sets.{shown_key(name)}: {listed(configs)} {'waits' if len(configs) == 1 else 'wait'} for "
            "unfinished jobs: what it builds after that is not checked (run the jobs it waits for, then check again; "
            "--accept-waiting accepts it)"
        )
    if result.problems:
        out.result(f"pin check: {count(len(result.problems), 'problem')}")
    else:
        skipped = f", {len(result.skipped)} skipped" if result.skipped else ""
        kept = f", {len(result.kept)} unchanged since the last pass" if result.kept else ""
        if result.waiting:
            kept += f", {count(len(result.waiting), 'set')} not seen whole{', accepted' if accept_waiting else ''}"
        verdict = "ok" if accept_waiting or not result.waiting else "not whole"
        out.result(
            f"pin check: {verdict} ({count(result.checked, 'set')}, {count(result.outputs, 'output')}{skipped}{kept})"
        )


#: the names a problem's line shows before it counts the rest (all of them with --verbose)
_LISTED = 5


def _short(problem: Problem) -> str:
    """:return: the problem's line naming the first few of what it lists (the outputs a change renews)"""
    if len(problem.named) <= _LISTED:
        return str(problem)
    rest = len(problem.named) - _LISTED
    return f"{problem.text}: {', '.join(problem.named[:_LISTED])} and {rest} more (--verbose lists them)"
