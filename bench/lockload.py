"""
Loading pin.toml: sispin's parse and validation, and its cached load of unchanged bytes (what every manager start
after the first does), against a raw ``tomllib`` parse of the same text.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import List

from bench.common import Goal, Result, interleaved, lock_text, ms, timed

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib


def bench_lockfile_load(work: Path, sets: int = 200, repos: int = 5, runs: int = 20) -> List[Result]:
    """Parse + validate, and the cached load, of a lockfile of sets x repos, against tomllib on the same text."""
    from sispin.lock.cache import load_cached
    from sispin.lock.loading import parse_lockfile

    text = lock_text(sets, repos, lambda s, r: f"{(s * 7919 + r) % 16**40:040x}", lambda r: f"https://h/r{r}")
    path = work / "pin.toml"
    path.write_text(text)
    load_cached(path)  # validates and writes the cache, as a manager's first start does
    validated, cached, raw = interleaved(
        [
            lambda: timed(lambda: parse_lockfile(text, path)),
            lambda: timed(lambda: load_cached(path)),
            lambda: timed(lambda: tomllib.loads(text)),
        ],
        runs,
    )
    size = f"{sets} sets x {repos} repos"
    return [
        Result(
            f"lockfile load: {size}, validated, vs tomllib",
            ms(validated),
            ms(raw),
            f"{validated / raw:.2f}x",
            Goal("<= 2x", 2),
            validated / raw,
        ),
        Result(
            f"lockfile load: {size}, unchanged (cache), vs tomllib",
            ms(cached),
            ms(raw),
            f"{cached / raw:.2f}x",
            Goal("<= 0.25x", 0.25),
            cached / raw,
        ),
    ]
