"""
Rewriting pin.toml: comment-, order- and formatting-preserving edits (tomlkit) under a file lock, validated before
they are written, and written atomically (temporary file in the same directory, fsync, rename).

Only the commands that change the lockfile import this module; the config path never does.
"""

from __future__ import annotations

__all__ = ["edit_lockfile", "append_table", "add_value", "toml_pin", "write_atomically"]

import os
import stat
import tempfile
from pathlib import Path
from typing import Any, Callable

import tomlkit
from filelock import FileLock
from tomlkit.items import Comment, Table, Whitespace

from sispin.lockfile import Lockfile, load_lockfile, parse_lockfile


def edit_lockfile(path: Path, edit: Callable[[Lockfile, tomlkit.TOMLDocument], None]) -> Lockfile:
    """
    Change pin.toml safely: read, edit and write under the lockfile's file lock (so concurrent commands never lose
    each other's changes), keep comments and formatting (tomlkit), refuse a result that would not validate, and
    replace the file atomically (temp file in the same directory, fsync, rename).

    :param path: the pin.toml to change
    :param edit: changes the document in place; gets the validated current content to check preconditions
        against, and may raise a PinError to abort without writing
    :return: the lockfile as written
    """
    path = Path(path).absolute()
    with FileLock(str(path) + ".lock"):
        current = load_lockfile(path)
        document = tomlkit.parse(path.read_text(encoding="utf-8"))
        edit(current, document)
        text = tomlkit.dumps(document)
        updated = parse_lockfile(text, path)
        write_atomically(path, text)
    return updated


def append_table(document: tomlkit.TOMLDocument, section: str, name: str, table: Table) -> None:
    """
    Add ``[section.name]`` after the last table of the section, where a reader expects it.

    Comments and blank lines that end the section's last table introduce, to a reader, whatever follows it; they
    are moved behind the new table so they stay in front of that.

    :param document: pin.toml as tomlkit reads it
    :param section: "repos", "sets" or "setup"
    :param name: the new table's name
    :param table: its content
    """
    if section not in document:
        document.add(section, tomlkit.table(is_super_table=True))
    tables = document[section]
    trailing = _pop_trailing_trivia(tables[list(tables)[-1]]) if len(tables) else []
    # without moved trivia, one blank line keeps the new table apart from what follows
    for item in trailing or [tomlkit.nl()]:
        table.add(item)
    tables.append(name, table)


def add_value(table: Table, key: str, value: Any) -> None:
    """
    Add key = value at the end of table's values, before the comments and blank lines that end it.

    :param table: an existing table of pin.toml
    :param key: the new key
    :param value: its value
    """
    trailing = _pop_trailing_trivia(table)
    table[key] = value
    for item in trailing:
        table.add(item)


def _pop_trailing_trivia(table: Table) -> list:
    body = table.value.body
    trailing: list = []
    while body and body[-1][0] is None and isinstance(body[-1][1], (Comment, Whitespace)):
        trailing.insert(0, body.pop()[1])
    return trailing


def write_atomically(path: Path, text: str) -> None:
    """
    Replace (or create) a file so that readers and crashes only ever see the old or the new content.

    :param path: the file
    :param text: its new content
    """
    handle, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as tmp:
            tmp.write(text)
            tmp.flush()
            os.fsync(tmp.fileno())
        if path.exists():
            os.chmod(tmp_name, stat.S_IMODE(path.stat().st_mode))
        else:
            os.chmod(tmp_name, 0o666 & ~_umask())
        os.replace(tmp_name, path)
    except BaseException:
        os.unlink(tmp_name)
        raise
    # the rename itself must survive a crash too
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def toml_pin(value: Any) -> Any:
    """
    :param value: a pin as :attr:`sispin.lockfile.Pin.value` gives it (a SHA, or a table with extra arguments)
    :return: what tomlkit writes for it: a table becomes an inline table, the way pin.toml shows pins
    """
    if not isinstance(value, dict):
        return value
    inline = tomlkit.inline_table()
    inline.update(value)
    return inline
