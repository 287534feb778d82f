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
from typing import List, Optional, Sequence

import tomlkit

from sispin import git
from sispin.editing import edit_lockfile
from sispin.errors import LockfileError, RefusedMoveError, RevisionError, SisyphusError, UsageError
from sispin.explain import explain_output, is_commit_only, shown, summary
from sispin.graph import SetGraph, load_graph
from sispin.lockfile import Lockfile, display_path, find_lockfile, load_lockfile
from sispin.moves import Move, format_move, plan_move
from sispin.snapshot import read_records, read_snapshot, snapshot_path, update_snapshot
from sispin.store import Store


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    """:param subparsers: the ``pin`` subcommand registry"""
    parser = subparsers.add_parser(
        "upgrade",
        help="move an experiment set's pins to newer commits",
        description="Move the pins of experiment set SET (all its repositories, or the REPOs named) to the head "
        "of each repository's branch, or to --to REV. Shows every move with the commits in between; every job of "
        "the set that depends on a moved repository gets a new id. Exit 8 when a move needs --allow-downgrade or "
        "--allow-unrelated.",
    )
    parser.add_argument("set", metavar="SET", help="experiment set name ([sets.SET] in pin.toml)")
    parser.add_argument("repos", metavar="REPO", nargs="*", help="repositories to move (default: all of the set's)")
    parser.add_argument(
        "--to", metavar="REV", help="a tag, branch or (unambiguous, possibly short) commit SHA; needs exactly one REPO"
    )
    parser.add_argument("--dry-run", action="store_true", help="show what would move; write nothing")
    parser.add_argument(
        "--allow-downgrade", action="store_true", help="allow moving to an ancestor of the pinned commit"
    )
    parser.add_argument(
        "--accept-drift",
        action="store_true",
        help="move even though the set's graph already differs from pin.snapshot.toml (the new snapshot takes the "
        "difference in)",
    )
    parser.add_argument(
        "--allow-unrelated",
        action="store_true",
        help="allow moving to a commit that is neither ancestor nor descendant of the pinned one (e.g. after a "
        "force-push, or to another branch)",
    )
    parser.set_defaults(run=run, trailing="repos")


def run(args: argparse.Namespace) -> int:
    """:param args: parsed command line"""
    return upgrade(
        find_lockfile(),
        args.set,
        args.repos,
        to=args.to,
        dry_run=args.dry_run,
        allow_downgrade=args.allow_downgrade,
        allow_unrelated=args.allow_unrelated,
        accept_drift=args.accept_drift,
        store=Store(),
    )


def upgrade(
    path: Path,
    set_name: str,
    repos: Sequence[str],
    *,
    to: Optional[str],
    dry_run: bool,
    allow_downgrade: bool,
    allow_unrelated: bool,
    accept_drift: bool,
    store: Store,
) -> int:
    """
    :param path: the pin.toml
    :param set_name: the set to move
    :param repos: repositories to move; empty for all of the set's
    :param to: target revision; None for each repository's branch head
    :param dry_run: print only
    :param allow_downgrade: permit moves to an ancestor
    :param allow_unrelated: permit moves to unrelated history
    :param accept_drift: move although the set's graph differs from its snapshot already
    :param store: the mirrors to resolve in (fetched first)
    :return: exit code
    :raises RefusedMoveError: when a move needs a flag that was not given (nothing is written; a dry run shows the
        move and its blast radius first)
    """
    lockfile = load_lockfile(path)
    spec = lockfile.get_set(set_name)
    names = list(dict.fromkeys(repos)) or list(spec.pins)
    if to is not None and len(names) != 1:
        raise UsageError(f"--to needs exactly one REPO (set {set_name!r} pins: {', '.join(spec.pins) or 'none'})")
    if not names:
        print(f"experiment set {set_name!r} pins no repositories: nothing to upgrade")
        return 0
    moves = [_plan(lockfile, set_name, name, to, store) for name in names]

    width = max(len(name) for name in names)
    for move in moves:
        print("\n".join(format_move(move, width)))
    refused = [m for m in moves if (m.kind == "downgrade" and not allow_downgrade)]
    refused += [m for m in moves if (m.kind == "unrelated" and not allow_unrelated)]
    if refused:
        flags = sorted({"--allow-downgrade" if m.kind == "downgrade" else "--allow-unrelated" for m in refused})
        what = "; ".join(f"{m.repo} {m.old[:7]} -> {m.new[:7]} is a {_kind_name(m)}" for m in refused)
        refusal = f"{what}: pass {' '.join(flags)} to move anyway (nothing written)"
        if not dry_run:
            raise RefusedMoveError(refusal)
    moving = [m for m in moves if m.kind != "none"]
    if not moving:
        return 0

    moved = ", ".join(m.repo for m in moving)
    print(f"Every job of set {set_name!r} that depends on {moved} will get a new id.")
    moved_graph = _report_blast_radius(lockfile, set_name, moving, refuse_drift=not accept_drift)
    if dry_run:
        if refused:
            print(f"the real move needs {' '.join(flags)}")
        print(f"dry run: {display_path(path)} not changed")
        return 0
    edit_lockfile(path, lambda current, document: _apply(current, document, set_name, moving))
    print(f"{display_path(path)}: updated sets.{set_name}")
    if moved_graph is not None:
        # the snapshot moves with the lock, so that `pin check` keeps comparing against the state in force
        update_snapshot(snapshot_path(path), [moved_graph], lockfile.sets)
        print(f"{display_path(snapshot_path(path))}: updated sets.{set_name}")
    return 0


def _report_blast_radius(
    lockfile: Lockfile, set_name: str, moving: List[Move], *, refuse_drift: bool
) -> Optional[SetGraph]:
    """
    Print how much of the set's job graph the move renews, what would run, what finished work it leaves unused,
    and per output whether only the pinned commit changes or content built from the pinned code too.

    :param refuse_drift: refuse when the graph at the current pins already differs from the snapshot (the move
        would silently record that difference)
    :return: the graph after the move, or None when it cannot be built (no Sisyphus, no configs)
    :raises RefusedMoveError: on drift, when refused
    """
    document = tomlkit.parse(lockfile.path.read_text(encoding="utf-8"))
    _apply(lockfile, document, set_name, moving)
    try:
        before = load_graph(lockfile, set_name)
        after = load_graph(lockfile, set_name, lock_text=tomlkit.dumps(document))
    except SisyphusError as exc:
        print(f"Blast radius: not computed ({exc})")
        return None
    if refuse_drift:
        _refuse_drift(lockfile, before)
    renewed = [job for job in before.jobs if job not in after.jobs]
    would_run = [job for job in after.jobs if job not in before.jobs and not after.jobs[job]]
    unused = [job for job in renewed if before.jobs[job]]
    print(
        f"Blast radius: {len(renewed)} of {len(before.jobs)} jobs of set {set_name!r} get new ids; "
        f"{len(would_run)} would run (not finished in work/), {len(unused)} finished jobs would no longer be used."
    )
    outputs = sorted(set(before.outputs) | set(after.outputs))
    changed = [name for name in outputs if before.outputs.get(name) != after.outputs.get(name)]
    print(f"Outputs that change: {', '.join(changed) or 'none'}")
    for name in changed:
        print(f"  {name}: {_advice(name, before, after)}")
    return after


def _advice(name: str, before: SetGraph, after: SetGraph) -> str:
    """Whether an output changes only because a pinned commit moved, or because content built from it changed."""
    old, new = before.outputs.get(name), after.outputs.get(name)
    if old is None or new is None:
        return "new output" if old is None else "no longer registered"
    causes = explain_output(name, old.job, new.job, before.records, after.records).causes
    content = [cause for cause in causes if not is_commit_only(cause)]
    if not content:
        return "only the pinned commit changes"
    paths = [f"{d.path}: {shown(d.old)} -> {shown(d.new)}" for cause in content for d in cause.differences]
    listed = "; ".join(paths[:5]) + (f" (+{len(paths) - 5} more)" if len(paths) > 5 else "")
    return f"content changes too: {listed or content[0].reason}"


def _refuse_drift(lockfile: Lockfile, current: SetGraph) -> None:
    """Refuse to move a set whose graph at its current pins already differs from its snapshot."""
    target = snapshot_path(lockfile.path)
    recorded = read_snapshot(target).get(current.set_name)
    if recorded is None:
        return  # nothing recorded yet: nothing to drift from
    records = read_records(target).get(current.set_name, {})
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
        print(f"drift: output/{name}: {old or '(none)'} -> {new or '(none)'}" + (f" ({reason})" if reason else ""))
    raise RefusedMoveError(
        f"set {current.set_name!r} already differs from {display_path(target)} before the move "
        f"({len(drifted)} output{'s' if len(drifted) != 1 else ''}, listed above): review it with `pin explain`, "
        "record it with `pin snapshot`, or pass --accept-drift (nothing written)"
    )


def _plan(lockfile: Lockfile, set_name: str, name: str, to: Optional[str], store: Store) -> Move:
    pin = lockfile.get_set(set_name).pin(name)
    repo = lockfile.get_repo(name)
    mirror = store.fetch(repo.url)
    try:
        target = git.resolve_revision(mirror, to) if to is not None else git.branch_commit(mirror, repo.branch)
    except RevisionError as exc:
        raise RevisionError(f"repos.{name} ({repo.url}): {exc}") from None
    return plan_move(mirror, name, pin.commit, target)


def _kind_name(move: Move) -> str:
    return "downgrade" if move.kind == "downgrade" else "move to unrelated history"


def _apply(current: Lockfile, document: tomlkit.TOMLDocument, set_name: str, moves: List[Move]) -> None:
    for move in moves:
        # another process may have changed the lock since we planned: never overwrite its decision silently
        now = current.get_set(set_name).pin(move.repo).commit
        if now != move.old:
            raise LockfileError(
                f"{display_path(current.path)}: sets.{set_name}.{move.repo} changed to {now[:7]} while upgrading; "
                f"rerun the upgrade"
            )
        table = document["sets"][set_name]
        if isinstance(table[move.repo], str):
            table[move.repo] = move.new
        else:
            table[move.repo]["commit"] = move.new
