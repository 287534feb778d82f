"""
``pin freeze`` and ``pin thaw``: mark sets whose results are published (``freeze = true`` in their tables), so that
nothing moves them by accident, and undo it.

A frozen set keeps its pins, configs and snapshot entry: ``pin upgrade``, ``pin configs --add/--remove``, ``pin
snapshot SET`` and ``pin import --set SET`` refuse, and ``pin snapshot`` of all sets leaves it as recorded; ``pin
check`` checks it as before. The edit changes nothing but the freeze flags.
"""

from __future__ import annotations

__all__ = ["Freezing", "freeze", "thaw", "set_frozen", "edit_freeze"]

from dataclasses import dataclass
from pathlib import Path
from typing import List, Sequence, Tuple

import tomlkit

from sispin.errors import LockfileError
from sispin.graph.snapshot import read_snapshot
from sispin.lock.editing import add_value, edit_lockfile, keyed_items
from sispin.lock.files import snapshot_path, write_atomically
from sispin.lock.loading import load_lockfile, parse_lockfile, read_lockfile_text
from sispin.lock.lockfile import Lockfile
from sispin.text import display_path, shown_key


@dataclass(frozen=True)
class Freezing:
    """
    :param lock: the pin.toml
    :param frozen: whether the sets were frozen (else thawed)
    :param names: the sets named, each once, in order
    :param changed: those that changed; the others were frozen (thawed) already
    """

    lock: Path
    frozen: bool
    names: Tuple[str, ...]
    changed: Tuple[str, ...]

    def commit_message(self) -> Tuple[str, List[str]]:
        """:return: the summary and body of ``--commit``'s commit"""
        return f"pin {'freeze' if self.frozen else 'thaw'} {' '.join(self.changed)}", []


def freeze(path: Path, names: Sequence[str]) -> Freezing:
    """
    :param path: the pin.toml
    :param names: the sets to freeze
    :raises LockfileError: for a set with configs whose job ids the snapshot does not hold (a frozen set keeps the ids
        it has)
    :raises UnknownNameError: for a set pin.toml does not have
    """
    lockfile = load_lockfile(path)
    recorded = read_snapshot(snapshot_path(lockfile.path))
    for spec in lockfile.select_sets(names):
        if spec.configs and spec.name not in recorded:
            raise LockfileError(
                f"{display_path(snapshot_path(lockfile.path))}: sets.{shown_key(spec.name)}: not recorded; a frozen "
                f"set keeps the ids it has: run `pin snapshot {spec.name}` first"
            )
    return Freezing(path, True, tuple(dict.fromkeys(names)), tuple(edit_freeze(path, names, True)))


def thaw(path: Path, names: Sequence[str]) -> Freezing:
    """
    :param path: the pin.toml
    :param names: the sets to thaw: their pins, configs and snapshot entries may change again
    :raises UnknownNameError: for a set pin.toml does not have
    """
    return Freezing(path, False, tuple(dict.fromkeys(names)), tuple(edit_freeze(path, names, False)))


def set_frozen(document: tomlkit.TOMLDocument, set_name: str, frozen: bool) -> None:
    """
    Freeze a set (``freeze = true``: a ``freeze = false`` already there turned, its comment kept; else added at the
    end of its values) or thaw it (its ``freeze`` key removed, whatever TOML spelling holds it).

    :param document: pin.toml as tomlkit reads it, with the set in it
    :param set_name: the set
    :param frozen: whether it is to be frozen
    """
    for path, parent, item in list(keyed_items(document, ())):
        if path == ("sets", set_name, "freeze"):
            if not frozen:
                del parent[path[-1]]
                return
            turned = tomlkit.item(True)
            turned.trivia.comment_ws, turned.trivia.comment = item.trivia.comment_ws, item.trivia.comment
            parent[path[-1]] = turned
            return
    if frozen:
        add_value(document["sets"][set_name], "freeze", True)  # type: ignore[index]


def edit_freeze(path: Path, names: Sequence[str], frozen: bool) -> List[str]:
    """
    Freeze or thaw sets in pin.toml (see :func:`set_frozen`), under its lock; nothing else may change.

    :param path: the pin.toml
    :param names: the sets
    :param frozen: freeze them, or thaw them
    :return: the sets that changed (the others were frozen, or thawed, already)
    :raises UnknownNameError: for a set pin.toml does not have
    """
    changed: List[str] = []

    def change(current: Lockfile, document: tomlkit.TOMLDocument) -> None:
        changed.clear()
        for name in dict.fromkeys(names):
            if current.get_set(name).freeze != frozen:
                set_frozen(document, name, frozen)
                changed.append(name)

    def write(target: Path, text: str, updated: Lockfile) -> None:
        before = parse_lockfile(read_lockfile_text(target), target)
        expected = {
            name: spec._replace(freeze=frozen) if name in changed else spec for name, spec in before.sets.items()
        }
        if updated._replace(sets=dict(updated.sets)) != before._replace(sets=expected):
            raise LockfileError(
                f"{display_path(target)}: freezing would change more than the freeze flags; nothing written"
            )
        write_atomically(target, text)

    edit_lockfile(path, change, rewritable_key="freeze", write=write)
    return changed
