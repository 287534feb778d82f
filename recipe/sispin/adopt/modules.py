"""
The modules a scan reads, and the helper function each call names: resolved through the calling file's own imports
(``from a.b import get`` -> ``get`` in a/b.py, ``import a.b as m; m.get()``, ``from .tools import get`` against the
file's package, a star import), so that one name defined in several files is never confused. An imported module is
looked for where Python would find it from the importing file: relative imports in its package, absolute ones
below the file's directory or one of its parents (a setup's ``recipe/``); one outside the scanned paths is read for
its helpers only.
"""

from __future__ import annotations

__all__ = ["Module", "Modules", "NotRegular", "read_regular", "may_import"]

import ast
import os
import re
import stat
from typing import Dict, List, Optional, Set, Tuple

from sispin.adopt.scan import FileScan, Helper, scan_tree
from sispin.adopt.sites import CallSite
from sispin.adopt.source import RECIPE_FOLDER, import_aliases, star_modules
from sispin.clonejob import CLASS_NAME

#: how many re-exports (``from .impl import get`` in a package's __init__) a name is followed through
_REEXPORTS = 3
#: an import statement, read as text: ``from`` what (group 1), and the names it imports (group 2: ``a, b as c`` or
#: ``(a,\n b)``); a module that defines no helper is parsed only when one of these names the function looked for
_IMPORTED = re.compile(rb"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+)?import[ \t]+(\([^)]*\)|[^\n]*)", re.MULTILINE)
_NAME = re.compile(rb"[\w.]+")


class Module:
    """
    One Python file: its bytes, and its tree and helpers once asked for.

    :param path: the file as given (scanned) or as found (imported from a scanned file)
    :param data: its bytes
    :param scanned: whether it is one of the scanned files (its call sites are reported)
    :param key: its absolute path, which identifies it
    """

    def __init__(self, path: str, data: bytes, scanned: bool, key: str):
        self.path = path
        self.data = data
        self.scanned = scanned
        self.key = key
        self.tree: Optional[ast.Module] = None
        self.error: Optional[SyntaxError] = None
        self.first: Optional[FileScan] = None
        self.second: Optional[FileScan] = None
        self._aliases: Optional[Dict[str, str]] = None
        self._stars: Optional[List[str]] = None
        self._functions: Optional[Set[str]] = None

    def parsed(self) -> Optional[ast.Module]:
        """:return: the tree (parsed once, so that node identities hold between scans), None when it does not parse"""
        if self.tree is None and self.error is None:
            try:
                self.tree = ast.parse(self.data.decode("utf-8", errors="replace"), filename=self.path)
            except SyntaxError as exc:
                self.error = exc
        return self.tree

    @property
    def aliases(self) -> Dict[str, str]:
        """Local name -> what it was imported as (relative ones with their dots)."""
        if self._aliases is None:
            tree = self.parsed()
            self._aliases = import_aliases(tree) if tree else {}
        return self._aliases

    @property
    def stars(self) -> List[str]:
        """The modules it star-imports."""
        if self._stars is None:
            tree = self.parsed()
            self._stars = star_modules(tree) if tree else []
        return self._stars

    @property
    def scan(self) -> Optional[FileScan]:
        """Its fullest scan so far: the one that followed helper calls, else the one alone."""
        return self.second or self.first

    @property
    def name(self) -> str:
        """The last part of its module name: the file's stem, its package's for an __init__.py."""
        stem = os.path.splitext(os.path.basename(self.path))[0]
        return os.path.basename(os.path.dirname(self.key)) if stem == "__init__" else stem

    def defines(self, name: str) -> bool:
        """Whether the module binds name by a ``def`` at its top level."""
        if self._functions is None:
            tree = self.parsed()
            self._functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)} if tree else set()
        return name in self._functions


class Modules:
    """Every module a scan read, once each (by absolute path), and the lookups between them."""

    def __init__(self) -> None:
        self.by_key: Dict[str, Optional[Module]] = {}
        self.cwd = os.getcwd()  # once: os.path.abspath asks for it again for every file
        self.names: Set[bytes] = set()
        self._roots: Dict[Tuple[str, str], Optional[str]] = {}
        self._found: Dict[Tuple[str, str], Optional[Module]] = {}
        self._helpers: Dict[Tuple[str, str], Optional[Helper]] = {}

    def add(self, path: str, data: bytes) -> Optional[Module]:
        """
        :param path: a scanned file
        :param data: its bytes
        :return: its module, None when the same file was given already (under another path)
        """
        module = Module(path, data, True, os.path.normpath(os.path.join(self.cwd, path)))
        if module.key in self.by_key:
            return None
        self.by_key[module.key] = module
        return module

    def first_pass(self, module: Module) -> FileScan:
        """:return: the module scanned alone (its clones and helpers), once"""
        if module.first is None:
            tree = module.parsed()
            module.first = scan_tree(tree, module.path) if tree else FileScan([], {}, {})
            self.names |= {name.encode() for name in module.first.helpers}
        return module.first

    def imported_helpers(self, module: Module) -> None:
        """
        Find the helpers of the modules a file imports, from its import statements read as text (no parse): a
        module that mentions the class is scanned for them, and their names join :attr:`names`. So a helper
        outside the scanned paths is known before the files that call it are picked by name.
        """
        for match in _IMPORTED.finditer(module.data):
            source = match.group(1)
            for name in _NAME.findall(match.group(2)):
                if name == b"as":
                    continue
                candidates = [source, source + (b"" if source.endswith(b".") else b".") + name] if source else [name]
                for candidate in candidates:
                    target = self.find(module, candidate.decode("ascii", errors="replace"))
                    if target is not None and CLASS_NAME.encode() in target.data:
                        self.first_pass(target)

    def helper_names(self) -> Set[bytes]:
        """:return: the names of every helper found so far"""
        return set(self.names)

    def callee(self, module: Module, name: str) -> Optional[Helper]:
        """
        :param module: the calling file
        :param name: the called name as written (``get``, ``m.get``, ``pkg.mod.get``)
        :return: the helper it names through the file's own definitions and imports, None for any other function
        """
        head, _, rest = name.partition(".")
        if not rest and module.defines(head):
            return self._helper_of(module, head)
        if head in module.aliases:
            return self._imported(module, module.aliases[head] + (f".{rest}" if rest else ""), _REEXPORTS)
        if not rest:
            for star in reversed(module.stars):  # the last star import that has it wins, as in Python
                found = self._imported(module, f"{star}.{head}", _REEXPORTS)
                if found is not None:
                    return found
        return None

    def shared(self, importer: Module, name: str) -> Optional[Tuple[CallSite, str]]:
        """
        :param importer: a file that uses an object of another module
        :param name: the object's name as written there, through one of the file's imports (``ROOT``, ``m.ROOT``)
        :return: the clone's job or path the other module binds to that name at its top level (through at most
            a few re-exports), as that module's scan found it; None when it holds none, or is not known
        """
        head, _, rest = name.partition(".")
        return self._export(importer, importer.aliases[head] + (f".{rest}" if rest else ""), _REEXPORTS)

    def _export(self, importer: Module, qualified: str, hops: int) -> Optional[Tuple[CallSite, str]]:
        bare = qualified.lstrip(".")
        module_name, _, attribute = bare.rpartition(".")
        target = self.find(importer, qualified[: len(qualified) - len(bare)] + module_name)
        if target is None or attribute.encode() not in target.data:
            return None
        scan = target.scan or (self.first_pass(target) if CLASS_NAME.encode() in target.data else None)
        if scan is not None and attribute in scan.exports:
            return scan.exports[attribute]
        if hops and _reexports(target, attribute) and attribute in target.aliases:
            return self._export(target, target.aliases[attribute], hops - 1)
        return None

    def _imported(self, importer: Module, qualified: str, hops: int) -> Optional[Helper]:
        """The helper a dotted name imported into a module stands for, through at most ``hops`` re-exports."""
        key = (importer.key, qualified)
        if key not in self._helpers:
            self._helpers[key] = None  # an import cycle ends here
            self._helpers[key] = self._lookup(importer, qualified, hops)
        return self._helpers[key]

    def _lookup(self, importer: Module, qualified: str, hops: int) -> Optional[Helper]:
        bare = qualified.lstrip(".")
        dots = qualified[: len(qualified) - len(bare)]
        module_name, _, attribute = bare.rpartition(".")
        target = self.find(importer, dots + module_name)
        name = attribute.encode()
        if target is None or name not in target.data:
            return None
        if CLASS_NAME.encode() in target.data and target.defines(attribute):
            return self._helper_of(target, attribute)
        if hops and _reexports(target, attribute) and attribute in target.aliases:
            return self._imported(target, target.aliases[attribute], hops - 1)
        return None

    def _helper_of(self, module: Module, name: str) -> Optional[Helper]:
        if CLASS_NAME.encode() not in module.data:
            return None
        return self.first_pass(module).helpers.get(name)

    def find(self, importer: Module, name: str) -> Optional[Module]:
        """
        :param importer: the importing file
        :param name: a module name as imported (``a.b``, ``.tools``, ``..``)
        :return: its file: a relative name in the importer's package, an absolute one below the nearest of the
            importer's directory and its parents that holds its top-level package; None when there is none
        """
        key = (os.path.dirname(importer.key), name)
        if key not in self._found:
            self._found[key] = self._find(key[0], name)
        return self._found[key]

    def _find(self, directory: str, name: str) -> Optional[Module]:
        bare = name.lstrip(".")
        level = len(name) - len(bare)
        parts = bare.split(".") if bare else []
        if level:
            for _ in range(level - 1):
                directory = os.path.dirname(directory)
            base: Optional[str] = directory
        elif parts:
            base = self._root(directory, parts[0])
        else:
            return None
        if base is None:
            return None
        stem = os.path.join(base, *parts)
        for candidate in ([f"{stem}.py"] if parts else []) + [os.path.join(stem, "__init__.py")]:
            if os.path.isfile(candidate):
                return self._load(candidate)
        return None

    def _root(self, directory: str, top: str) -> Optional[str]:
        """
        :return: the nearest of directory and its parents that holds the package or module ``top`` (where the
            import system would take it from), or whose ``recipe/`` does (a setup's configs import from its recipe
            folder, which Sisyphus puts on the path); None when none does; remembered for every directory on the way
        """
        key = (directory, top)
        if key not in self._roots:
            parent = os.path.dirname(directory)
            holders = [directory, os.path.join(directory, RECIPE_FOLDER)]
            found = [
                d
                for d in holders
                if os.path.isdir(os.path.join(d, top)) or os.path.isfile(os.path.join(d, f"{top}.py"))
            ]
            if found:
                self._roots[key] = found[0]
            else:
                self._roots[key] = None if parent == directory else self._root(parent, top)
        return self._roots[key]

    def _load(self, path: str) -> Optional[Module]:
        """The module of a file found by an import: a scanned one as it is, another read now (None if unreadable)."""
        key = os.path.normpath(path)
        if key not in self.by_key:
            try:
                self.by_key[key] = Module(_shown(path), read_regular(path), False, key)
            except (NotRegular, OSError):
                self.by_key[key] = None
        return self.by_key[key]


def may_import(module: Module, names: Dict[bytes, Set[bytes]]) -> bool:
    """
    :param names: top-level names of modules -> the names of the modules that bind them (``default_tools``)
    :return: whether the module may use one of those objects, read as text: an import statement names it, or it
        follows a dot (``m.NAME``) where an import statement names one of the modules that bind it
    """
    present = [name for name in names if name in module.data]
    if not present:
        return False
    imported = b"\n".join(match.group(1) or b"" for match in _IMPORTED.finditer(module.data))
    imported += b"\n" + b"\n".join(match.group(2) for match in _IMPORTED.finditer(module.data))
    for name in present:
        if re.search(rb"\b%s\b" % re.escape(name), imported):
            return True
        if b"." + name in module.data and any(re.search(rb"\b%s\b" % re.escape(m), imported) for m in names[name]):
            return True
    return False


def _reexports(module: Module, name: str) -> bool:
    """Whether an import statement of the module names name, read as text (so most modules need no parse)."""
    pattern = re.compile(rb"\b%s\b" % re.escape(name.encode()))
    return any(pattern.search(match.group(2)) for match in _IMPORTED.finditer(module.data))


def _shown(path: str) -> str:
    """A found file as a report names it: relative to the working directory when below it."""
    relative = os.path.relpath(path)
    return path if relative.startswith(os.pardir) else relative


class NotRegular(Exception):
    """A path that is no regular file: reading a FIFO would wait for a writer forever, a device may never end."""


#: how a warning names each kind of file that is not read
_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
)


def read_regular(path: str) -> bytes:
    """
    :return: the bytes of a regular file (through symlinks)
    :raises NotRegular: naming what else it is
    :raises OSError: when it cannot be opened or read
    """
    # O_NONBLOCK: opening a FIFO for reading blocks until a writer comes; decided on the open file itself, so a file
    # swapped for a FIFO after a check cannot block either
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(descriptor, "rb") as handle:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegular(next((kind for test, kind in _KINDS if test(mode)), "of another kind"))
        return handle.read()
