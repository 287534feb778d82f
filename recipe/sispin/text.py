"""
The ground floor of messages: how names, paths, values and counts are shown, in one place for every layer (the CLI
renders with these; errors below it are worded with them).
"""

from __future__ import annotations

__all__ = ["capped", "count", "display_path", "is_bare_key", "listed", "shown_key", "shown_value"]

import json
import re
import reprlib
from pathlib import Path
from typing import Any, List

_BARE_KEY_RE = re.compile(r"[A-Za-z0-9_-]+")
#: how long a value may be in a message before its middle is cut
_SHOWN_LIMIT = 80


def count(number: int, noun: str) -> str:
    """
    :param number: how many
    :param noun: the singular, possibly after other words (``hash_overwrite alias``)
    :return: ``1 pin``, ``2 pins``, ``2 aliases``, ``2 repositories``
    """
    if number == 1:
        return f"{number} {noun}"
    if noun.endswith(("s", "x", "sh", "ch")):
        return f"{number} {noun}es"
    if noun.endswith("y") and noun[-2:-1] not in ("a", "e", "o", "u"):
        return f"{number} {noun[:-1]}ies"
    return f"{number} {noun}s"


def is_bare_key(name: str) -> bool:
    """:return: whether TOML reads the key bare (letters, digits, ``_``, ``-``), unquoted"""
    return bool(_BARE_KEY_RE.fullmatch(name))


def shown_key(name: str) -> str:
    """
    A TOML key as a key path in a message: bare when TOML takes it bare (letters, digits, ``_``, ``-``), else quoted
    like :func:`shown_value` (``sets.'exp.v2'`` is set ``exp.v2``, not set ``exp``'s key ``v2``).
    """
    return name if is_bare_key(name) else shown_value(name)


def shown_value(value: Any, quote: str = "'") -> str:
    """
    A value as an error message repeats it: one line (escapes for control characters), cut when long.

    :param quote: how a string is quoted: ``'`` (Python's repr) or ``"`` (TOML's basic string)
    """
    if isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False) if quote == '"' else repr(value)
    else:
        text = reprlib.repr(value)
    return text if len(text) <= _SHOWN_LIMIT else f"{text[: _SHOWN_LIMIT - 4]}...{text[-1]}"


def display_path(path: Path) -> str:
    """
    :param path: a file path
    :return: the path relative to the working directory when it lies below it, else absolute (for messages)
    """
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


#: the longest line a problem takes (--verbose and --json carry everything)
_LINE_LIMIT = 300


def capped(line: str) -> str:
    """:return: line cut to the length a problem line may have"""
    return line if len(line) <= _LINE_LIMIT else line[: _LINE_LIMIT - 4] + " ..."


def listed(names: List[str], shown: int = 5) -> str:
    """:return: the first few names, and how many more"""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return (", ".join(names[:shown]) + more) or "none registered"
