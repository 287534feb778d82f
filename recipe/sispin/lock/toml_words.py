"""
tomllib's messages in a user's words: what is wrong at line:column and how to fix it, naming the earlier line a key
or table clashes with. The earlier line is found by a scan of the text that knows TOML's statements as far as this
needs (headers, dotted and quoted keys, and values that run over several lines: multi-line strings, arrays and
inline tables), so a line inside a string or an array is never taken for a key.
"""

from __future__ import annotations

__all__ = ["toml_problem"]

import re
from typing import List, NamedTuple, Optional, Tuple

from sispin.text import shown_key

#: where tomllib (and tomli) says a problem is
_AT_RE = re.compile(r"^(?P<what>.*) \(at (?:line (?P<line>\d+), column (?P<column>\d+)|end of document)\)$", re.S)
#: a key path in tomllib's messages: ``('repos', 'a')``
_PATH_RE = re.compile(r"\(((?:'[^']*'|\"[^\"]*\")(?:, (?:'[^']*'|\"[^\"]*\"))*),?\)")
#: tomllib's words for a problem that needs no earlier line -> what is wrong and how to fix it
_WORDS = {
    "Illegal character '\\n'": "the line ends inside a string: close it with the quote that opened it",
    'Expected "\'"': "a '...' string is not closed: close it with the quote that opened it",
    "Expected ']' at the end of a table declaration": "a [table] header is not closed: end it with ']'",
    "Expected ']]' at the end of an array declaration": "a [[table]] header is not closed: end it with ']]'",
    "Invalid value": 'not a TOML value: a string needs quotes ("..."), a list brackets ([...])',
    "Expected '=' after a key in a key/value pair": "a key without '= value'",
    "Unclosed array": "a list is not closed: end it with ']'",
    "Unclosed inline table": "an inline table {...} is not closed: end it with '}' on the same line",
    "Expected newline or end of document after a statement": "more after the value: one key = value per line",
    "Invalid initial character for a key part": "not a key: a key is a bare word (letters, digits, _, -) or quoted",
    "Invalid statement": "not a statement: a line is key = value, a [table] header or a # comment",
    "Unescaped '\\' in a string": "a backslash in a \"...\" string starts an escape: write \\\\ or use '...'",
}
_CONFLICT_MARKERS = ("<<<<<<<", "=======", ">>>>>>>")


class _Statement(NamedTuple):
    """One statement of the text: a [header], a [[header]] or a key = value (which may run over several lines)."""

    first: int  #: its first line (1-based)
    last: int  #: its last line
    path: Tuple[str, ...]  #: the full key path: the header's, or the table's and the key's
    key: Tuple[str, ...]  #: the key as written (the header's path for a header)
    kind: str  #: "table", "array" ([[...]]) or "key"


def toml_problem(message: str, text: str) -> str:
    """
    :param message: tomllib's message (``Cannot overwrite a value (at line 4, column 10)``)
    :param text: the text it was parsing
    :return: where and what, in words with the fix (`` at line 4, column 10: key url is set twice (first on line
        3): keep one``), else ``: `` and tomllib's own words
    """
    found = _AT_RE.match(message)
    if not found:
        return f": {message}"
    what, line = found["what"], int(found["line"] or 0)
    where = f" at line {line}, column {found['column']}" if line else " at the end of the file"
    lines = text.splitlines()
    if 0 < line <= len(lines) and lines[line - 1].startswith(_CONFLICT_MARKERS):
        return f"{where}: a merge conflict marker: resolve the conflict (pin merge-driver --install merges these files)"
    statements = _statements(lines)
    here = next((s for s in statements if s.first <= line <= s.last), None)
    clash = _clash(what, here, statements) if here is not None else None
    return f"{where}: {clash or _WORDS.get(what, what)}"


def _clash(what: str, here: _Statement, statements: List[_Statement]) -> Optional[str]:
    """:return: the words for a key or table defined twice, naming the earlier line (None for other problems)"""
    earlier = [s for s in statements if s.last < here.first]
    shown = _shown(here)
    if what == "Cannot overwrite a value" or what.startswith("Cannot declare"):
        same = next((s for s in reversed(earlier) if s.path == here.path), None)
        if same is not None and same.kind == here.kind == "key":
            return f"{shown} is set twice (first on line {same.first}): keep one"
        if same is not None and same.kind == here.kind:
            return f"{shown} is declared twice (first on line {same.first}): merge the two into one"
        if same is not None and "array" in (same.kind, here.kind):
            return f"{shown} and {_shown(same)} on line {same.first} declare one table two ways: use one form"
        if same is not None:
            return f"{shown} defines what {_shown(same)} on line {same.first} already set: write it in one place"
        inside = next((s for s in reversed(earlier) if _starts(here.path, s.path) and s.kind == "key"), None)
        if inside is not None:
            return f"{shown} writes into {_shown(inside)}, set to a value on line {inside.first}: keep one"
        within = next((s for s in reversed(earlier) if _starts(s.path, here.path) and s.kind == "key"), None)
        if within is not None:
            return f"{shown} is also defined by {_shown(within)} on line {within.first}: write its keys in one place"
    if what.startswith(("Cannot redefine namespace", "Cannot mutate immutable namespace")):
        named = _PATH_RE.search(what)
        path = tuple(part[1:-1] for part in re.findall(r"'[^']*'|\"[^\"]*\"", named.group(1))) if named else ()
        table = next((s for s in reversed(earlier) if s.path == path), None)
        if table is not None and table.kind == "key":
            return f"{shown} adds to {_shown(table)} of line {table.first}, an inline table: write the key inside it"
        if table is not None:
            return f"{shown} adds to table {_shown(table)} of line {table.first}: write the key under that header"
    if what.startswith("Duplicate inline table key"):
        return f"{what[len('Duplicate inline table key '):]} is set twice in one inline table {{...}}: keep one"
    return None


def _starts(path: Tuple[str, ...], prefix: Tuple[str, ...]) -> bool:
    return len(prefix) < len(path) and path[: len(prefix)] == prefix


def _shown(statement: _Statement) -> str:
    dotted = ".".join(shown_key(part) for part in statement.key)
    return {"table": f"[{dotted}]", "array": f"[[{dotted}]]"}.get(statement.kind, f"key {dotted}")


def _statements(lines: List[str]) -> List[_Statement]:
    """:return: the statements of the text, as far as it can be read (a line it cannot read is skipped)"""
    statements: List[_Statement] = []
    table: Tuple[str, ...] = ()
    number = 0
    while number < len(lines):
        number += 1
        stripped = lines[number - 1].strip()
        if not stripped or stripped.startswith("#"):
            continue
        if stripped.startswith("["):
            kind = "array" if stripped.startswith("[[") else "table"
            key = _key(stripped[2:] if kind == "array" else stripped[1:])[0]
            table = key
            statements.append(_Statement(number, number, key, key, kind))
            continue
        key, rest = _key(stripped)
        if not key or not rest.startswith("="):
            continue
        last = _value_end(lines, number, rest[1:])
        statements.append(_Statement(number, last, table + key, key, "key"))
        number = last
    return statements


def _key(text: str) -> Tuple[Tuple[str, ...], str]:
    """:return: the dotted key at the start of text (bare or quoted parts) and the text after it"""
    parts: List[str] = []
    rest = text.lstrip()
    while rest:
        part = re.match(r'"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|([A-Za-z0-9_-]+)', rest)
        if part is None:
            break
        parts.append(next(group for group in part.groups() if group is not None))
        rest = rest[part.end() :].lstrip()
        if not rest.startswith("."):
            break
        rest = rest[1:].lstrip()
    return tuple(parts), rest


def _value_end(lines: List[str], number: int, value: str) -> int:
    """:return: the last line of the value that starts with ``value`` on line number (strings, arrays, tables)"""
    depth, quote, text = 0, "", value
    while True:
        position = 0
        while position < len(text):
            char = text[position]
            if quote:
                if char == "\\" and quote in ('"', '"""'):
                    position += 2
                    continue
                if text.startswith(quote, position):
                    position += len(quote)
                    quote = ""
                    continue
            elif text.startswith(('"""', "'''"), position):
                quote = text[position : position + 3]
                position += 3
                continue
            elif char in "\"'":
                quote = char
            elif char == "#":
                break
            elif char in "[{":
                depth += 1
            elif char in "]}":
                depth -= 1
            position += 1
        if quote in ('"', "'"):
            quote = ""  # a one-line string never runs on (tomllib reports it where it ends)
        if (not quote and depth <= 0) or number >= len(lines):
            return number
        number += 1
        text = lines[number - 1]
