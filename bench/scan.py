"""
``pin import`` over a recipe tree, against the plain way with the same text pre-filter: read every file, and parse
and walk with ``ast`` those that name the class (what ``pin import`` parses too). The scan does more (helpers,
overwrites, imports followed); the row says what that costs over the bare parse.
"""

from __future__ import annotations

import ast
from pathlib import Path
from typing import List

from bench.common import Goal, Result, interleaved, s, timed


def _plain_scan(tree: Path) -> List[int]:
    """Every file that names the class parsed and walked: the line of each call of CloneGitRepositoryJob."""
    found = []
    for path in sorted(tree.rglob("*.py")):
        data = path.read_bytes()
        if b"CloneGitRepositoryJob" not in data:
            continue
        for node in ast.walk(ast.parse(data, str(path))):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
                if name == "CloneGitRepositoryJob":
                    found.append(node.lineno)
    return found


def bench_import_scan(work: Path, files: int = 10_000, runs: int = 3) -> Result:
    """A tree of files, one in a hundred with a CloneGitRepositoryJob call, scanned both ways."""
    from sispin.adopt.follow import scan_paths

    body = "".join(f"def helper_{i}(x):\n    return x + {i}\n\n" for i in range(30))
    for number in range(files):
        package = work / "tree" / f"pkg{number // 500}"
        package.mkdir(parents=True, exist_ok=True)
        call = ""
        if number % 100 == 0:
            call = (
                "from i6_core.tools.git import CloneGitRepositoryJob\n"
                f"job = CloneGitRepositoryJob('https://github.com/rwth-i6/returnn', commit='{number:040x}')\n"
            )
        (package / f"module_{number}.py").write_text(f'"""module {number}"""\nimport os\n\n{call}{body}')
    assert len(scan_paths([work / "tree"])[0]) == len(_plain_scan(work / "tree")) == (files + 99) // 100
    ours, plain = interleaved(
        [lambda: timed(lambda: scan_paths([work / "tree"])), lambda: timed(lambda: _plain_scan(work / "tree"))], runs
    )
    return Result(
        f"pin import scan: {files:,} files vs the same text pre-filter and ast.parse of the files it keeps",
        s(ours),
        s(plain),
        f"{ours / plain:.2f}x",
        Goal("<= 2x", 2),
        ours / plain,
    )
