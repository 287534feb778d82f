"""
``pin upgrade SET [REPO ...] [--to REV] [--dry-run]``: the one deliberate way to move an experiment set.

Each repository moves to the head of its ``branch`` (or to ``--to``); the command shows what moves and the commits
in between, refuses downgrades and jumps to unrelated history unless explicitly allowed, and rewrites pin.toml
atomically, keeping its comments and formatting.
"""

from __future__ import annotations

__all__ = ["add_parser", "run", "upgrade"]

import argparse
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

import tomlkit

from sispin.cli.options import add_command, as_of, commit_option, commit_written, dry_run, one_set
from sispin.cli.output import Output
from sispin.cli.snapshot import waiting_lines
from sispin.errors import (
    ConcurrentChangeError,
    HashOverwriteError,
    RefusedMoveError,
    RevisionError,
    SisyphusError,
    UsageError,
)
from sispin.git.moves import Allowed, Move, PlannedMove, Target, format_move, plan_repo_move, refusal
from sispin.git.store import Store
from sispin.graph.build import SetGraph, load_graph
from sispin.graph.explain import explain_output, is_commit_only, shown, summary
from sispin.graph.guard import capped, listed, state_problems
from sispin.graph.recordcache import read_records
from sispin.graph.snapshot import edit_lock_and_snapshot, read_snapshot, snapshot_path
from sispin.lock.editing import drop_pin_alias, edit_lockfile, set_pin_commit
from sispin.lock.files import check_writable
from sispin.lock.lockfile import (
    Lockfile,
    SetSpec,
    display_path,
    find_lockfile,
    parse_lockfile,
    read_lockfile_text,
    shown_key,
)


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = add_command(
        subparsers,
        "upgrade",
        run,
        description="Move the pins of experiment set SET (all its repositories, or the REPOs named) to the head "
        "of each repository's branch, or to --to REV. Shows every move with the commits in between; every job of "
        "the set that depends on a moved repository gets a new id. Exit 8 when a move needs --allow-downgrade or "
        "--allow-unrelated.",
    )
    one_set(parser)
    parser.add_argument("repos", metavar="REPO", nargs="*", help="repositories to move (default: all of the set's)")
    target = parser.add_mutually_exclusive_group()
    target.add_argument(
        "--to", metavar="REV", help="a tag, branch or (unambiguous, possibly short) commit SHA; needs exactly one REPO"
    )
    as_of(target, "move each repository to its branch as it was then")
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
    target = Target(revision=args.to, as_of=args.as_of)
    return upgrade(
        find_lockfile(), args.set, args.repos, out, target=target, dry_run=args.dry_run, allowed=allowed,
        commit=args.commit,
    )  # fmt: skip


def upgrade(
    path: Path,
    set_name: str,
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
    :param set_name: the set to move
    :param repos: repositories to move; empty for all of the set's
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
    lockfile.get_set(set_name).check_not_frozen("pin upgrade")
    if not dry_run:
        check_writable(path)  # say it before fetching and planning, not after
    planned = _plan_set(lockfile, set_name, repos, target, store or Store())
    if not planned:
        out.result(f"experiment set {set_name!r} pins no repositories: nothing to upgrade")
        return 0
    _show_moves(out, lockfile, planned)
    refused, flags = refusal(planned, allowed)
    if refused and not dry_run:
        raise RefusedMoveError(refused)
    moving = [p.move for p in planned if p.move.kind != "none"]
    if not moving:
        return 0
    _say_dropped_aliases(out, lockfile.get_set(set_name), moving)
    graphs = _judged_graphs(lockfile, text, set_name, moving, allowed, out)
    if dry_run:
        if refused:
            out.result(f"the real move needs {' '.join(flags)}")
        out.info(f"dry run: {display_path(path)} not changed")
        return 0
    _write(path, set_name, moving, graphs[1] if graphs else None, out)
    if commit:
        _commit_moves(path, set_name, moving, graphs, target, out)
    return 0


def _show_moves(out: Output, lockfile: Lockfile, planned: List[PlannedMove]) -> None:
    width = max(len(p.move.repo) for p in planned)
    for p in planned:
        out.result("\n".join(format_move(p.move, width)))
        if not p.on_remote:
            out.result(f"    ! {p.move.new[:7]} is on no branch or tag of {lockfile.get_repo(p.move.repo).url}")


def _plan_set(
    lockfile: Lockfile, set_name: str, repos: Sequence[str], target: Target, store: Store
) -> List[PlannedMove]:
    """
    :return: the planned move of each repository named (all of the set's when none is)
    :raises UsageError: when ``--to`` goes with other than exactly one repository
    """
    spec = lockfile.get_set(set_name)
    names = list(dict.fromkeys(repos)) or list(spec.pins)
    if target.revision is not None and len(names) != 1:
        raise UsageError(f"--to needs exactly one REPO (set {set_name!r} pins: {', '.join(spec.pins) or 'none'})")
    return [_plan(lockfile, set_name, name, target, store) for name in names]


def _write(path: Path, set_name: str, moving: List[Move], moved_graph: Optional[SetGraph], out: Output) -> None:
    """Write the moves into pin.toml, and the set's graph after them into the snapshot when there is one."""
    already: List[Move] = []

    def apply(current: Lockfile, document: tomlkit.TOMLDocument) -> None:
        already.extend(_apply(current, document, set_name, moving))

    if moved_graph is None:
        edit_lockfile(path, apply)
    else:
        # the snapshot moves with the lock, so that `pin check` keeps comparing against the state in force
        edit_lock_and_snapshot(path, apply, [moved_graph])
    for move in already:
        out.info(
            f"{move.repo}: another process moved sets.{shown_key(set_name)}.{shown_key(move.repo)} to {move.new[:7]} "
            "meanwhile"
        )
    if len(already) == len(moving):
        out.info(f"{display_path(path)}: not changed (already as planned)")
        return
    out.info(f"{display_path(path)}: updated sets.{shown_key(set_name)}")
    if moved_graph is not None:
        out.info(f"{display_path(snapshot_path(path))}: updated sets.{shown_key(set_name)}")


def _graphs(
    lockfile: Lockfile, text: str, set_name: str, moving: List[Move], out: Output
) -> Optional[Tuple[SetGraph, SetGraph]]:
    """
    :param text: the lockfile's text the moves were planned on
    :return: the set's graph before and after the moves, or None (said) when they cannot be built (no Sisyphus, no
        configs)
    """
    document = tomlkit.parse(text)
    _apply(lockfile, document, set_name, moving)
    try:
        before = load_graph(lockfile, set_name, lock_text=text, states=True, records="all")
    except SisyphusError as exc:
        # what can be said without the graph: the blast radius would count them
        out.result(
            f"Every job of set {set_name!r} that depends on {', '.join(m.repo for m in moving)} will get a new id."
        )
        out.result(f"Blast radius: not computed ({exc})")
        return None
    moved = ", ".join(f"{move.repo} {move.new[:7]}" for move in moving)
    try:
        after = load_graph(lockfile, set_name, lock_text=tomlkit.dumps(document), states=True, records="all")
    except SisyphusError as exc:
        # the set builds now: a move after which it does not would leave it unbuildable, and its snapshot behind
        raise SisyphusError(f"set {set_name!r} does not build at {moved}: {exc}; nothing written") from None
    for line in waiting_lines(after):
        out.result(f"note: {line} (the blast radius counts what is built before)")
    return before, after


def _judged_graphs(
    lockfile: Lockfile, text: str, set_name: str, moving: List[Move], allowed: Allowed, out: Output
) -> Optional[Tuple[SetGraph, SetGraph]]:
    """:return: the set's graph before and after the moves (None: they cannot be built), refused or shown"""
    graphs = _graphs(lockfile, text, set_name, moving, out)
    if graphs is not None:
        if not allowed.drift:
            _refuse_drift(lockfile, graphs[0], out)
        _refuse_code_that_sets_a_dropped_alias(out, lockfile.get_set(set_name), moving, graphs[0])
        _show_blast_radius(out, set_name, *graphs)
        _refuse_kept_ids_with_other_content(out, *graphs)
    return graphs


def _commit_moves(
    path: Path,
    set_name: str,
    moving: List[Move],
    graphs: Optional[Tuple[SetGraph, SetGraph]],
    target: Target,
    out: Output,
) -> None:
    """Commit pin.toml and the snapshot with the moves, where they went and the blast radius as the message."""
    body = [f"{m.repo} {m.old[:7]} -> {m.new[:7]} ({m.summary})" for m in moving]
    body += [f"--to {target.revision}"] if target.revision else []
    body += [f"--as-of {target.as_of.isoformat()}"] if target.as_of else []
    body += [f"{_radius(*graphs)} get new ids"] if graphs else []
    moves = ", ".join(f"{m.repo} {m.old[:7]} -> {m.new[:7]}" for m in moving)
    commit_written(path, f"pin upgrade {set_name}: {moves}", body, out)


def _radius(before: SetGraph, after: SetGraph) -> str:
    renewed = [job for job in before.jobs if job not in after.jobs]
    return f"Blast radius: {len(renewed)} of {len(before.jobs)} jobs"


def _show_blast_radius(out: Output, set_name: str, before: SetGraph, after: SetGraph) -> None:
    """
    How much of the set's job graph the move renews, what would run, what finished work it leaves unused, and per
    output whether only the pinned commit changes or content built from the pinned code too.
    """
    would_run = [job for job in after.jobs if job not in before.jobs and not after.jobs[job]]
    unused = [job for job in before.jobs if job not in after.jobs and before.jobs[job]]
    out.result(
        f"{_radius(before, after)} of set {set_name!r} get new ids; "
        f"{len(would_run)} would run (not finished in work/), {len(unused)} finished jobs would no longer be used."
    )
    outputs = sorted(set(before.outputs) | set(after.outputs))
    changed = [name for name in outputs if before.outputs.get(name) != after.outputs.get(name)]
    out.result(f"Outputs that change: {listed(changed) if changed else 'none'}")
    # one line per cause (the first differences), not per output: a move renews hundreds of outputs for one reason
    causes: Dict[Tuple[str, Tuple[str, ...]], List[Tuple[str, List[str]]]] = {}
    for name in changed:
        cause, differences = _advice(name, before, after)
        # one argument path reached through many jobs of the output is one difference, said once
        distinct = list(dict.fromkeys(differences))
        causes.setdefault((cause, tuple(distinct[:5])), []).append((name, distinct))
    for (cause, first), names in causes.items():
        which = names[0][0] if len(names) == 1 else f"{len(names)} outputs ({listed([name for name, _ in names])})"
        out.result(capped(f"  {which}: {cause}"))
        for difference in first:
            out.result(capped(f"      {difference}"))
        if any(len(differences) > len(first) for _, differences in names):
            out.result("      ... (every difference of every output: --verbose)")
        for name, differences in names:
            out.detail(f"    {name}: {'; '.join(differences) or cause}")


def _say_dropped_aliases(out: Output, spec: SetSpec, moving: List[Move]) -> None:
    """Name each hash_overwrite that a move drops from its pin (the ids made with it move)."""
    for move in moving:
        alias = spec.pins[move.repo].hash_overwrite
        if alias is not None:
            out.result(
                f"{move.repo}: drops hash_overwrite {alias!r}: it stands for {move.old[:7]} only, so the jobs that "
                "hashed it get new ids"
            )


def _refuse_code_that_sets_a_dropped_alias(out: Output, spec: SetSpec, moving: List[Move], before: SetGraph) -> None:
    """
    Refuse when config code (not sispin's exp.repo(), which applies a pin's alias itself) sets a hash_overwrite that
    the move drops: after the move, the same value would hide the new commit.
    """
    dropped = {spec.pins[move.repo].hash_overwrite for move in moving} - {None}
    places = sorted({(a.value, a.where) for a in before.assignments if a.where != "pin.toml" and a.value in dropped})
    for value, where in places:
        out.result(
            f"problem: {where} sets hash_overwrite {value!r} itself: after the move it would hide the new commit"
        )
    if places:
        raise HashOverwriteError(
            f"remove the code that sets {', '.join(sorted({repr(value) for value, _ in places}))} (listed above; "
            "exp.repo() applies a pin's hash_overwrite itself and drops it with the move), then upgrade; nothing "
            "written"
        )


def _refuse_kept_ids_with_other_content(out: Output, before: SetGraph, after: SetGraph) -> None:
    """
    Refuse the move when a job would keep its id but hold other content after it (built from the pinned code where
    no hash sees it): its finished work would stand for code it was not made with.
    """
    problems = state_problems(before, after)
    for problem in problems:
        out.result(f"problem: {problem}")
    if problems:
        kept = "1 job would keep its id" if len(problems) == 1 else f"{len(problems)} jobs would keep their ids"
        raise HashOverwriteError(
            f"{kept} with other content after this move (listed above): make that content part of the hash; nothing "
            "written"
        )


def _advice(name: str, before: SetGraph, after: SetGraph) -> Tuple[str, List[str]]:
    """
    :return: whether an output changes only because a pinned commit moved, or because content built from it changed
        too, and what differs (each difference's path, old -> new)
    """
    old, new = before.outputs.get(name), after.outputs.get(name)
    if old is None or new is None:
        return ("new output" if old is None else "no longer registered"), []
    causes = explain_output(name, old.job, new.job, before.records, after.records).causes
    content = [cause for cause in causes if not is_commit_only(cause)]
    if not content:
        return "only the pinned commit changes", []
    paths = [f"{d.path}: {shown(d.old)} -> {shown(d.new)}" for cause in content for d in cause.differences]
    return "content changes too" + ("" if paths else f": {content[0].reason}"), paths


def _refuse_drift(lockfile: Lockfile, current: SetGraph, out: Output) -> None:
    """Refuse to move a set whose graph at its current pins already differs from its snapshot."""
    target = snapshot_path(lockfile.path)
    recorded = read_snapshot(target).get(current.set_name)
    if recorded is None:
        return  # nothing recorded yet: nothing to drift from
    records = read_records(lockfile.path, current.set_name, recorded) or {}
    drifted = [
        name
        for name in sorted(set(recorded) | set(current.outputs))
        if (recorded[name].job if name in recorded else None)
        != (current.outputs[name].job if name in current.outputs else None)
    ]
    if not drifted:
        return
    for name in drifted:
        old = recorded[name].job if name in recorded else None
        new = current.outputs[name].job if name in current.outputs else None
        reason = summary(explain_output(name, old, new, records, current.records))
        out.result(f"drift: output/{name}: {old or '(none)'} -> {new or '(none)'}" + (f" ({reason})" if reason else ""))
    raise RefusedMoveError(
        f"set {current.set_name!r} already differs from {display_path(target)} before the move "
        f"({len(drifted)} output{'s' if len(drifted) != 1 else ''}, listed above): review it with `pin explain`, "
        "record it with `pin snapshot`, or pass --accept-drift (nothing written)"
    )


def _plan(lockfile: Lockfile, set_name: str, name: str, target: Target, store: Store) -> PlannedMove:
    """:return: the move of one repository"""
    pin, repo = lockfile.get_set(set_name).pin(name), lockfile.get_repo(name)
    try:
        return plan_repo_move(store.fetch(repo.url), name, pin.commit, repo.branch, target)
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
        set_pin_commit(document, set_name, move.repo, move.new)
        drop_pin_alias(document, set_name, move.repo)  # an alias stands for the old commit only
    return already
