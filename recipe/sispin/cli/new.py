"""
``pin new SET [--from OTHER] [--configs PATH ...] [--config PATH]``: the command line of :mod:`sispin.ops.new`, and
its report (the set added, a line per pin, whether its graph went into the snapshot).
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "render"]

import argparse

from sispin.cli.options import add_command, as_of, commit_option, commit_written, setup_relative
from sispin.cli.output import Output
from sispin.cli.upgrade_report import show_radius
from sispin.errors import SisyphusError
from sispin.git.store import Store
from sispin.lock.loading import find_lockfile
from sispin.ops.new import NewSet, new_set
from sispin.text import count, display_path, shown_key


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = add_command(
        subparsers,
        "new",
        run,
        description="Add experiment set SET to pin.toml, pinned to the head of each repository's branch: all "
        "repositories of [repos], or those OTHER pins (--from). Refuses an existing name (exit 4).",
    )
    parser.add_argument("set", metavar="SET", help="name of the new set")
    parser.add_argument("--from", dest="from_set", metavar="OTHER", help="pin the repositories that set OTHER pins")
    parser.add_argument(
        "--configs",
        metavar="PATH",
        nargs="+",
        default=[],
        help="existing Sisyphus config files of the set (relative to where you are; pin.toml lists them relative "
        "to the setup root)",
    )
    parser.add_argument(
        "--config",
        metavar="PATH",
        help="write a starter config at PATH (relative to where you are) that uses experiment_set(SET), and list it "
        "in the set's configs",
    )
    as_of(parser, "pin each repository's branch as it was then, not its head")
    commit_option(parser)


def run(args: argparse.Namespace, out: Output) -> int:
    """:param args: parsed command line"""
    path = find_lockfile()
    configs = [setup_relative(path.parent, config, "--configs") for config in args.configs]
    starter = setup_relative(path.parent, args.config, "--config") if args.config else None
    result = new_set(
        path, args.set, from_set=args.from_set, configs=configs, store=Store(), starter=starter, as_of=args.as_of
    )
    code = render(result, out)
    if args.commit:
        summary, body, also = result.commit_message()
        commit_written(path, summary, body, out, also=also)
    return code


def render(result: NewSet, out: Output) -> int:
    """
    :param result: the set ``pin new`` added
    :param out: what was added, a line per pin, and whether the snapshot recorded the set
    :return: 9 when the set lists configs that do not load (the set is written all the same), else 0
    """
    name = result.name
    out.info(
        f"{display_path(result.lock)}: new set {name!r}" + (f" from {result.from_set!r}" if result.from_set else "")
    )
    if result.starter is not None:
        uses = f"it uses experiment_set({name!r}); build the set's graph in py()"
        out.info(f"{result.starter}: starter config written ({uses})")
    width = max((len(pin.repo) for pin in result.pins), default=0)
    at = "head" if result.as_of is None else f"as of {result.as_of.isoformat()}"
    for pin in result.pins:
        out.result(f"{pin.repo:<{width}}  {pin.commit[:7]}  ({pin.branch or 'default branch'} {at})")
    snapshot = display_path(result.snapshot)
    if result.graph is not None:
        out.info(f"{snapshot}: recorded sets.{shown_key(name)} ({count(len(result.graph.outputs), 'output')})")
        _show_reuse(result, out)
        return 0
    line = f"{snapshot}: sets.{shown_key(name)} not recorded ({result.not_recorded})"
    if not result.configs_fail:
        out.info(line)  # a set without configs is a state the tools handle
        return 0
    out.error(f"{line}: the set is in pin.toml; fix its configs, then `pin snapshot {name}`")
    return SisyphusError.exit_code


def _show_reuse(result: NewSet, out: Output) -> None:
    """What starting at the newest commits renews of the set the template's commits would give, and its price."""
    lead = f"Blast radius against the commits of {result.from_set!r}"
    if result.reuse_unknown:
        out.result(f"{lead}: not computed ({result.reuse_unknown})")
    if result.reuse is not None:
        show_radius(out, result.reuse, lead, unused="would not be reused")
