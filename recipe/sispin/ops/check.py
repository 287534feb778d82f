"""
``pin check``: everything that must hold for a set's hashes to be trustworthy (for CI).

Every problem is found, none printed: an invalid snapshot, a pinned commit that no longer exists (unless offline), a
CloneGitRepositoryJob of a locked repository at another commit (or following a branch), a clone output (or a copy
of it that a job hashes) with hash_overwrite set, and each output whose job id differs from pin.snapshot.toml, one
problem per root cause. A set whose earlier pass still stands (nothing its build read changed) is not built.
"""

from __future__ import annotations

__all__ = ["CheckResult", "check", "check_lock_only", "keep_recorded_pass"]

from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from sispin.errors import PinError, SisyphusError, UnsupportedVersionError
from sispin.git.history import on_a_ref
from sispin.git.presence import missing_commits
from sispin.git.store import Store
from sispin.graph.build import (
    check_configs,
    check_setup_commits,
    find_sisyphus,
    load_graph,
    processors,
    recording_inputs,
)
from sispin.graph.explain import SetChanges, compare_set
from sispin.graph.guard import Problem, recording_problems
from sispin.graph.incremental import KeptPass, forget_pass, keep_pass, kept_pass
from sispin.graph.probe.schema import RecordedOutput, SetGraph, records_below
from sispin.graph.recordcache import read_records
from sispin.graph.snapshot import read_recorded, read_snapshot
from sispin.lock.files import snapshot_path
from sispin.lock.lockfile import Lockfile, SetSpec
from sispin.text import count, display_path, shown_key


def check_lock_only(lockfile: Lockfile, set_names: Sequence[str]) -> int:
    """
    Validate pin.snapshot.toml too (pin.toml is valid): no git, no Sisyphus.

    :param lockfile: the validated pin.toml
    :param set_names: the sets named; empty for all
    :return: how many sets that is
    :raises LockfileError: when the snapshot is invalid
    """
    names = lockfile.select_sets(set_names)
    read_snapshot(snapshot_path(lockfile.path))
    return len(names)


@dataclass
class CheckResult:
    """
    What ``pin check`` found.

    :param problems: one line each, in the order they are printed
    :param summaries: one line per set whose outputs changed
    :param skipped: the sets without configs (nothing builds a graph to check)
    :param changes: set name -> how its graph differs from the snapshot (see :class:`SetChanges`), as plain data
    :param checked: how many sets were checked (built, or their earlier pass still standing)
    :param outputs: how many outputs their graphs register
    :param kept: the sets whose earlier pass still stands (not built: nothing they read changed)
    :param built: set name -> why it was built (no earlier pass, or the first input that changed)
    :param waiting: set name -> its async configs whose ``py()`` waits for unfinished jobs: what they build after the
        wait was not seen, so the check of that set is not whole
    :param unkept: set name -> why its pass was not kept for the next check (what its build read that no record can
        vouch for: the clock, a file that changed while it was read)
    :param unchecked: the sets not built because a config of some set is missing (said before any build waits)
    """

    problems: List[Problem] = field(default_factory=list)
    summaries: List[str] = field(default_factory=list)
    skipped: List[str] = field(default_factory=list)
    changes: Dict[str, Any] = field(default_factory=dict)
    checked: int = 0
    outputs: int = 0
    kept: List[str] = field(default_factory=list)
    built: Dict[str, str] = field(default_factory=dict)
    unkept: Dict[str, str] = field(default_factory=dict)
    waiting: Dict[str, List[str]] = field(default_factory=dict)
    unchecked: List[str] = field(default_factory=list)

    def add(self, other: CheckResult) -> None:
        """:param other: what was found of another set, to follow what this holds"""
        self.problems += other.problems
        self.summaries += other.summaries
        self.changes.update(other.changes)
        self.checked, self.outputs = self.checked + other.checked, self.outputs + other.outputs
        self.kept += other.kept
        self.built.update(other.built)
        self.unkept.update(other.unkept)
        self.waiting.update(other.waiting)


#: sets built at once, at most: each build holds its graph in memory (a real one ~400 MB)
_PARALLEL_BUILDS = 8


def check(
    lockfile: Lockfile, set_names: Sequence[str], *, offline: bool, store: Store, full: bool = False
) -> CheckResult:
    """
    :param lockfile: the validated pin.toml
    :param set_names: sets to check; empty for all
    :param offline: skip verifying that pinned commits exist in their remotes
    :param store: where the mirrors are (fetched unless offline)
    :param full: build every set, also those whose earlier pass still stands (see :mod:`sispin.graph.incremental`)
    """
    specs = lockfile.select_sets(set_names)
    result = CheckResult(skipped=[spec.name for spec in specs if not spec.configs])
    if not offline:
        result.problems += _missing_commits(lockfile, specs, store)
    target = snapshot_path(lockfile.path)
    recorded, bound = read_recorded(target)
    result.problems += [
        Problem(
            f"{display_path(target)}: sets.{shown_key(name)}: no such set in {display_path(lockfile.path)} (stale: "
            "`pin snapshot` drops it)"
        )
        for name in sorted(recorded)
        if name not in lockfile.sets
    ]
    # a set without configs has no graph to check (its pins were verified above); the others are built side by side,
    # one per processor, and reported in pin.toml's order
    names = [spec.name for spec in specs if spec.configs]
    if names:
        # a pinned Sisyphus that is not checked out (exit 9), or a setup checkout at another commit (exit 6): no set
        # can be checked, which is no finding about a set
        find_sisyphus(lockfile)
        check_setup_commits(lockfile)
    # what needs no build is said at once, not after the other sets' builds
    unbuildable = []
    for name in names:
        try:
            check_configs(lockfile, name)
        except SisyphusError as exc:
            unbuildable.append(Problem(str(exc)))
    if unbuildable:
        result.problems += unbuildable
        result.unchecked = names
        return result
    workers = max(1, min(len(names), len(processors()), _PARALLEL_BUILDS))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for part in pool.map(lambda name: _check_set_unless_kept(lockfile, name, recorded, bound, full), names):
            result.add(part)
    return result


def _check_set_unless_kept(
    lockfile: Lockfile,
    name: str,
    recorded: Mapping[str, Mapping[str, RecordedOutput]],
    bound: Mapping[str, Sequence[str]],
    full: bool,
) -> CheckResult:
    """Take the set's earlier pass when nothing it read changed since; else build it, and keep a pass."""
    result = CheckResult()
    snapshot = recorded.get(name, {})
    if full:
        result.built[name] = "--full"
    else:
        kept, why = kept_pass(lockfile, name, snapshot, bound)
        if kept is not None:
            result.checked, result.outputs = result.checked + 1, result.outputs + kept.outputs
            result.changes[name] = kept.changes
            result.kept.append(name)
            return result
        result.built[name] = why
    problems_before, outputs_before = len(result.problems), result.outputs
    with recording_inputs() as inputs:
        _check_set(lockfile, name, recorded, bound, result)
    if len(result.problems) == problems_before and name in result.changes:
        passed = KeptPass(result.outputs - outputs_before, result.changes[name])
        unkept = keep_pass(lockfile, name, snapshot, bound, inputs.ledgers, passed)
        if unkept:
            result.unkept[name] = unkept
    else:
        forget_pass(lockfile, name)
    return result


def _check_set(
    lockfile: Lockfile,
    name: str,
    recorded: Mapping[str, Mapping[str, RecordedOutput]],
    bound: Mapping[str, Sequence[str]],
    result: CheckResult,
) -> None:
    """Build one set's graph and add what is wrong with it to result."""
    before = recorded.get(name)
    try:
        # what an id is made of only below the outputs whose id differs: a set that holds costs one build
        graph = load_graph(lockfile, name, records=records_below(before or {}))
    except UnsupportedVersionError:
        raise  # no problem of the set's: the check cannot run with this Sisyphus or i6_core
    except PinError as exc:
        result.problems.append(Problem(f"sets.{shown_key(name)}: {exc}"))
        return
    result.checked += 1
    result.outputs += len(graph.outputs)
    if graph.waiting:
        result.waiting[name] = [display_path(Path(config)) for config in graph.waiting]
    result.problems += recording_problems(lockfile, graph, bound)
    if name not in recorded:
        target = display_path(snapshot_path(lockfile.path))
        result.problems.append(Problem(f"sets.{shown_key(name)}: no snapshot in {target} (run `pin snapshot {name}`)"))
        return
    differs = any(graph.outputs.get(output) != job for output, job in recorded[name].items())
    # the records of the recorded jobs only to explain a difference: reading them costs as much as the snapshot
    records = read_records(lockfile.path, name, recorded[name]) if differs else {}
    changes = compare_set(recorded[name], records, graph, lockfile.root / "work")
    result.changes[name] = asdict(changes)
    if changes.changed:
        renewed = (
            "the recorded jobs are not known here"
            if changes.renewed is None
            else f"{count(changes.renewed, 'job')} renewed ({changes.finished} finished in work/{_costing(changes)})"
        )
        result.summaries.append(f"sets.{shown_key(name)}: {count(len(changes.changed), 'output')} changed, {renewed}")
    result.problems += [replace(line, text=f"sets.{shown_key(name)}: {line.text}") for line in _change_lines(changes)]


def keep_recorded_pass(
    lockfile: Lockfile,
    graph: SetGraph,
    ledgers: Sequence[Optional[Mapping[str, Any]]],
    recorded: Mapping[str, Mapping[str, RecordedOutput]],
    bound: Mapping[str, Sequence[str]],
) -> None:
    """
    Keep, for the next ``pin check``, the pass of a build ``pin snapshot`` just recorded with no problem: checked
    against the snapshot it wrote, that build passes (its ids are the snapshot's), so a check right after a snapshot
    builds nothing the snapshot built. The check's own pass, kept the check's way (see :func:`keep_pass`).

    :param lockfile: the lockfile the graph was built from
    :param graph: the set's graph, recorded with no recording problem (:func:`recording_problems`)
    :param ledgers: what its builds read (the set's own and its moved-commit builds)
    :param recorded: the snapshot as written (see :func:`read_recorded`)
    :param bound: its alias history
    """
    snapshot = recorded.get(graph.set_name)
    if snapshot is None:
        return
    changes = compare_set(snapshot, {}, graph, lockfile.root / "work")
    if _change_lines(changes):  # another process recorded other ids meanwhile: no pass to keep
        return
    keep_pass(lockfile, graph.set_name, snapshot, bound, ledgers, KeptPass(len(graph.outputs), asdict(changes)))


def _costing(changes: SetChanges) -> str:
    """:return: ``: 212.0 GPU-h, ...`` of what the renewed finished jobs cost to make; nothing when none finished"""
    return f": {changes.cost.as_used(jobs=False)}" if changes.finished and changes.cost is not None else ""


def _change_lines(changes: SetChanges) -> List[Problem]:
    """
    One problem per root cause naming the outputs it renews (each output's old and new id its detail); new, gone and
    moved outputs; sorted.
    """
    lines = []
    for group in changes.groups:
        names = tuple(name for name, _, _ in group.outputs)
        details = [f"output/{name}: {old} -> {new}" for name, old, new in group.outputs]
        lines.append(Problem(f"{count(len(names), 'output')} changed {group.cause}", details, names))
    if changes.new:
        new = ", ".join(changes.new)
        lines.append(Problem(f"new outputs not in the snapshot (run `pin snapshot` to record them): {new}"))
    if changes.gone:
        lines.append(Problem(f"outputs no longer registered: {', '.join(changes.gone)}"))
    lines += [Problem(f"output/{name}: same job, other file: {old} -> {new}") for name, old, new in changes.moved_paths]
    return lines


def _missing_commits(lockfile: Lockfile, specs: Sequence[SetSpec], store: Store) -> List[Problem]:
    """:return: a problem per pinned commit (of the sets and the setup) that its remote has not, or no ref reaches"""
    wanted: Dict[str, List[Tuple[str, str]]] = {}
    for spec in specs:
        for repo, pin in spec.pins.items():
            wanted.setdefault(lockfile.get_repo(repo).url, []).append(
                (f"sets.{shown_key(spec.name)}.{shown_key(repo)}", pin.commit)
            )
    for entry in lockfile.setup.values():
        wanted.setdefault(entry.url, []).append((f"setup.{entry.name}", entry.commit))
    problems: List[Problem] = []
    for url, pins in wanted.items():
        try:
            mirror = store.fetch(url)
        except PinError as exc:
            problems += [Problem(f"{key}: {exc}") for key, _ in pins]
            continue
        missing = set(missing_commits(mirror, sorted({commit for _, commit in pins})))
        for key, commit in pins:
            if commit in missing:
                problems.append(Problem(f"{key}: commit {commit} does not exist in {url}, nor in the store"))
            elif not on_a_ref(mirror, commit):
                problems.append(
                    Problem(
                        f"{key}: commit {commit} is on no branch or tag of {url} any more (force-pushed away?); "
                        f"the store still has it in {mirror}"
                    )
                )
    return problems
