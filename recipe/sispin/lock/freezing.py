"""Freezing and thawing sets in pin.toml (``freeze = true``): the edit, and the check that nothing else changed."""

from __future__ import annotations

__all__ = ["set_frozen", "edit_freeze"]

from pathlib import Path
from typing import List, Sequence

import tomlkit

from sispin.errors import LockfileError
from sispin.lock.editing import add_value, edit_lockfile, keyed_items
from sispin.lock.files import write_atomically
from sispin.lock.lockfile import Lockfile, parse_lockfile, read_lockfile_text
from sispin.text import display_path


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
