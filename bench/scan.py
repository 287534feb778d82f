"""``pin import`` over a recipe tree, against the naive way: parse every file with ``ast`` and walk it."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import List

from bench.common import Goal, Result, interleaved, s, timed


def _naive_scan(tree: Path) -> List[int]:
    """Every file parsed and walked: the line of each call of a name or attribute CloneGitRepositoryJob."""
    found = []
    for path in sorted(tree.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
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
    assert len(scan_paths([work / "tree"])[0]) == len(_naive_scan(work / "tree")) == (files + 99) // 100
    ours, naive = interleaved(
        [lambda: timed(lambda: scan_paths([work / "tree"])), lambda: timed(lambda: _naive_scan(work / "tree"))], runs
    )
    return Result(
        f"pin import scan: {files:,} files vs ast.parse of every file",
        s(ours),
        s(naive),
        f"{naive / ours:.1f}x faster",
        Goal(">= 5x faster", 5, at_most=False),
        naive / ours,
    )
