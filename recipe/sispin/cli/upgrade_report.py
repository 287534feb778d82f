"""
What ``pin upgrade`` says about a set's moves, and the moves it refuses on what it sees: the commits that change what
the set uses, the blast radius (jobs that get new ids, outputs whose content changes and why), hash_overwrites a
move drops, drift from the snapshot, and jobs that would keep their ids over other content.
"""

from __future__ import annotations

__all__ = [
    "radius",
    "show_blast_radius",
    "say_dropped_aliases",
    "refuse_code_that_sets_a_dropped_alias",
    "refuse_kept_ids_with_other_content",
    "refuse_drift",
    "show_moves",
]

from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple

from sispin.cli.output import Output
from sispin.errors import HashOverwriteError, RefusedMoveError
from sispin.git.history import changes_to
from sispin.git.moves import LOG_LIMIT, Move, PlannedMove, format_log, format_move
from sispin.graph.explain import explain_output, is_commit_only, shown, summary
from sispin.graph.guard import capped, listed, state_problems
from sispin.graph.probe.schema import SetGraph
from sispin.graph.recordcache import read_records
from sispin.graph.snapshot import read_snapshot
from sispin.graph.used_code import UsedCode
from sispin.lock.files import snapshot_path
from sispin.lock.lockfile import Lockfile, SetSpec
from sispin.text import count, display_path

#: files named per listed commit before the rest are counted
_FILES_SHOWN = 3


def show_moves(
    out: Output,
    lockfile: Lockfile,
    set_name: str,
    planned: List[PlannedMove],
    used: Optional[Mapping[str, UsedCode]],
    mirrors: Mapping[str, Path],
) -> Dict[str, int]:
    """
    Each move's headline; under it the commits in between that change what the set uses (with date, subject and the
    used files they change) and how many there are, or, where that was not measured, the move's whole log.

    :param used: what the set uses of each moved repository (None: its graph was not built)
    :param mirrors: each moved repository's mirror
    :return: per moved repository, how many of its commits change what the set uses (where measured)
    """
    if not planned:
        out.result(f"experiment set {set_name!r} pins no repositories: nothing to upgrade")
        return {}
    width = max(len(p.move.repo) for p in planned)
    touching = {}
    for p in planned:
        move = p.move
        out.result(format_move(move, width))
        commits = move.dropped if move.kind == "downgrade" else move.added
        if move.kind != "none" and used is not None and move.repo in used and commits is not None:
            touching[move.repo] = _show_changes(out, set_name, move, commits, used[move.repo], mirrors[move.repo])
        elif move.kind != "none":
            out.result("\n".join(format_log(move)))
        if not p.on_remote:
            out.result(f"    ! {move.new[:7]} is on no branch or tag of {lockfile.get_repo(move.repo).url}")
    return touching


def _show_changes(out: Output, set_name: str, move: Move, commits: int, code: UsedCode, mirror: Path) -> int:
    """:return: how many of the move's commits change what the set uses"""
    # a downgrade's commits are the dropped ones
    ends = (move.new, move.old) if move.kind == "downgrade" else (move.old, move.new)
    number, changes = changes_to(mirror, *ends, code.paths, LOG_LIMIT)
    noun = "dropped commit" if move.kind == "downgrade" else "new commit"
    out.result(
        f"    {number} of the {count(commits, noun)} change what set {set_name!r} uses of {move.repo} "
        f"({code.described})" + (":" if changes else "")
    )
    for path in code.paths:
        out.detail(f"    uses {path}")
    sign = "-" if move.kind == "downgrade" else "+"
    for change in changes:
        files = ", ".join(change.files[:_FILES_SHOWN])
        files += f" +{len(change.files) - _FILES_SHOWN}" if len(change.files) > _FILES_SHOWN else ""
        out.result(capped(f"    {sign} {change.date} {change.commit} {change.subject}  ({files})"))
    if number > len(changes):
        out.result(f"    ... and {number - len(changes)} more that change it")
    return number


def radius(before: SetGraph, after: SetGraph) -> str:
    renewed = [job for job in before.jobs if job not in after.jobs]
    return f"Blast radius: {len(renewed)} of {len(before.jobs)} jobs"


def show_blast_radius(out: Output, set_name: str, before: SetGraph, after: SetGraph) -> None:
    """
    How much of the set's job graph the move renews, what would run, what finished work it leaves unused, and per
    output whether only the pinned commit changes or content built from the pinned code too.
    """
    would_run = [job for job in after.jobs if job not in before.jobs and not after.jobs[job]]
    unused = [job for job in before.jobs if job not in after.jobs and before.jobs[job]]
    out.result(
        f"{radius(before, after)} of set {set_name!r} get new ids; "
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


def say_dropped_aliases(out: Output, spec: SetSpec, moving: List[Move]) -> None:
    """Name each hash_overwrite that a move drops from its pin (the ids made with it move)."""
    for move in moving:
        alias = spec.pins[move.repo].hash_overwrite
        if alias is not None:
            out.result(
                f"{move.repo}: drops hash_overwrite {alias!r}: it stands for {move.old[:7]} only, so the jobs that "
                "hashed it get new ids"
            )


def refuse_code_that_sets_a_dropped_alias(out: Output, spec: SetSpec, moving: List[Move], before: SetGraph) -> None:
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


def refuse_kept_ids_with_other_content(out: Output, before: SetGraph, after: SetGraph) -> None:
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


def refuse_drift(lockfile: Lockfile, current: SetGraph, out: Output) -> None:
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
