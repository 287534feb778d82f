"""
Three-way merge of pin.snapshot.toml, for git's merge driver (``pin merge-driver``).

A set's entry is one build's result, so it is merged whole: the entry of the branch that changed it. A set both
branches changed differently has no entry that fits it (its pins or configs come from both): it is stale, and
``pin snapshot SET`` writes it after the merge. The ``bound`` history of hash_overwrite values only grows: the
merge keeps every clone either branch bound a value to.
"""

from __future__ import annotations

__all__ = ["SnapshotMerge", "merge_snapshots"]

from typing import Dict, List, NamedTuple

from sispin.graph.snapshot import Entry, parse_snapshot, render_snapshot


class SnapshotMerge(NamedTuple):
    """What a three-way merge of pin.snapshot.toml gives."""

    #: the merged file (a stale set keeps this branch's entry until ``pin snapshot`` writes it)
    text: str
    #: the sets both branches changed differently
    stale: List[str]


def merge_snapshots(base: str, ours: str, theirs: str, where: str) -> SnapshotMerge:
    """
    :param base: the common ancestor's text ("" when it had none)
    :param ours: this branch's text
    :param theirs: the other branch's text
    :param where: how messages name the file
    :raises LockfileError: when a side is not a valid snapshot
    """
    (old_sets, old_bound), (my_sets, my_bound), (other_sets, other_bound) = (
        parse_snapshot(text, where) if text else ({}, {}) for text in (base, ours, theirs)
    )
    sets: Dict[str, Entry] = {}
    stale = []
    for name in dict.fromkeys([*my_sets, *other_sets, *old_sets]):
        old, mine, other = (side.get(name) for side in (old_sets, my_sets, other_sets))
        if mine == other or other == old:
            entry = mine
        elif mine == old:
            entry = other
        else:
            stale.append(name)
            entry = mine
        if entry is not None:
            sets[name] = entry
    # each side's history holds its sets' aliases already (parse_snapshot adds them): the union holds the merge's
    bound: Dict[str, List[str]] = {}
    for history in (old_bound, my_bound, other_bound):
        for value, commits in history.items():
            known = bound.setdefault(value, [])
            known += [commit for commit in commits if commit not in known]
    return SnapshotMerge(render_snapshot(sets, bound), stale)
