"""
The validated lockfile of the config path, cached by the file's bytes (and the parsed snapshot, the same way:
:func:`read_through`).

Every Sisyphus manager loads pin.toml through :func:`sispin.experiment_set`. Parsing and validating a large lockfile
costs a good part of what the manager spends building its sets' clone jobs (bench/lockload.py), so the result is
kept like Python keeps bytecode: the first load of given bytes validates them in full and stores the value objects
in ``.sispin-cache/`` beside the lockfile (a directory that tells git to ignore it), with the digest of the source
of every module whose code decided the result (:func:`validating_modules`: :mod:`sispin.lock.validate` and every
sispin module it reaches, found by following its names, never listed by hand); a later load of the same bytes, by
the same Python and the same source of those modules, unpickles them, a fraction of the cost. Any other bytes, code
or Python miss the cache and validate again, so a cached lockfile is never one the current rules would refuse. The
cache is an optimisation only: when it cannot be read or written (a read-only setup, a damaged file, an installation
without source), the lockfile is validated as if there were none.
"""

from __future__ import annotations

__all__ = [
    "set_cache_file",
    "write_set_cache",
    "validating_modules",
    "sispin_sources",
    "source_digests",
    "load_cached",
    "read_through",
]

import ast
import hashlib
import importlib.util
import io
import os
import pickle
import stat
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from sispin.lock.files import CACHE_DIR, cache_directory
from sispin.lock.loading import load_lockfile, parse_lockfile
from sispin.lock.lockfile import Lockfile, Pin, RepoSpec, SetSpec, SetupCheckout

#: the only classes a cache file may name (anything else is a damaged or foreign file: a miss)
_CLASSES = {cls.__name__: cls for cls in (RepoSpec, Pin, SetSpec, SetupCheckout)}
# raised on purpose by pickle or our unpickler for bytes that are not a cache file of ours
_UNREADABLE = (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError)
#: the directory that holds the sispin package: module files are recorded relative to it
_PACKAGES = Path(__file__).resolve().parent.parent.parent


def validating_modules(start: str = "sispin.lock.validate") -> List[str]:
    """
    :param start: the module that reads the file (:mod:`sispin.lock.validate` a lockfile, :mod:`sispin.graph.snapshot`
        the snapshot)
    :return: the source files (relative to the directory that holds the sispin package) of the modules whose code
        decides what the file reads as: start and every sispin module it imports, directly or through each other
        (read from their import statements, those inside functions too)
    """
    found: Dict[str, str] = {}
    stack = [start]
    while stack:
        name = stack.pop()
        if name in found:
            continue
        found[name] = file = _source_of(name)
        tree = ast.parse(Path(file).read_bytes(), filename=file)
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                stack += [alias.name for alias in node.names if _is_sispin_module(alias.name)]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                # `from sispin.x import y`: y may itself be a module of sispin.x
                stack += [
                    f"{node.module}.{alias.name}"
                    for alias in node.names
                    if _is_sispin_module(f"{node.module}.{alias.name}")
                ]
                stack += [node.module] if _is_sispin_module(node.module) else []
    return sorted(Path(file).resolve().relative_to(_PACKAGES).as_posix() for file in found.values())


def _is_sispin_module(name: str) -> bool:
    if name.split(".")[0] != "sispin":
        return False
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:  # a name inside a module, not a module of a package
        return False


def _source_of(name: str) -> str:
    """:raises OSError: when the module has no source file (an installation of bytecode only)"""
    origin = importlib.util.find_spec(name).origin
    if not origin or not origin.endswith(".py"):
        raise OSError(f"{name} has no source")
    return origin


def sispin_sources() -> List[str]:
    """:return: every source file of the sispin package (relative to the directory that holds it)"""
    package = Path(__file__).resolve().parent.parent
    return sorted(path.relative_to(_PACKAGES).as_posix() for path in package.rglob("*.py"))


def source_digests(files: Sequence[str]) -> Optional[List[Tuple[str, str]]]:
    """
    What says whether sispin's code changed, for every cache whose result that code decides (this one, and the kept
    passes of ``pin check``).

    :param files: source files, as :func:`validating_modules` or :func:`sispin_sources` name them
    :return: (file, digest of its source) for each, or None when one cannot be read (no source: no cache)
    """
    try:
        return [(file, hashlib.sha256((_PACKAGES / file).read_bytes()).hexdigest()) for file in files]
    except OSError:
        return None


def load_cached(path: Path) -> Lockfile:
    """
    Read and validate a lockfile, or take its validated content from the cache when the bytes are unchanged.

    :param path: the pin.toml to read
    :return: what :func:`sispin.lock.loading.load_lockfile` returns for it
    :raises LockfileError: naming the file and the offending key
    """
    path = Path(path).absolute()
    try:
        data = path.read_bytes()
    except OSError:  # an unreadable lockfile: load_lockfile says what is wrong, in its words
        return load_lockfile(path)

    def validated() -> Tuple[Any, Any, Any]:  # only on a miss: a manager's start with the cache decodes nothing
        try:
            # decoded as load_lockfile reads it (text mode: universal newlines)
            text = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").read()
        except UnicodeDecodeError:
            lockfile = load_lockfile(path)  # says what is wrong, in its words
        else:
            lockfile = parse_lockfile(text, path)
        return dict(lockfile.repos), dict(lockfile.sets), dict(lockfile.setup)

    repos, sets, setup = read_through(path, data, "lock cache 2", "sispin.lock.validate", validated)
    return Lockfile(path=path, repos=repos, sets=sets, setup=setup)


def read_through(path: Path, data: bytes, tag: str, reader: str, read: Callable[[], Any]) -> Any:
    """
    What a file's bytes read as, from the cache beside it when the same bytes were read before by the same code and
    Python (``.sispin-cache/NAME.pickle``); else read now and cached (when the reading code's source can be found).

    :param path: the file (its directory holds the cache)
    :param data: its bytes
    :param tag: what the cache holds (changed with its format)
    :param reader: the module whose code reads the file (the cache is keyed on its source and its imports':
        :func:`validating_modules`)
    :param read: what reads the bytes; whatever it raises is raised, and nothing is cached
    :return: its value (builtin containers and the value objects of :mod:`sispin.lock.lockfile` only)
    """
    key = hashlib.sha256(f"sispin {tag}, python {sys.version_info[:2]}".encode() + data).digest()
    cache = path.parent / CACHE_DIR / f"{path.name}.pickle"
    cached = _read(cache, key)
    if cached is not None:
        return cached
    value = read()
    try:
        code = source_digests(validating_modules(reader))
    except (OSError, ValueError):  # no source, or a module outside the package's directory: nothing to key on
        code = None
    if code is not None:
        # as readable as the file itself, so that everyone who can read a shared setup's files can use its cache
        mode = stat.S_IMODE(os.stat(path).st_mode) & 0o666
        _write(cache, key, code, value, mode)
    return value


class _Unpickler(pickle.Unpickler):
    """Loads value objects of sispin.lock.lockfile and builtin containers, nothing else (no code runs)."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "sispin.lock.lockfile" and name in _CLASSES:
            return _CLASSES[name]
        raise pickle.UnpicklingError(f"{module}.{name} is not part of a lockfile")


def _read(cache: Path, key: bytes) -> Any:
    """:return: the value cached under key, or None"""
    try:
        content = cache.read_bytes()
    except OSError:
        return None
    if content[: len(key)] != key:
        return None
    try:
        code, value = _Unpickler(io.BytesIO(content[len(key) :])).load()
        if source_digests([file for file, _ in code]) != code:
            return None  # the reading code changed (or its source is gone)
    except _UNREADABLE:
        return None
    return value


def set_cache_file(root: Path, kind: str, set_name: str) -> Path:
    """
    :param root: the setup root
    :param kind: what is kept per set (``records``, ``checks``)
    :param set_name: the set
    :return: where the set's JSON of that kind is kept: ``.sispin-cache/KIND/SET.json``
    """
    # a set name is a valid file name (letters, digits, '_', '.', '-'), never '.' or '..' (pin.toml's rule)
    return Path(root) / CACHE_DIR / kind / f"{set_name}.json"


def write_set_cache(
    lockfile_path: Path, kind: str, set_name: str, data: Any, default: Optional[Callable[[Any], Any]] = None
) -> None:
    """
    Replace a set's JSON of a kind (see :func:`set_cache_file`), with pin.toml's permission bits. Only a cache: a
    setup that cannot hold it goes without.

    :param lockfile_path: the pin.toml
    :param data: what to keep, as JSON
    :param default: json's hook for the values in data that JSON has no form for (a report object of the probe's:
        :func:`sispin.graph.probe.codec.report_form`), so that they are written in the same pass
    """
    import json  # neither is needed on the config path, which only reads the lock's cache

    from sispin.lock.files import replace_file

    root = Path(lockfile_path).parent
    try:
        cache_directory(root)
        target = set_cache_file(root, kind, set_name)
        target.parent.mkdir(exist_ok=True)
        mode = stat.S_IMODE(os.stat(lockfile_path).st_mode) & 0o666
        replace_file(target, json.dumps(data, separators=(",", ":"), default=default).encode(), mode)
    except OSError:
        pass


def _write(cache: Path, key: bytes, code: List[Tuple[str, str]], value: Any, mode: int) -> None:
    from sispin.lock.files import replace_file  # only a miss writes: not imported on every manager start

    try:
        cache_directory(cache.parent.parent)  # the setup root's
        # a manager reading it at the same time sees the old file or the new one
        replace_file(cache, key + pickle.dumps((code, value), protocol=4), mode)
    except OSError:
        pass  # a setup that cannot hold the cache validates on every load: slower, never less safe
