"""
Scanning a setup's files for ``pin import``: every ``*.py`` below the given paths, each scanned by
:mod:`sispin.adopt.scan`, and the calls of helper functions that pass a literal commit on to a
CloneGitRepositoryJob, followed from the file that calls them to the helper's clone (one level).
"""

from __future__ import annotations

__all__ = ["scan_paths"]

import ast
import os
import stat
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from sispin.adopt.scan import CallSite, Helper, commit_risks, module_constants, order_overwrites, scan_file
from sispin.clonejob import CLASS_NAME


def scan_paths(paths: Sequence[Path]) -> Tuple[List[CallSite], List[str]]:
    """
    :param paths: Python files and directories (searched recursively for ``*.py``)
    :return: the call sites in file order (calls of helper functions that pass a literal commit on to a
        CloneGitRepositoryJob among them), and one warning per file that could not be read or parsed
    """
    sites: List[CallSite] = []
    warnings: List[str] = []
    helpers: Dict[str, List[Helper]] = {}
    sources: List[Tuple[str, bytes]] = []
    for path in _python_files(paths):
        try:
            data = _read_regular(path)
        except _NotRegular as exc:
            warnings.append(f"{path}: not a regular file ({exc}), skipped")
            continue
        except OSError as exc:
            warnings.append(f"{path}: cannot read: {exc.strerror}")
            continue
        sources.append((path, data))
        # most files never mention the class: skip them before paying for a parse
        if CLASS_NAME.encode() not in data:
            continue
        try:
            found, file_helpers = scan_file(data.decode("utf-8", errors="replace"), path)
        except SyntaxError as exc:
            warnings.append(f"{path}:{exc.lineno}: not valid Python, skipped: {exc.msg}")
            continue
        sites += found
        for helper in file_helpers:
            helpers.setdefault(helper.name, []).append(helper)
    # one level through helpers: a name defined twice is ambiguous, and is not followed
    unique = {name: found[0] for name, found in helpers.items() if len(found) == 1}
    for helper in unique.values():
        helper.site.followed = True
    for path, data in sources:
        if not any(name.encode() in data for name in unique):
            continue
        try:
            tree = ast.parse(data.decode("utf-8", errors="replace"), filename=path)
        except SyntaxError:
            continue  # warned above when it mentions the class; otherwise it is no concern of this scan
        sites += _helper_calls(tree, path, unique)
    order = {path: index for index, (path, _) in enumerate(sources)}
    for site in sites:
        order_overwrites(site, order)
    return sorted(sites, key=lambda site: (order.get(site.file, 0), site.line)), warnings


def _helper_calls(tree: ast.Module, path: str, helpers: Dict[str, Helper]) -> List[CallSite]:
    """The calls of helpers in tree that pass a literal commit, each as the clone it makes."""
    constants = module_constants(tree)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
        helper = helpers.get(name or "")
        if helper is None:
            continue
        value: Optional[ast.expr] = next((k.value for k in node.keywords if k.arg == helper.parameter), None)
        positional = node.args[: helper.index + 1] if helper.index is not None else []
        if value is None and helper.index is not None and len(positional) > helper.index:
            if not any(isinstance(argument, ast.Starred) for argument in positional):
                value = node.args[helper.index]
        if isinstance(value, ast.Name) and value.id in constants:
            commit: Any = constants[value.id]
        elif isinstance(value, ast.Constant) and isinstance(value.value, str):
            commit = value.value
        else:
            continue  # no literal commit here: the pin, if any, is made elsewhere
        clone = helper.site
        arguments = {**clone.arguments, "commit": commit}
        site = CallSite(
            file=path,
            line=node.lineno,
            arguments=arguments,
            expressions={key: text for key, text in clone.expressions.items() if key != "commit"},
            risks=[risk for risk in clone.risks if not risk.startswith("commit is not a literal")],
            positional=clone.positional,
            imported=clone.imported,
            helper=f"{helper.name}({helper.parameter}=...), whose clone is at {clone.where}",
        )
        site.risks += commit_risks(arguments)
        found.append(site)
    return found


class _NotRegular(Exception):
    """A path that is no regular file: reading a FIFO would wait for a writer forever, a device may never end."""


#: how a warning names each kind of file that is not read
_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
)


def _read_regular(path: str) -> bytes:
    """
    :return: the bytes of a regular file (through symlinks)
    :raises _NotRegular: naming what else it is
    :raises OSError: when it cannot be opened or read
    """
    # O_NONBLOCK: opening a FIFO for reading blocks until a writer comes; decided on the open file itself, so a file
    # swapped for a FIFO after a check cannot block either
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(descriptor, "rb") as handle:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            raise _NotRegular(next((kind for test, kind in _KINDS if test(mode)), "of another kind"))
        return handle.read()


def _python_files(paths: Sequence[Path]) -> Iterator[str]:
    for path in paths:
        if os.path.isdir(path):
            for directory, subdirectories, files in os.walk(path):
                subdirectories[:] = sorted(d for d in subdirectories if not d.startswith(".") and d != "__pycache__")
                for name in sorted(files):
                    if name.endswith(".py"):
                        yield os.path.join(directory, name)
        else:
            yield str(path)
