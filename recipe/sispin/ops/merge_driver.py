"""
``pin merge-driver``: pin.toml and pin.snapshot.toml merged by value for git (``merge=pin`` in .gitattributes), and
the driver's set-up. Branches that moved different sets or repositories merge without a conflict; a pin both moved
is a conflict naming both commits, left with git's usual conflict markers.
"""

from __future__ import annotations

__all__ = ["Merge", "Installed", "merge_files", "install"]

from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Tuple

from sispin.errors import LockfileError, PinError
from sispin.git.merge import install_driver, merge_lines
from sispin.graph.snapshot_merge import merge_snapshots
from sispin.lock.files import SNAPSHOT_NAME, snapshot_path
from sispin.lock.loading import find_lockfile, parse_lockfile, parse_toml, read_lockfile_text
from sispin.lock.merging import apply_changes, holds, line_conflicts, merge_values


@dataclass(frozen=True)
class Merge:
    """
    :param text: what OURS holds now: the merge, or git's line merge with its conflict markers
    :param conflicts: one line per conflict (a stale snapshot set: ``pin snapshot SET`` after the merge); empty when
        merged
    """

    text: str
    conflicts: List[str]


@dataclass(frozen=True)
class Installed:
    """
    :param attributes: the .gitattributes beside pin.toml
    :param added: the lines added to it (none when it had them)
    """

    attributes: Path
    added: List[str]


def merge_files(base: Path, ours: Path, theirs: Path, name: Optional[str]) -> Merge:
    """
    Merge as git's merge driver does: the result is written into OURS.

    :param base: the common ancestor's file (git's %O)
    :param ours: this branch's file, which gets the merge (%A)
    :param theirs: the other branch's file (%B)
    :param name: the file's path in the repository (%P), if git gave it
    :raises PinError: when a side cannot be read as its file (OURS gets git's line merge then)
    """
    texts = tuple(read_lockfile_text(path) for path in (base, ours, theirs))
    try:
        if _is_snapshot(name, texts):
            text, conflicts = _merge_snapshot(*texts, name or SNAPSHOT_NAME)
        else:
            text, conflicts = _merge_lockfile(*texts, name or "pin.toml")
    except PinError:
        ours.write_bytes(merge_lines(*texts)[0].encode("utf-8"))
        raise
    ours.write_bytes(text.encode("utf-8"))
    return Merge(text, conflicts)


def install() -> Installed:
    """
    Set the driver up in this setup's repository: its git configuration and .gitattributes beside pin.toml.

    :raises GitError: when the setup is in no git repository
    """
    lockfile = find_lockfile()
    attributes, added = install_driver(lockfile.parent, [lockfile, snapshot_path(lockfile)])
    return Installed(attributes, added)


def _is_snapshot(name: Optional[str], texts: Tuple[str, ...]) -> bool:
    if name is not None:
        return Path(name).name == SNAPSHOT_NAME
    # without a name: a snapshot has sets of outputs and nothing of a lockfile's
    return any(text.lstrip().startswith("# Written by `pin snapshot`") for text in texts)


def _merge_lockfile(base: str, ours: str, theirs: str, where: str) -> Tuple[str, List[str]]:
    """:return: the merged text (with conflict markers when there are conflicts) and the conflicts"""
    merge = merge_values(*(parse_toml(text, where) for text in (base, ours, theirs)), where)
    # git's line merge, run once: the text left for a conflict (with its markers), and the first candidate when clean
    lines, no_conflicts = merge_lines(base, ours, theirs)
    if merge.conflicts:
        return lines, merge.conflicts
    # git's line merge when it is clean and holds the merged values (say, no set appended on both branches), else
    # the other branch's changes made to this branch's file
    candidates = [lines] if no_conflicts else []
    candidates.append(apply_changes(ours, theirs, merge.values))
    text = next((candidate for candidate in candidates if holds(candidate, merge.values)), None)
    if text is None:
        return lines, [f"{where}: the merged values cannot be written keeping the layout"]
    problems = line_conflicts(base, ours, theirs, text)
    if problems:
        # a comment edit beside a change of values: never dropped or brought back silently (one line: the first)
        return lines, [f"{where}: a merge by value {problems[0]}: resolve by hand"]
    try:
        parse_lockfile(text, Path(where))
    except LockfileError as exc:
        # both branches' changes are fine alone but not together (say, the same config added to two sets)
        return lines, [f"merged {exc}"]
    return text, []


def _merge_snapshot(base: str, ours: str, theirs: str, where: str) -> Tuple[str, List[str]]:
    """:return: the merged text and one line per stale set"""
    merge = merge_snapshots(base, ours, theirs, where)
    stale = [
        f"{where}: set {name} changed on both branches: run `pin snapshot {name}` after the merge, then `git add`"
        for name in merge.stale
    ]
    return merge.text, stale
