"""
``pin snapshot``: record, per set, the id of the job behind every registered output (pin.snapshot.toml).

Each set's configs are loaded by real Sisyphus in a subprocess; no job runs and nothing is written to work/. Nothing
is recorded when a place in a graph hides a pinned commit from a job's hash. A set recorded is also checked: its pass
is kept for the next ``pin check`` (see :func:`sispin.ops.check.keep_recorded_pass`).
"""

from __future__ import annotations

__all__ = ["SnapshotResult", "snapshot"]

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List, Mapping, Optional, Sequence, Tuple

from sispin.errors import ConcurrentChangeError, HashOverwriteError, PinError
from sispin.graph.build import load_graph, recording_inputs
from sispin.graph.guard import Problem, recording_problems
from sispin.graph.probe.schema import SetGraph
from sispin.graph.snapshot import Snapshot, compare_outputs, read_recorded, read_snapshot, record_graphs
from sispin.lock.files import snapshot_path
from sispin.lock.loading import load_lockfile
from sispin.lock.lockfile import Lockfile
from sispin.ops.check import keep_recorded_pass
from sispin.text import count, shown_key


@dataclass
class SnapshotResult:
    """
    What ``pin snapshot`` did.

    :param target: the pin.snapshot.toml
    :param frozen: each frozen set named, and whether it has recorded ids (they stay)
    :param skipped: the sets without configs (no graph to record)
    :param hidden: the places that hide a pinned commit from a job's hash: when there is one, nothing is recorded
    :param graphs: the sets' graphs, built
    :param before: the snapshot as it was
    :param changed: sets another process changed while the graphs were built: not recorded
    :param written: whether the snapshot file was written
    :param refusal: why nothing (or not every set) was recorded: raised by the CLI after it showed the sets; None when
        every set named was recorded
    """

    target: Path
    frozen: List[Tuple[str, bool]] = field(default_factory=list)
    skipped: List[str] = field(default_factory=list)
    hidden: List[Problem] = field(default_factory=list)
    graphs: List[SetGraph] = field(default_factory=list)
    before: Snapshot = field(default_factory=dict)
    changed: List[str] = field(default_factory=list)
    written: bool = False
    refusal: Optional[PinError] = None

    def outputs_changed(self, graph: SetGraph) -> int:
        """:return: how many of the graph's outputs have other jobs than recorded before (the set was recorded)"""
        return len(compare_outputs(self.before[graph.set_name], graph.outputs))


def snapshot(path: Path, names: Sequence[str]) -> SnapshotResult:
    """
    :param path: the pin.toml
    :param names: sets to record; empty for all
    :raises FrozenSetError: when a set named is frozen
    """
    lockfile = load_lockfile(path)
    specs = lockfile.select_sets(names)
    for spec in specs if names else ():
        spec.check_not_frozen("pin snapshot")
    target = snapshot_path(lockfile.path)
    result = SnapshotResult(target, before=read_snapshot(target))
    # a set without configs has no graph yet (just created), a frozen one keeps its ids: no failure of the sets
    # that are recorded
    result.frozen = [(spec.name, spec.name in result.before) for spec in specs if spec.freeze]
    result.skipped = [spec.name for spec in specs if not spec.freeze and not spec.configs]
    # every job's record walked anew: one whose id stays can hold other unhashed state (its own hash(), a
    # ReturnnConfig's post_config), and a record kept from before would explain that as a change later
    bound = read_recorded(target)[1]
    built = [_build(lockfile, spec.name, bound) for spec in specs if spec.configs and not spec.freeze]
    result.graphs = [graph for graph, _, _ in built]
    result.hidden = [problem for _, problems, _ in built for problem in problems]
    if not result.hidden:
        # another command may have changed the lock (and the snapshot) while the graphs were built: decided when
        # written
        result.written, changed = record_graphs(lockfile.path, result.graphs, lockfile)
        result.changed = list(changed)
        recorded, bound = read_recorded(target)
        for graph, _, ledgers in built:
            if graph.set_name not in result.changed:
                keep_recorded_pass(lockfile, graph, ledgers, recorded, bound)
    result.refusal = _refusal(result)
    return result


def _build(
    lockfile: Lockfile, name: str, bound: Mapping[str, Sequence[str]]
) -> Tuple[SetGraph, List[Problem], List[Optional[Mapping[str, Any]]]]:
    """
    :param bound: the snapshot's alias history
    :return: the set's graph, what keeps it from being recorded, and what its builds read (for the check's pass)
    """
    with recording_inputs() as inputs:
        graph = load_graph(lockfile, name, records="all")
        # a snapshot of ids that do not depend on the commits would make `pin check` pass on exactly what it must
        # catch
        problems = recording_problems(lockfile, graph, bound)
    return graph, problems, list(inputs.ledgers)


def _refusal(result: SnapshotResult) -> Optional[PinError]:
    """:return: why what was asked for was not recorded, if so"""
    if result.hidden:
        hide = "hides" if len(result.hidden) == 1 else "hide"
        return HashOverwriteError(
            f"{count(len(result.hidden), 'place')} in the job graph {hide} a pinned commit from a job's hash (listed "
            "above): remove what hides it; nothing recorded"
        )
    if result.changed:
        return ConcurrentChangeError(
            f"{', '.join(f'sets.{shown_key(name)}' for name in result.changed)} changed while this snapshot ran: not "
            f"recorded (the other sets are); run `pin snapshot {' '.join(result.changed)}` again"
        )
    return None
