"""
The ground floor of messages: how names, paths, values and counts are shown, in one place for every layer (the CLI
renders with these; errors below it are worded with them).
"""

from __future__ import annotations

__all__ = [
    "capped",
    "closest",
    "count",
    "did_you_mean",
    "display_path",
    "is_bare_key",
    "listed",
    "shown_key",
    "shown_value",
    "unsupported_version",
    "visible",
]

import difflib
import json
import re
import reprlib
from pathlib import Path
from typing import Any, Iterable, List, Tuple

#: how similar (difflib's ratio) a name must be to another to be offered as what was meant
_CLOSE = 0.6
_BARE_KEY_RE = re.compile(r"[A-Za-z0-9_-]+")
#: what a terminal acts on instead of showing: control characters but newline and tab (an escape sequence moves the
#: cursor and rewrites lines, a carriage return overwrites one), DEL, the C1 controls, and the marks that reorder
#: text (bidirectional overrides and isolates)
_UNSEEN_RE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
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
#: a word of a cut line keeps this many characters of its two ends (a path's start and its file): a job id
#: (``i6_core/returnn/training/ReturnnTrainingJob.<12 characters>``) stays whole
_LONG_WORD = 64


def visible(text: str) -> str:
    """
    :return: text as a terminal shows it and nothing else: each character it would act on (an escape sequence in a
        commit subject, a carriage return in a file name) written as its escape, ``\\x1b`` or ``\\u202e``
    """
    return _UNSEEN_RE.sub(lambda match: match.group().encode("unicode_escape").decode("ascii"), text)


def unsupported_version(version: Any, supported: int, missing: bool = False) -> str:
    """
    :param version: a file's ``version`` value, not the one this sispin reads
    :param supported: the one it reads
    :param missing: the file has no ``version``
    :return: what is wrong with it; a higher number is a file a newer sispin wrote, which this one must not half-read
    """
    if missing:
        return f"missing (this sispin reads version = {supported})"
    newer = type(version) is int and version > supported
    return f"unsupported version {reprlib.repr(version)} (this sispin reads {supported}" + (
        "; a newer sispin wrote it: update sispin)" if newer else ")"
    )


def capped(line: str) -> str:
    """
    :return: line within the length a problem line may have, its point kept: first its longest words (paths, ids,
        values) lose their middle, longest first, then, if that is not enough, the line loses its middle, so that
        what it starts with (what is wrong) and what it ends with (the cause, the way out) both stay
    """
    if len(line) <= _LINE_LIMIT:
        return line
    words = line.split(" ")
    for index in sorted(range(len(words)), key=lambda i: -len(words[i])):
        excess, word = sum(map(len, words)) + len(words) - 1 - _LINE_LIMIT, words[index]
        if excess <= 0 or len(word) <= _LONG_WORD + 3:
            break  # "..." in a word no longer than that would make it no shorter
        keep = max(_LONG_WORD, len(word) - excess - 3)
        words[index] = word[: keep - keep // 2] + "..." + word[len(word) - keep // 2 :]
    line = " ".join(words)
    if len(line) <= _LINE_LIMIT:
        return line
    head = _LINE_LIMIT * 2 // 3
    return line[:head] + " ... " + line[len(line) - (_LINE_LIMIT - head - 5) :]


def listed(names: List[str], shown: int = 5) -> str:
    """:return: the first few names, and how many more"""
    more = f" and {len(names) - shown} more" if len(names) > shown else ""
    return (", ".join(names[:shown]) + more) or "none registered"


def closest(word: str, choices: Iterable[str]) -> Tuple[str, float]:
    """
    :param word: a name as typed (``stauts``, ``merge``)
    :param choices: the names it may have meant
    :return: the choice it most probably meant and how close it is (0 to 1; a choice the word begins, as ``merge``
        begins ``merge-driver``, counts as close as the cutoff at least), or ``("", 0.0)`` when there are no choices
    """
    best, best_ratio = "", 0.0
    for choice in choices:
        ratio = difflib.SequenceMatcher(None, word, choice).ratio()
        if len(word) >= 3 and choice.startswith(word):
            ratio = max(ratio, _CLOSE)
        if ratio > best_ratio:
            best, best_ratio = choice, ratio
    return best, best_ratio


def did_you_mean(word: str, choices: Iterable[str]) -> str:
    """
    :param word: a name as typed (``stauts``)
    :param choices: the names it may have meant
    :return: ``; did you mean 'status'?`` for the closest choice, as git and cargo say it, to follow what is wrong;
        ``""`` when none is close
    """
    choice, ratio = closest(word, choices)
    return f"; did you mean {choice!r}?" if ratio >= _CLOSE else ""
