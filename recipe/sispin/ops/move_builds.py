"""
A set's graph at its pins and with moves made, built side by side for what judges the moves (``pin upgrade``, ``pin
status --changes``). The graph at the pins is kept for the next judge that writes nothing, which then builds only the
moved side.
"""

from __future__ import annotations

__all__ = ["Built", "pins_and_moved"]

from dataclasses import replace
from typing import Any, Mapping, Optional, Sequence, Tuple, Union

from sispin.errors import SisyphusError
from sispin.graph.build import GraphBuild, load_graphs, recording_inputs
from sispin.graph.incremental import keep_build, kept_build
from sispin.graph.probe.schema import RecordedOutput, SetGraph, records_below
from sispin.lock.lockfile import Lockfile

# the graph at the pins, the graph after the moves (or why it does not build), what the first build read
Built = Tuple[SetGraph, Union[SetGraph, SisyphusError], Optional[Mapping[str, Any]]]


def pins_and_moved(
    lockfile: Lockfile,
    set_name: str,
    texts: Tuple[str, str],
    reuse: bool,
    snapshot: Tuple[Mapping[str, RecordedOutput], Mapping[str, Sequence[str]]],
) -> Union[SisyphusError, Built]:
    """
    The set's graph at its pins and after the moves, built side by side, every job's state and record in each (what
    the blast radius and the refusals compare); the graph at the pins is kept for the next call. With ``reuse``, the
    kept one is taken while nothing it read changed (:func:`~sispin.graph.incremental.kept_build`), and only the
    moved side is built, asking its Sisyphus which of the kept graph's jobs finished since. A command that writes
    builds both: its refusals (a drift above all) judge a build of now, never a kept one that a read the recorder
    cannot see (docs/hashes.md) left behind.

    :param lockfile: the lockfile the moves were planned on
    :param set_name: the set
    :param texts: the lockfile's text, and that text with the moves made
    :param reuse: take a kept graph at the pins (a dry run, ``pin status``: nothing is written after it)
    :param snapshot: the set's outputs in the snapshot, and the snapshot's alias history
        (:func:`~sispin.graph.snapshot.read_recorded`)
    :return: the graph at the pins, the graph after the moves (or why it does not build), what the first build read;
        or why the set does not build
    """
    recorded, bound = snapshot
    kept = kept_build(lockfile, set_name, recorded, bound) if reuse else None
    before = GraphBuild(set_name, texts[0], states=True, records="all", contents=True, blind=False)
    # what the move checks out goes with its build (judging a move leaves the store as it was)
    moved = GraphBuild(
        set_name, texts[1], states=True, records="all", scratch_checkouts=True, requests=True, blind=False
    )
    try:
        if kept:
            (after,) = load_graphs(lockfile, [_compared_with(moved, kept[0])])
            if isinstance(after, SisyphusError):
                return kept[0], after, kept[1]
            if None not in after.finished_of.values():
                return replace(kept[0], jobs=after.finished_of), after, kept[1]
        # no kept graph, or Sisyphus puts a job's tags in its directory, which the id does not hold (the kept graph
        # cannot be asked which of its jobs finished): both are built
        with recording_inputs() as read:
            graphs = load_graphs(lockfile, [before, moved])  # side by side
    except SisyphusError as exc:
        return exc
    if isinstance(graphs[0], SisyphusError):
        return graphs[0]
    keep_build(lockfile, set_name, recorded, bound, (graphs[0], read.ledgers[0]))
    return graphs[0], graphs[1], read.ledgers[0]


def _compared_with(moved: GraphBuild, kept: SetGraph) -> GraphBuild:
    """
    :return: the moved build, taking only what comparing it with the kept graph needs: the state of each job the kept
        graph holds too (an id of one graph only is compared with none), the records below each output whose job
        differs (what explains it; a job whose content a kept job has sends its content key instead, and its record
        is made from the kept one's), and which of the kept graph's jobs finished since; no search for the places a
        hash_overwrite hides a commit (the graph at the pins is the one a check judges so)
    """
    jobs, keys = tuple(kept.jobs), tuple(sorted({content.digest for content in kept.contents.values()}))
    records = records_below(kept.outputs)
    return replace(moved, states=jobs, records=records, contents=keys, finished_of=jobs, overwrites=False)
