"""
``pin explain``: why each registered output's job id differs from the snapshot (or from a revision's build).

For every output whose id moved, the chain from the output's job down to the root causes, the deepest jobs whose
own hashed arguments changed, and for each the argument paths with old -> new values; computed from the live graph
and pin.snapshot.toml alone, so it works where the old configs are gone (CI).
"""

from __future__ import annotations

__all__ = ["ExplainedOutput", "ExplainResult", "explain"]

import contextvars
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from sispin.errors import UnknownNameError
from sispin.graph.against import check_revision, graph_at_revision
from sispin.graph.build import load_graph, processors
from sispin.graph.explain import Explanation, RecordsCompared, cause_key, pin_moved
from sispin.graph.incremental import kept_pass
from sispin.graph.probe.schema import JobRecord, RecordedOutput, SetGraph, differing_outputs, records_below
from sispin.graph.recordcache import read_records
from sispin.graph.snapshot import read_recorded
from sispin.lock.files import snapshot_path
from sispin.lock.loading import load_lockfile
from sispin.lock.lockfile import Lockfile
from sispin.text import display_path, listed


@dataclass(frozen=True)
class ExplainedOutput:
    """
    :param set_name: the set that registers the output
    :param explanation: why its job id moved
    :param pins_moved: per root cause, the pin whose move it is (``sets.SET.REPO``), or None
    :param shape: what outputs changed for the same reasons share: their sets and root causes (each job's class and
        every argument that differs, old -> new), whatever chain of jobs leads an output to them
    """

    set_name: str
    explanation: Explanation
    pins_moved: Tuple[Optional[str], ...]
    shape: Tuple[Any, ...]

    def to_json(self) -> Dict[str, Any]:
        """:return: the explanation as plain data, each cause with the pin it moved"""
        data = {"set": self.set_name, **asdict(self.explanation)}
        for cause, moved in zip(data["causes"], self.pins_moved):
            cause["pin_moved"] = moved
            for difference in cause["differences"]:  # a leaf is a row (a named tuple): an object of its fields here
                difference.update(
                    {side: leaf and leaf._asdict() for side, leaf in difference.items() if side != "path"}
                )
        return data


@dataclass(frozen=True)
class ExplainResult:
    """
    :param outputs: every output whose id differs, set by set, in name order
    :param baseline: what the ids are compared with (``recorded in pin.snapshot.toml``, ``it had at HEAD``)
    """

    outputs: List[ExplainedOutput]
    baseline: str


def explain(
    path: Path, set_names: Sequence[str], *, output: Optional[str] = None, against: Optional[str] = None
) -> ExplainResult:
    """
    :param path: the pin.toml
    :param set_names: sets to explain; empty for all
    :param output: only this output (as registered, or as explain and check print it: ``output/NAME``)
    :param against: a revision of the setup's git repository to compare with, instead of the snapshot
    :raises UnknownNameError: when no set named registers the output
    """
    lockfile = load_lockfile(path)
    names = [spec.name for spec in lockfile.select_sets(set_names)]
    recorded, bound = read_recorded(snapshot_path(lockfile.path))
    found = output is None
    explained: List[ExplainedOutput] = []
    known: Set[str] = set()
    if against is not None:
        check_revision(lockfile, against)  # what needs no build is said before one waits
    for name in names:
        snapshot_outputs = recorded.get(name, {})
        # a set whose pass stands (nothing it read changed since its last check or snapshot) is not built: a pass is
        # kept only for a check that found no problem, and each changed, new, gone or moved output is one, so its ids
        # are the snapshot's. Against a revision every set is built on both sides: telling from git (git diff REV)
        # that a set's files are as they were missed what a build read through a tracked symlink, a file whose line
        # endings git normalizes and an entry the index marks skip-worktree (a hostile review got a wrong "no id
        # differs" from each)
        if against is None and kept_pass(lockfile, name, snapshot_outputs, bound)[0] is not None:
            known.update(snapshot_outputs)
            found = found or any(_names(output, output_name) for output_name in snapshot_outputs)
            continue
        old_outputs, records, graph = _builds(lockfile, name, recorded.get(name, {}), against)
        known.update(old_outputs, graph.outputs)
        compared = RecordsCompared(records, graph.records)
        for output_name in sorted(set(old_outputs) | set(graph.outputs)):
            if output is not None and not _names(output, output_name):
                continue
            found = True
            old = old_outputs[output_name].job if output_name in old_outputs else None
            new = graph.outputs[output_name].job if output_name in graph.outputs else None
            if old != new:
                explanation = compared.explain(output_name, old, new)
                moved = tuple(pin_moved(cause, lockfile, name, graph.records) for cause in explanation.causes)
                explained.append(ExplainedOutput(name, explanation, moved, (name, *_shape(explanation))))
    if not found:
        raise UnknownNameError(
            f"no registered output {output!r} in set(s) {', '.join(names)} (they register: {listed(sorted(known))})"
        )
    snapshot = display_path(snapshot_path(lockfile.path))
    return ExplainResult(explained, f"it had at {against}" if against else f"recorded in {snapshot}")


def _names(output: Optional[str], output_name: str) -> bool:
    """:return: whether ``--output`` names the output (as registered, or as explain and check print it)"""
    return output in (output_name, f"output/{output_name}")


def _builds(
    lockfile: Lockfile, set_name: str, recorded: Mapping[str, RecordedOutput], against: Optional[str]
) -> Tuple[Mapping[str, RecordedOutput], Mapping[str, JobRecord], SetGraph]:
    """
    :param recorded: the set's outputs in pin.snapshot.toml
    :return: the set's outputs and job records to compare with (the snapshot's, or the revision's build), and the
        set's graph now with (at least) the records of the jobs below each output whose id differs from them
    """
    if against is None:
        records = read_records(lockfile.path, set_name, recorded) or {}
        return recorded, records, load_graph(lockfile, set_name, records=records_below(recorded))
    if not recorded or len(processors()) < 2:
        # no guess at the revision's ids (or no second processor): today's build follows the revision's, asking for
        # the records below each output whose id differs from the revision's
        old, now = graph_at_revision(lockfile, set_name, against), None
    else:
        # side by side, one a processor: today's build takes the records below each output whose id differs from the
        # snapshot; where that misses one whose id differs from the revision's, it is built again below
        with ThreadPoolExecutor(max_workers=1) as pool:
            today = pool.submit(
                contextvars.copy_context().run, load_graph, lockfile, set_name, records=records_below(recorded)
            )
            old = graph_at_revision(lockfile, set_name, against)  # its failure first, as a build one after the other
            now = today.result()
    old_outputs, records = ({}, {}) if old is None else (old.outputs, old.records)
    if now is None or not _differing(now, old_outputs) <= _differing(now, recorded):
        now = load_graph(lockfile, set_name, records=records_below(old_outputs))
    return old_outputs, records, now


def _differing(graph: SetGraph, outputs: Mapping[str, RecordedOutput]) -> Set[str]:
    """:return: the outputs of the graph below which a build asked to be compared with outputs records every job"""
    return set(differing_outputs(graph.outputs, records_below(outputs)))


def _shape(explanation: Explanation) -> Tuple[Any, ...]:
    """:return: the root causes of an explanation, as outputs changed for the same reasons share them"""
    if explanation.old is None or explanation.new is None:
        return (explanation.output,)  # new or gone: each is its own
    return tuple(sorted({cause_key(cause) for cause in explanation.causes}))
