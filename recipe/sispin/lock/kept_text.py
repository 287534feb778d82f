"""
The promise of every rewrite of pin.toml (:mod:`sispin.lock.editing`): the existing text stays byte for byte, but
for the characters a change is allowed to touch; anything else an edit would do to it is refused, naming the line.
"""

from __future__ import annotations

__all__ = ["TAG_COMMENT", "check_only_additions_and_shas"]

import difflib
import re
from typing import List, Optional, Set

from sispin.errors import LockfileError

#: the comment sispin keeps after a pin moved to a tag (``--to TAG``, ``--release``), as a pattern
TAG_COMMENT = r"# tag \S+"

_HEX = frozenset("0123456789abcdef")
#: one part of a TOML key: bare, or quoted
_KEY_PART = r"""(?:[A-Za-z0-9_-]+|"[^"\n]*"|'[^'\n]*')"""


def check_only_additions_and_shas(old: str, new: str, where: str, rewritable_key: Optional[str] = None) -> None:
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
_TAG_COMMENT_END_RE = re.compile(rf"[ \t]*{TAG_COMMENT}(?=\r?\n|$)")


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
