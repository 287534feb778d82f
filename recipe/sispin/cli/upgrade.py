"""
``pin upgrade SET [SET ...] [REPO ...] [--to REV | --as-of WHEN] [--dry-run]``, ``pin upgrade --all [REPO ...]``: the
one deliberate way to move experiment sets.

Each repository moves to the head of its ``branch`` (or to ``--to``, or to the branch as it was ``--as-of``); the
command shows what moves, the commits in between that change what the set uses, and the blast radius; refuses
downgrades and jumps to unrelated history unless explicitly allowed; and rewrites pin.toml (and the snapshot) once for
all sets, atomically, keeping its comments and formatting. The remotes are fetched side by side.
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "upgrade"]

import argparse
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import tomlkit

from sispin.cli.options import add_command, as_of, commit_option, commit_written, dry_run
from sispin.cli.output import Output
from sispin.cli.snapshot import waiting_lines
from sispin.cli.upgrade_report import (
    radius,
    refuse_code_that_sets_a_dropped_alias,
    refuse_drift,
    refuse_kept_ids_with_other_content,
    say_dropped_aliases,
    show_blast_radius,
    show_moves,
)
from sispin.errors import (
    ConcurrentChangeError,
    RefusedMoveError,
    RevisionError,
    SisyphusError,
    UnknownNameError,
    UsageError,
)
from sispin.git.moves import Allowed, Move, PlannedMove, Target, plan_repo_move, refusal
from sispin.git.store import Store
from sispin.graph.build import load_graph, recording_inputs
from sispin.graph.probe.schema import SetGraph
from sispin.graph.snapshot import edit_lock_and_snapshot
from sispin.graph.used_code import UsedCode, used_code
from sispin.lock.editing import drop_pin_alias, edit_lockfile, set_pin_commit
from sispin.lock.files import check_writable, snapshot_path
from sispin.lock.lockfile import Lockfile, find_lockfile, parse_lockfile, read_lockfile_text
from sispin.text import display_path, shown_key

#: what is known of one set's moves once its graphs are built: the graphs before and after (None: they cannot be
#: built), and per moved repository how many of its commits change what the set uses
Judged = Tuple[Optional[Tuple[SetGraph, SetGraph]], Dict[str, int]]


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
    parser.add_argument(
        "--allow-downgrade", action="store_true", help="allow moving to an ancestor of the pinned commit"
    )
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
    set_names, repos = _sets_and_repos(parse_lockfile(read_lockfile_text(path), path), words, args.all, out)
    if not set_names:
        return 0
    return upgrade(
        path, set_names, repos, out, target=target, dry_run=args.dry_run, allowed=allowed, commit=args.commit
    )


def _sets_and_repos(lockfile: Lockfile, words: List[str], every: bool, out: Output) -> Tuple[List[str], List[str]]:
    """
    :param words: the command line's names: a set, then sets and repositories (with --all: repositories)
    :param every: --all
    :return: the sets to move and the repositories named
    :raises UsageError: for no set, or a name that is a set and a repository both
    """
    if every:
        for repo in words:
            if repo in lockfile.sets and repo not in lockfile.repos:
                raise UsageError(f"{repo!r} is a set: with --all, name repositories (or name the sets, without --all)")
            lockfile.get_repo(repo)
        names = [name for name, spec in lockfile.sets.items() if not words or set(words) & set(spec.pins)]
        for name in [name for name in names if lockfile.sets[name].freeze]:
            out.info(f"sets.{shown_key(name)}: frozen, left out")
        names = [name for name in names if not lockfile.sets[name].freeze]
        if not names:
            out.result(f"no set to upgrade (none that is not frozen pins {', '.join(words) or 'a repository'})")
        return names, words
    if not words:
        raise UsageError("upgrade needs SET (or --all)")
    lockfile.get_set(words[0])
    for word in words[1:]:
        if word in lockfile.sets and word in lockfile.repos:
            raise UsageError(f"{word!r} names a set and a repository: upgrade the sets one command at a time")
    set_names = [words[0]] + [word for word in words[1:] if word in lockfile.sets]
    return list(dict.fromkeys(set_names)), [word for word in words[1:] if word not in lockfile.sets]


def upgrade(
    path: Path,
    set_names: Sequence[str],
    repos: Sequence[str],
    out: Output,
    *,
    target: Target,
    dry_run: bool,
    allowed: Allowed,
    store: Optional[Store] = None,
    commit: bool = False,
) -> int:
    """
    :param path: the pin.toml
    :param set_names: the sets to move
    :param repos: repositories to move; empty for all of each set's
    :param out: the moves, the blast radius and what was written
    :param target: where the repositories move
    :param dry_run: print only
    :param allowed: the moves to let through that are refused otherwise
    :param store: the mirrors to resolve in (fetched first; default: the user's store)
    :param commit: commit pin.toml and the snapshot afterwards, with the moves and the blast radius as the message
    :return: exit code
    :raises RefusedMoveError: when a move needs a flag that was not given (nothing is written)
    :raises ConcurrentChangeError: when another process moved or removed one of the pins meanwhile
    """
    # one read: the blast radius, the check of what changed meanwhile and the rewrite all start from this text
    text = read_lockfile_text(path)
    lockfile = parse_lockfile(text, path)
    for set_name in set_names:
        lockfile.get_set(set_name).check_not_frozen("pin upgrade")
    if not dry_run:
        check_writable(path)  # say it before fetching and planning, not after
    store = store or Store()
    plans, mirrors = _plan_sets(lockfile, set_names, repos, target, store, out)
    refused, flags = refusal([p for planned in plans.values() for p in planned], allowed)
    if refused and not dry_run:
        for set_name, planned in plans.items():
            _set_header(out, set_name, len(plans))
            show_moves(out, lockfile, set_name, planned, None, mirrors)
        raise RefusedMoveError(refused)
    moving = _moving(plans)
    moved_text = _moved_text(lockfile, text, moving)
    judged = _judge_sets(lockfile, (text, moved_text), plans, allowed, (store, mirrors), out)
    if moving and dry_run:
        if refused:
            out.result(f"the real move needs {' '.join(flags)}")
        out.info(f"dry run: {display_path(path)} not changed")
    elif moving:
        _write(path, moving, judged, out)
        if commit:
            _commit_moves(path, moving, judged, target, out)
    return 0


def _plan_sets(
    lockfile: Lockfile, set_names: Sequence[str], repos: Sequence[str], target: Target, store: Store, out: Output
) -> Tuple[Dict[str, List[PlannedMove]], Dict[str, Path]]:
    """
    :return: per set, the planned move of each repository named that it pins (all of the set's when none is named);
        and the mirror of each repository, fetched (side by side)
    :raises UsageError: when ``--to`` goes with other than exactly one repository
    :raises UnknownNameError: when a repository named is pinned by none of the sets (by the one set, when one)
    """
    names = list(dict.fromkeys(repos))
    pinned = names or list(dict.fromkeys(repo for name in set_names for repo in lockfile.get_set(name).pins))
    if target.revision is not None and len(pinned) != 1:
        which = f"set {set_names[0]!r}" if len(set_names) == 1 else "the sets"
        raise UsageError(f"--to needs exactly one REPO ({which} pin: {', '.join(pinned) or 'none'})")
    chosen: Dict[str, List[str]] = {}
    for set_name in set_names:
        spec = lockfile.get_set(set_name)
        if len(set_names) == 1:
            for name in names:
                spec.pin(name)  # one set: a repository it does not pin is an error
        chosen[set_name] = [name for name in names if name in spec.pins] if names else list(spec.pins)
    moving = list(dict.fromkeys(repo for pins in chosen.values() for repo in pins))
    for name in names:
        if not any(name in pins for pins in chosen.values()):
            raise UnknownNameError(f"none of the sets {', '.join(set_names)} pins a repository {name!r}")
    for set_name in [set_name for set_name, pins in chosen.items() if names and not pins]:
        out.info(f"sets.{shown_key(set_name)}: pins none of {', '.join(names)}, left out")
        del chosen[set_name]
    fetched = store.fetch_all(list(dict.fromkeys(lockfile.get_repo(repo).url for repo in moving)))
    mirrors = {repo: fetched[lockfile.get_repo(repo).url] for repo in moving}
    plans = {
        set_name: [_plan(lockfile, set_name, name, target, mirrors[name]) for name in pins]
        for set_name, pins in chosen.items()
    }
    return plans, mirrors


def _judge_sets(
    lockfile: Lockfile,
    texts: Tuple[str, str],
    plans: Dict[str, List[PlannedMove]],
    allowed: Allowed,
    mirrors: Tuple[Store, Dict[str, Path]],
    out: Output,
) -> Dict[str, Judged]:
    """Show each set's moves, and judge those of the sets that move (see :func:`_judge`)."""
    mirror_of = mirrors[1]
    judged: Dict[str, Judged] = {}
    for set_name, planned in plans.items():
        _set_header(out, set_name, len(plans))
        if any(p.move.kind != "none" for p in planned):
            judged[set_name] = _judge(lockfile, texts, set_name, planned, allowed, mirrors, out)
        else:
            show_moves(out, lockfile, set_name, planned, None, mirror_of)
    return judged


def _moving(plans: Dict[str, List[PlannedMove]]) -> Dict[str, List[Move]]:
    """:return: the moves of each set that has some"""
    moves = {name: [p.move for p in planned if p.move.kind != "none"] for name, planned in plans.items()}
    return {name: moving for name, moving in moves.items() if moving}


def _set_header(out: Output, set_name: str, sets: int) -> None:
    """Name the set whose moves follow, when there are several."""
    if sets > 1:
        out.result(f"sets.{shown_key(set_name)}:")


def _moved_text(lockfile: Lockfile, text: str, moving: Dict[str, List[Move]]) -> str:
    """:return: the lockfile's text with every set's moves made"""
    document = tomlkit.parse(text)
    for set_name, moves in moving.items():
        _apply(lockfile, document, set_name, moves)
    return tomlkit.dumps(document)


def _judge(
    lockfile: Lockfile,
    texts: Tuple[str, str],
    set_name: str,
    planned: List[PlannedMove],
    allowed: Allowed,
    mirrors: Tuple[Store, Dict[str, Path]],
    out: Output,
) -> Judged:
    """
    Show what a set's moves change and refuse what must not happen (see :mod:`sispin.cli.upgrade_report`).

    :param texts: the lockfile's text the moves were planned on, and that text with every set's moves made
    :param planned: the set's planned moves, some moving
    :param mirrors: the store, and the mirror of each repository
    """
    (text, moved_text), (store, mirror_of) = texts, mirrors
    moving = [p.move for p in planned if p.move.kind != "none"]
    try:
        with recording_inputs() as read:
            before = load_graph(lockfile, set_name, lock_text=text, states=True, records="all")
    except SisyphusError as exc:
        show_moves(out, lockfile, set_name, planned, None, mirror_of)
        say_dropped_aliases(out, lockfile.get_set(set_name), moving)
        # what can be said without the graph: the blast radius would count them
        out.result(
            f"Every job of set {set_name!r} that depends on {', '.join(m.repo for m in moving)} will get a new id."
        )
        out.result(f"Blast radius: not computed ({exc})")
        return None, {}
    ledger = read.ledgers[0]
    measured = {move.repo: mirror_of[move.repo] for move in moving}
    used: Optional[Dict[str, UsedCode]] = used_code(lockfile, before, ledger, store, measured) if ledger else None
    touching = show_moves(out, lockfile, set_name, planned, used, mirror_of)
    say_dropped_aliases(out, lockfile.get_set(set_name), moving)
    targets = ", ".join(f"{move.repo} {move.new[:7]}" for move in moving)
    try:
        # (what the move checks out goes with the build: a dry run leaves the store as it was)
        after = load_graph(lockfile, set_name, lock_text=moved_text, states=True, records="all", scratch_checkouts=True)
    except SisyphusError as exc:
        # the set builds now: a move after which it does not would leave it unbuildable, and its snapshot behind
        raise SisyphusError(f"set {set_name!r} does not build at {targets}: {exc}; nothing written") from None
    for line in waiting_lines(after):
        out.result(f"note: {line} (the blast radius counts what is built before)")
    if not allowed.drift:
        refuse_drift(lockfile, before, out)
    refuse_code_that_sets_a_dropped_alias(out, lockfile.get_set(set_name), moving, before)
    show_blast_radius(out, set_name, before, after)
    refuse_kept_ids_with_other_content(out, before, after)
    return (before, after), touching


def _write(path: Path, moving: Dict[str, List[Move]], judged: Dict[str, Judged], out: Output) -> None:
    """Write the moves into pin.toml, and the sets' graphs after them into the snapshot where there are some."""
    already: List[Tuple[str, Move]] = []
    moved_graphs = [graphs[1] for graphs, _ in judged.values() if graphs is not None]

    def apply(current: Lockfile, document: tomlkit.TOMLDocument) -> None:
        for set_name, moves in moving.items():
            already.extend((set_name, move) for move in _apply(current, document, set_name, moves))

    if not moved_graphs:
        edit_lockfile(path, apply)
    else:
        # the snapshot moves with the lock, so that `pin check` keeps comparing against the state in force
        edit_lock_and_snapshot(path, apply, moved_graphs)
    for set_name, move in already:
        out.info(
            f"{move.repo}: another process moved sets.{shown_key(set_name)}.{shown_key(move.repo)} to {move.new[:7]} "
            "meanwhile"
        )
    if len(already) == sum(len(moves) for moves in moving.values()):
        out.info(f"{display_path(path)}: not changed (already as planned)")
        return
    out.info(f"{display_path(path)}: updated {', '.join(f'sets.{shown_key(name)}' for name in moving)}")
    if moved_graphs:
        names = ", ".join(f"sets.{shown_key(graph.set_name)}" for graph in moved_graphs)
        out.info(f"{display_path(snapshot_path(path))}: updated {names}")


def _commit_moves(
    path: Path, moving: Dict[str, List[Move]], judged: Dict[str, Judged], target: Target, out: Output
) -> None:
    """Commit pin.toml and the snapshot with the moves, where they went and the blast radius as the message."""
    several = len(moving) > 1
    body = []
    for set_name, moves in moving.items():
        graphs, touching = judged[set_name]
        prefix = f"{set_name}: " if several else ""
        for m in moves:
            uses = f", {touching[m.repo]} change what {set_name} uses" if m.repo in touching else ""
            body.append(f"{prefix}{m.repo} {m.old[:7]} -> {m.new[:7]} ({m.summary}{uses})")
        body += [f"{prefix}{radius(*graphs)} get new ids"] if graphs else []
    body += [f"--to {target.revision}"] if target.revision else []
    body += [f"--as-of {target.as_of.isoformat()}"] if target.as_of else []
    body += ["--release"] if target.release else []
    moves = "; ".join(
        (f"{set_name} " if several else "") + ", ".join(f"{m.repo} {m.old[:7]} -> {m.new[:7]}" for m in moves)
        for set_name, moves in moving.items()
    )
    commit_written(path, f"pin upgrade {' '.join(moving)}: {moves}", body, out)


def _plan(lockfile: Lockfile, set_name: str, name: str, target: Target, mirror: Path) -> PlannedMove:
    """:return: the move of one repository, planned in its mirror (just fetched)"""
    pin, repo = lockfile.get_set(set_name).pin(name), lockfile.get_repo(name)
    try:
        return plan_repo_move(mirror, repo, pin.commit, target)
    except RevisionError as exc:
        raise RevisionError(f"repos.{name} ({repo.url}): {exc}") from None


def _apply(current: Lockfile, document: tomlkit.TOMLDocument, set_name: str, moves: List[Move]) -> List[Move]:
    """
    Write the moves into the document.

    :param current: the lockfile as it is now (another process may have changed it since the moves were planned)
    :return: the moves another process already made (left as they are)
    :raises ConcurrentChangeError: when another process removed the set or a pin, or moved a pin elsewhere
    """
    where = display_path(current.path)
    if set_name not in current.sets:
        raise ConcurrentChangeError(
            f"{where}: sets.{shown_key(set_name)} was removed by another process while this upgrade ran; "
            "nothing written"
        )
    current.sets[set_name].check_not_frozen("pin upgrade")  # frozen by another process meanwhile
    already = []
    for move in moves:
        pins = current.sets[set_name].pins
        now = pins[move.repo].commit if move.repo in pins else None
        if now == move.new:
            already.append(move)
            continue
        if now != move.old:
            # never overwrite another process's decision silently
            became = f"changed to {now[:7]}" if now else "was removed"
            raise ConcurrentChangeError(
                f"{where}: sets.{shown_key(set_name)}.{shown_key(move.repo)} {became} by another process while this "
                "upgrade ran (it "
                f"planned {move.old[:7]} -> {move.new[:7]}); nothing written: rerun to see the move from there"
            )
        set_pin_commit(document, set_name, move.repo, move.new, move.tag)
        drop_pin_alias(document, set_name, move.repo)  # an alias stands for the old commit only
    return already
