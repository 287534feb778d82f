"""
``pin upgrade SET [SET ...] [REPO ...] [--to REV | --as-of WHEN] [--dry-run] [--json]``, ``pin upgrade --all [REPO
...]``: the command line of :mod:`sispin.ops.upgrade`, and its report (:mod:`sispin.cli.upgrade_report`, each set as
soon as it is judged; then what was written), or with ``--json`` one document (:mod:`sispin.cli.upgrade_json`).
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "render"]

import argparse

from sispin.cli.options import add_command, as_of, commit_option, commit_written, dry_run, json_output
from sispin.cli.output import Output
from sispin.cli.upgrade_json import upgrade_json
from sispin.cli.upgrade_report import UpgradeReport
from sispin.git.moves import Allowed, Target
from sispin.lock.loading import find_lockfile
from sispin.ops.upgrade import UpgradeResult, select_sets, upgrade
from sispin.text import display_path, shown_key


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = add_command(
        subparsers,
        "upgrade",
        run,
        description="Move the pins of experiment set SET (of several sets: SET SET ...; of every set: --all) to the "
        "head of each repository's branch, or to --to REV; only the REPOs named when any are. Shows every move with "
        "the commits in between that change what the set uses, and the blast radius: every job of the set that "
        "depends on a moved repository gets a new id. Exit 8 when a move needs --allow-downgrade, "
        "--allow-unrelated, --allow-unreachable or --accept-drift (nothing is written).",
    )
    parser.add_argument(
        "set", metavar="SET", nargs="?", help="experiment set name ([sets.SET] in pin.toml); more may follow"
    )
    parser.add_argument(
        "repos",
        metavar="REPO",
        nargs="*",
        help="more sets, then the repositories to move (default: all of each set's); with --all, repositories only",
    )
    parser.add_argument(
        "--all", action="store_true", help="every set of pin.toml (that pins a REPO named, when any is); frozen sets "
        "are left out, and said so"
    )  # fmt: skip
    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "--to", metavar="REV", help="a tag, branch or (unambiguous, possibly short) commit SHA; needs exactly one REPO"
    )
    as_of(target, "move each repository to its branch as it was then")
    target.add_argument(
        "--release",
        action="store_true",
        help="move each repository to the newest release tag on its branch (by version order; its tags matching "
        "[repos.REPO] releases = 'GLOB', every tag when not set)",
    )
    dry_run(parser, "show what would move; write nothing")
    commit_option(parser)
    json_output(parser, "the moves and blast radius as text (with --commit, the commit is in it)")
    parser.add_argument("--allow-downgrade", action="store_true", help="allow moving to an ancestor of the pinned one")
    parser.add_argument(
        "--allow-unrelated",
        action="store_true",
        help="allow moving to a commit that is neither ancestor nor descendant of the pinned one (e.g. after a "
        "force-push, or to another branch)",
    )
    parser.add_argument(
        "--accept-drift",
        action="store_true",
        help="move even though the set's graph already differs from pin.snapshot.toml (the new snapshot takes the "
        "difference in)",
    )
    parser.add_argument(
        "--allow-unreachable",
        action="store_true",
        help="allow a target that no branch or tag of the remote contains (it exists only in the store, e.g. after "
        "a force-push); a CloneGitRepositoryJob cannot check such a commit out",
    )
    parser.set_defaults(trailing="repos")


def run(args: argparse.Namespace, out: Output) -> int:
    """:param args: parsed command line"""
    allowed = Allowed(
        downgrade=args.allow_downgrade,
        unrelated=args.allow_unrelated,
        unreachable=args.allow_unreachable,
        drift=args.accept_drift,
    )
    target = Target(revision=args.to, as_of=args.as_of, release=args.release)
    path = find_lockfile()
    words = ([args.set] if args.set is not None else []) + list(args.repos)
    selection = select_sets(path, words, args.all)
    for name in selection.frozen:
        out.info(f"sets.{shown_key(name)}: frozen, left out")
    if not selection.sets:
        out.result(f"no set to upgrade (none that is not frozen pins {', '.join(selection.repos) or 'a repository'})")
        return 0
    report = UpgradeReport(out)
    result = upgrade(
        path,
        selection.sets,
        selection.repos,
        target=target,
        dry_run=args.dry_run,
        allowed=allowed,
        planned=(lambda plan: None) if args.json else report.planned,
        judged=(lambda judged: None) if args.json else report.judged,
    )
    if args.json:
        from sispin.ops.commit import commit_lock  # as commit_written imports it: only a command that commits pays

        committed = commit_lock(path, *result.commit_message()) if args.commit and result.written else None
        out.json(upgrade_json(result, committed))
        if result.refusal is not None:
            raise result.refusal
        return 0
    code = render(result, out)
    if args.commit and result.written is not None:
        commit_written(path, *result.commit_message(), out)
    return code


def render(result: UpgradeResult, out: Output) -> int:
    """
    What came of the upgrade after the sets (shown as they were judged): what was written, or that nothing was.

    :param result: what ``pin upgrade`` did
    :return: 0
    :raises PinError: the refusal, after the sets showed what it refers to (nothing was written)
    """
    if result.refusal is not None:
        raise result.refusal
    if result.needs:
        out.result(f"the real move needs {' '.join(result.needs)}")
    written = result.written
    if written is None:
        if result.plan.moving:
            out.info(f"dry run: {display_path(result.plan.lockfile.path)} not changed")
        return 0
    for set_name, move in written.already:
        out.info(
            f"{move.repo}: another process moved sets.{shown_key(set_name)}.{shown_key(move.repo)} to {move.new[:7]} "
            "meanwhile"
        )
    if not written.changed:
        out.info(f"{display_path(written.lock)}: not changed (already as planned)")
        return 0
    out.info(f"{display_path(written.lock)}: updated {', '.join(f'sets.{shown_key(name)}' for name in written.sets)}")
    if written.snapshot is not None:
        names = ", ".join(f"sets.{shown_key(name)}" for name in written.snapshot_sets)
        out.info(f"{display_path(written.snapshot)}: updated {names}")
    return 0
