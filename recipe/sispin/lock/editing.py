"""
Rewriting pin.toml: comment-, order-, quote- and line-ending-preserving edits (tomlkit) under a file lock, validated
before they are written, checked to change nothing but what they mean to, and written atomically (temporary file in
the same directory, fsync, rename).

A symlinked pin.toml is written through: its target changes, in the target's directory, and the link stays. A
read-only pin.toml is refused, never replaced. Only the commands that change the lockfile import this module; the
config path never does.
"""

from __future__ import annotations

__all__ = [
    "edit_lockfile",
    "keyed_items",
    "append_table",
    "add_value",
    "set_pin_commit",
    "drop_pin_alias",
    "toml_pin",
    "multiline_string",
    "render_lockfile",
    "rendered",
    "pop_ending_trivia",
]

import os
import re
from pathlib import Path
from typing import Any, Callable, Iterator, List, Optional, Tuple

import tomlkit
from tomlkit.items import Comment, InlineTable, Null, String, StringType, Table, Trivia, Whitespace

from sispin.errors import LockfileError
from sispin.lock.files import check_writable, file_lock, write_atomically
from sispin.lock.kept_text import TAG_COMMENT, check_only_additions_and_shas
from sispin.lock.loading import parse_lockfile, read_lockfile_text
from sispin.lock.lockfile import Lockfile
from sispin.text import display_path, shown_key

#: what a lockfile starts as when a command creates it
EMPTY_LOCKFILE = "version = 1\n"


#: writes the new text of pin.toml (and whatever must change with it) while the lockfile's lock is held
Writer = Callable[[Path, str, Lockfile], None]


def edit_lockfile(
    path: Path,
    edit: Callable[[Lockfile, tomlkit.TOMLDocument], None],
    *,
    create: bool = False,
    write: Optional[Writer] = None,
    rewritable_key: Optional[str] = None,
) -> Lockfile:
    """
    Change pin.toml safely: read, edit and write under the lockfile's file lock (so concurrent commands never lose
    each other's changes), keep comments, quotes, line endings and formatting (tomlkit), refuse a result that would
    not validate or that would change more of the existing text than new lines and moved SHAs, and replace the
    file atomically (temp file in the same directory, fsync, rename).

    :param path: the pin.toml to change
    :param edit: changes the document in place; gets the validated current content to check preconditions
        against, and may raise a PinError to abort without writing
    :param create: start from an empty lockfile when there is none
    :param write: writes the result instead of a plain atomic write (to change other files with it), given the
        path, the new text and its validated content
    :return: the lockfile as written
    :raises FileSystemError: when pin.toml is read-only or cannot be written
    """
    path = Path(path).absolute()
    with file_lock(path):
        check_writable(path)
        text = EMPTY_LOCKFILE if create and not os.path.lexists(path) else read_lockfile_text(path)
        current = parse_lockfile(text, path)
        document = tomlkit.parse(text)
        edit(current, document)
        new_text = rendered(text, document)
        check_only_additions_and_shas(text, new_text, display_path(path), rewritable_key)
        updated = parse_lockfile(new_text, path)
        if new_text == text:
            return updated  # nothing to change: the file is not touched
        if write is None:
            write_atomically(path, new_text)
        else:
            write(path, new_text, updated)
    return updated


def rendered(old: str, document: tomlkit.TOMLDocument) -> str:
    """
    :param old: the file's text before the edit
    :param document: the edited document
    :return: its new text: the file's line endings, and no blank line at its end that it did not have (the one
        :func:`append_table` keeps after a table that ends the file)
    """
    new = tomlkit.dumps(document)
    if new.endswith("\n\n") and not old.endswith(("\n\n", "\r\n\r\n")):
        new = new.rstrip("\n") + "\n"
    return _keep_line_endings(old, new)


def _keep_line_endings(old: str, new: str) -> str:
    """A file written with CRLF line endings keeps them, also on the lines an edit adds."""
    if "\r\n" in old and not re.search(r"(?<!\r)\n", old):
        return re.sub(r"(?<!\r)\n", "\r\n", new)
    return new


def _sections(document: tomlkit.TOMLDocument, section: str) -> List[Any]:
    """Every top-level item that holds a part of section, in file order (tables may be split, or inline)."""
    return [item for key, item in document.body if key is not None and key.key == section]


def append_table(document: tomlkit.TOMLDocument, section: str, name: str, table: Table) -> None:
    """
    Add ``[section.name]`` after the last table of the section, where a reader expects it; into an inline
    ``section = {...}`` as an inline entry, the way that file writes it.

    Comments and blank lines that end the section's last table introduce, to a reader, whatever follows it; they
    are moved behind the new table so they stay in front of that.

    :param document: pin.toml as tomlkit reads it
    :param section: "repos", "sets" or "setup"
    :param name: the new table's name
    :param table: its content
    """
    parts = _sections(document, section)
    if not parts:
        document.add(section, tomlkit.table(is_super_table=True))
        parts = _sections(document, section)
    # [sets.a] ... [repos.x] ... [sets.b]: the new set goes after the last part of the section
    container = parts[-1]
    if isinstance(container, InlineTable):
        container[name] = toml_pin(dict(table))
        return
    last = _last_item(container)
    trailing = pop_ending_trivia(container)
    if _written_dotted(last):
        # sets written as dotted keys get the new one as dotted keys too: a header among them would capture the
        # dotted keys and values that follow it
        for key, value in table.value.body:
            if key is not None:
                container.append(tomlkit.key([name, key.key]), value)
        for item in trailing:
            container.add(item)
        return
    # without moved trivia, one blank line keeps the new table apart from what follows
    for item in trailing or [tomlkit.nl()]:
        table.add(item)
    container.append(name, table)


def _written_dotted(item: Any) -> bool:
    """Whether a table is written as dotted keys (``x.rc = "..."``): no ``[header]`` of its own, nor below it."""
    if not isinstance(item, Table) or not item.is_super_table() or item.display_name is not None:
        return False
    return all(_written_dotted(value) for _, value in item.value.body if isinstance(value, Table))


def add_value(table: Any, key: str, value: Any) -> None:
    """
    Add key = value at the end of table's values, before the comments and blank lines that end it.

    :param table: an existing table of pin.toml (or an inline one)
    :param key: the new key
    :param value: its value
    """
    trailing = _pop_trailing_trivia(table) if isinstance(table, Table) else []
    table[key] = value
    for item in trailing:
        table.add(item)


def set_pin_commit(
    document: tomlkit.TOMLDocument, set_name: str, repo: str, commit: str, tag: Optional[str] = None
) -> None:
    """
    Move a set's pin of a repository to another commit in the document, whatever TOML spelling holds it: ``repo =
    "<sha>"``, ``repo = { commit = "<sha>" }``, ``repo.commit = "<sha>"``, ``[sets]`` with ``set.repo = "<sha>"``,
    ``sets.set.repo`` at the top, inline ``sets = {...}``. Only the characters of the string that holds the SHA
    change: it is written the way the old one was (basic or literal, single- or multi-line), its comment stays. A
    move to a tag says so in a comment after the pin (``# tag v1.2``), where the line has no comment of the user's;
    a move elsewhere drops such a comment.

    :param document: pin.toml as tomlkit reads it
    :param set_name: the set
    :param repo: the repository the set pins
    :param commit: the new full SHA
    :param tag: the tag the commit was asked for by (None: none)
    :raises LockfileError: when the document holds no string for that pin (a bug of the caller: pins are validated)
    """
    containers = {}
    for path, parent, item in keyed_items(document, ()):
        containers[path] = parent
        if path in (("sets", set_name, repo), ("sets", set_name, repo, "commit")) and isinstance(item, String):
            kind = item.type
            parent[path[-1]] = tomlkit.string(commit, literal=kind.is_literal(), multiline=kind.is_multiline())
            # the comment of the line: the pin's inline table's, or the string's own; none inside another inline
            # table (``sets = { demo = { rc = "..." } }``), where no comment can stand
            line = parent if isinstance(parent, InlineTable) else parent[path[-1]]
            if not isinstance(containers[path[:-1]] if line is parent else parent, InlineTable):
                _set_tag_comment(line, tag)
            return
    raise LockfileError(f"sets.{shown_key(set_name)}.{shown_key(repo)}: no commit string found in the document")


def _set_tag_comment(item: Any, tag: Optional[str]) -> None:
    trivia = item.trivia
    if trivia.comment and not re.fullmatch(TAG_COMMENT, trivia.comment):
        return  # the user's comment stays as it is
    trivia.comment_ws, trivia.comment = ("  ", f"# tag {tag}") if tag else ("", "")


def drop_pin_alias(document: tomlkit.TOMLDocument, set_name: str, repo: str) -> None:
    """
    Remove a pin's ``hash_overwrite`` from the document, whatever TOML spelling holds it (a moved pin's alias dies
    with its commit).

    :param document: pin.toml as tomlkit reads it
    :param set_name: the set
    :param repo: the repository the set pins
    """
    for path, parent, _ in list(keyed_items(document, ())):
        if path == ("sets", set_name, repo, "hash_overwrite"):
            del parent[path[-1]]
            if isinstance(parent, InlineTable):
                _drop_separator(parent.value.body)
            return


def _drop_separator(body: list) -> None:
    """
    Remove the comma and spaces that stood between an inline table's pair tomlkit just deleted (left as a Null) and
    its neighbour, so that ``{commit = "x", hash_overwrite = "H"}`` becomes ``{commit = "x"}``, not ``{commit = "x" }``.
    """
    gone = next(i for i, (key, item) in enumerate(body) if key is None and isinstance(item, Null))
    keys = [i for i, (key, _) in enumerate(body) if key is not None]
    if not keys:
        return
    between = range(keys[-1] + 1, gone) if gone > keys[-1] else range(gone + 1, keys[0]) if gone < keys[0] else None
    if between is None:  # between two pairs: the separator of one of them goes
        between = range(gone + 1, next(i for i in keys if i > gone))
    for i in reversed(between):
        if body[i][0] is None and isinstance(body[i][1], Whitespace):
            del body[i]


def keyed_items(container: Any, prefix: Tuple[str, ...]) -> Iterator[Tuple[Tuple[str, ...], Any, Any]]:
    """
    Every keyed item below a document or table, with its full key path and the table that holds it. tomlkit keeps
    dotted keys (``a.b = 1``) and split tables as nested tables of their own, so the path is the only reliable name.
    """
    body = container.body if isinstance(container, tomlkit.TOMLDocument) else container.value.body
    for key, item in body:
        if key is None:
            continue
        path = (*prefix, key.key)
        yield path, container, item
        if isinstance(item, (Table, InlineTable)):
            yield from keyed_items(item, path)


def _last_item(table: Table) -> Any:
    """The last keyed item of a table, None when it has none."""
    return next((item for key, item in reversed(table.value.body) if key is not None), None)


def pop_ending_trivia(table: Table) -> list:
    """The comments and blank lines that end what a table renders: its own values, or its last table (nested)."""
    trailing = _pop_trailing_trivia(table)
    last = _last_item(table)
    return trailing or (pop_ending_trivia(last) if isinstance(last, Table) else [])


def _pop_trailing_trivia(table: Table) -> list:
    body = table.value.body
    trailing: list = []
    while body and body[-1][0] is None and isinstance(body[-1][1], (Comment, Whitespace)):
        trailing.insert(0, body.pop()[1])
    return trailing


def toml_pin(value: Any) -> Any:
    """
    :param value: a pin as :attr:`sispin.lock.lockfile.Pin.value` gives it (a SHA, or a table with extra arguments)
    :return: what tomlkit writes for it: a table becomes an inline table, the way pin.toml shows pins; a string with
        line breaks (a patch) a multi-line string
    """
    if not isinstance(value, dict):
        return value
    inline = tomlkit.inline_table()
    for key, item in value.items():
        inline[key] = _toml_value(item)
    return inline


def _toml_value(value: Any) -> Any:
    if isinstance(value, list):
        array = tomlkit.array()
        for item in value:
            array.append(_toml_value(item))
        return array
    return multiline_string(value) if isinstance(value, str) and "\n" in value else value


def multiline_string(value: str) -> String:
    """
    A string as a TOML multi-line basic string (``\"\"\"``, then its lines), that reads back as exactly value:
    backslashes, a third quote in a row, closing quotes and every control character but line feed and tab are
    escaped — also CR, which a parser would otherwise fold into the line feed after it (and which a CRLF file's
    line endings must not change).

    :param value: any string (a patch)
    :return: the string item
    """
    text, quotes = [], 0
    for index, char in enumerate(value):
        if char == '"' and (quotes == 2 or value[index:].strip('"') == ""):
            text.append('\\"')  # three in a row would close the string, as would one before the closing quotes
            quotes = 0
            continue
        quotes = quotes + 1 if char == '"' else 0
        if char == "\\":
            text.append("\\\\")
        elif char == "\r":
            text.append("\\r")
        elif (ord(char) < 32 and char not in "\n\t") or ord(char) == 127:
            text.append(f"\\u{ord(char):04x}")
        else:
            text.append(char)
    # a line break right after the opening quotes is not part of the value: the text starts on its own line
    return String(StringType.MLB, value, "\n" + "".join(text), Trivia())


def render_lockfile(lockfile: Lockfile) -> str:
    """
    :param lockfile: a lockfile's content (e.g. with pins changed in memory)
    :return: a pin.toml that validates to exactly that content, in the plainest layout (no comments: for sispin's own
        use, never written over a user's file)
    """
    document = tomlkit.document()
    document.add("version", 1)
    for section, entries in (("repos", lockfile.repos), ("sets", lockfile.sets), ("setup", lockfile.setup)):
        tables = tomlkit.table(is_super_table=True)
        for name, entry in entries.items():
            table = tomlkit.table()
            for key, value in entry._asdict().items():
                if key in ("name", "pins") or value is None or value == () or value is False:
                    continue
                table[key] = list(value) if isinstance(value, tuple) else value
            for repo, pin in getattr(entry, "pins", {}).items():
                table[repo] = toml_pin(pin.value)
            tables[name] = table
        document[section] = tables
    return tomlkit.dumps(document)
