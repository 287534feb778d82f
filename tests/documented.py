"""
How a page's checked blocks are read: every fenced block that a ``<!-- checked -->`` line introduces is a list of
commands (``$ ...`` lines), each with the lines documented under it; a line ``...`` stands for any lines, and ``...``
inside a line for any text (a time, a temporary path). tests/project/test_docs.py runs them in a copy of the shipped
setup, tests/e2e/test_tour.py runs README's where ``make demo`` ran.
"""

from __future__ import annotations

import re
from typing import Dict, List, Tuple

#: the line that marks a block as checked
MARK = "<!-- checked -->"

#: a command and the lines documented under it
Step = Tuple[str, List[str]]


def checked_steps(text: str) -> List[Step]:
    """The commands of a document's checked blocks, in order, each with its documented output."""
    steps: List[Step] = []
    lines = text.splitlines()
    for index, line in enumerate(lines):
        if line.strip() != MARK:
            continue
        fence = lines[index + 1]
        assert fence.lstrip().startswith("```"), f"{MARK} must stand right above a fenced block (line {index + 1})"
        indent = len(fence) - len(fence.lstrip())  # a block in a list item is indented with it
        end = next(i for i in range(index + 2, len(lines)) if lines[i].lstrip().startswith("```"))
        for body in (line[indent:] for line in lines[index + 2 : end]):
            if body.startswith("$ "):
                steps.append((body[2:], []))
            else:
                assert steps, f"output before the first command in the block at line {index + 2}"
                steps[-1][1].append(body)
    return steps


def matches(expected: List[str], actual: List[str]) -> bool:
    """Whether the actual lines are the expected ones, ``...`` lines (indented or not) standing for any lines."""
    patterns = [
        None if line.strip() == "..." else re.compile(".*".join(map(re.escape, line.split("...")))) for line in expected
    ]
    memo: Dict[Tuple[int, int], bool] = {}

    def match(i: int, j: int) -> bool:
        if (i, j) not in memo:
            if i == len(patterns):
                memo[i, j] = j == len(actual)
            elif patterns[i] is None:
                memo[i, j] = match(i + 1, j) or (j < len(actual) and match(i, j + 1))
            else:
                memo[i, j] = j < len(actual) and bool(patterns[i].fullmatch(actual[j])) and match(i + 1, j + 1)
        return memo[i, j]

    return match(0, 0)


def plain(line: str) -> str:
    """A line as a reader sees it: without terminal colours, without trailing spaces."""
    return re.sub(r"\x1b\[[0-9;]*m", "", line).rstrip()
