"""
What one set's moves change, judged before anything is written: the commits in between that change what the set
uses, the blast radius (jobs that get new ids, outputs whose content changes and why), the hash_overwrites a move
drops; and the moves refused on what the builds show: drift from the snapshot, config code that sets a dropped alias,
jobs that would keep their ids over other content.
"""

from __future__ import annotations

__all__ = ["UsedChanges", "MoveReport", "Cause", "BlastRadius", "Drift", "SetUpgrade", "judge_set", "move_reports"]

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple

from sispin.errors import HashOverwriteError, PinError, RefusedMoveError, SisyphusError
from sispin.git.history import Change, changes_to
from sispin.git.moves import LOG_LIMIT, Move, PlannedMove
from sispin.git.store import Store
from sispin.graph.explain import RecordsCompared, is_commit_only, shown, summary
from sispin.graph.guard import state_problems
from sispin.graph.price import Price, price_of, requested_price
from sispin.graph.probe.schema import RecordedOutput, SetGraph
from sispin.graph.recordcache import read_records
from sispin.graph.snapshot import read_recorded
from sispin.graph.used_code import UsedCode, used_code
from sispin.lock.files import snapshot_path
from sispin.lock.lockfile import Lockfile, SetSpec
from sispin.ops.move_builds import pins_and_moved
from sispin.text import count, display_path


@dataclass(frozen=True)
class UsedChanges:
    """
    :param number: how many of the move's commits change what the set uses
    :param commits: how many commits the move adds (drops, for a downgrade)
    :param code: what the set uses of the repository
    :param listed: the newest of those commits, at most LOG_LIMIT
    :param dropped: of a move to unrelated history, the same of the commits it drops (what the set loses)
    """

    number: int
    commits: int
    code: UsedCode
    listed: Tuple[Change, ...]
    dropped: Optional[UsedChanges] = None


@dataclass(frozen=True)
class MoveReport:
    """
    :param planned: the move, and whether the remote has its target
    :param url: the repository's URL
    :param used: the move's commits that change what the set uses; None where that was not measured
    """

    planned: PlannedMove
    url: str
    used: Optional[UsedChanges]

    @property
    def move(self) -> Move:
        """The move."""
        return self.planned.move


@dataclass(frozen=True)
class Cause:
    """
    One reason why outputs change (one line, not one per output: a move renews hundreds of outputs for one reason).

    :param cause: ``only the pinned commit changes``, ``content changes too``, ``new output``, ...
    :param first: the first differences the outputs share (each argument path, old -> new)
    :param outputs: each output it changes, with all of its differences
    """

    cause: str
    first: Tuple[str, ...]
    outputs: Tuple[Tuple[str, Tuple[str, ...]], ...]


@dataclass(frozen=True)
class BlastRadius:
    """
    :param renewed: jobs of the set that get new ids
    :param jobs: jobs of the set before the move
    :param would_run: jobs after the move not finished in work/
    :param unused: finished jobs the move leaves unused
    :param changed: the outputs whose jobs change
    :param causes: why they change
    :param price: what the unused finished jobs cost to make, as their usage in work/ says
    :param requested: what the jobs that would run ask for, as their tasks are first submitted (time limits times
        processors; a task may end sooner, or run out of time and be submitted again with more)
    """

    renewed: int
    jobs: int
    would_run: int
    unused: int
    changed: Tuple[str, ...]
    causes: Tuple[Cause, ...]
    price: Price = Price()
    requested: Price = Price()

    @property
    def headline(self) -> str:
        """``Blast radius: 3 of 5 jobs``."""
        return f"Blast radius: {self.renewed} of {self.jobs} jobs"


@dataclass(frozen=True)
class Drift:
    """
    :param output: an output whose job differs from the snapshot before the move
    :param old: the job the snapshot records (None: not recorded)
    :param new: the job the set has now (None: no longer registered)
    :param reason: why, in a few words ("" when unknown)
    """

    output: str
    old: Optional[str]
    new: Optional[str]
    reason: str


@dataclass(frozen=True)
class SetUpgrade:
    """
    What ``pin upgrade`` found of one set, as far as it got: judging stops at the first refusal.

    :param name: the set
    :param moves: each pinned repository's planned move (empty: the set pins none)
    :param dropped_aliases: per move that drops a pin's hash_overwrite: the repository, the alias, the commit it
        stood for
    :param unbuilt: why the set's graph could not be built (the blast radius is not computed); None otherwise
    :param before: the set's graph at its pins; None when not built
    :param after: its graph after the moves; None when not built
    :param drift: outputs that already differ from the snapshot (the move is refused)
    :param alias_setters: config code that sets a hash_overwrite the move drops: the value and where (refused)
    :param radius: the blast radius; None when not computed
    :param kept_ids: jobs that would keep their ids over other content (the move is refused)
    :param refusal: why the moves must not be made (nothing may be written); None when they may
    """

    name: str
    moves: Tuple[MoveReport, ...]
    dropped_aliases: Tuple[Tuple[str, str, str], ...] = ()
    unbuilt: Optional[str] = None
    before: Optional[SetGraph] = None
    after: Optional[SetGraph] = None
    drift: Tuple[Drift, ...] = ()
    alias_setters: Tuple[Tuple[str, str], ...] = ()
    radius: Optional[BlastRadius] = None
    kept_ids: Tuple[str, ...] = ()
    refusal: Optional[PinError] = None

    @property
    def touching(self) -> Dict[str, int]:
        """Per moved repository, how many of its commits change what the set uses (where measured)."""
        return {report.move.repo: report.used.number for report in self.moves if report.used is not None}


def move_reports(
    lockfile: Lockfile,
    planned: List[PlannedMove],
    used: Optional[Mapping[str, UsedCode]] = None,
    mirrors: Optional[Mapping[str, Path]] = None,
) -> Tuple[MoveReport, ...]:
    """
    :param lockfile: the lockfile the moves were planned on
    :param planned: a set's planned moves
    :param used: what the set uses of each moved repository (None: its graph was not built)
    :param mirrors: each moved repository's mirror (where ``used`` is given)
    :return: each move, with the commits in between that change what the set uses where measured
    """
    reports = []
    for p in planned:
        move = p.move
        commits = move.dropped if move.kind == "downgrade" else move.added
        changes = None
        if (
            move.kind != "none"
            and used is not None
            and mirrors is not None
            and move.repo in used
            and commits is not None
        ):
            changes = _used_changes(move, commits, used[move.repo], mirrors[move.repo])
        reports.append(MoveReport(p, lockfile.get_repo(move.repo).url, changes))
    return tuple(reports)


def _used_changes(move: Move, commits: int, code: UsedCode, mirror: Path) -> UsedChanges:
    # a downgrade's commits are the dropped ones
    ends = (move.new, move.old) if move.kind == "downgrade" else (move.old, move.new)
    number, changes = changes_to(mirror, *ends, code.paths, LOG_LIMIT)
    dropped = None
    if move.kind == "unrelated" and move.dropped is not None:
        lost, lost_changes = changes_to(mirror, move.new, move.old, code.paths, LOG_LIMIT)
        dropped = UsedChanges(lost, move.dropped, code, tuple(lost_changes))
    return UsedChanges(number, commits, code, tuple(changes), dropped)


def judge_set(
    lockfile: Lockfile,
    texts: Tuple[str, str],
    set_name: str,
    planned: List[PlannedMove],
    flags: Tuple[bool, bool],
    mirrors: Tuple[Store, Dict[str, Path]],
) -> SetUpgrade:
    """
    Build the set's graph before and after its moves, and judge what they change.

    :param lockfile: the lockfile the moves were planned on
    :param texts: its text, and that text with every set's moves made
    :param set_name: the set
    :param planned: its planned moves, some moving
    :param flags: ``--accept-drift`` (move even when the graph already differs from the snapshot), and whether this is
        a dry run (which may take the graph before the moves from the last build of both: see
        :func:`~sispin.ops.move_builds.pins_and_moved`)
    :param mirrors: the store, and the mirror of each repository
    """
    (text, moved_text), (store, mirror_of), (drift_allowed, dry_run) = texts, mirrors, flags
    spec = lockfile.get_set(set_name)
    moving = [p.move for p in planned if p.move.kind != "none"]
    dropped = tuple(
        (m.repo, alias, m.old) for m in moving for alias in [spec.pins[m.repo].hash_overwrite] if alias is not None
    )
    # the set's snapshot entry, read once: the kept build's key, and what the graph must not already differ from
    snapshot, bound = read_recorded(snapshot_path(lockfile.path))
    recorded = snapshot.get(set_name)
    built = pins_and_moved(lockfile, set_name, (text, moved_text), dry_run, (recorded or {}, bound))
    if isinstance(built, SisyphusError):
        return SetUpgrade(set_name, move_reports(lockfile, planned), dropped, unbuilt=str(built))
    before, after, ledger = built
    # what the set uses is read at the pinned commit in the mirror: not there (gone from the remote before the store
    # saw it), the move's commits in between are not known either
    measured = {move.repo: mirror_of[move.repo] for move in moving if move.added is not None}
    used = used_code(lockfile, before, ledger, store, measured) if ledger else None
    report = SetUpgrade(set_name, move_reports(lockfile, planned, used, mirror_of), dropped)
    if isinstance(after, SisyphusError):
        # the set builds now: a move after which it does not would leave it unbuildable, and its snapshot behind
        targets = ", ".join(f"{move.repo} {move.new[:7]}" for move in moving)
        refusal = SisyphusError(f"set {set_name!r} does not build at {targets}: {after}; nothing written")
        return replace(report, refusal=refusal)
    graphs = (before, after)
    drift_from = None if drift_allowed else recorded
    return _judged(lockfile, spec, moving, graphs, replace(report, before=before, after=after), drift_from)


def _judged(
    lockfile: Lockfile,
    spec: SetSpec,
    moving: List[Move],
    graphs: Tuple[SetGraph, SetGraph],
    report: SetUpgrade,
    drift_from: Optional[Mapping[str, RecordedOutput]],
) -> SetUpgrade:
    """
    :param drift_from: the snapshot entry the graph at the pins must not already differ from (None: nothing to check,
        for ``--accept-drift`` or a set not recorded yet)
    :return: the report of a set whose graphs before and after its moves were built, judged on them
    """
    before, after = graphs
    drift = () if drift_from is None else _drift(lockfile, before, drift_from)
    if drift:
        return replace(report, drift=drift, refusal=_drift_refusal(lockfile, spec.name, len(drift)))
    setters = _alias_setters(spec, moving, before)
    if setters:
        values = ", ".join(sorted({repr(value) for value, _ in setters}))
        refusal = HashOverwriteError(
            f"remove the code that sets {values} (listed above; exp.repo() applies a pin's hash_overwrite itself and "
            "drops it with the move), then upgrade; nothing written"
        )
        return replace(report, alias_setters=setters, refusal=refusal)
    kept = tuple(state_problems(before, after))
    report = replace(report, radius=blast_radius(before, after, lockfile.root / "work"), kept_ids=kept)
    if kept:
        ids = "1 job would keep its id" if len(kept) == 1 else f"{len(kept)} jobs would keep their ids"
        refusal = HashOverwriteError(
            f"{ids} with other content after this move (listed above): make that content part of the hash; nothing "
            "written"
        )
        return replace(report, refusal=refusal)
    return report


def _alias_setters(spec: SetSpec, moving: List[Move], before: SetGraph) -> Tuple[Tuple[str, str], ...]:
    """
    :return: config code (not sispin's exp.repo(), which applies a pin's alias itself) that sets a hash_overwrite the
        move drops: after the move, the same value would hide the new commit
    """
    dropped = {spec.pins[move.repo].hash_overwrite for move in moving} - {None}
    return tuple(
        sorted({(a.value, a.where) for a in before.assignments if a.where != "pin.toml" and a.value in dropped})
    )


def blast_radius(before: SetGraph, after: SetGraph, work: Path) -> BlastRadius:
    """
    :param before: the set's graph at its pins
    :param after: its graph after the moves
    :param work: the setup's work/, whose usage files price the finished jobs the move leaves unused
    :return: how much of the graph the move renews, what would run and what it asks for, what finished work it
        leaves unused, and per output whether only the pinned commit changes or content built from the pinned code too
    """
    renewed = [job for job in before.jobs if job not in after.jobs]
    would_run = [job for job in after.jobs if job not in before.jobs and not after.jobs[job]]
    unused = [job for job in renewed if before.jobs[job]]
    outputs = sorted(set(before.outputs) | set(after.outputs))
    changed = [name for name in outputs if before.outputs.get(name) != after.outputs.get(name)]
    causes: Dict[Tuple[str, Tuple[str, ...]], List[Tuple[str, Tuple[str, ...]]]] = {}
    compared = RecordsCompared(before.records, after.records, (before.contents, after.contents))
    for name in changed:
        cause, differences = _advice(name, before, after, compared)
        # one argument path reached through many jobs of the output is one difference, said once
        distinct = tuple(dict.fromkeys(differences))
        causes.setdefault((cause, distinct[:5]), []).append((name, distinct))
    return BlastRadius(
        len(renewed),
        len(before.jobs),
        len(would_run),
        len(unused),
        tuple(changed),
        tuple(Cause(cause, first, tuple(names)) for (cause, first), names in causes.items()),
        price_of(work, unused),
        requested_price(after.requests or {}, would_run),
    )


def _advice(name: str, before: SetGraph, after: SetGraph, compared: RecordsCompared) -> Tuple[str, List[str]]:
    """
    :return: whether an output changes only because a pinned commit moved, or because content built from it changed
        too, and what differs (each difference's path, old -> new)
    """
    old, new = before.outputs.get(name), after.outputs.get(name)
    if old is None or new is None:
        return ("new output" if old is None else "no longer registered"), []
    causes = compared.explain(name, old.job, new.job).causes
    content = [cause for cause in causes if not is_commit_only(cause)]
    if not content:
        return "only the pinned commit changes", []
    paths = [f"{d.path}: {shown(d.old)} -> {shown(d.new)}" for cause in content for d in cause.differences]
    return "content changes too" + ("" if paths else f": {content[0].reason}"), paths


def _drift(lockfile: Lockfile, current: SetGraph, recorded: Mapping[str, RecordedOutput]) -> Tuple[Drift, ...]:
    """:return: the outputs of a set whose graph at its current pins already differs from its snapshot entry"""
    differing = []
    for name in sorted(set(recorded) | set(current.outputs)):
        old = recorded[name].job if name in recorded else None
        new = current.outputs[name].job if name in current.outputs else None
        if old != new:
            differing.append((name, old, new))
    # the recorded arguments only where something drifted: the whole set's records are megabytes to read
    records = (read_records(lockfile.path, current.set_name, recorded) or {}) if differing else {}
    compared = RecordsCompared(records, current.records)
    return tuple(Drift(name, old, new, summary(compared.explain(name, old, new))) for name, old, new in differing)


def _drift_refusal(lockfile: Lockfile, set_name: str, drifted: int) -> RefusedMoveError:
    return RefusedMoveError(
        f"set {set_name!r} already differs from {display_path(snapshot_path(lockfile.path))} before the move "
        f"({count(drifted, 'output')}, listed above): review it with `pin explain`, record it with `pin snapshot`, "
        "or pass --accept-drift (nothing written)"
    )
