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
    "keep_line_endings",
    "pop_ending_trivia",
]

import difflib
import os
import re
from pathlib import Path
from typing import Any, Callable, Iterator, List, Optional, Set, Tuple

import tomlkit
from tomlkit.items import Comment, InlineTable, String, StringType, Table, Trivia, Whitespace

from sispin.errors import LockfileError
from sispin.lock.files import check_writable, file_lock, write_atomically
from sispin.lock.lockfile import Lockfile, display_path, parse_lockfile, read_lockfile_text, shown_key

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
        new_text = keep_line_endings(text, tomlkit.dumps(document))
        _check_only_additions_and_shas(text, new_text, display_path(path), rewritable_key)
        updated = parse_lockfile(new_text, path)
        if new_text == text:
            return updated  # nothing to change: the file is not touched
        if write is None:
            write_atomically(path, new_text)
        else:
            write(path, new_text, updated)
    return updated


def keep_line_endings(old: str, new: str) -> str:
    """A file written with CRLF line endings keeps them, also on the lines an edit adds."""
    if "\r\n" in old and not re.search(r"(?<!\r)\n", old):
        return re.sub(r"(?<!\r)\n", "\r\n", new)
    return new


_HEX = frozenset("0123456789abcdef")
#: one part of a TOML key: bare, or quoted
_KEY_PART = r"""(?:[A-Za-z0-9_-]+|"[^"\n]*"|'[^'\n]*')"""


def _check_only_additions_and_shas(old: str, new: str, where: str, rewritable_key: Optional[str] = None) -> None:
    """
    The promise of every rewrite: existing text stays byte for byte, except the characters of a SHA that moves, the
    tag comment sispin keeps after a moved pin, a pin's ``hash_overwrite`` that a move drops (the alias dies with its
    commit), and the lines of rewritable_key's values, when given; everything else an edit does is new text between
    it.

    :raises LockfileError: naming the first line that would change otherwise (nothing is written)
    """
    old_lines, new_lines = old.splitlines(keepends=True), new.splitlines(keepends=True)
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    old_key_lines = _value_lines(old_lines, rewritable_key) if rewritable_key else set()
    new_key_lines = _value_lines(new_lines, rewritable_key) if rewritable_key else set()
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        before, after = "".join(old_lines[i1:i2]), "".join(new_lines[j1:j2])
        if tag == "equal" or _only_inserted(before, after) or _only_shas_differ(before, after):
            continue
        if _only_shas_and_tag_comments_differ(before, after):
            continue
        if _only_alias_dropped(before, after) or (rewritable_key == "freeze" and _only_freeze_dropped(before, after)):
            continue
        if rewritable_key and set(range(i1, i2)) <= old_key_lines and set(range(j1, j2)) <= new_key_lines:
            continue
        raise LockfileError(
            f"{where}: line {i1 + 1}: this change would rewrite existing text there, not only add lines or move a "
            f'SHA (its layout is one the rewrite cannot keep; write the value as "<sha>" on one line); nothing '
            "written"
        )


#: a pin's alias as the text holds it: inside an inline table after a comma, or first (with the comma after it), or
#: on a line of its own (with its comment, and the dotted key that leads to it)
_STRING = r"""("(?:[^"\\]|\\.)*"|'[^']*')"""
_ALIAS_RE = re.compile(
    rf",\s*hash_overwrite\s*=\s*{_STRING}|(?:{_KEY_PART}\s*\.\s*)*\bhash_overwrite\s*=\s*{_STRING}(\s*#[^\n]*)?(\s*,)?"
)
_SHA_RUN_RE = re.compile(r"\b[0-9a-f]{40}\b")
_PUNCTUATION_SPACE_RE = re.compile(r"\s*([{},=])\s*")


def _only_alias_dropped(before: str, after: str) -> bool:
    """Whether after is before without its ``hash_overwrite = "..."`` assignments (and with SHAs moved)."""
    if "hash_overwrite" not in before or "hash_overwrite" in after:
        return False

    def plain(text: str) -> str:
        # tomlkit leaves the space that stood before the dropped pair: spacing around TOML's punctuation is no change
        return " ".join(_PUNCTUATION_SPACE_RE.sub(r"\1", _SHA_RUN_RE.sub("<sha>", text)).split())

    return plain(_ALIAS_RE.sub("", before)) == plain(after)


#: a set's freeze flag as the text holds it: in an inline table after a comma, or first, or on a line of its own
_FREEZE_RE = re.compile(
    rf",\s*freeze\s*=\s*(?:true|false)|(?:{_KEY_PART}\s*\.\s*)*\bfreeze\s*=\s*(?:true|false)(\s*,)?"
)


def _only_freeze_dropped(before: str, after: str) -> bool:
    """Whether after is before without its ``freeze = ...`` (thawing a set written as an inline table)."""
    return " ".join(_PUNCTUATION_SPACE_RE.sub(r"\1", _FREEZE_RE.sub("", before)).split()) == " ".join(
        _PUNCTUATION_SPACE_RE.sub(r"\1", after).split()
    )


def _value_lines(lines: List[str], key: str) -> Set[int]:
    """The indices of the lines that assign key (``key = ...``), through the end of a multi-line array value."""
    found: Set[int] = set()
    # also dotted: x.configs = [...] in [sets], sets.x.configs = [...] at the top
    start = re.compile(rf"(?:^|[{{,])\s*(?:{_KEY_PART}\s*\.\s*)*{re.escape(key)}\s*=")
    index = 0
    while index < len(lines):
        if start.search(lines[index]):
            depth = 0
            while index < len(lines):
                found.add(index)
                depth += _bracket_depth(lines[index])
                if depth <= 0:
                    break
                index += 1
        index += 1
    return found


def _bracket_depth(line: str) -> int:
    """How many arrays the line opens minus those it closes, outside strings and comments."""
    code = re.sub(r'"(?:[^"\\]|\\.)*"|\'[^\']*\'', "", line).split("#", 1)[0]
    return code.count("[") - code.count("]")


def _only_inserted(before: str, after: str) -> bool:
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=False)
    return all(tag in ("equal", "insert") for tag, *_ in matcher.get_opcodes())


#: a tag comment at the end of a line, with the space before it
_TAG_COMMENT_END_RE = re.compile(r"[ \t]*# tag \S+(?=\r?\n|$)")


def _only_shas_and_tag_comments_differ(before: str, after: str) -> bool:
    """Whether the texts differ in SHAs and in the tag comments sispin writes after pins, and in nothing else."""
    plain_before, plain_after = _TAG_COMMENT_END_RE.sub("", before), _TAG_COMMENT_END_RE.sub("", after)
    return plain_before == plain_after or _only_shas_differ(plain_before, plain_after)


def _only_shas_differ(before: str, after: str) -> bool:
    if len(before) != len(after):
        return False
    return all(_in_sha(before, i) and _in_sha(after, i) for i, (a, b) in enumerate(zip(before, after)) if a != b)


def _in_sha(text: str, index: int) -> bool:
    """Whether text[index] is part of a run of exactly 40 lowercase hex digits (a full SHA)."""
    start, end = index, index + 1
    while start > 0 and text[start - 1] in _HEX:
        start -= 1
    while end < len(text) and text[end] in _HEX:
        end += 1
    return end - start == 40


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
    for path, parent, item in keyed_items(document, ()):
        if path in (("sets", set_name, repo), ("sets", set_name, repo, "commit")) and isinstance(item, String):
            kind = item.type
            parent[path[-1]] = tomlkit.string(commit, literal=kind.is_literal(), multiline=kind.is_multiline())
            # the comment of the line: an inline table's, or the string's own
            _set_tag_comment(parent if isinstance(parent, InlineTable) else parent[path[-1]], tag)
            return
    raise LockfileError(f"sets.{shown_key(set_name)}.{shown_key(repo)}: no commit string found in the document")


#: the comment sispin writes after a pin moved to a tag
_TAG_COMMENT_RE = re.compile(r"# tag \S+")


def _set_tag_comment(item: Any, tag: Optional[str]) -> None:
    trivia = item.trivia
    if trivia.comment and not _TAG_COMMENT_RE.fullmatch(trivia.comment):
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
            return


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
