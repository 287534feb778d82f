"""
Manager-side imports from a pinned commit: inside ``with exp.imported("returnn_common"):``, ``import
returnn_common`` gives the package from the set's pinned checkout, whatever else is on sys.path or imported.

How: a finder at the front of ``sys.meta_path`` resolves the checkout's top-level names to the checkout while a
block is active. On entering, modules of those names already imported (another commit, recipe/) are set aside; on
leaving, the pinned modules are kept aside for the next block of the same checkout (so repeated imports give the
same objects) and the previous modules come back. Code of a pinned commit that imports one of its modules after
its block ended (lazy loading) would get another copy's module, so that import fails with an error that says so.

Two sets in one process (``sis manager`` with several configs) can pin the names at two commits. Their modules are
kept apart, but a module outside both checkouts (a shared recipe module) that a block imported first may hold the
first commit's modules (``import returnn_common`` at its top): the block of the other commit refuses to start
while such a module holds them, naming it. Not thread-safe: imports in other threads during a block see the pinned
modules.
"""

from __future__ import annotations

__all__ = ["PinnedImport", "pinned_import", "checkout_names"]

import contextlib
import importlib
import importlib.machinery
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from sispin.errors import PinnedImportError


@dataclass
class PinnedImport:
    """
    One checkout whose modules can be imported in a block.

    :param label: who pins it, for messages (e.g. ``set 'demo', returnn_common f7ad63a``)
    :param search_path: the directory to resolve the top-level names in
    :param names: the top-level module names the checkout provides
    :param modules: its modules, kept between blocks
    :param strangers: modules from outside the checkout that its blocks imported first (they may hold its modules)
    """

    label: str
    search_path: str
    names: Tuple[str, ...]
    modules: Dict[str, ModuleType] = field(default_factory=dict)
    strangers: List[str] = field(default_factory=list)

    def owns(self, fullname: str) -> bool:
        return fullname.split(".", 1)[0] in self.names


class _PinnedFinder:
    """The meta path finder behind every block (one per process)."""

    def __init__(self) -> None:
        self.active: List[PinnedImport] = []
        self.known: List[PinnedImport] = []

    def find_spec(self, fullname: str, path: Optional[Sequence[str]], target: Optional[ModuleType] = None):
        for pinned in reversed(self.active):
            if pinned.owns(fullname):
                if path is not None and not all(_inside(entry, pinned.search_path) for entry in path):
                    raise ImportError(
                        f"{fullname} would be imported into a package from outside the checkout of {pinned.label} "
                        "(a module kept from before the block?): that would mix two copies"
                    )
                search = [pinned.search_path] if path is None else list(path)
                spec = importlib.machinery.PathFinder.find_spec(fullname, search, target)
                if spec is None:
                    raise ModuleNotFoundError(f"no module named {fullname!r} in the checkout of {pinned.label}")
                return spec
        importer = _importing_file()
        for pinned in self.known:
            if pinned.owns(fullname) and importer and _inside(importer, pinned.search_path):
                # code of the pinned commit imports after its block ended (lazy loading): the module would come
                # from whatever copy is current now, not from that commit
                raise ImportError(
                    f"{fullname} is imported by {importer}, from the checkout of {pinned.label}, outside its "
                    "`imported()` block: it would get another copy's module; use the pinned code inside the block"
                )
        return None

    def invalidate_caches(self) -> None:
        importlib.machinery.PathFinder.invalidate_caches()


_FINDER = _PinnedFinder()


_IMPORTLIB_DIR = os.path.dirname(importlib.__file__)


def _importing_file() -> Optional[str]:
    """The file of the code that started the import being resolved (past importlib's and our own frames)."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not (
            filename.startswith("<frozen importlib") or filename.startswith(_IMPORTLIB_DIR) or filename == __file__
        ):
            return filename
        frame = frame.f_back
    return None


def _inside(path: str, directory: str) -> bool:
    path, directory = os.path.abspath(path), os.path.abspath(directory)
    return path == directory or path.startswith(directory + os.sep)


def _module_names(module_names: Sequence[str], modules: Dict[str, ModuleType]) -> List[str]:
    return [name for name in modules if name.split(".", 1)[0] in module_names]


@contextlib.contextmanager
def pinned_import(pinned: PinnedImport) -> Iterator[None]:
    """
    Make the checkout's top-level names import from it for the duration of the block.

    :param pinned: the checkout (keep the same object for the same checkout: it carries the modules between blocks)
    :raises PinnedImportError: when a block of another checkout with the same names is active, or a module of
        those names was found outside the checkout
    """
    for other in _FINDER.active:
        if other is not pinned and set(other.names) & set(pinned.names):
            raise PinnedImportError(
                f"cannot import {', '.join(pinned.names)} from {pinned.label} inside the block of {other.label}: "
                "one process can use one copy of a module at a time"
            )
    _refuse_holders_of_other_copies(pinned)
    if _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)
    sys.meta_path.insert(0, _FINDER)
    if pinned not in _FINDER.known:
        _FINDER.known.append(pinned)
    aside = {name: sys.modules.pop(name) for name in _module_names(pinned.names, sys.modules)}
    sys.modules.update(pinned.modules)
    _FINDER.active.append(pinned)
    before = set(sys.modules)
    try:
        yield
    finally:
        _FINDER.active.remove(pinned)
        pinned.strangers += [name for name in sys.modules if name not in before and not pinned.owns(name)]
        loaded = {name: sys.modules.pop(name) for name in _module_names(pinned.names, sys.modules)}
        sys.modules.update(aside)
        strays = [
            name
            for name, module in loaded.items()
            if getattr(module, "__file__", None) and not _inside(module.__file__, pinned.search_path)
        ]
        pinned.modules = {name: module for name, module in loaded.items() if name not in strays}
        if strays:
            listed = ", ".join(f"{name} ({loaded[name].__file__})" for name in strays)
            raise PinnedImportError(f"modules from outside the checkout of {pinned.label} were imported: {listed}")


def _refuse_holders_of_other_copies(pinned: PinnedImport) -> None:
    """
    :raises PinnedImportError: when a module that another checkout's block imported first holds that checkout's
        modules (or their functions and classes) under names this checkout provides too: code of this block that
        calls it would run the other commit's code
    """
    for other in _FINDER.known:
        if other is pinned or not set(other.names) & set(pinned.names):
            continue
        for name in other.strangers:
            module = sys.modules.get(name)
            held = _held(module, other) if module is not None else None
            if held:
                raise PinnedImportError(
                    f"cannot use {pinned.label}: module {name} ({getattr(module, '__file__', None) or 'built in'}) was "
                    f"first imported inside the block of {other.label} and holds its {held}; code calling it would "
                    f"run that commit's code. Import {held.split('.')[0]} inside functions that each set calls in its "
                    "own block, or run the sets in separate managers"
                )


def _held(module: ModuleType, pinned: PinnedImport) -> Optional[str]:
    """:return: the name of the first module of pinned (or function, class of one) that module holds, if any"""
    kept = {id(held): name for name, held in pinned.modules.items()}
    for value in list(vars(module).values()):
        if isinstance(value, ModuleType):
            if id(value) in kept:
                return kept[id(value)]
            continue
        owner = pinned.modules.get(getattr(value, "__module__", None) or "")
        name = getattr(value, "__name__", None)
        if owner is not None and isinstance(name, str) and getattr(owner, name, None) is value:
            return f"{owner.__name__}.{name}"
    return None


def checkout_names(checkout: Path) -> Tuple[str, Tuple[str, ...]]:
    """
    What a checkout provides to ``import``.

    :param checkout: the checkout directory
    :return: the directory to resolve names in, and the top-level names: the package of the checkout's own name
        inside it (RETURNN's layout), else the checkout itself when it is a package (returnn_common's layout:
        resolved in its parent), else the packages and modules at its top
    """
    if (checkout / checkout.name / "__init__.py").is_file():
        # RETURNN's root __init__.py only forwards to the package returnn/ inside (for old flat imports): with the
        # checkout on sys.path, as RETURNN is used, `import returnn` gives that inner package, and only it is meant
        return str(checkout), (checkout.name,)
    if (checkout / "__init__.py").is_file():
        if not checkout.name.isidentifier():
            raise PinnedImportError(
                f"{checkout} is a package, but its folder name is not importable (set repos.*.checkout)"
            )
        return str(checkout.parent), (checkout.name,)
    names = sorted(
        entry.name[:-3] if entry.suffix == ".py" else entry.name
        for entry in checkout.iterdir()
        if (entry.suffix == ".py" and entry.stem.isidentifier())
        or (entry.is_dir() and entry.name.isidentifier() and (entry / "__init__.py").is_file())
    )
    if not names:
        raise PinnedImportError(f"{checkout} holds no importable package or module at its top")
    return str(checkout), tuple(names)
