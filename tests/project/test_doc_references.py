"""
Every test the documentation names as the proof of a claim exists where it says: a claim whose test was renamed,
moved or deleted would otherwise stand unproven (docs/guarantees.md names a test for each guarantee).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import List, Set, Tuple

from conftest import PROJECT_ROOT

#: `tests/x/test_y.py` or `tests/x/test_y.py::test_z`, and a bare `test_z` after one (the same file)
_REFERENCE_RE = re.compile(r"`(tests/[\w/]+\.py)(?:::(\w+))?`|`(test_\w+)`")


def _references(text: str) -> List[Tuple[str, str]]:
    """:return: (file, test name or "") for each test a text names, a bare name taking the file named before it"""
    found = []
    for line in text.splitlines():
        current = ""
        for match in _REFERENCE_RE.finditer(line):
            if match.group(1):
                current = match.group(1)
                found.append((current, match.group(2) or ""))
            elif current:
                found.append((current, match.group(3)))
    return found


def _tests_of(path: Path) -> Set[str]:
    tree = ast.parse(path.read_text())
    return {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def test_every_test_the_documentation_names_exists():
    pages = [PROJECT_ROOT / "README.md", *sorted((PROJECT_ROOT / "docs").glob("*.md"))]
    missing = []
    for page in pages:
        for file, name in _references(page.read_text()):
            path = PROJECT_ROOT / file
            if not path.is_file() or (name and name not in _tests_of(path)):
                missing.append(f"{page.name}: {file}{'::' + name if name else ''}")
    assert not missing, missing


def test_a_reference_to_a_test_that_is_gone_is_found():
    found = _references("| claim | `tests/lock/test_urls.py::test_x`, `test_y` |\n| other | `test_z` |")
    assert found == [("tests/lock/test_urls.py", "test_x"), ("tests/lock/test_urls.py", "test_y")]
    assert "test_x" not in _tests_of(PROJECT_ROOT / "tests" / "lock" / "test_urls.py")


def test_the_offline_redirects_cover_every_repository_the_shipped_pin_toml_names():
    from sispin.lock.loading import parse_toml

    lock = parse_toml((PROJECT_ROOT / "pin.toml").read_text(), "pin.toml")
    urls = {entry["url"] for table in ("repos", "setup") for entry in lock.get(table, {}).values()}
    page = (PROJECT_ROOT / "docs" / "offline.md").read_text()
    redirected = re.search(r"for name in ([\w ]+); do", page).group(1).split()
    assert {f"https://github.com/rwth-i6/{name}" for name in redirected} == urls
