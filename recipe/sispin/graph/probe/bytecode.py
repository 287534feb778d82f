"""
The bytecode a probe runs and writes (:func:`never_stale_bytecode`): Python's own, but never a setup's module from a
.pyc that may be older than its source, and no .pyc written for the setup's code.
"""

from __future__ import annotations

__all__ = ["never_stale_bytecode"]

import os
import sys
from typing import Any, Dict

from sispin.graph.probe.adapter import SISPIN_DIR
from sispin.graph.probe.ledger import bytecode_source

#: os.stat as it was before the input recorder wrapped it: the probe's own look at bytecode is no input of a build
_stat = os.stat


def _folder(path: str) -> str:
    """:return: path with a trailing separator: a prefix of what lies below it only"""
    return os.path.join(path, "")


def never_stale_bytecode(root: str) -> None:
    """
    Load no module of the setup from bytecode older than its source, and write bytecode only for code no setup edits.

    A .pyc records its source's modification time in whole seconds, with its size: a config rewritten within the
    second its bytecode was written, at the same size (a script, the pre-commit hook right after an edit), passes
    for unchanged, and Python would run the old code. Below the setup root, bytecode is used only when it was written
    after the source last changed; otherwise the source is compiled (and, as nothing is written there, left as it
    was). Bytecode is written, as Python writes it, only for sispin's own modules and the Python installation's, never
    below the setup root, and for the installation's not below a PYTHONPATH entry (where the setup's code may live):
    without it, every probe compiled again what only a probe imports. The setup's code gets none (a venv made in the
    setup root, a setup below the installation's prefix, a recipe of the setup linked into site-packages), nor do the
    store's checkouts. The modules the probe imports before this runs are written as any process writes them.
    """
    import importlib.machinery
    import importlib.util

    resolved = _folder(os.path.realpath(root))
    entries = [entry for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    # the root as the setup's code may be spelled: as given, resolved, and through each PYTHONPATH entry that leads
    # into it (PYTHONPATH=$PWD/recipe, where $PWD goes through a symlink the working directory does not)
    below_root = (_folder(os.path.abspath(root)), resolved) + tuple(
        _folder(os.path.abspath(entry)) for entry in entries if _folder(os.path.realpath(entry)).startswith(resolved)
    )
    sispin_code = _folder(os.path.realpath(SISPIN_DIR))
    installation = tuple(_folder(os.path.realpath(place)) for place in (sys.prefix, sys.base_prefix))
    on_path = tuple(_folder(spelled(entry)) for entry in entries for spelled in (os.path.abspath, os.path.realpath))
    stats_of = importlib.machinery.SourceFileLoader.path_stats
    set_data_of = importlib.machinery.SourceFileLoader.set_data

    def path_stats(self: Any, path: str) -> Dict[str, Any]:
        stats = stats_of(self, path)
        if path.startswith(below_root):
            try:
                written = _stat(importlib.util.cache_from_source(path)).st_mtime_ns
            except (OSError, ValueError, NotImplementedError):
                return stats  # no bytecode to trust or distrust
            if written <= _stat(path).st_mtime_ns:
                return {**stats, "mtime": -1}  # matches no .pyc: the source is compiled
        return stats

    def set_data(self: Any, path: str, data: bytes, *args: Any, **kwargs: Any) -> None:
        # a loader writes only the bytecode of what it loaded: its source is where the .pyc says
        source = bytecode_source(path)
        if not source:
            return
        real = os.path.realpath(source)
        if source.startswith(below_root) or real.startswith(below_root):
            return
        from_path = source.startswith(on_path) or real.startswith(on_path)
        if real.startswith(sispin_code) or (real.startswith(installation) and not from_path):
            set_data_of(self, path, data, *args, **kwargs)

    importlib.machinery.SourceFileLoader.path_stats = path_stats  # type: ignore[method-assign]
    importlib.machinery.SourceFileLoader.set_data = set_data  # type: ignore[method-assign]
