"""
Three-way merge of pin.toml, for git's merge driver (``pin merge-driver``).

The merge is decided on the values, key by key: a key only one branch changed takes that branch's value; a key
both changed differently is a conflict, named with both values. The text is written by the first of these that
holds exactly the merged values and validates: git's own line merge, or this branch's file with the other branch's
changes applied to it (tomlkit: comments, quotes and layout of both stay). A text is taken only when
:func:`line_conflicts` finds every branch's line changes in it at their place (blank lines aside).
"""

from __future__ import annotations

__all__ = ["LockMerge", "merge_values", "apply_changes", "holds", "line_conflicts"]

import difflib
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Set, Tuple

import tomlkit
from tomlkit.items import Table

from sispin.errors import LockfileError
from sispin.lock.editing import add_value, append_table, pop_ending_trivia, rendered, toml_pin
from sispin.lock.loading import parse_toml
from sispin.lock.lockfile import is_full_sha
from sispin.lock.validate import SET_KEYS
from sispin.text import shown_key, shown_value

#: a key one side does not have
_ABSENT = object()
#: the top-level tables whose entries are tables of their own (a set, a repository, a setup checkout)
_SECTIONS = ("repos", "sets", "setup")

Leaves = Dict[Tuple[str, ...], Any]
#: comment lines above a table's header, by its key path
Comments = Dict[Tuple[str, ...], List[str]]


class LockMerge(NamedTuple):
    """What a three-way merge of pin.toml's values gives."""

    #: the merged values (meaningful when there are no conflicts)
    values: Dict[str, Any]
    #: one line per key both branches changed differently
    conflicts: List[str]


def merge_values(base: Dict[str, Any], ours: Dict[str, Any], theirs: Dict[str, Any], where: str) -> LockMerge:
    """
    Merge key by key: what one branch changed is taken, what both changed the same way is kept, what both changed
    differently is a conflict.

    :param base: the common ancestor's values
    :param ours: this branch's values
    :param theirs: the other branch's values
    :param where: how messages name the file
    """
    spelled = ours, theirs
    # a pin is its value in any spelling: a commit string is the table of that commit alone
    base, ours, theirs = (_pins_as_tables(values) for values in (base, ours, theirs))
    base_leaves, our_leaves, their_leaves = _leaves(base), _leaves(ours), _leaves(theirs)
    merged: Leaves = {}
    conflicts: Dict[Tuple[str, ...], str] = {}
    for path in dict.fromkeys([*our_leaves, *their_leaves, *base_leaves]):
        old, mine, other = (leaves.get(path, _ABSENT) for leaves in (base_leaves, our_leaves, their_leaves))
        if _same(mine, other) or _same(other, old):
            value = mine
        elif _same(mine, old):
            value = other
        else:
            conflicts[path] = _conflict(where, path, old, mine, other)
            continue
        if value is not _ABSENT:
            merged[path] = value
    values, clashes = _tree(merged)
    conflicts.update(
        (path, f"{where}: {_dotted(path)}: a value on one branch, a table on the other") for path in clashes
    )
    # a set removed on one branch and changed on the other is one conflict, not one per key
    removed = _removed_and_changed(base, ours, theirs, where)
    kept = [line for path, line in conflicts.items() if path[:2] not in removed]
    problems = list(removed.values()) + kept + _frozen_and_moved(values, ours, theirs, where)
    return LockMerge(_spelled_as(values, *spelled), problems)


def _pins_as_tables(values: Dict[str, Any]) -> Dict[str, Any]:
    """:return: the values with every pin of a set that is a commit string written as ``{commit = ...}``"""
    sets = values.get("sets")
    if not isinstance(sets, dict):
        return values
    return {**values, "sets": {name: _set_as_tables(spec) for name, spec in sets.items()}}


def _set_as_tables(spec: Any) -> Any:
    return {key: _as_table(key, value) for key, value in spec.items()} if isinstance(spec, dict) else spec


def _as_table(key: str, value: Any) -> Any:
    """:return: a set's entry, a pin that is a commit string as the table of that commit alone"""
    return {"commit": value} if key not in SET_KEYS and isinstance(value, str) else value


def _spelled_as(merged: Dict[str, Any], ours: Dict[str, Any], theirs: Dict[str, Any]) -> Dict[str, Any]:
    """
    :return: the merged values with each pin spelled as this branch spells it where it holds that pin's value, else
        as the other branch does where it holds it (a pin changed on both sides stays a table)
    """
    for name, spec in (merged.get("sets") or {}).items():
        for repo, pin in spec.items() if isinstance(spec, dict) else ():
            sides = [side.get("sets", {}).get(name, {}) for side in (ours, theirs)]
            written = [side[repo] for side in sides if isinstance(side, dict) and repo in side]
            spec[repo] = next((value for value in written if _same_types(_as_table(repo, value), pin)), pin)
    return merged


def _removed_and_changed(
    base: Dict[str, Any], ours: Dict[str, Any], theirs: Dict[str, Any], where: str
) -> Dict[Tuple[str, ...], str]:
    """:return: the sets, repositories and setup checkouts one branch removed and the other changed, with lines"""
    conflicts = {}
    for section in _SECTIONS:
        old, mine, other = (side.get(section, {}) for side in (base, ours, theirs))
        for name in old if isinstance(old, dict) else ():
            if (name not in mine) == (name not in other):
                continue  # kept on both, or removed on both
            gone, changed, kept = ("this", "the other", other) if name not in mine else ("the other", "this", mine)
            if kept.get(name) != old[name]:
                line = f"{where}: {section}.{shown_key(name)}: removed on {gone} branch, changed on {changed}"
                conflicts[(section, name)] = line
    return conflicts


def _frozen_and_moved(values: Dict[str, Any], ours: Dict[str, Any], theirs: Dict[str, Any], where: str) -> List[str]:
    """A set frozen on one branch whose pins or configs the other changed: a frozen set does not move."""
    conflicts = []
    for name, merged in values.get("sets", {}).items():
        for side, label in ((ours, "this branch"), (theirs, "the other")):
            spec = side.get("sets", {}).get(name)
            if isinstance(spec, dict) and spec.get("freeze") is True and _unfrozen(merged) != _unfrozen(spec):
                conflicts.append(
                    f"{where}: sets.{shown_key(name)} is frozen on {label}, and the other branch changed it: a frozen "
                    "set does not move (keep the frozen side's set, or thaw it first)"
                )
    return conflicts


def _unfrozen(spec: Any) -> Any:
    return {key: value for key, value in spec.items() if key != "freeze"} if isinstance(spec, dict) else spec


def _same(a: Any, b: Any) -> bool:
    # 1 == True and 1 == 1.0 in Python, not in TOML
    return type(a) is type(b) and a == b


def _leaves(values: Dict[str, Any], prefix: Tuple[str, ...] = ()) -> Leaves:
    """Every value that is not a non-empty table, by its key path (an array or an inline table's values too)."""
    leaves: Leaves = {}
    for key, value in values.items():
        if isinstance(value, dict) and value:
            leaves.update(_leaves(value, prefix + (key,)))
        else:
            leaves[prefix + (key,)] = value
    return leaves


def _tree(leaves: Leaves) -> Tuple[Dict[str, Any], List[Tuple[str, ...]]]:
    """The tables the leaves make up, and the paths where one side's value meets the other side's table."""
    tree: Dict[str, Any] = {}
    clashes = []
    for path, value in leaves.items():
        node = tree
        for depth, key in enumerate(path[:-1]):
            node = node.setdefault(key, {})
            if not isinstance(node, dict):
                clashes.append(path[: depth + 1])
                break
        else:
            if path[-1] in node:
                clashes.append(path)
            node[path[-1]] = value
    return tree, clashes


def _conflict(where: str, path: Tuple[str, ...], old: Any, mine: Any, other: Any) -> str:
    if len(path) in (3, 4) and path[0] == "sets" and path[3:] in ((), ("commit",)):
        pin = f"sets.{shown_key(path[1])}.{shown_key(path[2])}"
        return (
            f"{where}: {pin} moved to {_shown(mine)} on this branch and to {_shown(other)} on the other (from "
            f"{_shown(old)}): keep one, then `pin check`"
        )
    return f"{where}: {_dotted(path)}: {_shown(mine)} on this branch, {_shown(other)} on the other (was {_shown(old)})"


def _dotted(path: Sequence[str]) -> str:
    return ".".join(shown_key(key) for key in path)


def _shown(value: Any) -> str:
    if value is _ABSENT:
        return "nothing"
    if is_full_sha(value):
        return value[:12]
    return shown_value(value)


class _Added(NamedTuple):
    """A line a text has that the common ancestor has not there."""

    line: str
    #: the base lines around it: it stands after base line ``after`` and before base line ``before`` (-1 and the
    #: base's length at the ends)
    after: int
    before: int
    #: the change it is part of (the lines one change added, in order, share it)
    change: int


def line_conflicts(base: str, ours: str, theirs: str, merged: str) -> List[str]:
    """
    Judge a merged text line by line against the common ancestor, by place, as git's line merge does (a text
    written from the values can miss a comment it cannot place, or keep a line the other branch deleted): a line
    either branch added stands where it was added (after and before the same base lines), a base line one branch
    deleted stays deleted, a base line both kept stays, and the merged text has no other line. A table both
    branches added alike stands once, where either put it (TOML cannot hold it twice).

    :param base: the common ancestor's text
    :param ours: this branch's text
    :param theirs: the other branch's text
    :param merged: a merge of the values, written out
    :return: what the merged text does not keep, one phrase per line (empty when it keeps every branch's change)
    """
    old = _content(base)
    (our_kept, our_added), (their_kept, their_added), (kept, added) = (
        _placed(old, _content(text)) for text in (ours, theirs, merged)
    )
    sides = ((our_added, "this branch's"), (their_added, "the other branch's"))
    taken = [_taken(lines, added) for lines, _ in sides]
    problems = []
    for side, (lines, label) in enumerate(sides):
        alike = _alike_tables(lines, sides[1 - side][0], taken[1 - side])
        problems += [
            f"cannot keep {label} line {entry.line.strip()!r}"
            for index, entry in enumerate(lines)
            if index not in taken[side] and entry.change not in alike
        ]
    for index, line in enumerate(old):
        deleted = [
            label
            for side_kept, label in ((our_kept, "this branch's"), (their_kept, "the other branch's"))
            if index not in side_kept
        ]
        if index in kept and deleted:
            whose = deleted[0] if len(deleted) == 1 else "both branches'"
            problems.append(f"cannot keep {whose} deletion of the line {line.strip()!r}")
        elif index not in kept and not deleted:
            problems.append(f"cannot keep the line {line.strip()!r} both branches have")
    placed = {index for side in taken for index in side.values()}
    problems += [
        f"writes the line {entry.line.strip()!r}, which neither branch has there"
        for index, entry in enumerate(added)
        if index not in placed
    ]
    return problems


def _content(text: str) -> List[str]:
    # blank lines say nothing, and tomlkit puts them its own way around the tables it adds
    return [line.rstrip() for line in text.splitlines() if line.strip()]


def _placed(base: List[str], lines: List[str]) -> Tuple[Set[int], List[_Added]]:
    """:return: the base lines a text keeps (by index), and the lines it adds with the base lines around them"""
    kept: Set[int] = set()
    added: List[_Added] = []
    matcher = difflib.SequenceMatcher(None, base, lines, autojunk=False)
    for change, (tag, first, last, start, end) in enumerate(matcher.get_opcodes()):
        if tag == "equal":
            kept.update(range(first, last))
        else:
            # between two runs of kept lines: the one that ends before first and the one that starts at last
            added += [_Added(line, first - 1, last, change) for line in lines[start:end]]
    return kept, added


def _taken(side: List[_Added], merged: List[_Added]) -> Dict[int, int]:
    """
    :param side: the lines a branch added
    :param merged: the lines the merged text added
    :return: for each of the branch's lines the merged text keeps, the index of the merged line that keeps it: the
        same line between the same base lines (or fewer of them: the other branch may have deleted some), in the
        branch's order, one merged line for one line of the branch (an equal line elsewhere keeps nothing)
    """
    taken: Dict[int, int] = {}
    start = 0
    for index, entry in enumerate(side):
        for candidate in range(start, len(merged)):
            line = merged[candidate]
            if line.line == entry.line and max(line.after, entry.after) < min(line.before, entry.before):
                taken[index] = start = candidate
                start += 1
                break
    return taken


def _alike_tables(side: List[_Added], other: List[_Added], other_taken: Dict[int, int]) -> Set[int]:
    """
    :param side: the lines a branch added
    :param other: the lines the other branch added
    :param other_taken: which of those the merged text keeps (:func:`_taken`)
    :return: the branch's changes that add a table the other branch added alike, in a change the merged text keeps
        whole
    """
    whole = {
        tuple(other[index].line for index in indices)
        for indices in _by_change(other).values()
        if all(index in other_taken for index in indices)
    }
    return {
        change
        for change, indices in _by_change(side).items()
        if any(side[index].line.lstrip().startswith("[") for index in indices)
        and tuple(side[index].line for index in indices) in whole
    }


def _by_change(lines: List[_Added]) -> Dict[int, List[int]]:
    """:return: the indices of the added lines, by the change they are part of"""
    changes: Dict[int, List[int]] = {}
    for index, entry in enumerate(lines):
        changes.setdefault(entry.change, []).append(index)
    return changes


def holds(text: str, values: Dict[str, Any]) -> bool:
    """
    :param text: a candidate merged file
    :param values: the merged values
    :return: whether the text is TOML with exactly these values (no duplicated key, nothing stale left)
    """
    try:
        return _same_types(parse_toml(text, "the merge"), values)
    except LockfileError:
        return False


def _same_types(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_types(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_types(x, y) for x, y in zip(a, b))
    return _same(a, b)


def apply_changes(ours: str, theirs: str, values: Dict[str, Any]) -> str:
    """
    This branch's file with the other branch's changes made to it: keys set, added and removed where this file has
    them, new tables added after the last of their section (their comments and quoting as the other branch wrote
    them).

    :param ours: this branch's file
    :param theirs: the other branch's file
    :param values: the merged values
    :return: the merged text (the caller checks it with :func:`holds`)
    """
    document = tomlkit.parse(ours)
    other = tomlkit.parse(theirs)
    _apply(document, other, document.unwrap(), values, (), _leading_comments(theirs))
    return rendered(ours, document)


def _apply(
    document: Any, other: Any, mine: Dict[str, Any], merged: Dict[str, Any], path: Tuple[str, ...], comments: Comments
) -> None:
    container = _item(document, path) if path else document
    for key in [key for key in mine if key not in merged]:
        del container[key]
    for key, value in merged.items():
        if key not in mine:
            _add(document, container, path + (key,), _item(other, path + (key,)), comments)
        elif isinstance(value, dict) and isinstance(mine[key], dict) and value and mine[key]:
            _apply(document, other, mine[key], value, path + (key,), comments)
        elif not _same_types(value, mine[key]):
            item = _item(other, path + (key,))
            # tomlkit keeps the replaced item's comment: the line reads as the other branch wrote it (a "# tag v1"
            # there stands for the value it came with)
            comment = (item.trivia.comment_ws, item.trivia.comment) if hasattr(item, "trivia") else None
            container[key] = item
            if comment is not None:
                container[key].trivia.comment_ws, container[key].trivia.comment = comment


def _add(document: Any, container: Any, path: Tuple[str, ...], item: Any, comments: Comments) -> None:
    if len(path) == 2 and path[0] in _SECTIONS and isinstance(item, Table):
        # the comment lines in front of its header come with it (tomlkit counts them to the table before), those
        # at its end belong to what follows it in the other file
        pop_ending_trivia(item)
        item.trivia.indent = "".join(["\n", *comments[path]]) if path in comments else ""
        append_table(document, path[0], path[1], item)
    elif container is document:
        document.add(path[-1], item)
    else:
        add_value(container, path[-1], item if not isinstance(item, Table) else toml_pin(item.unwrap()))


def _leading_comments(text: str) -> Comments:
    """The comment lines right above each table header of a file, by the table's key path."""
    comments: Comments = {}
    above: List[str] = []
    for line in text.splitlines(keepends=True):
        stripped = line.strip()
        if stripped.startswith("#"):
            above.append(line)
            continue
        if stripped.startswith("[") and not stripped.startswith("[["):
            path = _header_path(stripped)
            if path is not None and above:
                comments[path] = above
        above = []
    return comments


def _header_path(header: str) -> Optional[Tuple[str, ...]]:
    try:
        values = parse_toml(header + "\n", "a header")
    except LockfileError:
        return None  # a bracket inside a multi-line string
    path: Tuple[str, ...] = ()
    while isinstance(values, dict) and len(values) == 1:
        key, values = next(iter(values.items()))
        path += (key,)
    return path


def _item(document: Any, path: Tuple[str, ...]) -> Any:
    # tomlkit resolves dotted keys and tables split across the file (its proxies) when walked key by key
    item = document
    for key in path:
        item = item[key]
    return item
