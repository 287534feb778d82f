"""
The validated lockfile of the config path, cached by the file's bytes.

Every Sisyphus manager loads pin.toml through :func:`sispin.experiment_set`. Parsing and validating a lockfile of
1,000 sets takes ~30 ms, about a quarter of what the manager spends building those sets' 1,000 clone jobs, so the
result is kept like Python keeps bytecode: the first load of given bytes validates them in full and stores the value
objects in ``.sispin-cache/`` beside the lockfile (a directory that tells git to ignore it); a later load of the same
bytes, by the same validating code and Python, unpickles them (~2 ms). Any other bytes, a change of the code in
:data:`VALIDATING_MODULES` or another Python version miss the cache and validate again, so a cached lockfile is never
one the current rules would refuse. The cache is an optimisation only: when it cannot be read or written (a
read-only setup, a damaged file), the lockfile is validated as if there were none.
"""

from __future__ import annotations

__all__ = ["CACHE_DIR", "VALIDATING_MODULES", "load_cached"]

import hashlib
import io
import os
import pickle
import stat
import sys
from pathlib import Path
from typing import Any, Optional, Tuple

from sispin.lockfile import Lockfile, Pin, RepoSpec, SetSpec, SetupCheckout, load_lockfile, parse_lockfile

#: the cache directory, beside the lockfile (like .pytest_cache: it holds a .gitignore of its own)
CACHE_DIR = ".sispin-cache"
#: the modules whose code decides what a lockfile parses to; their source is part of the cache key
VALIDATING_MODULES = ("lockfile.py", "urls.py", "clonejob.py")
#: the only classes a cache file may name (anything else is a damaged or foreign file: a miss)
_CLASSES = {cls.__name__: cls for cls in (RepoSpec, Pin, SetSpec, SetupCheckout)}
# raised on purpose by pickle or our unpickler for bytes that are not a cache file of ours
_UNREADABLE = (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError)


def _code_key() -> bytes:
    digest = hashlib.sha256(f"sispin lock cache 1, python {sys.version_info[:2]}".encode())
    package = Path(__file__).parent
    for name in VALIDATING_MODULES:
        digest.update((package / name).read_bytes())
    return digest.digest()


def load_cached(path: Path) -> Lockfile:
    """
    Read and validate a lockfile, or take its validated content from the cache when the bytes are unchanged.

    :param path: the pin.toml to read
    :return: what :func:`sispin.lockfile.load_lockfile` returns for it
    :raises LockfileError: naming the file and the offending key
    """
    path = Path(path).absolute()
    try:
        data = path.read_bytes()
        code = _code_key()
    except OSError:  # an unreadable lockfile: load_lockfile says what is wrong, in its words; no source: no cache
        return load_lockfile(path)
    key = hashlib.sha256(code + data).digest()
    cache = path.parent / CACHE_DIR / f"{path.name}.pickle"
    cached = _read(cache, key)
    if cached is not None:
        repos, sets, setup = cached
        return Lockfile(path=path, repos=repos, sets=sets, setup=setup)
    try:
        # decoded as load_lockfile reads it (text mode: universal newlines)
        text = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8").read()
    except UnicodeDecodeError:
        return load_lockfile(path)
    lockfile = parse_lockfile(text, path)
    # as readable as the lockfile itself, so that everyone who can read a shared setup's lock can use its cache
    mode = stat.S_IMODE(os.stat(path).st_mode) & 0o666
    _write(cache, key, (dict(lockfile.repos), dict(lockfile.sets), dict(lockfile.setup)), mode)
    return lockfile


class _Unpickler(pickle.Unpickler):
    """Loads value objects of sispin.lockfile and builtin containers, nothing else (no code runs)."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "sispin.lockfile" and name in _CLASSES:
            return _CLASSES[name]
        raise pickle.UnpicklingError(f"{module}.{name} is not part of a lockfile")


def _read(cache: Path, key: bytes) -> Optional[Tuple[Any, Any, Any]]:
    try:
        content = cache.read_bytes()
    except OSError:
        return None
    if content[: len(key)] != key:
        return None
    try:
        repos, sets, setup = _Unpickler(io.BytesIO(content[len(key) :])).load()
    except _UNREADABLE:
        return None
    return repos, sets, setup


def _write(cache: Path, key: bytes, value: Tuple[Any, Any, Any], mode: int) -> None:
    try:
        cache.parent.mkdir(exist_ok=True)
        ignore = cache.parent / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# sispin's cache of validated lockfiles; safe to delete\n*\n")
        import tempfile  # only a miss writes: not imported on every manager start

        # written beside and renamed in: a manager reading it at the same time sees the old file or the new one
        handle, tmp = tempfile.mkstemp(dir=cache.parent, prefix=f".{cache.name}.")
        try:
            with os.fdopen(handle, "wb") as out:
                out.write(key + pickle.dumps(value, protocol=4))
            os.chmod(tmp, mode)
            os.replace(tmp, cache)
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
    except OSError:
        pass  # a setup that cannot hold the cache validates on every load: slower, never less safe
