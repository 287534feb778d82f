"""
Finding, reading and parsing pin.toml: ``$PIN_LOCK`` or the nearest pin.toml upwards, its text exactly as stored,
TOML through the standard ``tomllib`` (``tomli`` before Python 3.11) because it is fast and strict, and the parsed
data validated by :mod:`sispin.lock.validate` into the value objects of :mod:`sispin.lock.lockfile`, every error
naming the file and the key path. On the config path: validation is imported only when a lockfile is not in
:mod:`sispin.lock.cache`.
"""

from __future__ import annotations

__all__ = [
    "LOCKFILE_NAME",
    "LOCK_ENV",
    "PROBE_TEXT_ENV",
    "find_lockfile",
    "load_lockfile",
    "read_lockfile_text",
    "read_lockfile_bytes",
    "parse_lockfile",
    "parse_toml",
]

import os
import sys
from pathlib import Path
from typing import Any, Dict, Tuple

from sispin.errors import LockfileError
from sispin.lock.lockfile import Lockfile
from sispin.text import display_path

LOCKFILE_NAME = "pin.toml"
#: environment variable naming the lockfile explicitly (otherwise pin.toml is searched upwards from the cwd)
LOCK_ENV = "PIN_LOCK"
#: set by sispin for its probe only: a file whose text the probe's sets read instead of the lockfile's
PROBE_TEXT_ENV = "SISPIN_PROBE_LOCK_TEXT"


def find_lockfile() -> Path:
    """
    Locate the lockfile: ``$PIN_LOCK`` when set, else the first pin.toml in the working directory or one of its
    parents, as git finds its repository.

    :return: absolute path of the lockfile
    :raises LockfileError: when there is none
    """
    explicit = os.environ.get(LOCK_ENV)
    if explicit:
        path = Path(explicit).absolute()
        if not path.is_file():
            raise LockfileError(f"{LOCK_ENV}={explicit}: no such file")
        return path
    here = Path.cwd().absolute()
    for directory in (here, *here.parents):
        candidate = directory / LOCKFILE_NAME
        if candidate.is_file():
            return candidate
    raise LockfileError(f"no {LOCKFILE_NAME} in {here} or any parent directory (set {LOCK_ENV} to name one)")


def load_lockfile(path: Path) -> Lockfile:
    """
    Read and validate a lockfile.

    :param path: the pin.toml to read
    :raises LockfileError: naming the file and the offending key
    """
    path = Path(path).absolute()
    return parse_lockfile(read_lockfile_text(path), path)


def read_lockfile_text(path: Path) -> str:
    """
    :param path: a lockfile (or its snapshot)
    :return: its text exactly as stored: line endings are not translated, so a rewrite can keep them
    :raises LockfileError: when it does not exist or cannot be read as UTF-8
    """
    return read_lockfile_bytes(path)[1]


def read_lockfile_bytes(path: Path) -> Tuple[bytes, str]:
    """
    :param path: a lockfile (or its snapshot)
    :return: its bytes, and its text (see :func:`read_lockfile_text`)
    :raises LockfileError: when it does not exist or cannot be read as UTF-8
    """
    try:
        data = Path(path).read_bytes()
        return data, data.decode("utf-8")
    except FileNotFoundError:
        raise LockfileError(f"{display_path(path)}: no such file") from None
    except OSError as exc:
        raise LockfileError(f"{display_path(path)}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise LockfileError(
            f"{display_path(path)}: cannot read: not UTF-8 ({exc.reason} at byte {exc.start})"
        ) from None


def parse_lockfile(text: str, path: Path) -> Lockfile:
    """
    Validate lockfile content.

    :param text: the TOML text
    :param path: where it comes from (for messages and the setup root)
    :raises LockfileError: naming the file and the offending key
    """
    where = display_path(path)
    data = parse_toml(text, where)
    from sispin.lock.validate import validate  # only a lockfile that is not in the cache is validated

    return validate(data, Path(path).absolute(), where)


def parse_toml(text: str, where: str) -> Dict[str, Any]:
    """
    :param text: the text of pin.toml or pin.snapshot.toml
    :param where: how messages name the file
    :return: its values
    :raises LockfileError: when it is not TOML (with TOML's own line and column)
    """
    # imported here: a manager whose lockfile comes from sispin.lock.cache never parses TOML
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised by the Python 3.9 CI run
        import tomli as tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        from sispin.lock.toml_words import toml_problem  # the words of a problem: only when there is one

        raise LockfileError(f"{where}: invalid TOML{toml_problem(str(exc), text)}") from None
    except RecursionError:
        raise LockfileError(f"{where}: invalid TOML: arrays or tables nested too deeply") from None
